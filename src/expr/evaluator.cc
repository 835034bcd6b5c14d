// Evaluate / Select: walks the bound tree over a batch, combining the leaves' Truth bitmaps
// with Kleene logic word by word, and turns the result into a boolean array or a selection.
#include "expr/evaluator.h"

#include <fmt/format.h>

#include <bit>
#include <utility>
#include <vector>

#include "strata/expr.h"

namespace strata::expr {

using internal::BoundColumn;
using internal::BoundKind;
using internal::BoundNode;
using internal::Truth;
using internal::WordCount;

namespace {

// `child` with its parent's nulls folded into its validity, so that a field of a null struct
// row reads as null.
Array WithParentNulls(const Array& parent, const Array& child) {
  if (parent.null_count() == 0) return child;
  const int64_t n = child.length();
  const int64_t offset = child.offset();
  const std::vector<uint64_t> parent_valid = internal::ValidityWords(parent);
  if (parent_valid.empty()) return child;
  const std::vector<uint64_t> child_valid = internal::ValidityWords(child);
  // The new bitmap keeps the child's offset: bit offset + i is row i.
  std::vector<uint8_t> bits(static_cast<size_t>(bit_util::BytesForBits(offset + n)), 0);
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool valid = (parent_valid[i >> 6] >> (i & 63)) & 1;
    if (!child_valid.empty()) valid = valid && ((child_valid[i >> 6] >> (i & 63)) & 1);
    if (valid) {
      bit_util::SetBit(bits.data(), offset + i);
    } else {
      ++nulls;
    }
  }
  auto data = std::make_shared<ArrayData>(*child.data());
  data->buffers[0] = Buffer::FromVector(std::move(bits));
  data->null_count = nulls;
  return Array(std::move(data));
}

Array ResolveColumn(const RecordBatch& batch, const BoundColumn& column) {
  Array array = batch.column(column.index);
  for (int k : column.fields) array = WithParentNulls(array, array.field(k));
  return array;
}

class Evaluator {
 public:
  explicit Evaluator(const RecordBatch& batch) : batch_(batch) {}

  Result<Truth> Eval(const BoundNode& n) {
    const int64_t rows = batch_.num_rows();
    switch (n.kind) {
      case BoundKind::kConstant:
        return Truth::Constant(
            rows, n.literal.is_null() ? std::nullopt : std::optional(n.literal.bool_value()));
      case BoundKind::kAnd:
      case BoundKind::kOr: {
        const bool is_and = n.kind == BoundKind::kAnd;
        STRATA_ASSIGN_OR_RETURN(Truth acc, Eval(*n.children[0]));
        for (size_t c = 1; c < n.children.size(); ++c) {
          STRATA_ASSIGN_OR_RETURN(Truth next, Eval(*n.children[c]));
          for (size_t w = 0; w < acc.is_true.size(); ++w) {
            if (is_and) {
              acc.is_true[w] &= next.is_true[w];
              acc.is_false[w] |= next.is_false[w];
            } else {
              acc.is_true[w] |= next.is_true[w];
              acc.is_false[w] &= next.is_false[w];
            }
          }
        }
        return acc;
      }
      case BoundKind::kNot: {
        STRATA_ASSIGN_OR_RETURN(Truth inner, Eval(*n.children[0]));
        std::swap(inner.is_true, inner.is_false);
        return inner;
      }
      case BoundKind::kCompareColumns:
        return internal::EvalCompareColumns(n, ResolveColumn(batch_, n.column),
                                            ResolveColumn(batch_, n.column2));
      case BoundKind::kArrayHas:
        return internal::EvalArrayHas(n, ResolveColumn(batch_, n.column));
      default:
        return internal::EvalLeaf(n, ResolveColumn(batch_, n.column));
    }
  }

 private:
  const RecordBatch& batch_;
};

Status CheckBatch(const BoundExpr& expr, const RecordBatch& batch) {
  const Schema& schema = *expr.schema();
  for (int index : expr.ReferencedColumns()) {
    const Field& bound = *schema.field(index);
    if (index >= batch.num_columns()) {
      return Status::InvalidArgument(
          fmt::format("the batch has {} columns; the expression reads column {} ('{}')",
                      batch.num_columns(), index, bound.name()));
    }
    const DataType& actual = *batch.column(index).type();
    if (!actual.Equals(*bound.type())) {
      return Status::InvalidArgument(
          fmt::format("batch column {} is {}; the expression was bound to column '{}' of type {}",
                      index, actual.ToString(), bound.name(), bound.type()->ToString()));
    }
    if (batch.column(index).length() != batch.num_rows()) {
      return Status::InvalidArgument(fmt::format("batch column {} has {} rows, the batch {}", index,
                                                 batch.column(index).length(), batch.num_rows()));
    }
  }
  return Status::OK();
}

Result<Truth> EvaluateTruth(const BoundExpr& expr, const RecordBatch& batch) {
  STRATA_RETURN_IF_ERROR(CheckBatch(expr, batch));
  return Evaluator(batch).Eval(expr.root());
}

Buffer WordsToBitmap(const std::vector<uint64_t>& words, int64_t bits) {
  return Buffer::Copy(words.data(), bit_util::BytesForBits(bits));
}

}  // namespace

Result<Array> Evaluate(const BoundExpr& expr, const RecordBatch& batch) {
  STRATA_ASSIGN_OR_RETURN(Truth truth, EvaluateTruth(expr, batch));
  const int64_t n = truth.length;
  std::vector<uint64_t> known(truth.is_true.size());
  int64_t valid = 0;
  for (size_t w = 0; w < known.size(); ++w) {
    known[w] = truth.is_true[w] | truth.is_false[w];
    valid += std::popcount(known[w]);
  }
  ArrayData data;
  data.type = boolean();
  data.length = n;
  data.null_count = n - valid;
  data.buffers.push_back(data.null_count == 0 ? Buffer() : WordsToBitmap(known, n));
  data.buffers.push_back(WordsToBitmap(truth.is_true, n));
  return Array::Make(std::move(data));
}

Result<std::vector<int64_t>> Select(const BoundExpr& expr, const RecordBatch& batch) {
  STRATA_ASSIGN_OR_RETURN(Truth truth, EvaluateTruth(expr, batch));
  std::vector<int64_t> rows;
  for (size_t w = 0; w < truth.is_true.size(); ++w) {
    for (uint64_t word = truth.is_true[w]; word != 0; word &= word - 1) {
      rows.push_back(static_cast<int64_t>(w) * 64 + std::countr_zero(word));
    }
  }
  return rows;
}

Result<Buffer> SelectBitmap(const BoundExpr& expr, const RecordBatch& batch) {
  STRATA_ASSIGN_OR_RETURN(Truth truth, EvaluateTruth(expr, batch));
  return WordsToBitmap(truth.is_true, truth.length);
}

Result<int64_t> CountMatches(const BoundExpr& expr, const RecordBatch& batch) {
  STRATA_ASSIGN_OR_RETURN(Truth truth, EvaluateTruth(expr, batch));
  int64_t count = 0;
  for (uint64_t word : truth.is_true) count += std::popcount(word);
  return count;
}

}  // namespace strata::expr
