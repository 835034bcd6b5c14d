// FragmentReader: one fragment at one version — its batch-aligned data files, the mapping
// from schema columns to file columns, per-batch statistics for pruning, and its deletions.
#include <fmt/format.h>

#include <vector>

#include "table/table_internal.h"

namespace strata::table::internal {

Result<FragmentReader> FragmentReader::Open(TableContext& context, const Snapshot& snapshot,
                                            const pb::Fragment& fragment) {
  FragmentReader reader;
  reader.snapshot_ = &snapshot;
  reader.fragment_ = &fragment;
  reader.layout_ = snapshot.LayoutOf(fragment);
  STRATA_RETURN_IF_ERROR(reader.layout_->status);

  reader.files_.reserve(static_cast<size_t>(fragment.files_size()));
  for (const pb::DataFile& entry : fragment.files()) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DataFileReader> file,
                            context.cache.DataFile(context.store, context.prefix, entry));
    if (file->num_batches() != entry.batches_size() ||
        file->schema()->num_fields() != entry.field_ids_size()) {
      return Status::Corruption(fmt::format(
          "fragment {}: data file {} has {} batches and {} columns; the manifest lists {} and {}",
          fragment.id(), entry.path(), file->num_batches(), file->schema()->num_fields(),
          entry.batches_size(), entry.field_ids_size()));
    }
    reader.files_.push_back(std::move(file));
  }

  // Types of the file columns must be the snapshot's.
  const int num_columns = snapshot.schema->num_fields();
  for (int column = 0; column < num_columns; ++column) {
    auto [f, c] = reader.layout_->column_source[static_cast<size_t>(column)];
    if (f < 0) continue;
    const DataType& expected = *snapshot.schema->field(column)->type();
    const DataType& actual = *reader.files_[f]->schema()->field(c)->type();
    if (!actual.Equals(expected)) {
      return Status::Corruption(fmt::format(
          "fragment {}: data file {} stores column '{}' as {}; the schema says {}", fragment.id(),
          fragment.files(f).path(), snapshot.schema->field(column)->name(), actual.ToString(),
          expected.ToString()));
    }
  }

  if (fragment.has_deletion()) {
    STRATA_ASSIGN_OR_RETURN(reader.deletions_,
                            context.cache.Deletions(*context.store, context.prefix,
                                                    fragment.deletion(), fragment.physical_rows()));
  }
  return reader;
}

int64_t FragmentReader::batch_rows(int i) const {
  const std::vector<int64_t>& offsets = layout_->batch_offsets;
  const size_t next = static_cast<size_t>(i) + 1;
  const int64_t end = next < offsets.size() ? offsets[next] : fragment_->physical_rows();
  return end - offsets[static_cast<size_t>(i)];
}

const expr::ColumnStatistics* FragmentReader::Statistics(int batch, int column) const {
  if (batch < 0 || batch >= num_batches() || column < 0 ||
      column >= static_cast<int>(layout_->column_source.size())) {
    return nullptr;
  }
  const int64_t slot =
      int64_t{batch} * static_cast<int64_t>(layout_->column_source.size()) + column;
  auto it = statistics_.find(slot);
  if (it != statistics_.end()) return &it->second;
  const int64_t rows = batch_rows(batch);
  expr::ColumnStatistics stats;
  auto [f, c] = layout_->column_source[column];
  if (f < 0) {
    stats.null_count = rows;
    stats.row_count = rows;
  } else {
    // Open checked that the entry exists.
    stats = StatsFromProto(fragment_->files(f).batches(batch).stats(c), rows);
  }
  return &statistics_.emplace(slot, std::move(stats)).first->second;
}

std::vector<int> FragmentReader::FileColumns(size_t f, const std::vector<int>& columns,
                                             std::vector<std::pair<size_t, size_t>>* wanted) const {
  std::vector<int> file_columns;
  for (size_t k = 0; k < columns.size(); ++k) {
    const int column = columns[k];
    if (column < 0 || column >= static_cast<int>(layout_->column_source.size())) continue;
    auto [source_file, source_column] = layout_->column_source[static_cast<size_t>(column)];
    if (source_file != static_cast<int>(f)) continue;
    size_t position = 0;
    while (position < file_columns.size() && file_columns[position] != source_column) ++position;
    if (position == file_columns.size()) file_columns.push_back(source_column);
    if (wanted != nullptr) wanted->emplace_back(k, position);
  }
  return file_columns;
}

int64_t FragmentReader::Prefetch(int i, const std::vector<int>& columns) const {
  if (i < 0 || i >= num_batches()) return 0;
  int64_t asked = 0;
  for (size_t f = 0; f < files_.size(); ++f) {
    std::vector<int> file_columns = FileColumns(f, columns, nullptr);
    if (!file_columns.empty()) asked += files_[f]->Prefetch(i, file_columns);
  }
  return asked;
}

Result<RecordBatch> FragmentReader::ReadBatch(int i, const std::vector<int>& columns) const {
  if (i < 0 || i >= num_batches()) {
    return Status::InvalidArgument(fmt::format("fragment {} has {} batches; asked for batch {}",
                                               fragment_->id(), num_batches(), i));
  }
  const int64_t rows = batch_rows(i);
  const Schema& schema = *snapshot_->schema;
  for (int column : columns) {
    if (column < 0 || column >= schema.num_fields()) {
      return Status::InvalidArgument(fmt::format("column index {} out of range", column));
    }
  }
  std::vector<Array> arrays(columns.size());
  // One read per file, of the distinct file columns it holds.
  for (size_t f = 0; f < files_.size(); ++f) {
    std::vector<std::pair<size_t, size_t>> wanted;  // (output position, position in read)
    std::vector<int> file_columns = FileColumns(f, columns, &wanted);
    if (file_columns.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(RecordBatch part, files_[f]->ReadBatch(i, file_columns));
    if (part.num_rows() != rows || part.num_columns() != static_cast<int>(file_columns.size())) {
      return Status::Corruption(fmt::format(
          "fragment {}: data file {} batch {} decoded {} rows x {} columns; expected {} x {}",
          fragment_->id(), fragment_->files(static_cast<int>(f)).path(), i, part.num_rows(),
          part.num_columns(), rows, file_columns.size()));
    }
    for (auto [k, position] : wanted) arrays[k] = part.column(static_cast<int>(position));
  }
  for (size_t k = 0; k < columns.size(); ++k) {
    if (!arrays[k].is_valid_handle()) {
      arrays[k] = Array::MakeNull(schema.field(columns[k])->type(), rows);
    }
  }
  STRATA_ASSIGN_OR_RETURN(SchemaPtr projected, schema.Project(columns));
  return RecordBatch::Make(std::move(projected), rows, std::move(arrays));
}

}  // namespace strata::table::internal
