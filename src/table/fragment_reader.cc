// FragmentReader: one fragment at one version — its batch-aligned data files, the mapping
// from schema columns to file columns, per-batch statistics for pruning, and its deletions.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "table/table_internal.h"

namespace strata::table::internal {

Result<FragmentReader> FragmentReader::Open(TableContext& context, const Snapshot& snapshot,
                                            const pb::Fragment& fragment) {
  FragmentReader reader;
  reader.snapshot_ = &snapshot;
  reader.fragment_ = &fragment;
  const int num_columns = snapshot.schema->num_fields();
  reader.column_source_.assign(num_columns, {-1, -1});

  // Every file of a fragment must cut its rows into the same batches, so batch i of the
  // fragment is batch i of each file.
  const pb::DataFile* first = nullptr;
  for (int f = 0; f < fragment.files_size(); ++f) {
    const pb::DataFile& entry = fragment.files(f);
    if (first == nullptr) {
      first = &entry;
    } else {
      bool aligned = entry.batches_size() == first->batches_size();
      for (int b = 0; aligned && b < entry.batches_size(); ++b) {
        aligned = entry.batches(b).num_rows() == first->batches(b).num_rows();
      }
      if (!aligned) {
        return Status::Corruption(
            fmt::format("fragment {}: data files {} and {} have different batch row counts",
                        fragment.id(), first->path(), entry.path()));
      }
    }
    for (int c = 0; c < entry.field_ids_size(); ++c) {
      auto it = snapshot.column_of_field.find(entry.field_ids(c));
      if (it == snapshot.column_of_field.end()) continue;  // a column no longer in the schema
      if (reader.column_source_[it->second].first >= 0) {
        return Status::Corruption(fmt::format("fragment {}: field id {} is in more than one file",
                                              fragment.id(), entry.field_ids(c)));
      }
      reader.column_source_[it->second] = {f, c};
    }
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
  for (int column = 0; column < num_columns; ++column) {
    auto [f, c] = reader.column_source_[column];
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

  // Per file, the highest file column a schema column comes from (-1: none): a batch's
  // statistics entries suffice when they reach it.
  std::vector<int> highest_column(reader.files_.size(), -1);
  for (auto [f, c] : reader.column_source_) {
    if (f >= 0) highest_column[f] = std::max(highest_column[f], c);
  }
  int64_t offset = 0;
  reader.batch_offsets_.reserve(first != nullptr ? first->batches_size() : 0);
  if (first != nullptr) {
    for (int b = 0; b < first->batches_size(); ++b) {
      const int64_t rows = first->batches(b).num_rows();
      if (rows < 0) {
        return Status::Corruption(
            fmt::format("fragment {}: batch {} has {} rows", fragment.id(), b, rows));
      }
      reader.batch_offsets_.push_back(offset);
      offset += rows;
      // Statistics are decoded on first use (Statistics()), but a missing entry is found now.
      bool complete = true;
      for (size_t f = 0; f < highest_column.size() && complete; ++f) {
        complete = highest_column[f] < fragment.files(static_cast<int>(f)).batches(b).stats_size();
      }
      if (complete) continue;
      for (int column = 0; column < num_columns; ++column) {  // the first one missing
        auto [f, c] = reader.column_source_[column];
        if (f >= 0 && c >= fragment.files(f).batches(b).stats_size()) {
          return Status::Corruption(
              fmt::format("fragment {}: data file {} batch {} lacks statistics for column {}",
                          fragment.id(), fragment.files(f).path(), b, c));
        }
      }
    }
  }
  if (offset != fragment.physical_rows()) {
    return Status::Corruption(
        fmt::format("fragment {}: data files hold {} rows; the manifest says {}", fragment.id(),
                    offset, fragment.physical_rows()));
  }

  if (fragment.has_deletion()) {
    STRATA_ASSIGN_OR_RETURN(reader.deletions_,
                            context.cache.Deletions(*context.store, context.prefix,
                                                    fragment.deletion(), fragment.physical_rows()));
  }
  return reader;
}

int64_t FragmentReader::batch_rows(int i) const {
  const size_t next = static_cast<size_t>(i) + 1;
  const int64_t end =
      next < batch_offsets_.size() ? batch_offsets_[next] : fragment_->physical_rows();
  return end - batch_offsets_[i];
}

const expr::ColumnStatistics* FragmentReader::Statistics(int batch, int column) const {
  if (batch < 0 || batch >= num_batches() || column < 0 ||
      column >= static_cast<int>(column_source_.size())) {
    return nullptr;
  }
  const int64_t slot = int64_t{batch} * static_cast<int64_t>(column_source_.size()) + column;
  auto it = statistics_.find(slot);
  if (it != statistics_.end()) return &it->second;
  const int64_t rows = batch_rows(batch);
  expr::ColumnStatistics stats;
  auto [f, c] = column_source_[column];
  if (f < 0) {
    stats.null_count = rows;
    stats.row_count = rows;
  } else {
    // Open checked that the entry exists.
    stats = StatsFromProto(fragment_->files(f).batches(batch).stats(c), rows);
  }
  return &statistics_.emplace(slot, std::move(stats)).first->second;
}

Result<RecordBatch> FragmentReader::ReadBatch(int i, const std::vector<int>& columns) const {
  if (i < 0 || i >= num_batches()) {
    return Status::InvalidArgument(fmt::format("fragment {} has {} batches; asked for batch {}",
                                               fragment_->id(), num_batches(), i));
  }
  const int64_t rows = batch_rows(i);
  const Schema& schema = *snapshot_->schema;
  std::vector<Array> arrays(columns.size());
  // One read per file, of the distinct file columns it holds.
  for (size_t f = 0; f < files_.size(); ++f) {
    std::vector<int> file_columns;
    std::vector<std::pair<size_t, size_t>> wanted;  // (output position, position in read)
    for (size_t k = 0; k < columns.size(); ++k) {
      const int column = columns[k];
      if (column < 0 || column >= schema.num_fields()) {
        return Status::InvalidArgument(fmt::format("column index {} out of range", column));
      }
      auto [source_file, source_column] = column_source_[column];
      if (source_file != static_cast<int>(f)) continue;
      size_t position = 0;
      while (position < file_columns.size() && file_columns[position] != source_column) ++position;
      if (position == file_columns.size()) file_columns.push_back(source_column);
      wanted.emplace_back(k, position);
    }
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
