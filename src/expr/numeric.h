// Exact three-way comparisons across int64, uint64 and double, used by evaluation, pruning and
// scalar comparisons alike so that they agree. NaN orders above every number, equal to NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "strata/expr.h"

namespace strata::expr::internal {

inline int Cmp3(int64_t a, int64_t b) { return (a > b) - (a < b); }
inline int Cmp3(uint64_t a, uint64_t b) { return (a > b) - (a < b); }
inline int Cmp3(int64_t a, uint64_t b) { return a < 0 ? -1 : Cmp3(static_cast<uint64_t>(a), b); }
inline int Cmp3(uint64_t a, int64_t b) { return -Cmp3(b, a); }
inline int Cmp3(double a, double b) {
  if (std::isnan(a)) return std::isnan(b) ? 0 : 1;
  if (std::isnan(b)) return -1;
  return (a > b) - (a < b);
}
inline int Cmp3(int64_t a, double b) {
  if (std::isnan(b) || b >= 9223372036854775808.0) return -1;  // 2^63
  if (b < -9223372036854775808.0) return 1;
  const double whole = std::trunc(b);  // fits in int64 now
  const auto whole_int = static_cast<int64_t>(whole);
  if (a != whole_int) return a < whole_int ? -1 : 1;
  const double fraction = b - whole;  // exact
  return (fraction < 0) - (fraction > 0);
}
inline int Cmp3(double a, int64_t b) { return -Cmp3(b, a); }
inline int Cmp3(uint64_t a, double b) {
  if (std::isnan(b) || b >= 18446744073709551616.0) return -1;  // 2^64
  if (b < 0) return 1;
  const double whole = std::trunc(b);
  const auto whole_int = static_cast<uint64_t>(whole);
  if (a != whole_int) return a < whole_int ? -1 : 1;
  return b > whole ? -1 : 0;
}
inline int Cmp3(double a, uint64_t b) { return -Cmp3(b, a); }

// Whether three-way result `c` satisfies `op`.
constexpr bool OpHolds(CompareOp op, int c) {
  switch (op) {
    case CompareOp::kEq:
      return c == 0;
    case CompareOp::kNe:
      return c != 0;
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    case CompareOp::kGe:
      return c >= 0;
  }
  return false;
}

// `a op b` written as `b Flip(op) a`.
inline CompareOp FlipOp(CompareOp op) {
  switch (op) {
    case CompareOp::kLt:
      return CompareOp::kGt;
    case CompareOp::kLe:
      return CompareOp::kGe;
    case CompareOp::kGt:
      return CompareOp::kLt;
    case CompareOp::kGe:
      return CompareOp::kLe;
    default:
      return op;
  }
}

// Calls fn(std::integral_constant<CompareOp, op>()), so kernels get the operator at compile
// time and their inner loops have no switch.
template <typename Fn>
void DispatchOp(CompareOp op, Fn&& fn) {
  switch (op) {
    case CompareOp::kEq:
      return fn(std::integral_constant<CompareOp, CompareOp::kEq>());
    case CompareOp::kNe:
      return fn(std::integral_constant<CompareOp, CompareOp::kNe>());
    case CompareOp::kLt:
      return fn(std::integral_constant<CompareOp, CompareOp::kLt>());
    case CompareOp::kLe:
      return fn(std::integral_constant<CompareOp, CompareOp::kLe>());
    case CompareOp::kGt:
      return fn(std::integral_constant<CompareOp, CompareOp::kGt>());
    case CompareOp::kGe:
      return fn(std::integral_constant<CompareOp, CompareOp::kGe>());
  }
}

}  // namespace strata::expr::internal
