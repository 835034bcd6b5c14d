// Metrics: counters, gauges and fixed-bucket histograms kept in a registry, exposed in the
// Prometheus text format (version 0.0.4) for the server's /metrics endpoint.
//
// Hot path: Counter::Increment, Gauge::Set/Add and Histogram::Observe are lock-free atomic
// updates, safe from any thread. Registration (MetricsRegistry::Get*) takes a lock; look a
// metric up once and keep the pointer. Metric objects are owned by their registry and live as
// long as it does; DefaultMetrics() is never destroyed, so its pointers stay valid until exit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata {

class Clock;  // util/clock.h (engine-internal)

// Label key/value pairs, e.g. {{"store", "contexts"}, {"op", "put"}}. Exposition keeps the
// order given at first registration; identity ignores order ({a,b} and {b,a} are one series).
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count. Thread safe, lock-free. Usually obtained from a
// MetricsRegistry; a standalone one is fine where nothing needs to expose it.
class alignas(64) Counter {
 public:
  void Increment(uint64_t delta = 1) { value_.fetch_add(delta, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down (queue depth, bytes buffered). Thread safe, lock-free.
class alignas(64) Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  void Subtract(double delta) { value_.fetch_sub(delta, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Counts observations into fixed buckets: bucket i counts values <= upper_bounds()[i], plus an
// implicit +Inf bucket. Observe is lock-free. NaN is counted in the +Inf bucket (and makes the
// sum NaN), as the Prometheus Go client does.
class Histogram {
 public:
  // REQUIRES: finite, strictly increasing bounds (MetricsRegistry::GetHistogram checks this
  // and reports errors; use it unless the histogram is private to one object).
  explicit Histogram(std::vector<double> upper_bounds);

  void Observe(double value);

  // Finite, strictly increasing upper bounds (without the implicit +Inf).
  const std::vector<double>& upper_bounds() const { return upper_bounds_; }
  // Observations per bucket, NOT cumulative; size upper_bounds().size() + 1 (last is +Inf).
  // Each element is read atomically, the vector as a whole is not a consistent snapshot.
  std::vector<uint64_t> BucketCounts() const;
  uint64_t Count() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> bucket_counts_;  // upper_bounds_.size() + 1
  std::atomic<double> sum_{0.0};
};

// Upper bounds start, start*factor, ... (count of them). Invalid arguments (start <= 0,
// factor <= 1, count == 0) give bounds that GetHistogram rejects.
std::vector<double> ExponentialBuckets(double start, double factor, size_t count);
// The Prometheus client default latency buckets, in seconds: 0.005 ... 10.
std::vector<double> DefaultLatencyBuckets();

// A set of named metrics. Thread safe.
//
// Get* returns the metric for (name, labels), creating it on first use; later calls with the
// same name and label set return the same object. All series of one name form a family that
// shares one type, help text and (histograms) bucket bounds.
// Errors:
//  - InvalidArgument: the name does not match [a-zA-Z_:][a-zA-Z0-9_:]*; a label name does
//    not match [a-zA-Z_][a-zA-Z0-9_]*, starts with "__" (reserved), is repeated, or is "le"
//    on a histogram; histogram bounds are not finite and strictly increasing (a trailing
//    +Inf is accepted and dropped, it is implicit).
//  - AlreadyExists: the name is registered with another type, another help text or
//    (histograms) other bucket bounds.
class MetricsRegistry {
 public:
  MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;
  MetricsRegistry(MetricsRegistry&&) = delete;
  MetricsRegistry& operator=(MetricsRegistry&&) = delete;
  ~MetricsRegistry();

  Result<Counter*> GetCounter(std::string_view name, std::string_view help,
                              const MetricLabels& labels = {});
  Result<Gauge*> GetGauge(std::string_view name, std::string_view help,
                          const MetricLabels& labels = {});
  Result<Histogram*> GetHistogram(std::string_view name, std::string_view help,
                                  std::vector<double> bucket_bounds,
                                  const MetricLabels& labels = {});

  // Every metric in the Prometheus text exposition format 0.0.4: families sorted by name,
  // each with "# HELP" and "# TYPE" lines, series sorted by their labels (compared as
  // key-sorted lists). Histograms expose
  // cumulative name_bucket{le="..."} lines ending in le="+Inf", then name_sum and
  // name_count. Label values escape \, " and newline; help text escapes \ and newline.
  std::string ExposePrometheus() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The process-wide registry. Never destroyed.
MetricsRegistry& DefaultMetrics();

// Observes the seconds between construction and destruction into `histogram` (measured on
// the clock's monotonic time). A null histogram makes the timer a no-op. Not thread safe.
class ScopedTimer {
 public:
  // Uses the real system clock.
  explicit ScopedTimer(Histogram* histogram);
  ScopedTimer(Histogram* histogram, Clock& clock);
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;
  ScopedTimer(ScopedTimer&&) = delete;
  ScopedTimer& operator=(ScopedTimer&&) = delete;
  ~ScopedTimer();

  double ElapsedSeconds() const;
  // Skips the observation at destruction (e.g. the timed operation failed).
  void Cancel() { histogram_ = nullptr; }

 private:
  Histogram* histogram_;
  Clock& clock_;
  int64_t start_nanos_;
};

}  // namespace strata
