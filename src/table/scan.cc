// Reads: Scan, Take, CountRows and LookupKeys, on top of RowSelector, which walks a
// snapshot's fragments batch by batch (statistics pruning, key-index routing, deletions).
#include "table/scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_set>

#include "strata/builder.h"

namespace strata::table::internal {
namespace {

// The key index's segments that cover a fragment of `snapshot`, loaded, with the ids of the
// fragments they cover added to `covered`. None when the table has no index on its key.
Result<std::vector<std::shared_ptr<const KeySegment>>> LiveKeySegments(
    TableContext& context, const Snapshot& snapshot, std::unordered_set<uint32_t>* covered) {
  std::vector<std::shared_ptr<const KeySegment>> segments;
  const pb::Index* index = snapshot.key_index();
  if (!snapshot.key_column || index == nullptr ||
      index->field_id() != snapshot.field_ids[*snapshot.key_column]) {
    return segments;
  }
  for (const pb::KeySegment& entry : index->segments()) {
    bool live = false;
    for (uint32_t id : entry.fragment_ids()) {
      if (snapshot.FindFragment(id) != nullptr) {
        covered->insert(id);
        live = true;
      }
    }
    if (!live) continue;
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const KeySegment> segment,
                            context.cache.Segment(*context.store, context.prefix, entry));
    segments.push_back(std::move(segment));
  }
  return segments;
}

// The value of key column `array` at `row` in the form the key index compares.
std::optional<expr::Scalar> KeyAt(const Array& array, int64_t row, KeyKind kind) {
  if (array.IsNull(row)) return std::nullopt;
  expr::Scalar value;
  switch (array.type_id()) {
    case TypeId::kInt8:
      value = expr::Scalar::Int64(array.Value<int8_t>(row));
      break;
    case TypeId::kInt16:
      value = expr::Scalar::Int64(array.Value<int16_t>(row));
      break;
    case TypeId::kInt32:
      value = expr::Scalar::Int64(array.Value<int32_t>(row));
      break;
    case TypeId::kInt64:
      value = expr::Scalar::Int64(array.Value<int64_t>(row));
      break;
    case TypeId::kUInt8:
      value = expr::Scalar::Int64(array.Value<uint8_t>(row));
      break;
    case TypeId::kUInt16:
      value = expr::Scalar::Int64(array.Value<uint16_t>(row));
      break;
    case TypeId::kUInt32:
      value = expr::Scalar::Int64(array.Value<uint32_t>(row));
      break;
    case TypeId::kTimestamp:
      value = expr::Scalar::Timestamp(array.Value<int64_t>(row));
      break;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      value = expr::Scalar::String(std::string(array.StringValue(row)));
      break;
    default:
      return std::nullopt;
  }
  return NormalizeKey(value, kind);
}

bool ScalarLess(const expr::Scalar& a, const expr::Scalar& b) {
  std::optional<int> c = expr::CompareScalars(a, b);
  return c ? *c < 0 : a.kind() < b.kind();
}

std::string ColumnList(const Schema& schema) {
  std::string out;
  for (const FieldPtr& f : schema.fields()) out += out.empty() ? f->name() : ", " + f->name();
  return out;
}

}  // namespace

Result<std::vector<int>> ResolveColumns(const Schema& schema,
                                        const std::vector<std::string>& names) {
  std::vector<int> columns;
  if (names.empty()) {
    for (int i = 0; i < schema.num_fields(); ++i) columns.push_back(i);
    return columns;
  }
  for (const std::string& name : names) {
    const int index = schema.GetFieldIndex(name);
    if (index < 0) {
      return Status::InvalidArgument(
          fmt::format("unknown column '{}' (the table has: {})", name, ColumnList(schema)));
    }
    columns.push_back(index);
  }
  return columns;
}

Result<std::unique_ptr<RowSelector>> RowSelector::Make(std::shared_ptr<TableContext> context,
                                                       SnapshotPtr snapshot,
                                                       RowSelectionSpec spec) {
  if (spec.offset < 0) {
    return Status::InvalidArgument(fmt::format("offset must be >= 0, got {}", spec.offset));
  }
  if (spec.limit && *spec.limit < 0) {
    return Status::InvalidArgument(fmt::format("limit must be >= 0, got {}", *spec.limit));
  }
  std::unique_ptr<RowSelector> selector(new RowSelector());
  RowSelector& s = *selector;
  const Schema& schema = *snapshot->schema;
  std::optional<expr::BoundExpr> full;
  if (spec.filter) {
    STRATA_ASSIGN_OR_RETURN(full, expr::Bind(*spec.filter, snapshot->schema));
    s.filter_columns_ = full->ReferencedColumns();
    STRATA_ASSIGN_OR_RETURN(SchemaPtr local, schema.Project(s.filter_columns_));
    STRATA_ASSIGN_OR_RETURN(s.filter_, expr::Bind(*spec.filter, local));
  }

  if (snapshot->key_column) {
    const int key_column = *snapshot->key_column;
    STRATA_ASSIGN_OR_RETURN(KeyKind kind, KeyKindForType(*schema.field(key_column)->type()));
    std::optional<std::vector<expr::Scalar>> keys;
    if (spec.keys) {
      keys = std::move(*spec.keys);  // the spec kept below needs only that there were keys
      spec.keys.emplace();
      s.key_kind_ = kind;
    } else if (full) {
      keys = expr::ExtractKeyEqualities(*full, key_column);
    }
    if (keys) {
      s.key_mode_ = true;
      s.normalized_keys_.reserve(keys->size());
      for (const expr::Scalar& key : *keys) {
        std::optional<expr::Scalar> normalized = NormalizeKey(key, kind);
        if (normalized) s.normalized_keys_.push_back(std::move(*normalized));
      }
      // Callers with many keys (a merge's upsert) pass them sorted already.
      if (!std::is_sorted(s.normalized_keys_.begin(), s.normalized_keys_.end(), ScalarLess)) {
        std::sort(s.normalized_keys_.begin(), s.normalized_keys_.end(), ScalarLess);
      }
      s.no_rows_ = s.normalized_keys_.empty();
      if (!s.no_rows_) {
        STRATA_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const KeySegment>> segments,
                                LiveKeySegments(*context, *snapshot, &s.covered_));
        std::vector<uint64_t> addresses;
        for (const auto& segment : segments) {
          for (const expr::Scalar& key : s.normalized_keys_) segment->Lookup(key, &addresses);
        }
        for (uint64_t address : addresses) {
          const uint32_t id = RowAddressFragment(address);
          const pb::Fragment* fragment = snapshot->FindFragment(id);
          if (fragment == nullptr) continue;  // rewritten by compaction: its new copy is covered
          const int64_t offset = RowAddressOffset(address);
          if (offset >= fragment->physical_rows()) continue;
          s.candidates_[id].push_back(offset);
        }
        for (auto& [id, offsets] : s.candidates_) {
          std::sort(offsets.begin(), offsets.end());
          offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
        }
      }
    }
  }

  s.context_ = std::move(context);
  s.snapshot_ = std::move(snapshot);
  s.to_skip_ = spec.offset;
  s.remaining_ = spec.limit;
  s.done_ = spec.limit && *spec.limit == 0;
  s.spec_ = std::move(spec);
  return selector;
}

Status RowSelector::StartFragment(const pb::Fragment& fragment) {
  STRATA_ASSIGN_OR_RETURN(FragmentReader reader,
                          FragmentReader::Open(*context_, *snapshot_, fragment));
  reader_.emplace(std::move(reader));
  batch_ = 0;
  prefetched_ = 0;
  prefetch_refill_ = 0;
  prefetch_window_ = 0;
  return Status::OK();
}

RowSelector::BatchColumns RowSelector::ColumnsToRead(bool evaluate, bool check_keys) const {
  BatchColumns out;
  auto need = [&](int column) {
    for (size_t i = 0; i < out.read.size(); ++i) {
      if (out.read[i] == column) return static_cast<int>(i);
    }
    out.read.push_back(column);
    return static_cast<int>(out.read.size() - 1);
  };
  if (evaluate) {
    for (int column : filter_columns_) out.filter_positions.push_back(need(column));
  }
  if (check_keys) out.key_position = need(*snapshot_->key_column);
  for (int column : spec_.columns) out.output_positions.push_back(need(column));
  return out;
}

expr::PruneResult RowSelector::Prune(int batch) const {
  if (!filter_) return expr::PruneResult::kAll;
  return expr::CanMatch(
      *filter_, [&](int column) { return reader_->Statistics(batch, filter_columns_[column]); });
}

void RowSelector::PrefetchAhead() {
  constexpr int kFirstPrefetchBatches = 4;
  constexpr int kMaxPrefetchBatches = 64;
  constexpr int64_t kMaxPrefetchBytes = int64_t{16} << 20;
  if (batch_ < prefetch_refill_ || fragment_candidates_ != nullptr) return;
  if (to_skip_ > 0 && !filter_ && !key_kind_) return;
  const FragmentReader& reader = *reader_;
  prefetch_window_ = prefetch_window_ == 0 ? kFirstPrefetchBatches
                                           : std::min(2 * prefetch_window_, kMaxPrefetchBatches);
  const int end = std::min(reader.num_batches(), batch_ + prefetch_window_);
  int64_t asked = 0;
  int b = std::max(prefetched_, batch_);
  for (; b < end && asked < kMaxPrefetchBytes; ++b) {
    // The columns SelectInBatch will read (keys are checked: the fragment is unrestricted).
    const expr::PruneResult prune = Prune(b);
    if (prune == expr::PruneResult::kNone) continue;
    const BatchColumns columns =
        ColumnsToRead(filter_ && prune != expr::PruneResult::kAll, key_kind_.has_value());
    if (!columns.read.empty()) asked += reader.Prefetch(b, columns.read);
  }
  prefetched_ = b;
  // Ask for more when half of what was asked for is behind.
  prefetch_refill_ = batch_ + std::max(1, (prefetched_ - batch_) / 2);
}

Result<bool> RowSelector::Next(BatchSelection* out) {
  while (!done_) {
    if (!reader_) {
      if (no_rows_ || fragment_position_ >= snapshot_->manifest.fragments_size()) {
        done_ = true;
        break;
      }
      const pb::Fragment& fragment = snapshot_->manifest.fragments(fragment_position_++);
      if (!spec_.fragment_ids.empty() &&
          std::find(spec_.fragment_ids.begin(), spec_.fragment_ids.end(), fragment.id()) ==
              spec_.fragment_ids.end()) {
        continue;
      }
      fragment_candidates_ = nullptr;
      if (key_mode_ && covered_.contains(fragment.id())) {
        auto it = candidates_.find(fragment.id());
        if (it == candidates_.end()) continue;  // the index says no row of it matches
        fragment_candidates_ = &it->second;
      }
      STRATA_RETURN_IF_ERROR(StartFragment(fragment));
    }
    if (batch_ >= reader_->num_batches()) {
      reader_.reset();
      continue;
    }
    PrefetchAhead();
    STRATA_ASSIGN_OR_RETURN(bool selected, SelectInBatch(batch_++, out));
    if (selected) return true;
  }
  return false;
}

Result<bool> RowSelector::SelectInBatch(int batch, BatchSelection* out) {
  const FragmentReader& reader = *reader_;
  const int64_t begin = reader.batch_offset(batch);
  const int64_t num_rows = reader.batch_rows(batch);
  if (num_rows == 0) return false;

  std::vector<int64_t> rows;
  const bool restricted = fragment_candidates_ != nullptr;
  if (restricted) {
    auto first =
        std::lower_bound(fragment_candidates_->begin(), fragment_candidates_->end(), begin);
    auto last = std::lower_bound(first, fragment_candidates_->end(), begin + num_rows);
    if (first == last) return false;
    for (auto it = first; it != last; ++it) rows.push_back(*it - begin);
  }
  const DeletionVector* deletions = reader.deletions();
  if (deletions != nullptr) {
    const int64_t deleted = deletions->CountBelow(static_cast<uint32_t>(begin + num_rows)) -
                            deletions->CountBelow(static_cast<uint32_t>(begin));
    if (deleted >= num_rows) return false;
  }
  const expr::PruneResult prune = Prune(batch);
  if (prune == expr::PruneResult::kNone) return false;
  const bool evaluate = filter_ && prune != expr::PruneResult::kAll;
  const bool check_keys = key_kind_.has_value() && !restricted;
  // When the selection is known without reading (no predicate to evaluate), a batch that
  // the offset skips entirely is not read at all.
  if (!evaluate && !check_keys && to_skip_ > 0) {
    int64_t selected = num_rows;
    if (restricted) {
      selected = static_cast<int64_t>(rows.size());
      if (deletions != nullptr) {
        for (int64_t row : rows)
          selected -= deletions->Contains(static_cast<uint32_t>(begin + row));
      }
    } else if (deletions != nullptr) {
      selected -= deletions->CountBelow(static_cast<uint32_t>(begin + num_rows)) -
                  deletions->CountBelow(static_cast<uint32_t>(begin));
    }
    if (selected <= to_skip_) {
      to_skip_ -= selected;
      return false;
    }
  }

  const BatchColumns columns = ColumnsToRead(evaluate, check_keys);
  const std::vector<int>& filter_positions = columns.filter_positions;
  const int key_position = columns.key_position;
  const std::vector<int>& output_positions = columns.output_positions;
  RecordBatch data;
  if (!columns.read.empty()) {
    STRATA_ASSIGN_OR_RETURN(data, reader.ReadBatch(batch, columns.read));
  }

  if (!restricted) {
    rows.resize(num_rows);
    for (int64_t i = 0; i < num_rows; ++i) rows[i] = i;
  }
  if (evaluate) {
    std::vector<Array> arrays;
    for (int position : filter_positions) arrays.push_back(data.column(position));
    STRATA_ASSIGN_OR_RETURN(RecordBatch filter_batch,
                            RecordBatch::Make(filter_->schema(), num_rows, std::move(arrays)));
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> matches, expr::Select(*filter_, filter_batch));
    if (restricted) {
      std::vector<int64_t> both;
      std::set_intersection(rows.begin(), rows.end(), matches.begin(), matches.end(),
                            std::back_inserter(both));
      rows = std::move(both);
    } else {
      rows = std::move(matches);
    }
  }
  if (check_keys) {
    const Array& keys = data.column(key_position);
    std::erase_if(rows, [&](int64_t row) {
      std::optional<expr::Scalar> key = KeyAt(keys, row, *key_kind_);
      return !key || !std::binary_search(normalized_keys_.begin(), normalized_keys_.end(), *key,
                                         ScalarLess);
    });
  }
  if (deletions != nullptr) {
    std::erase_if(
        rows, [&](int64_t row) { return deletions->Contains(static_cast<uint32_t>(begin + row)); });
  }
  if (to_skip_ > 0) {
    const int64_t skip = std::min<int64_t>(to_skip_, static_cast<int64_t>(rows.size()));
    rows.erase(rows.begin(), rows.begin() + skip);
    to_skip_ -= skip;
  }
  if (remaining_) {
    if (static_cast<int64_t>(rows.size()) > *remaining_) rows.resize(*remaining_);
    *remaining_ -= static_cast<int64_t>(rows.size());
    if (*remaining_ == 0) done_ = true;
  }
  if (rows.empty()) return false;

  out->fragment_id = reader.fragment().id();
  out->batch_offset = begin;
  out->rows = std::move(rows);
  out->data = RecordBatch();
  if (!spec_.columns.empty()) {
    STRATA_ASSIGN_OR_RETURN(out->data, data.Project(output_positions));
  }
  return true;
}

Result<std::vector<uint64_t>> SelectRowAddresses(std::shared_ptr<TableContext> context,
                                                 SnapshotPtr snapshot, RowSelectionSpec spec) {
  spec.columns.clear();
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<RowSelector> selector,
      RowSelector::Make(std::move(context), std::move(snapshot), std::move(spec)));
  std::vector<uint64_t> addresses;
  BatchSelection selection;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, selector->Next(&selection));
    if (!more) break;
    for (int64_t row : selection.rows) {
      addresses.push_back(MakeRowAddress(selection.fragment_id,
                                         static_cast<uint32_t>(selection.batch_offset + row)));
    }
  }
  return addresses;
}

namespace {

SchemaPtr OutputSchema(const Schema& table, const std::vector<int>& columns,
                       bool with_row_address) {
  std::vector<FieldPtr> fields;
  for (int column : columns) fields.push_back(table.field(column));
  if (with_row_address) fields.push_back(field(std::string(kRowAddressColumn), uint64(), false));
  return schema(std::move(fields));
}

// The selected rows of a selection as output columns (projection, then the address).
Result<RecordBatch> MaterializeSelection(const SchemaPtr& output, const BatchSelection& selection,
                                         bool with_row_address) {
  std::vector<Array> columns;
  const int64_t rows = static_cast<int64_t>(selection.rows.size());
  const bool everything = rows == selection.data.num_rows() && selection.data.num_columns() > 0;
  for (int i = 0; i < selection.data.num_columns(); ++i) {
    if (everything) {
      columns.push_back(selection.data.column(i));
    } else {
      STRATA_ASSIGN_OR_RETURN(Array taken, Take(selection.data.column(i), selection.rows));
      columns.push_back(std::move(taken));
    }
  }
  if (with_row_address) {
    UInt64Builder addresses(uint64());
    addresses.Reserve(rows);
    for (int64_t row : selection.rows) {
      addresses.Append(MakeRowAddress(selection.fragment_id,
                                      static_cast<uint32_t>(selection.batch_offset + row)));
    }
    STRATA_ASSIGN_OR_RETURN(Array array, addresses.Finish());
    columns.push_back(std::move(array));
  }
  return RecordBatch::Make(output, rows, std::move(columns));
}

class ScanIterator final : public BatchIterator {
 public:
  ScanIterator(std::unique_ptr<RowSelector> selector, SchemaPtr schema, bool with_row_address)
      : selector_(std::move(selector)),
        schema_(std::move(schema)),
        with_row_address_(with_row_address) {}

  const SchemaPtr& schema() const override { return schema_; }

  Result<std::optional<RecordBatch>> Next() override {
    BatchSelection selection;
    STRATA_ASSIGN_OR_RETURN(bool more, selector_->Next(&selection));
    if (!more) return std::optional<RecordBatch>();
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                            MaterializeSelection(schema_, selection, with_row_address_));
    return std::optional<RecordBatch>(std::move(batch));
  }

 private:
  std::unique_ptr<RowSelector> selector_;
  SchemaPtr schema_;
  bool with_row_address_;
};

}  // namespace
}  // namespace strata::table::internal

namespace strata::table {

using internal::BatchSelection;
using internal::RowSelectionSpec;
using internal::RowSelector;

Result<std::vector<RecordBatch>> BatchIterator::ToBatches() {
  std::vector<RecordBatch> batches;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, Next());
    if (!batch) break;
    batches.push_back(std::move(*batch));
  }
  return batches;
}

Result<std::unique_ptr<BatchIterator>> Table::Scan(const ScanOptions& options) const {
  internal::SnapshotPtr snapshot = impl_->current();
  RowSelectionSpec spec;
  if (!options.filter.empty()) {
    STRATA_ASSIGN_OR_RETURN(spec.filter, expr::Parse(options.filter));
  }
  STRATA_ASSIGN_OR_RETURN(spec.columns,
                          internal::ResolveColumns(*snapshot->schema, options.columns));
  spec.offset = options.offset;
  spec.limit = options.limit;
  spec.fragment_ids = options.fragment_ids;
  SchemaPtr output =
      internal::OutputSchema(*snapshot->schema, spec.columns, options.with_row_address);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RowSelector> selector,
                          RowSelector::Make(impl_->context, std::move(snapshot), std::move(spec)));
  return std::unique_ptr<BatchIterator>(std::make_unique<internal::ScanIterator>(
      std::move(selector), std::move(output), options.with_row_address));
}

Result<RecordBatch> Table::Take(std::span<const uint64_t> row_addresses,
                                const std::vector<std::string>& columns) const {
  internal::SnapshotPtr snapshot = impl_->current();
  STRATA_ASSIGN_OR_RETURN(std::vector<int> indices,
                          internal::ResolveColumns(*snapshot->schema, columns));
  SchemaPtr output = internal::OutputSchema(*snapshot->schema, indices, false);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchBuilder> builder,
                          RecordBatchBuilder::Make(output));
  std::map<uint32_t, internal::FragmentReader> readers;
  std::map<std::pair<uint32_t, int>, RecordBatch> batches;
  for (uint64_t address : row_addresses) {
    const uint32_t id = RowAddressFragment(address);
    const uint32_t offset = RowAddressOffset(address);
    const pb::Fragment* fragment = snapshot->FindFragment(id);
    if (fragment == nullptr) {
      return Status::NotFound(fmt::format("row address {:#x}: fragment {} is not in version {}",
                                          address, id, snapshot->version()));
    }
    if (offset >= fragment->physical_rows()) {
      return Status::NotFound(fmt::format("row address {:#x}: fragment {} has {} rows", address, id,
                                          fragment->physical_rows()));
    }
    auto reader_it = readers.find(id);
    if (reader_it == readers.end()) {
      STRATA_ASSIGN_OR_RETURN(
          internal::FragmentReader reader,
          internal::FragmentReader::Open(*impl_->context, *snapshot, *fragment));
      reader_it = readers.emplace(id, std::move(reader)).first;
    }
    const internal::FragmentReader& reader = reader_it->second;
    if (reader.deletions() != nullptr && reader.deletions()->Contains(offset)) {
      return Status::NotFound(
          fmt::format("row address {:#x}: row {} of fragment {} is deleted", address, offset, id));
    }
    // The last batch starting at or before the offset.
    int lo = 0;
    int hi = reader.num_batches() - 1;
    while (lo < hi) {
      const int mid = lo + (hi - lo + 1) / 2;
      if (reader.batch_offset(mid) <= offset) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int batch = lo;
    auto batch_it = batches.find({id, batch});
    if (batch_it == batches.end()) {
      STRATA_ASSIGN_OR_RETURN(RecordBatch data, reader.ReadBatch(batch, indices));
      batch_it = batches.emplace(std::make_pair(id, batch), std::move(data)).first;
    }
    const int64_t row = offset - reader.batch_offset(batch);
    for (size_t i = 0; i < indices.size(); ++i) {
      STRATA_RETURN_IF_ERROR(
          builder->builder(static_cast<int>(i))
              ->AppendArraySlice(batch_it->second.column(static_cast<int>(i)), row, 1));
    }
  }
  return builder->Finish();
}

Result<int64_t> Table::CountRows(std::string_view filter) const {
  internal::SnapshotPtr snapshot = impl_->current();
  if (filter.empty()) return snapshot->live_rows();
  RowSelectionSpec spec;
  STRATA_ASSIGN_OR_RETURN(spec.filter, expr::Parse(filter));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RowSelector> selector,
                          RowSelector::Make(impl_->context, std::move(snapshot), std::move(spec)));
  int64_t count = 0;
  BatchSelection selection;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool more, selector->Next(&selection));
    if (!more) break;
    count += static_cast<int64_t>(selection.rows.size());
  }
  return count;
}

Result<RecordBatch> Table::LookupKeys(const std::vector<expr::Scalar>& keys,
                                      const std::vector<std::string>& columns,
                                      bool with_row_address) const {
  internal::SnapshotPtr snapshot = impl_->current();
  if (!snapshot->key_column) {
    return Status::InvalidArgument("LookupKeys: the table has no primary-key column");
  }
  RowSelectionSpec spec;
  spec.keys = keys;
  STRATA_ASSIGN_OR_RETURN(spec.columns, internal::ResolveColumns(*snapshot->schema, columns));
  SchemaPtr output = internal::OutputSchema(*snapshot->schema, spec.columns, with_row_address);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RowSelector> selector,
                          RowSelector::Make(impl_->context, std::move(snapshot), spec));
  // Fragments come in scan order; the result is in row-address order.
  std::vector<BatchSelection> selections;
  std::vector<std::tuple<uint64_t, size_t, int64_t>> rows;  // address, selection, row
  while (true) {
    BatchSelection selection;
    STRATA_ASSIGN_OR_RETURN(bool more, selector->Next(&selection));
    if (!more) break;
    for (int64_t row : selection.rows) {
      rows.emplace_back(MakeRowAddress(selection.fragment_id,
                                       static_cast<uint32_t>(selection.batch_offset + row)),
                        selections.size(), row);
    }
    selections.push_back(std::move(selection));
  }
  std::sort(rows.begin(), rows.end());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchBuilder> builder,
                          RecordBatchBuilder::Make(output));
  const int num_columns = static_cast<int>(spec.columns.size());
  for (const auto& [address, index, row] : rows) {
    for (int i = 0; i < num_columns; ++i) {
      STRATA_RETURN_IF_ERROR(
          builder->builder(i)->AppendArraySlice(selections[index].data.column(i), row, 1));
    }
    if (with_row_address) builder->GetAs<UInt64Builder>(num_columns)->Append(address);
  }
  return builder->Finish();
}

Result<std::vector<uint8_t>> Table::KeysPresent(const std::vector<expr::Scalar>& keys) const {
  internal::SnapshotPtr snapshot = impl_->current();
  if (!snapshot->key_column) {
    return Status::InvalidArgument("KeysPresent: the table has no primary-key column");
  }
  const int key_column = *snapshot->key_column;
  internal::TableContext& context = *impl_->context;
  STRATA_ASSIGN_OR_RETURN(internal::KeyKind kind,
                          internal::KeyKindForType(*snapshot->schema->field(key_column)->type()));
  std::vector<uint8_t> present(keys.size(), 0);
  // The segments over live fragments, and the fragments they cover.
  std::unordered_set<uint32_t> covered;
  STRATA_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const internal::KeySegment>> segments,
                          internal::LiveKeySegments(context, *snapshot, &covered));
  std::vector<uint64_t> addresses;
  for (size_t k = 0; k < keys.size(); ++k) {
    std::optional<expr::Scalar> normalized = internal::NormalizeKey(keys[k], kind);
    if (!normalized) continue;
    addresses.clear();
    for (const auto& segment : segments) segment->Lookup(*normalized, &addresses);
    for (uint64_t address : addresses) {
      const pb::Fragment* fragment = snapshot->FindFragment(RowAddressFragment(address));
      const uint32_t offset = RowAddressOffset(address);
      if (fragment == nullptr || offset >= fragment->physical_rows()) continue;
      if (fragment->has_deletion()) {
        STRATA_ASSIGN_OR_RETURN(
            std::shared_ptr<const internal::DeletionVector> deletions,
            context.cache.Deletions(*context.store, context.prefix, fragment->deletion(),
                                    fragment->physical_rows()));
        if (deletions->Contains(offset)) continue;
      }
      present[k] = 1;
      break;
    }
  }
  const bool all_covered =
      std::all_of(snapshot->manifest.fragments().begin(), snapshot->manifest.fragments().end(),
                  [&](const pb::Fragment& f) { return covered.contains(f.id()); });
  if (all_covered) return present;
  // A key the index did not find may sit in a fragment it does not cover.
  const std::vector<std::string> key_only = {snapshot->schema->field(key_column)->name()};
  for (size_t k = 0; k < keys.size(); ++k) {
    if (present[k]) continue;
    STRATA_ASSIGN_OR_RETURN(RecordBatch rows, LookupKeys({keys[k]}, key_only));
    present[k] = rows.num_rows() > 0;
  }
  return present;
}

}  // namespace strata::table
