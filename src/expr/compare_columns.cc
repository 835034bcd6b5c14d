// Kernels that need more than one array: column-to-column comparisons (both sides decoded to
// a common representation first) and array_has over list elements.
#include <fmt/format.h>

#include <string_view>
#include <type_traits>
#include <vector>

#include "expr/evaluator.h"
#include "expr/numeric.h"

namespace strata::expr::internal {
namespace {

// One column's values in a representation shared by its whole domain: integers, timestamps
// and bools as int64, unsigned as uint64, floats as double, strings and binary as views.
struct Decoded {
  enum class Rep : uint8_t { kInt, kUInt, kDouble, kBytes } rep = Rep::kInt;
  std::vector<int64_t> ints;
  std::vector<uint64_t> uints;
  std::vector<double> doubles;
  std::vector<std::string_view> bytes;
  std::vector<uint64_t> valid;  // empty: all valid
};

// Row i of `values` at position rows[i]; rows == nullptr means the identity.
template <typename T, typename Out>
void Gather(const T* values, const int64_t* rows, int64_t n, std::vector<Out>* out) {
  out->resize(n);
  for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<Out>(values[rows ? rows[i] : i]);
}

template <typename O>
void GatherStrings(const Array& a, const int64_t* rows, int64_t n,
                   std::vector<std::string_view>* out) {
  const O* offsets = a.data()->buffers[1].data_as<O>() + a.offset();
  const char* bytes = a.data()->buffers[2].data_as<char>();
  out->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows ? rows[i] : i;
    (*out)[i] = {bytes + offsets[r], static_cast<size_t>(offsets[r + 1] - offsets[r])};
  }
}

// Decodes rows of a non-dictionary array; `rows` (n entries, each a valid row of `a`) picks
// them, or nullptr for rows 0..n-1.
Status DecodeValues(const Array& a, const int64_t* rows, int64_t n, Decoded* out) {
  using Rep = Decoded::Rep;
  switch (a.type_id()) {
    case TypeId::kBool:
      out->rep = Rep::kInt;
      out->ints.resize(n);
      for (int64_t i = 0; i < n; ++i) out->ints[i] = a.BoolValue(rows ? rows[i] : i) ? 1 : 0;
      return Status::OK();
    case TypeId::kInt8:
      return out->rep = Rep::kInt, Gather(a.values<int8_t>(), rows, n, &out->ints), Status::OK();
    case TypeId::kInt16:
      return out->rep = Rep::kInt, Gather(a.values<int16_t>(), rows, n, &out->ints), Status::OK();
    case TypeId::kInt32:
      return out->rep = Rep::kInt, Gather(a.values<int32_t>(), rows, n, &out->ints), Status::OK();
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return out->rep = Rep::kInt, Gather(a.values<int64_t>(), rows, n, &out->ints), Status::OK();
    case TypeId::kUInt8:
      return out->rep = Rep::kUInt, Gather(a.values<uint8_t>(), rows, n, &out->uints), Status::OK();
    case TypeId::kUInt16:
      return out->rep = Rep::kUInt, Gather(a.values<uint16_t>(), rows, n, &out->uints),
             Status::OK();
    case TypeId::kUInt32:
      return out->rep = Rep::kUInt, Gather(a.values<uint32_t>(), rows, n, &out->uints),
             Status::OK();
    case TypeId::kUInt64:
      return out->rep = Rep::kUInt, Gather(a.values<uint64_t>(), rows, n, &out->uints),
             Status::OK();
    case TypeId::kFloat32:
      return out->rep = Rep::kDouble, Gather(a.values<float>(), rows, n, &out->doubles),
             Status::OK();
    case TypeId::kFloat64:
      return out->rep = Rep::kDouble, Gather(a.values<double>(), rows, n, &out->doubles),
             Status::OK();
    case TypeId::kUtf8:
    case TypeId::kBinary:
      out->rep = Rep::kBytes;
      GatherStrings<int32_t>(a, rows, n, &out->bytes);
      return Status::OK();
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary:
      out->rep = Rep::kBytes;
      GatherStrings<int64_t>(a, rows, n, &out->bytes);
      return Status::OK();
    default:
      return Status::Internal(
          fmt::format("cannot compare columns of type {}", a.type()->ToString()));
  }
}

Result<Decoded> Decode(const Array& a) {
  Decoded out;
  const int64_t n = a.length();
  if (a.type_id() != TypeId::kDictionary) {
    STRATA_RETURN_IF_ERROR(DecodeValues(a, nullptr, n, &out));
    out.valid = ValidityWords(a);
    return out;
  }
  const Array dictionary = a.dictionary();
  std::vector<int64_t> rows(n, 0);
  out.valid.assign(WordCount(n), ~uint64_t{0});
  for (int64_t i = 0; i < n; ++i) {
    bool live = !a.IsNull(i);
    if (live) {
      const int64_t k = a.DictionaryIndex(i);
      if (k < 0 || k >= dictionary.length()) {
        return Status::Corruption(
            fmt::format("dictionary index {} at row {} is outside its {} "
                        "entries",
                        k, i, dictionary.length()));
      }
      live = !dictionary.IsNull(k);
      rows[i] = k;
    }
    if (!live) out.valid[i >> 6] &= ~(uint64_t{1} << (i & 63));
  }
  STRATA_RETURN_IF_ERROR(DecodeValues(dictionary, rows.data(), n, &out));
  return out;
}

// Calls fn(values) with the decoded numeric vector.
template <typename Fn>
void VisitNumbers(const Decoded& d, Fn&& fn) {
  switch (d.rep) {
    case Decoded::Rep::kInt:
      return fn(d.ints);
    case Decoded::Rep::kUInt:
      return fn(d.uints);
    default:
      return fn(d.doubles);
  }
}

}  // namespace

Result<Truth> EvalCompareColumns(const BoundNode& node, const Array& left, const Array& right) {
  const int64_t n = left.length();
  STRATA_ASSIGN_OR_RETURN(Decoded a, Decode(left));
  STRATA_ASSIGN_OR_RETURN(Decoded b, Decode(right));
  std::vector<uint64_t> cond(WordCount(n));
  if ((a.rep == Decoded::Rep::kBytes) != (b.rep == Decoded::Rep::kBytes)) {
    return Status::Internal("comparing a string column with a numeric one");
  }
  DispatchOp(node.op, [&](auto op_tag) {
    constexpr CompareOp kOp = decltype(op_tag)::value;
    if (a.rep == Decoded::Rep::kBytes) {
      FillWords(n, cond.data(), [&](int64_t i) {
        const int c = a.bytes[i].compare(b.bytes[i]);
        return OpHolds(kOp, (c > 0) - (c < 0));
      });
      return;
    }
    VisitNumbers(a, [&](const auto& x) {
      VisitNumbers(b, [&](const auto& y) {
        FillWords(n, cond.data(), [&](int64_t i) { return OpHolds(kOp, Cmp3(x[i], y[i])); });
      });
    });
  });
  std::vector<uint64_t> valid(WordCount(n), ~uint64_t{0});
  for (size_t w = 0; w < valid.size(); ++w) {
    if (!a.valid.empty()) valid[w] &= a.valid[w];
    if (!b.valid.empty()) valid[w] &= b.valid[w];
  }
  return Truth::FromCondition(n, cond, valid);
}

Result<Truth> EvalArrayHas(const BoundNode& node, const Array& lists) {
  const int64_t n = lists.length();
  Truth out(n);
  if (n == 0) return out;
  // The elements of these rows, evaluated once.
  const int64_t begin = lists.ValueRange(0).first;
  const int64_t end = lists.ValueRange(n - 1).second;
  const Array elements = lists.values_array();
  if (begin < 0 || end < begin || end > elements.length()) {
    return Status::Corruption(fmt::format("list offsets [{}, {}) exceed the {} list elements",
                                          begin, end, elements.length()));
  }
  STRATA_ASSIGN_OR_RETURN(Truth hits,
                          EvalLeaf(*node.children[0], elements.Slice(begin, end - begin)));
  for (int64_t i = 0; i < n; ++i) {
    if (lists.IsNull(i)) continue;
    auto [first, last] = lists.ValueRange(i);
    first = std::clamp(first - begin, int64_t{0}, end - begin);
    last = std::clamp(last - begin, first, end - begin);
    bool found = false;
    for (int64_t k = first; k < last && !found; ++k) found = hits.GetTrue(k);
    // Null elements never match; a list without a match is FALSE.
    const uint64_t bit = uint64_t{1} << (i & 63);
    (found ? out.is_true : out.is_false)[i >> 6] |= bit;
  }
  return out;
}

}  // namespace strata::expr::internal
