// MetricsRegistry and Prometheus text exposition (format 0.0.4). Registration is locked;
// metric updates are plain atomics on the objects handed out.
#include "strata/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "util/clock.h"
#include "util/mutex.h"
#include "util/no_destructor.h"

namespace strata {
namespace {

enum class MetricType { kCounter, kGauge, kHistogram };

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

bool IsMetricNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsMetricNameChar(char c) { return IsMetricNameStart(c) || (c >= '0' && c <= '9'); }
bool IsLabelNameStart(char c) { return c != ':' && IsMetricNameStart(c); }
bool IsLabelNameChar(char c) { return c != ':' && IsMetricNameChar(c); }

bool IsValidMetricName(std::string_view name) {
  if (name.empty() || !IsMetricNameStart(name[0])) return false;
  return std::all_of(name.begin(), name.end(), IsMetricNameChar);
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || !IsLabelNameStart(name[0])) return false;
  return std::all_of(name.begin(), name.end(), IsLabelNameChar);
}

// Shortest text that parses back to the same double; Prometheus spellings for non-finite.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string FormatBounds(const std::vector<double>& bounds) {
  std::string out = "[";
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (i > 0) out += ", ";
    out += FormatValue(bounds[i]);
  }
  return out + "]";
}

void AppendEscaped(std::string& out, std::string_view text, bool escape_quotes) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// {k1="v1",k2="v2"} plus an optional trailing le="..."; empty when there are no labels.
std::string FormatLabels(const MetricLabels& labels, const std::string* le = nullptr) {
  if (labels.empty() && le == nullptr) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += key;
    out += "=\"";
    AppendEscaped(out, value, /*escape_quotes=*/true);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  return out + "}";
}

Status ValidateLabels(std::string_view metric_name, MetricType type, const MetricLabels& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& key = labels[i].first;
    if (!IsValidLabelName(key)) {
      return Status::InvalidArgument(
          fmt::format("metric \"{}\": invalid label name \"{}\": must match [a-zA-Z_][a-zA-Z0-9_]*",
                      metric_name, key));
    }
    if (key.starts_with("__")) {
      return Status::InvalidArgument(fmt::format(
          "metric \"{}\": label name \"{}\" is reserved (starts with \"__\")", metric_name, key));
    }
    if (type == MetricType::kHistogram && key == "le") {
      return Status::InvalidArgument(fmt::format(
          "histogram \"{}\": label name \"le\" is reserved for bucket bounds", metric_name));
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].first == key) {
        return Status::InvalidArgument(
            fmt::format("metric \"{}\": label \"{}\" appears twice", metric_name, key));
      }
    }
  }
  return Status::OK();
}

Status ValidateBounds(std::string_view metric_name, std::vector<double>& bounds) {
  if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) {
    bounds.pop_back();  // +Inf is implicit.
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return Status::InvalidArgument(
          fmt::format("histogram \"{}\": bucket bound {} at index {} is not finite", metric_name,
                      FormatValue(bounds[i]), i));
    }
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return Status::InvalidArgument(fmt::format(
          "histogram \"{}\": bucket bound {} at index {} is not greater than the previous bound {}",
          metric_name, FormatValue(bounds[i]), i, FormatValue(bounds[i - 1])));
    }
  }
  return Status::OK();
}

MetricLabels SortedLabels(MetricLabels labels) {
  std::sort(labels.begin(), labels.end());
  return labels;
}

struct Series {
  MetricLabels labels;  // As given at first registration; printed in this order.
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
};

struct Family {
  MetricType type;
  std::string help;
  std::vector<double> bounds;             // Histograms only.
  std::map<MetricLabels, Series> series;  // Keyed by the key-sorted labels.
};

void ExposeFamily(const std::string& name, const Family& family, std::string& out) {
  out += "# HELP ";
  out += name;
  out += ' ';
  AppendEscaped(out, family.help, /*escape_quotes=*/false);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += TypeName(family.type);
  out += '\n';
  for (const auto& [key, series] : family.series) {
    const std::string labels = FormatLabels(series.labels);
    switch (family.type) {
      case MetricType::kCounter:
        out += fmt::format("{}{} {}\n", name, labels, series.counter->Value());
        break;
      case MetricType::kGauge:
        out += fmt::format("{}{} {}\n", name, labels, FormatValue(series.gauge->Value()));
        break;
      case MetricType::kHistogram: {
        const Histogram& histogram = *series.histogram;
        const std::vector<uint64_t> counts = histogram.BucketCounts();
        uint64_t cumulative = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          const std::string le =
              i < family.bounds.size() ? FormatValue(family.bounds[i]) : std::string("+Inf");
          out +=
              fmt::format("{}_bucket{} {}\n", name, FormatLabels(series.labels, &le), cumulative);
        }
        out += fmt::format("{}_sum{} {}\n", name, labels, FormatValue(histogram.Sum()));
        out += fmt::format("{}_count{} {}\n", name, labels, cumulative);
        break;
      }
    }
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      bucket_counts_(std::make_unique<std::atomic<uint64_t>[]>(upper_bounds_.size() + 1)) {}

void Histogram::Observe(double value) {
  // First bound >= value, i.e. the bucket "value <= bound"; NaN and +Inf land in +Inf.
  const size_t bucket = std::isnan(value)
                            ? upper_bounds_.size()
                            : static_cast<size_t>(std::lower_bound(upper_bounds_.begin(),
                                                                   upper_bounds_.end(), value) -
                                                  upper_bounds_.begin());
  bucket_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> counts(upper_bounds_.size() + 1);
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = bucket_counts_[i].load(std::memory_order_relaxed);
  }
  return counts;
}

uint64_t Histogram::Count() const {
  uint64_t total = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    total += bucket_counts_[i].load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<double> ExponentialBuckets(double start, double factor, size_t count) {
  std::vector<double> bounds;
  bounds.reserve(count);
  double bound = start;
  for (size_t i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

std::vector<double> DefaultLatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

struct MetricsRegistry::State {
  mutable Mutex mutex;
  std::map<std::string, Family, std::less<>> families STRATA_GUARDED_BY(mutex);

  // The series for (name, labels), created if new. For histograms `bounds` must already be
  // validated.
  Result<Series*> FindOrCreate(std::string_view name, std::string_view help, MetricType type,
                               const std::vector<double>& bounds, const MetricLabels& labels) {
    if (!IsValidMetricName(name)) {
      return Status::InvalidArgument(
          fmt::format("invalid metric name \"{}\": must match [a-zA-Z_:][a-zA-Z0-9_:]*", name));
    }
    STRATA_RETURN_IF_ERROR(ValidateLabels(name, type, labels));

    MutexLock lock(mutex);
    auto family_it = families.find(name);
    if (family_it == families.end()) {
      family_it =
          families.emplace(std::string(name), Family{type, std::string(help), bounds, {}}).first;
    }
    Family& family = family_it->second;
    if (family.type != type) {
      return Status::AlreadyExists(
          fmt::format("metric \"{}\" is already registered as a {}, not a {}", name,
                      TypeName(family.type), TypeName(type)));
    }
    if (family.help != help) {
      return Status::AlreadyExists(
          fmt::format("metric \"{}\" is already registered with help \"{}\", not \"{}\"", name,
                      family.help, help));
    }
    if (family.bounds != bounds) {
      return Status::AlreadyExists(
          fmt::format("histogram \"{}\" is already registered with bucket bounds {}, not {}", name,
                      FormatBounds(family.bounds), FormatBounds(bounds)));
    }
    auto [series_it, inserted] = family.series.try_emplace(SortedLabels(labels));
    Series& series = series_it->second;
    if (inserted) {
      series.labels = labels;
      switch (type) {
        case MetricType::kCounter:
          series.counter = std::make_unique<Counter>();
          break;
        case MetricType::kGauge:
          series.gauge = std::make_unique<Gauge>();
          break;
        case MetricType::kHistogram:
          series.histogram = std::make_unique<Histogram>(bounds);
          break;
      }
    }
    return &series;
  }
};

MetricsRegistry::MetricsRegistry() : state_(std::make_unique<State>()) {}
MetricsRegistry::~MetricsRegistry() = default;

Result<Counter*> MetricsRegistry::GetCounter(std::string_view name, std::string_view help,
                                             const MetricLabels& labels) {
  STRATA_ASSIGN_OR_RETURN(Series * series,
                          state_->FindOrCreate(name, help, MetricType::kCounter, {}, labels));
  return series->counter.get();
}

Result<Gauge*> MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                         const MetricLabels& labels) {
  STRATA_ASSIGN_OR_RETURN(Series * series,
                          state_->FindOrCreate(name, help, MetricType::kGauge, {}, labels));
  return series->gauge.get();
}

Result<Histogram*> MetricsRegistry::GetHistogram(std::string_view name, std::string_view help,
                                                 std::vector<double> bucket_bounds,
                                                 const MetricLabels& labels) {
  STRATA_RETURN_IF_ERROR(ValidateBounds(name, bucket_bounds));
  STRATA_ASSIGN_OR_RETURN(Series * series, state_->FindOrCreate(name, help, MetricType::kHistogram,
                                                                bucket_bounds, labels));
  return series->histogram.get();
}

std::string MetricsRegistry::ExposePrometheus() const {
  std::string out;
  MutexLock lock(state_->mutex);
  for (const auto& [name, family] : state_->families) ExposeFamily(name, family, out);
  return out;
}

MetricsRegistry& DefaultMetrics() {
  static NoDestructor<MetricsRegistry> registry;
  return *registry;
}

ScopedTimer::ScopedTimer(Histogram* histogram) : ScopedTimer(histogram, *SystemClock()) {}

ScopedTimer::ScopedTimer(Histogram* histogram, Clock& clock)
    : histogram_(histogram), clock_(clock), start_nanos_(clock.MonotonicNanos()) {}

ScopedTimer::~ScopedTimer() {
  if (histogram_ != nullptr) histogram_->Observe(ElapsedSeconds());
}

double ScopedTimer::ElapsedSeconds() const {
  return static_cast<double>(clock_.MonotonicNanos() - start_nanos_) / 1e9;
}

}  // namespace strata
