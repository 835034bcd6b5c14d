// Leaf kernels: one predicate over one array, as tight loops over the raw buffers, producing
// 64 rows per word. Dictionary arrays are evaluated once per entry and mapped through indices.
#include <fmt/format.h>

#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "expr/evaluator.h"
#include "expr/numeric.h"

namespace strata::expr::internal {

std::vector<uint64_t> ValidityWords(const Array& array) {
  const ArrayData& d = *array.data();
  if (d.null_count == 0 || d.buffers.empty() || d.buffers[0].is_null()) return {};
  const int64_t n = d.length;
  std::vector<uint64_t> words(WordCount(n));
  for (int64_t w = 0; w < static_cast<int64_t>(words.size()); ++w) {
    words[w] = LoadBits(d.buffers[0].data(), d.offset + w * 64, std::min<int64_t>(64, n - w * 64));
  }
  return words;
}

namespace {

// Lists of this many values or fewer are scanned; longer ones are searched.
constexpr size_t kLinearScanLimit = 16;

// Calls fn(values, L{}) with the array's typed values and the type literals of its domain are
// held in (int64_t, uint64_t or double). False for non-numeric arrays.
template <typename Fn>
bool VisitNumeric(const Array& a, Fn&& fn) {
  switch (a.type_id()) {
    case TypeId::kInt8:
      return fn(a.values<int8_t>(), int64_t{}), true;
    case TypeId::kInt16:
      return fn(a.values<int16_t>(), int64_t{}), true;
    case TypeId::kInt32:
      return fn(a.values<int32_t>(), int64_t{}), true;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return fn(a.values<int64_t>(), int64_t{}), true;
    case TypeId::kUInt8:
      return fn(a.values<uint8_t>(), uint64_t{}), true;
    case TypeId::kUInt16:
      return fn(a.values<uint16_t>(), uint64_t{}), true;
    case TypeId::kUInt32:
      return fn(a.values<uint32_t>(), uint64_t{}), true;
    case TypeId::kUInt64:
      return fn(a.values<uint64_t>(), uint64_t{}), true;
    case TypeId::kFloat32:
      return fn(a.values<float>(), double{}), true;
    case TypeId::kFloat64:
      return fn(a.values<double>(), double{}), true;
    default:
      return false;
  }
}

// Calls fn(offsets, bytes) for utf8 / binary (int32 offsets) and the large variants. False for
// other arrays.
template <typename Fn>
bool VisitStrings(const Array& a, Fn&& fn) {
  const auto& buffers = a.data()->buffers;
  switch (a.type_id()) {
    case TypeId::kUtf8:
    case TypeId::kBinary:
      return fn(buffers[1].data_as<int32_t>() + a.offset(), buffers[2].data_as<char>()), true;
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary:
      return fn(buffers[1].data_as<int64_t>() + a.offset(), buffers[2].data_as<char>()), true;
    default:
      return false;
  }
}

template <typename O>
std::string_view StringAt(const O* offsets, const char* bytes, int64_t i) {
  return {bytes + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i])};
}

template <typename L>
L LiteralAs(const Scalar& s) {
  if constexpr (std::is_same_v<L, int64_t>) {
    return s.int64_value();  // kInt64 or kTimestamp
  } else if constexpr (std::is_same_v<L, uint64_t>) {
    return s.uint64_value();
  } else {
    return s.double_value();
  }
}

// Words of the bool array's values.
std::vector<uint64_t> BoolWords(const Array& a) {
  const int64_t n = a.length();
  std::vector<uint64_t> words(WordCount(n));
  const uint8_t* bits = a.data()->buffers[1].data();
  for (int64_t w = 0; w < static_cast<int64_t>(words.size()); ++w) {
    words[w] = LoadBits(bits, a.offset() + w * 64, std::min<int64_t>(64, n - w * 64));
  }
  return words;
}

Status Unsupported(const BoundNode& node, const Array& a) {
  return Status::Internal(
      fmt::format("no kernel for column '{}' of type {}", node.column.name, a.type()->ToString()));
}

Status FillCompare(const BoundNode& node, const Array& a, uint64_t* out) {
  const int64_t n = a.length();
  if (a.type_id() == TypeId::kBool) {
    const bool lit = node.literal.bool_value();
    const std::vector<uint64_t> v = BoolWords(a);
    for (size_t w = 0; w < v.size(); ++w) {
      const uint64_t all = ~uint64_t{0};
      switch (node.op) {  // false < true
        case CompareOp::kEq:
          out[w] = lit ? v[w] : ~v[w];
          break;
        case CompareOp::kNe:
          out[w] = lit ? ~v[w] : v[w];
          break;
        case CompareOp::kLt:
          out[w] = lit ? ~v[w] : 0;
          break;
        case CompareOp::kLe:
          out[w] = lit ? all : ~v[w];
          break;
        case CompareOp::kGt:
          out[w] = lit ? 0 : v[w];
          break;
        case CompareOp::kGe:
          out[w] = lit ? v[w] : all;
          break;
      }
    }
    return Status::OK();
  }
  const bool numeric = VisitNumeric(a, [&](const auto* values, auto literal_tag) {
    using L = decltype(literal_tag);
    const L lit = LiteralAs<L>(node.literal);
    DispatchOp(node.op, [&](auto op_tag) {
      constexpr CompareOp kOp = decltype(op_tag)::value;
      FillWords(n, out,
                [&](int64_t i) { return OpHolds(kOp, Cmp3(static_cast<L>(values[i]), lit)); });
    });
  });
  if (numeric) return Status::OK();
  const std::string_view lit = node.literal.string_value();
  const bool strings = VisitStrings(a, [&](const auto* offsets, const char* bytes) {
    DispatchOp(node.op, [&](auto op_tag) {
      constexpr CompareOp kOp = decltype(op_tag)::value;
      FillWords(n, out, [&](int64_t i) {
        const std::string_view s = StringAt(offsets, bytes, i);
        if constexpr (kOp == CompareOp::kEq) {
          return s == lit;
        } else if constexpr (kOp == CompareOp::kNe) {
          return s != lit;
        } else {
          const int c = s.compare(lit);
          return OpHolds(kOp, (c > 0) - (c < 0));
        }
      });
    });
  });
  return strings ? Status::OK() : Unsupported(node, a);
}

Status FillIn(const BoundNode& node, const Array& a, uint64_t* out) {
  const int64_t n = a.length();
  if (a.type_id() == TypeId::kBool) {
    bool has_true = false;
    bool has_false = false;
    for (const Scalar& v : node.values) (v.bool_value() ? has_true : has_false) = true;
    const std::vector<uint64_t> v = BoolWords(a);
    for (size_t w = 0; w < v.size(); ++w) {
      out[w] = (has_true ? v[w] : 0) | (has_false ? ~v[w] : 0);
    }
    return Status::OK();
  }
  const bool numeric = VisitNumeric(a, [&](const auto* values, auto literal_tag) {
    using L = decltype(literal_tag);
    std::vector<L> list;
    bool has_nan = false;
    for (const Scalar& v : node.values) {
      const L x = LiteralAs<L>(v);
      if constexpr (std::is_same_v<L, double>) {
        if (std::isnan(x)) {
          has_nan = true;
          continue;
        }
      }
      list.push_back(x);
    }
    // Sorted by the binder (NaN, which orders last, was dropped above).
    if (list.size() <= kLinearScanLimit) {
      FillWords(n, out, [&](int64_t i) {
        const L x = static_cast<L>(values[i]);
        bool hit = false;
        for (const L v : list) hit |= x == v;
        if constexpr (std::is_same_v<L, double>) hit |= has_nan && std::isnan(x);
        return hit;
      });
    } else {
      FillWords(n, out, [&](int64_t i) {
        const L x = static_cast<L>(values[i]);
        if constexpr (std::is_same_v<L, double>) {
          if (std::isnan(x)) return has_nan;
        }
        return std::binary_search(list.begin(), list.end(), x);
      });
    }
  });
  if (numeric) return Status::OK();
  std::vector<std::string_view> list;
  for (const Scalar& v : node.values) list.push_back(v.string_value());
  std::unordered_set<std::string_view> set;
  if (list.size() > kLinearScanLimit) set.insert(list.begin(), list.end());
  const bool strings = VisitStrings(a, [&](const auto* offsets, const char* bytes) {
    if (list.size() <= kLinearScanLimit) {
      FillWords(n, out, [&](int64_t i) {
        const std::string_view s = StringAt(offsets, bytes, i);
        for (const std::string_view v : list) {
          if (s == v) return true;
        }
        return false;
      });
    } else {
      FillWords(n, out, [&](int64_t i) { return set.contains(StringAt(offsets, bytes, i)); });
    }
  });
  return strings ? Status::OK() : Unsupported(node, a);
}

Status FillLike(const BoundNode& node, const Array& a, uint64_t* out) {
  const LikePattern& pattern = *node.like;
  const bool strings = VisitStrings(a, [&](const auto* offsets, const char* bytes) {
    FillWords(a.length(), out,
              [&](int64_t i) { return pattern.Matches(StringAt(offsets, bytes, i)); });
  });
  return strings ? Status::OK() : Unsupported(node, a);
}

// Calls fn(indices) with the typed index values of a dictionary array.
template <typename Fn>
void VisitIndices(const Array& a, Fn&& fn) {
  switch (a.type()->index_type()->id()) {
    case TypeId::kInt8:
      return fn(a.values<int8_t>());
    case TypeId::kUInt8:
      return fn(a.values<uint8_t>());
    case TypeId::kInt16:
      return fn(a.values<int16_t>());
    case TypeId::kUInt16:
      return fn(a.values<uint16_t>());
    case TypeId::kInt32:
      return fn(a.values<int32_t>());
    case TypeId::kUInt32:
      return fn(a.values<uint32_t>());
    case TypeId::kUInt64:
      return fn(a.values<uint64_t>());
    default:
      return fn(a.values<int64_t>());
  }
}

// Per row: the entry's TRUE / FALSE bits; rows with a null index are NULL.
Result<Truth> MapThroughDictionary(const Truth& entries, const Array& a) {
  const int64_t n = a.length();
  const auto entry_count = static_cast<uint64_t>(entries.length);
  const std::vector<uint64_t> valid = ValidityWords(a);
  Truth out(n);
  bool bad_index = false;
  VisitIndices(a, [&](const auto* indices) {
    for (int64_t w = 0; w < WordCount(n); ++w) {
      uint64_t t = 0;
      uint64_t f = 0;
      uint64_t live = valid.empty() ? ~uint64_t{0} : valid[w];
      const int64_t count = std::min<int64_t>(64, n - w * 64);
      for (int64_t j = 0; j < count; ++j) {
        if (!((live >> j) & 1)) continue;
        const auto k = static_cast<uint64_t>(indices[w * 64 + j]);  // negative -> huge
        if (k >= entry_count) {
          bad_index = true;
          continue;
        }
        t |= static_cast<uint64_t>(entries.GetTrue(static_cast<int64_t>(k))) << j;
        f |= static_cast<uint64_t>(entries.GetFalse(static_cast<int64_t>(k))) << j;
      }
      out.is_true[w] = t;
      out.is_false[w] = f;
    }
  });
  if (bad_index) {
    return Status::Corruption(
        fmt::format("dictionary array of {} rows has an index outside "
                    "its {} entries",
                    n, entries.length));
  }
  return out;
}

// IS NULL: never NULL itself. A dictionary row is null when its index or its entry is.
Result<Truth> IsNullTruth(const Array& a) {
  const int64_t n = a.length();
  Truth valid_rows = Truth::Constant(n, true);
  if (a.type_id() == TypeId::kDictionary) {
    const Array dictionary = a.dictionary();
    Truth entries = Truth::Constant(dictionary.length(), true);
    const std::vector<uint64_t> entry_valid = ValidityWords(dictionary);
    for (size_t w = 0; w < entry_valid.size(); ++w) entries.is_true[w] &= entry_valid[w];
    STRATA_ASSIGN_OR_RETURN(valid_rows, MapThroughDictionary(entries, a));
  } else {
    const std::vector<uint64_t> valid = ValidityWords(a);
    for (size_t w = 0; w < valid.size(); ++w) valid_rows.is_true[w] &= valid[w];
  }
  Truth out(n);
  for (int64_t w = 0; w < WordCount(n); ++w) {
    const uint64_t mask = w + 1 == WordCount(n) ? TailMask(n) : ~uint64_t{0};
    out.is_false[w] = valid_rows.is_true[w];
    out.is_true[w] = ~valid_rows.is_true[w] & mask;
  }
  return out;
}

}  // namespace

Result<Truth> EvalLeaf(const BoundNode& node, const Array& a) {
  if (node.kind == BoundKind::kIsNull) return IsNullTruth(a);
  if (a.type_id() == TypeId::kDictionary) {
    STRATA_ASSIGN_OR_RETURN(Truth entries, EvalLeaf(node, a.dictionary()));
    return MapThroughDictionary(entries, a);
  }
  const int64_t n = a.length();
  std::vector<uint64_t> cond(WordCount(n));
  switch (node.kind) {
    case BoundKind::kColumnConstant:
      if (node.literal.bool_value()) std::fill(cond.begin(), cond.end(), ~uint64_t{0});
      break;
    case BoundKind::kBoolColumn:
      if (a.type_id() != TypeId::kBool) return Unsupported(node, a);
      cond = BoolWords(a);
      break;
    case BoundKind::kCompare:
      STRATA_RETURN_IF_ERROR(FillCompare(node, a, cond.data()));
      break;
    case BoundKind::kIn:
      STRATA_RETURN_IF_ERROR(FillIn(node, a, cond.data()));
      break;
    case BoundKind::kLike:
      STRATA_RETURN_IF_ERROR(FillLike(node, a, cond.data()));
      break;
    default:
      return Status::Internal("EvalLeaf called on a non-leaf node");
  }
  Truth truth = Truth::FromCondition(n, cond, ValidityWords(a));
  if (node.kind == BoundKind::kIn && node.values_have_null) {
    // x IN (..., NULL) is NULL, not FALSE, when nothing matches.
    std::fill(truth.is_false.begin(), truth.is_false.end(), 0);
  }
  return truth;
}

}  // namespace strata::expr::internal
