// ComputeStatistics: exact null and row counts plus min / max bounds of an array's non-null
// values, in the Scalar kinds pruning compares literals with.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "strata/expr.h"

namespace strata::expr {
namespace {

// Rows of `a` to include: valid and, when `used` is given, marked in it.
struct RowFilter {
  const Array& a;
  const std::vector<bool>* used;
  bool operator()(int64_t i) const { return !a.IsNull(i) && (used == nullptr || (*used)[i]); }
};

template <typename T, typename Make>
void IntegerMinMax(const Array& a, const RowFilter& keep, Make make, ColumnStatistics* out) {
  const T* values = a.values<T>();
  bool any = false;
  T lo = std::numeric_limits<T>::max();
  T hi = std::numeric_limits<T>::lowest();
  for (int64_t i = 0; i < a.length(); ++i) {
    if (!keep(i)) continue;
    any = true;
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  if (any) {
    out->min = make(lo);
    out->max = make(hi);
  }
}

// NaN orders above every number: max is NaN if any value is, min only if all are.
template <typename T>
void FloatMinMax(const Array& a, const RowFilter& keep, ColumnStatistics* out) {
  const T* values = a.values<T>();
  bool any = false;
  bool any_number = false;
  bool any_nan = false;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < a.length(); ++i) {
    if (!keep(i)) continue;
    any = true;
    const double v = static_cast<double>(values[i]);
    if (std::isnan(v)) {
      any_nan = true;
      continue;
    }
    any_number = true;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!any) return;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out->min = Scalar::Double(any_number ? lo : nan);
  out->max = Scalar::Double(any_nan ? nan : hi);
}

void StringMinMax(const Array& a, const RowFilter& keep, ColumnStatistics* out) {
  bool any = false;
  std::string_view lo;
  std::string_view hi;
  for (int64_t i = 0; i < a.length(); ++i) {
    if (!keep(i)) continue;
    const std::string_view v = a.StringValue(i);
    if (!any || v < lo) lo = v;
    if (!any || v > hi) hi = v;
    any = true;
  }
  if (!any) return;
  // A prefix is still a lower bound.
  out->min = Scalar::String(std::string(lo.substr(0, kMaxStatisticsStringBytes)));
  if (hi.size() <= kMaxStatisticsStringBytes) {
    out->max = Scalar::String(std::string(hi));
    return;
  }
  // A prefix with its last non-0xFF byte incremented (and the bytes after it dropped) is above
  // every string that starts with the prefix, so it is still an upper bound.
  std::string bound(hi.substr(0, kMaxStatisticsStringBytes));
  while (!bound.empty() && static_cast<unsigned char>(bound.back()) == 0xFF) bound.pop_back();
  if (bound.empty()) return;  // no short upper bound exists
  bound.back() = static_cast<char>(static_cast<unsigned char>(bound.back()) + 1);
  out->max = Scalar::String(std::move(bound));
}

void MinMax(const Array& a, const RowFilter& keep, ColumnStatistics* out) {
  const auto signed_scalar = [](int64_t v) { return Scalar::Int64(v); };
  const auto unsigned_scalar = [](uint64_t v) { return Scalar::UInt64(v); };
  switch (a.type_id()) {
    case TypeId::kBool: {
      bool any_true = false;
      bool any_false = false;
      for (int64_t i = 0; i < a.length(); ++i) {
        if (keep(i)) (a.BoolValue(i) ? any_true : any_false) = true;
      }
      if (any_true || any_false) {
        out->min = Scalar::Bool(!any_false);
        out->max = Scalar::Bool(any_true);
      }
      return;
    }
    case TypeId::kInt8:
      return IntegerMinMax<int8_t>(a, keep, signed_scalar, out);
    case TypeId::kInt16:
      return IntegerMinMax<int16_t>(a, keep, signed_scalar, out);
    case TypeId::kInt32:
      return IntegerMinMax<int32_t>(a, keep, signed_scalar, out);
    case TypeId::kInt64:
      return IntegerMinMax<int64_t>(a, keep, signed_scalar, out);
    case TypeId::kTimestamp:
      return IntegerMinMax<int64_t>(
          a, keep, [](int64_t v) { return Scalar::Timestamp(v); }, out);
    case TypeId::kUInt8:
      return IntegerMinMax<uint8_t>(a, keep, unsigned_scalar, out);
    case TypeId::kUInt16:
      return IntegerMinMax<uint16_t>(a, keep, unsigned_scalar, out);
    case TypeId::kUInt32:
      return IntegerMinMax<uint32_t>(a, keep, unsigned_scalar, out);
    case TypeId::kUInt64:
      return IntegerMinMax<uint64_t>(a, keep, unsigned_scalar, out);
    case TypeId::kFloat32:
      return FloatMinMax<float>(a, keep, out);
    case TypeId::kFloat64:
      return FloatMinMax<double>(a, keep, out);
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return StringMinMax(a, keep, out);
    default:
      return;  // counts only
  }
}

}  // namespace

Result<ColumnStatistics> ComputeStatistics(const Array& array) {
  ColumnStatistics stats;
  stats.row_count = array.length();
  if (array.type_id() != TypeId::kDictionary) {
    stats.null_count = array.null_count();
    MinMax(array, RowFilter{array, nullptr}, &stats);
    return stats;
  }
  // Bounds over the entries that rows use; a row whose entry is null is null.
  const Array dictionary = array.dictionary();
  std::vector<bool> used(static_cast<size_t>(dictionary.length()), false);
  for (int64_t i = 0; i < array.length(); ++i) {
    if (array.IsNull(i)) {
      ++stats.null_count;
      continue;
    }
    const int64_t k = array.DictionaryIndex(i);
    if (k < 0 || k >= dictionary.length()) {
      return Status::Corruption(fmt::format(
          "dictionary index {} at row {} is outside its {} entries", k, i, dictionary.length()));
    }
    if (dictionary.IsNull(k)) {
      ++stats.null_count;
    } else {
      used[k] = true;
    }
  }
  MinMax(dictionary, RowFilter{dictionary, &used}, &stats);
  return stats;
}

}  // namespace strata::expr
