// The exact-search distance kernel (vector_kernel.h), compiled once per SIMD target by
// Highway's foreach_target and dispatched at run time to the best one the CPU runs.
//
// Sums are kept in double, as Distance() keeps them, so the kernel ranks records as the
// scalar definition does: float32 lanes are widened to double before any arithmetic. Exact
// search reads every vector once per query, so it is bound by memory bandwidth, not by the
// width of the arithmetic; the wider accumulation costs little and keeps ties honest.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "store/vector_kernel.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the includes below must follow it.
#include <hwy/highway.h>

#include <cmath>
#include <cstddef>

#include "store/vector_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace strata::store {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Metric codes passed through the dispatch table (an enum class would need a cast anyway).
constexpr int kL2 = 0;
constexpr int kCosine = 1;
constexpr int kDot = 2;

// sum over i of (x[i] - q[i])^2.
HWY_INLINE double SquaredL2(const double* HWY_RESTRICT q, const float* HWY_RESTRICT x, size_t dim) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const size_t n = hn::Lanes(d);
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  auto a2 = hn::Zero(d);
  auto a3 = hn::Zero(d);
  size_t i = 0;
  // Four independent accumulators hide the latency of the adds.
  for (; i + 4 * n <= dim; i += 4 * n) {
    const auto d0 = hn::Sub(hn::PromoteTo(d, hn::LoadU(df, x + i)), hn::LoadU(d, q + i));
    const auto d1 = hn::Sub(hn::PromoteTo(d, hn::LoadU(df, x + i + n)), hn::LoadU(d, q + i + n));
    const auto d2 =
        hn::Sub(hn::PromoteTo(d, hn::LoadU(df, x + i + 2 * n)), hn::LoadU(d, q + i + 2 * n));
    const auto d3 =
        hn::Sub(hn::PromoteTo(d, hn::LoadU(df, x + i + 3 * n)), hn::LoadU(d, q + i + 3 * n));
    a0 = hn::MulAdd(d0, d0, a0);
    a1 = hn::MulAdd(d1, d1, a1);
    a2 = hn::MulAdd(d2, d2, a2);
    a3 = hn::MulAdd(d3, d3, a3);
  }
  for (; i + n <= dim; i += n) {
    const auto d0 = hn::Sub(hn::PromoteTo(d, hn::LoadU(df, x + i)), hn::LoadU(d, q + i));
    a0 = hn::MulAdd(d0, d0, a0);
  }
  double sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < dim; ++i) {
    const double t = static_cast<double>(x[i]) - q[i];
    sum += t * t;
  }
  return sum;
}

// sum over i of x[i] * q[i], and (when `norm` is set) of x[i]^2 into *norm.
template <bool kNorm>
HWY_INLINE double DotAndNorm(const double* HWY_RESTRICT q, const float* HWY_RESTRICT x, size_t dim,
                             double* norm) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const size_t n = hn::Lanes(d);
  auto p0 = hn::Zero(d);
  auto p1 = hn::Zero(d);
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * n <= dim; i += 2 * n) {
    const auto x0 = hn::PromoteTo(d, hn::LoadU(df, x + i));
    const auto x1 = hn::PromoteTo(d, hn::LoadU(df, x + i + n));
    p0 = hn::MulAdd(x0, hn::LoadU(d, q + i), p0);
    p1 = hn::MulAdd(x1, hn::LoadU(d, q + i + n), p1);
    if constexpr (kNorm) {
      s0 = hn::MulAdd(x0, x0, s0);
      s1 = hn::MulAdd(x1, x1, s1);
    }
  }
  for (; i + n <= dim; i += n) {
    const auto x0 = hn::PromoteTo(d, hn::LoadU(df, x + i));
    p0 = hn::MulAdd(x0, hn::LoadU(d, q + i), p0);
    if constexpr (kNorm) s0 = hn::MulAdd(x0, x0, s0);
  }
  double dot = hn::GetLane(hn::SumOfLanes(d, hn::Add(p0, p1)));
  double squares = 0;
  if constexpr (kNorm) squares = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < dim; ++i) {
    const double y = x[i];
    dot += y * q[i];
    squares += y * y;
  }
  if constexpr (kNorm) *norm = squares;
  return dot;
}

// `q`: the query widened to double; `query_norm`: its sum of squares (cosine only).
void Distances(int metric, const double* HWY_RESTRICT q, double query_norm,
               const float* HWY_RESTRICT vectors, size_t rows, size_t dim,
               double* HWY_RESTRICT out) {
  for (size_t r = 0; r < rows; ++r) {
    const float* x = vectors + r * dim;
    if (metric == kL2) {
      out[r] = std::sqrt(SquaredL2(q, x, dim));
    } else if (metric == kDot) {
      out[r] = -DotAndNorm<false>(q, x, dim, nullptr);
    } else {
      double norm = 0;
      const double dot = DotAndNorm<true>(q, x, dim, &norm);
      out[r] = query_norm == 0 || norm == 0 ? 1.0
                                            : 1.0 - dot / (std::sqrt(query_norm) * std::sqrt(norm));
    }
  }
}

int64_t Target() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace strata::store
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

namespace strata::store {

HWY_EXPORT(Distances);
HWY_EXPORT(Target);

void VectorDistances(DistanceMetric metric, std::span<const float> query, const float* vectors,
                     size_t rows, double* out) {
  if (rows == 0) return;
  std::vector<double> widened(query.begin(), query.end());
  double query_norm = 0;
  int code = HWY_NAMESPACE::kL2;
  switch (metric) {
    case DistanceMetric::kL2:
      code = HWY_NAMESPACE::kL2;
      break;
    case DistanceMetric::kCosine:
      code = HWY_NAMESPACE::kCosine;
      // In Distance()'s order, so a zero query is recognised exactly as there.
      for (const double x : widened) query_norm += x * x;
      break;
    case DistanceMetric::kDot:
      code = HWY_NAMESPACE::kDot;
      break;
  }
  HWY_DYNAMIC_DISPATCH(Distances)
  (code, widened.data(), query_norm, vectors, rows, query.size(), out);
}

const char* VectorKernelTarget() {
  return hwy::TargetName(static_cast<uint32_t>(HWY_DYNAMIC_DISPATCH(Target)()));
}

}  // namespace strata::store
#endif  // HWY_ONCE
