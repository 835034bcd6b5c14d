// The row-selection machinery behind Scan, CountRows, LookupKeys and Delete: walks a
// snapshot's fragments batch by batch, prunes with statistics, routes key equalities through
// the key index and yields the selected rows of each batch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strata/expr.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "table/table_internal.h"

namespace strata::table::internal {

struct RowSelectionSpec {
  // A predicate (parsed, not bound); rows must be TRUE.
  std::optional<expr::Expr> filter;
  // Rows whose primary key is one of these (LookupKeys). Requires a key column.
  std::optional<std::vector<expr::Scalar>> keys;
  // Schema columns to read for the selected rows (may be empty).
  std::vector<int> columns;
  int64_t offset = 0;
  std::optional<int64_t> limit;
  // Only these fragments (ScanOptions::fragment_ids); empty = all.
  std::vector<uint32_t> fragment_ids;
};

// The selected rows of one batch.
struct BatchSelection {
  uint32_t fragment_id = 0;
  int64_t batch_offset = 0;   // fragment offset of the batch's first row
  std::vector<int64_t> rows;  // ascending indices within the batch; never empty
  // spec.columns for every row of the batch (index with `rows`); unset when columns is empty.
  RecordBatch data;
};

class RowSelector {
 public:
  // Binds the filter (InvalidArgument naming the column) and consults the key index.
  static Result<std::unique_ptr<RowSelector>> Make(std::shared_ptr<TableContext> context,
                                                   SnapshotPtr snapshot, RowSelectionSpec spec);
  // The next batch with selected rows; false at the end.
  Result<bool> Next(BatchSelection* out);

 private:
  RowSelector() = default;
  Status StartFragment(const pb::Fragment& fragment);
  Result<bool> SelectInBatch(int batch, BatchSelection* out);
  // What the filter's statistics say of batch `batch` of reader_ (kAll without a filter).
  expr::PruneResult Prune(int batch) const;
  // The columns a read of a batch needs, each once: the filter's when it is evaluated, the
  // key when keys are checked, then the output; and where each landed in `read`.
  struct BatchColumns {
    std::vector<int> read;
    std::vector<int> filter_positions;
    int key_position = -1;
    std::vector<int> output_positions;
  };
  BatchColumns ColumnsToRead(bool evaluate, bool check_keys) const;
  // Once batch_ reaches prefetch_refill_, asks the fragment's files to start reading the
  // batches from batch_ on that statistics do not prune (FragmentReader::Prefetch), so their
  // pages arrive while earlier batches are decoded. Within a fragment the window doubles
  // from kFirstPrefetchBatches to kMaxPrefetchBatches (a scan stopped by a small limit asks
  // for little). Fragments the key index restricts, and batches an offset may skip unread,
  // are not prefetched.
  void PrefetchAhead();

  std::shared_ptr<TableContext> context_;
  SnapshotPtr snapshot_;
  RowSelectionSpec spec_;
  // The filter bound to the columns it reads (filter_columns_), in that order.
  std::optional<expr::BoundExpr> filter_;
  std::vector<int> filter_columns_;
  // Key mode: candidate offsets of fragments the key index covers (absent = not covered,
  // scan it). `no_rows_` when the keys can match nothing.
  bool key_mode_ = false;
  bool no_rows_ = false;
  std::unordered_map<uint32_t, std::vector<int64_t>> candidates_;
  std::unordered_set<uint32_t> covered_;
  // LookupKeys: keys checked directly in fragments the index does not cover.
  std::optional<KeyKind> key_kind_;
  std::vector<expr::Scalar> normalized_keys_;

  int fragment_position_ = 0;
  std::optional<FragmentReader> reader_;
  const std::vector<int64_t>* fragment_candidates_ = nullptr;
  int batch_ = 0;
  int prefetched_ = 0;       // batches of reader_ below this were prefetched (or pruned)
  int prefetch_refill_ = 0;  // PrefetchAhead asks for more once batch_ reaches this
  int prefetch_window_ = 0;  // batches per refill in this fragment; grows to the maximum
  int64_t to_skip_ = 0;
  std::optional<int64_t> remaining_;
  bool done_ = false;
};

// Addresses of the live rows matching `spec` (columns ignored), ascending by fragment order.
Result<std::vector<uint64_t>> SelectRowAddresses(std::shared_ptr<TableContext> context,
                                                 SnapshotPtr snapshot, RowSelectionSpec spec);

// A schema column index per name (empty = all), InvalidArgument naming an unknown column.
Result<std::vector<int>> ResolveColumns(const Schema& schema,
                                        const std::vector<std::string>& names);

}  // namespace strata::table::internal
