// Tests for the metrics registry: exact concurrent counting, exposition golden text,
// cumulative buckets, registration identity and validation, and ScopedTimer.
#include "strata/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "util/clock.h"

namespace strata {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MetricsTest, ConcurrentUpdatesFromManyThreadsSumExactly) {
  MetricsRegistry registry;
  Counter* counter = *registry.GetCounter("ops_total", "Ops.");
  Gauge* gauge = *registry.GetGauge("in_flight", "In flight.");
  Histogram* histogram = *registry.GetHistogram("size", "Size.", {1, 10});
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry, counter, gauge, histogram] {
      // Every thread also looks the counter up, racing on registration.
      Counter* same = *registry.GetCounter("ops_total", "Ops.");
      for (int i = 0; i < kPerThread; ++i) {
        same->Increment();
        counter->Increment(2);
        gauge->Add(1.0);
        histogram->Observe(static_cast<double>(i % 20));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter->Value(), uint64_t{3} * kThreads * kPerThread);
  EXPECT_EQ(gauge->Value(), double{kThreads} * kPerThread);
  EXPECT_EQ(histogram->Count(), uint64_t{kThreads} * kPerThread);
  // Per thread: values 0..19 each 1000 times; 0,1 -> le=1; 2..10 -> le=10; 11..19 -> +Inf.
  EXPECT_THAT(histogram->BucketCounts(),
              ElementsAre(2 * 1000 * kThreads, 9 * 1000 * kThreads, 9 * 1000 * kThreads));
  EXPECT_EQ(histogram->Sum(), 190.0 * 1000 * kThreads);
}

TEST(MetricsTest, ExpositionMatchesGoldenText) {
  MetricsRegistry registry;
  Counter* puts = *registry.GetCounter("strata_requests_total", "Requests handled.\nBy op.",
                                       {{"op", "put"}, {"store", "contexts"}});
  Counter* gets = *registry.GetCounter("strata_requests_total", "Requests handled.\nBy op.",
                                       {{"store", "a\"b\\c\nd"}, {"op", "get"}});
  Gauge* depth = *registry.GetGauge("strata_queue_depth", "Queued items.");
  Histogram* latency = *registry.GetHistogram("strata_latency_seconds", "Latency of \\ things.",
                                              {0.25, 1, 2.5}, {{"op", "put"}});
  puts->Increment(3);
  gets->Increment();
  depth->Set(-2.5);
  for (double v : {0.125, 0.25, 0.5, 3.0, 100.0}) latency->Observe(v);

  const std::string expected =
      "# HELP strata_latency_seconds Latency of \\\\ things.\n"
      "# TYPE strata_latency_seconds histogram\n"
      "strata_latency_seconds_bucket{op=\"put\",le=\"0.25\"} 2\n"
      "strata_latency_seconds_bucket{op=\"put\",le=\"1\"} 3\n"
      "strata_latency_seconds_bucket{op=\"put\",le=\"2.5\"} 3\n"
      "strata_latency_seconds_bucket{op=\"put\",le=\"+Inf\"} 5\n"
      "strata_latency_seconds_sum{op=\"put\"} 103.875\n"
      "strata_latency_seconds_count{op=\"put\"} 5\n"
      "# HELP strata_queue_depth Queued items.\n"
      "# TYPE strata_queue_depth gauge\n"
      "strata_queue_depth -2.5\n"
      "# HELP strata_requests_total Requests handled.\\nBy op.\n"
      "# TYPE strata_requests_total counter\n"
      "strata_requests_total{store=\"a\\\"b\\\\c\\nd\",op=\"get\"} 1\n"
      "strata_requests_total{op=\"put\",store=\"contexts\"} 3\n";
  EXPECT_EQ(registry.ExposePrometheus(), expected);
}

TEST(MetricsTest, EmptyRegistryExposesNothing) {
  MetricsRegistry registry;
  EXPECT_EQ(registry.ExposePrometheus(), "");
}

TEST(MetricsTest, NonFiniteGaugeValuesUsePrometheusSpelling) {
  MetricsRegistry registry;
  Gauge* up = *registry.GetGauge("g", "G.", {{"k", "up"}});
  Gauge* down = *registry.GetGauge("g", "G.", {{"k", "down"}});
  Gauge* nan = *registry.GetGauge("g", "G.", {{"k", "nan"}});
  up->Set(std::numeric_limits<double>::infinity());
  down->Set(-std::numeric_limits<double>::infinity());
  nan->Set(std::nan(""));
  const std::string text = registry.ExposePrometheus();
  EXPECT_THAT(text, HasSubstr("g{k=\"up\"} +Inf\n"));
  EXPECT_THAT(text, HasSubstr("g{k=\"down\"} -Inf\n"));
  EXPECT_THAT(text, HasSubstr("g{k=\"nan\"} NaN\n"));
}

TEST(MetricsTest, HistogramBucketsAreCumulativeAndBoundsInclusive) {
  MetricsRegistry registry;
  Histogram* histogram = *registry.GetHistogram("h", "H.", {1, 2, 3});
  for (double v : {0.5, 1.0, 1.5, 2.0, 2.0, 7.0, std::nan("")}) histogram->Observe(v);
  // Per bucket: <=1: {0.5, 1}, <=2: {1.5, 2, 2}, <=3: none, +Inf: {7, NaN}.
  EXPECT_THAT(histogram->BucketCounts(), ElementsAre(2, 3, 0, 2));
  EXPECT_EQ(histogram->Count(), 7u);
  EXPECT_TRUE(std::isnan(histogram->Sum()));
  const std::string text = registry.ExposePrometheus();
  EXPECT_THAT(text, HasSubstr("h_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 5\n"
                              "h_bucket{le=\"3\"} 5\nh_bucket{le=\"+Inf\"} 7\n"
                              "h_sum NaN\nh_count 7\n"));
}

TEST(MetricsTest, SameNameAndLabelSetReturnsSameObject) {
  MetricsRegistry registry;
  Counter* a = *registry.GetCounter("c", "C.", {{"x", "1"}, {"y", "2"}});
  Counter* reordered = *registry.GetCounter("c", "C.", {{"y", "2"}, {"x", "1"}});
  Counter* other = *registry.GetCounter("c", "C.", {{"x", "1"}, {"y", "3"}});
  Counter* unlabelled = *registry.GetCounter("c", "C.");
  EXPECT_EQ(a, reordered);
  EXPECT_NE(a, other);
  EXPECT_NE(a, unlabelled);
  EXPECT_EQ(unlabelled, *registry.GetCounter("c", "C."));
  Histogram* h = *registry.GetHistogram("h", "H.", {1, 2});
  EXPECT_EQ(h, *registry.GetHistogram("h", "H.", {1, 2, std::numeric_limits<double>::infinity()}));
}

TEST(MetricsTest, ReregisteringWithDifferentTypeHelpOrBoundsIsAlreadyExists) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.GetCounter("m", "M.").ok());
  Result<Gauge*> as_gauge = registry.GetGauge("m", "M.");
  ASSERT_FALSE(as_gauge.ok());
  EXPECT_TRUE(as_gauge.status().IsAlreadyExists());
  EXPECT_THAT(as_gauge.status().message(),
              HasSubstr("already registered as a counter, not a gauge"));
  EXPECT_TRUE(registry.GetHistogram("m", "M.", {1}).status().IsAlreadyExists());

  Result<Counter*> other_help = registry.GetCounter("m", "Other.", {{"k", "v"}});
  EXPECT_TRUE(other_help.status().IsAlreadyExists());
  EXPECT_THAT(other_help.status().message(), HasSubstr("\"Other.\""));

  ASSERT_TRUE(registry.GetHistogram("h", "H.", {1, 2}).ok());
  Result<Histogram*> other_bounds = registry.GetHistogram("h", "H.", {1, 5});
  EXPECT_TRUE(other_bounds.status().IsAlreadyExists());
  EXPECT_THAT(other_bounds.status().message(), HasSubstr("[1, 2], not [1, 5]"));
}

TEST(MetricsTest, InvalidMetricNamesAreRejected) {
  MetricsRegistry registry;
  for (const char* name : {"", "9lives", "has-dash", "has space", "é"}) {
    Result<Counter*> r = registry.GetCounter(name, "X.");
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("\"") + name + "\""));
  }
  for (const char* name : {"a", "_private", ":colon:ok", "strata_put_seconds_total9"}) {
    EXPECT_TRUE(registry.GetCounter(name, "X.").ok()) << name;
  }
  EXPECT_EQ(registry.ExposePrometheus().find("9lives"), std::string::npos);
}

TEST(MetricsTest, InvalidOrReservedLabelNamesAreRejected) {
  MetricsRegistry registry;
  const MetricLabels bad[] = {
      {{"1a", "v"}}, {{"a-b", "v"}},      {{"a:b", "v"}},
      {{"", "v"}},   {{"__name__", "v"}}, {{"k", "1"}, {"k", "2"}},
  };
  for (const MetricLabels& labels : bad) {
    Result<Counter*> r = registry.GetCounter("c", "C.", labels);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << labels[0].first;
  }
  EXPECT_THAT(registry.GetCounter("c", "C.", {{"k", "1"}, {"k", "2"}}).status().message(),
              HasSubstr("label \"k\" appears twice"));
  EXPECT_TRUE(registry.GetCounter("c", "C.", {{"le", "v"}}).ok());  // Only reserved on histograms.
  Result<Histogram*> h = registry.GetHistogram("h", "H.", {1}, {{"le", "v"}});
  EXPECT_TRUE(h.status().IsInvalidArgument());
  EXPECT_THAT(h.status().message(), HasSubstr("\"le\" is reserved"));
}

TEST(MetricsTest, HistogramBoundsMustBeFiniteAndStrictlyIncreasing) {
  MetricsRegistry registry;
  const double inf = std::numeric_limits<double>::infinity();
  Result<Histogram*> decreasing = registry.GetHistogram("h1", "H.", {1, 0.5});
  EXPECT_TRUE(decreasing.status().IsInvalidArgument());
  EXPECT_THAT(decreasing.status().message(), HasSubstr("bound 0.5 at index 1"));
  EXPECT_TRUE(registry.GetHistogram("h2", "H.", {1, 1}).status().IsInvalidArgument());
  EXPECT_TRUE(registry.GetHistogram("h3", "H.", {std::nan(""), 1}).status().IsInvalidArgument());
  EXPECT_TRUE(registry.GetHistogram("h4", "H.", {-inf, 1}).status().IsInvalidArgument());
  EXPECT_TRUE(registry.GetHistogram("h5", "H.", {1, inf, 2}).status().IsInvalidArgument());
  Result<Histogram*> trailing_inf = registry.GetHistogram("h6", "H.", {1, 2, inf});
  ASSERT_TRUE(trailing_inf.ok());
  EXPECT_THAT((*trailing_inf)->upper_bounds(), ElementsAre(1, 2));
  Result<Histogram*> only_inf = registry.GetHistogram("h7", "H.", {});
  ASSERT_TRUE(only_inf.ok());
  (*only_inf)->Observe(3);
  EXPECT_THAT(registry.ExposePrometheus(), HasSubstr("h7_bucket{le=\"+Inf\"} 1\n"));
}

TEST(MetricsTest, BucketHelpersProduceExpectedBounds) {
  EXPECT_THAT(ExponentialBuckets(1, 2, 4), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(DefaultLatencyBuckets(),
              ElementsAre(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10));
  MetricsRegistry registry;
  EXPECT_FALSE(registry.GetHistogram("bad", "B.", ExponentialBuckets(1, 1, 3)).ok());
}

TEST(MetricsTest, DefaultMetricsIsOneProcessWideRegistry) {
  EXPECT_EQ(&DefaultMetrics(), &DefaultMetrics());
  Counter* counter = *DefaultMetrics().GetCounter("metrics_test_default_total", "Test.");
  const uint64_t before = counter->Value();  // Non-zero when the test is repeated.
  counter->Increment(5);
  EXPECT_EQ(*DefaultMetrics().GetCounter("metrics_test_default_total", "Test."), counter);
  EXPECT_THAT(DefaultMetrics().ExposePrometheus(),
              HasSubstr("metrics_test_default_total " + std::to_string(before + 5) + "\n"));
}

TEST(ScopedTimerTest, ObservesElapsedSecondsOnTheGivenClock) {
  MetricsRegistry registry;
  Histogram* histogram = *registry.GetHistogram("op_seconds", "Op.", {1, 2});
  ManualClock clock(0);
  {
    ScopedTimer timer(histogram, clock);
    clock.Advance(std::chrono::milliseconds(1500));
    EXPECT_DOUBLE_EQ(timer.ElapsedSeconds(), 1.5);
  }
  EXPECT_EQ(histogram->Count(), 1u);
  EXPECT_DOUBLE_EQ(histogram->Sum(), 1.5);
  EXPECT_THAT(histogram->BucketCounts(), ElementsAre(0, 1, 0));
}

TEST(ScopedTimerTest, CancelledOrNullTimerObservesNothing) {
  MetricsRegistry registry;
  Histogram* histogram = *registry.GetHistogram("op_seconds", "Op.", {1});
  ManualClock clock(0);
  {
    ScopedTimer timer(histogram, clock);
    clock.Advance(std::chrono::seconds(1));
    timer.Cancel();
  }
  { ScopedTimer no_histogram(nullptr, clock); }
  { ScopedTimer real_clock(nullptr); }
  EXPECT_EQ(histogram->Count(), 0u);
}

}  // namespace
}  // namespace strata
