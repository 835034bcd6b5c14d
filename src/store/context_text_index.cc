// ContextStore::IndexText: the per-fragment text index (text_index.h) of the base table,
// built after merges and compactions (context_store.h TextIndexOptions).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/context_ann.h"
#include "store/context_codec.h"
#include "store/text_index.h"
#include "strata/context_store.h"
#include "strata/table.h"

namespace strata::store {

Result<int> ContextStore::IndexText() {
  STRATA_ASSIGN_OR_RETURN(
      std::vector<table::FragmentInfo> fragments,
      internal::FragmentsToIndex(*base_, kTextIndexName, text_index_.min_fragment_rows));
  const std::shared_ptr<table::Table>& table = base_->base_table();
  if (table->schema()->GetFieldIndex("text_payload") < 0) return 0;
  std::vector<table::IndexSegmentInfo> built;
  std::string lossy;
  for (const table::FragmentInfo& fragment : fragments) {
    table::ScanOptions scan;
    scan.columns = {"text_payload"};
    scan.with_row_address = true;
    scan.fragment_ids = {fragment.id};
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, table->Scan(scan));
    FragmentTextIndex::Builder builder;
    int64_t rows = 0;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
      if (!batch) break;
      const Array& text = batch->column(0);
      const Array& addresses = batch->column(1);
      // A blob text_payload is binary: it reads as text through the lossy decoding, as the
      // records Retrieve scores.
      const bool binary = text.type()->id() != TypeId::kLargeUtf8;
      for (int64_t r = 0; r < batch->num_rows(); ++r) {
        std::optional<std::string_view> value;
        if (text.IsValid(r)) {
          value = text.StringValue(r);
          if (binary) {
            lossy = LossyUtf8(*value);
            value = lossy;
          }
        }
        builder.Add(table::RowAddressOffset(addresses.Value<uint64_t>(r)), value);
        ++rows;
      }
    }
    if (rows == 0) continue;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FragmentTextIndex> index, std::move(builder).Finish());
    const std::string bytes = index->Serialize();
    STRATA_ASSIGN_OR_RETURN(
        table::IndexSegmentInfo segment,
        internal::WriteFragmentIndex(*table, kTextIndexExtension, bytes, rows, fragment.id));
    built.push_back(std::move(segment));
  }
  if (built.empty()) return 0;
  STRATA_RETURN_IF_ERROR(
      table->AddIndexSegments(kTextIndexName, kTextIndexType, "text_payload", built).status());
  return static_cast<int>(built.size());
}

}  // namespace strata::store
