// The SIMD distance kernel (vector_kernel.h) against a plain scalar loop written here: every
// metric, dimensions around and between the lane counts, unaligned rows, NaN, infinities and
// zero vectors, and the top-k it implies.
#include "store/vector_kernel.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace strata::store {
namespace {

constexpr DistanceMetric kMetrics[] = {DistanceMetric::kL2, DistanceMetric::kCosine,
                                       DistanceMetric::kDot};

// Runs `body` once per SIMD target this build compiled and this CPU runs (AVX-512, AVX2, SSE4,
// scalar...), so every dispatched path is tested on the machine that runs the tests.
template <typename F>
void ForEachTarget(F&& body) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);  // back to what the CPU supports
}

// The reference's definitions, one element at a time in double.
double ScalarDistance(DistanceMetric metric, const float* q, const float* x, size_t dim) {
  double dot = 0;
  double qq = 0;
  double xx = 0;
  double l2 = 0;
  for (size_t i = 0; i < dim; ++i) {
    const double a = q[i];
    const double b = x[i];
    dot += a * b;
    qq += a * a;
    xx += b * b;
    l2 += (a - b) * (a - b);
  }
  switch (metric) {
    case DistanceMetric::kL2:
      return std::sqrt(l2);
    case DistanceMetric::kCosine:
      return qq == 0 || xx == 0 ? 1.0 : 1.0 - dot / (std::sqrt(qq) * std::sqrt(xx));
    case DistanceMetric::kDot:
      return -dot;
  }
  return 0;
}

// Near enough for sums of the same terms added in another order.
void ExpectClose(double got, double want, size_t dim, const std::string& where) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << where << ": got " << got;
    return;
  }
  const double tolerance = 1e-12 * static_cast<double>(dim + 1) * std::max(1.0, std::abs(want));
  EXPECT_NEAR(got, want, tolerance) << where;
}

TEST(VectorKernelTest, MatchesScalarLoopForEveryMetricAndDimension) {
  ForEachTarget([] {
    std::mt19937 rng(20261204);
    std::uniform_real_distribution<float> value(-1, 1);
    for (size_t dim : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 100, 1536, 1537}) {
      constexpr size_t kRows = 23;
      // One spare float in front, so every row but possibly the first is misaligned.
      std::vector<float> storage(kRows * dim + 1);
      for (float& x : storage) x = value(rng);
      const float* rows = storage.data() + 1;
      std::vector<float> query(dim);
      for (float& x : query) x = value(rng);
      for (DistanceMetric metric : kMetrics) {
        std::vector<double> got(kRows, -1);
        VectorDistances(metric, query, rows, kRows, got.data());
        for (size_t r = 0; r < kRows; ++r) {
          ExpectClose(got[r], ScalarDistance(metric, query.data(), rows + r * dim, dim), dim,
                      std::string(DistanceMetricName(metric)) + " dim " + std::to_string(dim) +
                          " row " + std::to_string(r));
        }
      }
    }
  });
}

TEST(VectorKernelTest, NanInfinityAndZeroVectorsFollowTheDefinition) {
  ForEachTarget([] {
    constexpr size_t kDim = 19;  // a tail after the vector loop on every target
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> rows(5 * kDim, 0.25F);
    rows[0 * kDim + 3] = nan;         // row 0: NaN inside the vector loop
    rows[1 * kDim + kDim - 1] = nan;  // row 1: NaN in the tail
    rows[2 * kDim + 5] = inf;         // row 2: infinite
    std::fill(rows.begin() + 3 * kDim, rows.begin() + 4 * kDim, 0.0F);  // row 3: zero
    std::vector<float> query(kDim, -0.5F);
    std::vector<float> zero(kDim, 0.0F);
    for (DistanceMetric metric : kMetrics) {
      for (const std::vector<float>* q : {&query, &zero}) {
        std::vector<double> got(5);
        VectorDistances(metric, *q, rows.data(), 5, got.data());
        for (size_t r = 0; r < 5; ++r) {
          const double want = ScalarDistance(metric, q->data(), rows.data() + r * kDim, kDim);
          const std::string where = std::string(DistanceMetricName(metric)) + " row " +
                                    std::to_string(r) + (q == &zero ? " zero query" : "");
          if (std::isinf(want)) {
            EXPECT_EQ(got[r], want) << where;
          } else {
            ExpectClose(got[r], want, kDim, where);
          }
        }
      }
    }
    // The cases above that the definition pins to a constant.
    std::vector<double> cosine(5);
    VectorDistances(DistanceMetric::kCosine, zero, rows.data(), 5, cosine.data());
    EXPECT_EQ(cosine[0], 1.0);  // a zero query wins over a NaN in the vector
    VectorDistances(DistanceMetric::kCosine, query, rows.data(), 5, cosine.data());
    EXPECT_TRUE(std::isnan(cosine[0]));
    EXPECT_TRUE(std::isnan(cosine[1]));
    EXPECT_EQ(cosine[3], 1.0);
  });
}

// The order that exact search returns (distance ascending, ties by position) is the scalar
// loop's on random data, for the top 10 of many rows.
TEST(VectorKernelTest, TopKEqualsScalarTopK) {
  ForEachTarget([] {
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> value(-1, 1);
    for (size_t dim : {3, 16, 1536}) {
      const size_t rows = dim == 1536 ? 1000 : 5000;
      std::vector<float> data(rows * dim);
      for (float& x : data) x = value(rng);
      // Exact duplicates: equal distances that only the tie rule orders.
      std::copy(data.begin(), data.begin() + static_cast<ptrdiff_t>(dim),
                data.begin() + static_cast<ptrdiff_t>(7 * dim));
      std::vector<float> query(data.begin(), data.begin() + static_cast<ptrdiff_t>(dim));
      for (float& x : query) x += 0.01F;
      for (DistanceMetric metric : kMetrics) {
        std::vector<double> got(rows);
        VectorDistances(metric, query, data.data(), rows, got.data());
        std::vector<double> want(rows);
        for (size_t r = 0; r < rows; ++r) {
          want[r] = ScalarDistance(metric, query.data(), data.data() + r * dim, dim);
        }
        auto top = [](const std::vector<double>& d) {
          std::vector<size_t> order(d.size());
          std::iota(order.begin(), order.end(), size_t{0});
          std::partial_sort(order.begin(), order.begin() + 10, order.end(),
                            [&](size_t a, size_t b) { return d[a] != d[b] ? d[a] < d[b] : a < b; });
          order.resize(10);
          return order;
        };
        EXPECT_EQ(top(got), top(want)) << DistanceMetricName(metric) << " dim " << dim;
        EXPECT_EQ(got[0], got[7]) << "duplicates score alike";
      }
    }
  });
}

TEST(VectorKernelTest, NamesTheDispatchedTarget) {
  const std::string target = VectorKernelTarget();
  EXPECT_FALSE(target.empty());
}

}  // namespace
}  // namespace strata::store
