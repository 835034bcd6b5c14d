// FragmentSetWriter: streams appended rows into new fragments (one data file each, cut by
// the table's fragment limits) and builds the key segment that covers them.
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <set>
#include <thread>

#include "table/table_internal.h"

namespace strata::table::internal {

Status CheckAppendSchema(const Snapshot& snapshot, const Schema& schema) {
  const Schema& table = *snapshot.schema;
  std::set<std::string, std::less<>> seen;
  for (const FieldPtr& field : schema.fields()) {
    if (!seen.insert(field->name()).second) {
      return Status::InvalidArgument(
          fmt::format("column '{}' appears more than once in the appended batch", field->name()));
    }
    const int index = table.GetFieldIndex(field->name());
    if (index < 0) {
      std::string columns;
      for (const FieldPtr& f : table.fields()) {
        columns += columns.empty() ? f->name() : ", " + f->name();
      }
      return Status::InvalidArgument(fmt::format(
          "the appended batch has column '{}', which the table does not have (columns: {})",
          field->name(), columns));
    }
    const DataType& expected = *table.field(index)->type();
    if (!field->type()->Equals(expected)) {
      return Status::InvalidArgument(
          fmt::format("column '{}' is {} in the table but {} in the appended batch", field->name(),
                      expected.ToString(), field->type()->ToString()));
    }
  }
  for (const FieldPtr& field : table.fields()) {
    if (!field->nullable() && !seen.contains(field->name())) {
      return Status::InvalidArgument(
          fmt::format("the appended batch lacks column '{}', which is non-nullable ({})",
                      field->name(), field->type()->ToString()));
    }
  }
  return Status::OK();
}

namespace {

class FragmentSetWriterImpl final : public FragmentSetWriter {
 public:
  FragmentSetWriterImpl(TableContext& context, SchemaPtr file_schema,
                        std::vector<int32_t> field_ids, int key_input_column,
                        std::optional<KeyKind> key_kind)
      : context_(context),
        file_schema_(std::move(file_schema)),
        field_ids_(std::move(field_ids)),
        key_input_column_(key_input_column) {
    if (key_kind) keys_.emplace(*key_kind);
  }
  // An abandoned writer waits for the fragment finishing in the background (its file stays
  // unreferenced, as every finished fragment of an abandoned writer does).
  ~FragmentSetWriterImpl() override {
    if (finishing_) finishing_->thread.join();
  }
  FragmentSetWriterImpl(const FragmentSetWriterImpl&) = delete;
  FragmentSetWriterImpl& operator=(const FragmentSetWriterImpl&) = delete;

  Status Write(const RecordBatch& batch) override {
    if (finished_) return Status::InvalidArgument("FragmentSetWriter: Write after Finish");
    STRATA_RETURN_IF_ERROR(failed_);
    if (batch.num_columns() != file_schema_->num_fields()) {
      return Status::InvalidArgument(fmt::format("batch has {} columns; the writer expects {}",
                                                 batch.num_columns(), file_schema_->num_fields()));
    }
    // Re-label the columns with the table's fields, which also checks that non-nullable
    // table columns hold no nulls.
    STRATA_ASSIGN_OR_RETURN(RecordBatch rows,
                            RecordBatch::Make(file_schema_, batch.num_rows(), batch.columns()));
    const TableOptions& options = context_.options;
    const int64_t max_rows = std::max<int64_t>(1, options.max_rows_per_fragment);
    const int64_t max_bytes = std::max<int64_t>(1, options.max_bytes_per_fragment);
    int64_t position = 0;
    while (position < rows.num_rows()) {
      if (!current_) {
        DataFileWriteOptions write_options;
        write_options.compression = options.compression;
        write_options.min_compressed_buffer_bytes = options.min_compressed_buffer_bytes;
        write_options.max_rows_per_batch = options.max_rows_per_batch;
        write_options.max_bytes_per_batch = options.max_bytes_per_batch;
        write_options.clock = options.clock;
        write_options.random = options.random;
        STRATA_ASSIGN_OR_RETURN(current_,
                                DataFileWriter::Make(context_.store, context_.prefix, file_schema_,
                                                     field_ids_, write_options));
      }
      const int64_t in_fragment = fragment_rows_;
      int64_t chunk = std::min(rows.num_rows() - position, max_rows - in_fragment);
      // Bytes are only known after writing, so write in pieces sized by the average row
      // seen so far (a small probe first) and cut when the budget is reached.
      const int64_t bytes_left = max_bytes - current_->bytes_buffered();
      if (average_row_bytes_ > 0) {
        chunk = std::min(chunk, std::max<int64_t>(1, bytes_left / average_row_bytes_));
      } else {
        chunk = std::min<int64_t>(chunk, 64);
      }
      const int64_t bytes_before = current_->bytes_buffered();
      RecordBatch piece = rows.Slice(position, chunk);
      STRATA_RETURN_IF_ERROR(current_->Write(piece));
      const int64_t piece_bytes = current_->bytes_buffered() - bytes_before;
      if (piece_bytes > 0) {
        average_row_bytes_ = std::max<int64_t>(1, (piece_bytes + chunk - 1) / chunk);
      }
      if (keys_) {
        STRATA_RETURN_IF_ERROR(keys_->Add(static_cast<uint32_t>(fragments_cut_),
                                          static_cast<uint32_t>(in_fragment),
                                          piece.column(key_input_column_)));
      }
      position += chunk;
      fragment_rows_ += chunk;
      if (fragment_rows_ >= max_rows || current_->bytes_buffered() >= max_bytes) {
        STRATA_RETURN_IF_ERROR(FinishFragment(/*in_background=*/true));
      }
    }
    return Status::OK();
  }

  Result<WrittenFragments> Finish() override {
    if (finished_) return Status::InvalidArgument("FragmentSetWriter: Finish called twice");
    finished_ = true;
    STRATA_RETURN_IF_ERROR(failed_);
    STRATA_RETURN_IF_ERROR(FinishFragment(/*in_background=*/false));
    STRATA_RETURN_IF_ERROR(JoinFinishing());
    if (keys_ && written_.rows > 0) {
      std::vector<uint32_t> placeholders(written_.fragments.size(), 0);
      STRATA_ASSIGN_OR_RETURN(pb::KeySegment segment,
                              keys_->Finish(*context_.store, context_.prefix, placeholders,
                                            context_.options.clock, context_.options.random));
      written_.bytes_written += segment.size();
      written_.key_segment = std::move(segment);
    }
    return std::move(written_);
  }

 private:
  // The file of a fragment cut in the middle of the rows, finished (its last batches
  // compressed, its regions cut and checksummed, the object put) on a thread of its own while
  // the next fragment's rows are encoded: the put and the checksums would otherwise leave
  // the compression helper idle. At most one is in flight.
  struct Finishing {
    std::unique_ptr<DataFileWriter> writer;
    int64_t rows = 0;
    int64_t uncompressed_bytes = 0;
    Result<pb::DataFile> file = Status::Internal("data file not finished");
    // What Finish threw (std::bad_alloc for the file's buffer), rethrown to the writer's
    // caller as it would have reached it inline, rather than terminating the process.
    std::exception_ptr exception;
    std::thread thread;
  };

  Status FinishFragment(bool in_background) {
    if (!current_) return Status::OK();
    auto finishing = std::make_unique<Finishing>();
    finishing->writer = std::move(current_);
    // rows_written() counts only flushed batches; the writer's own count is exact.
    finishing->rows = fragment_rows_;
    fragment_rows_ = 0;
    if (finishing->rows == 0) return Status::OK();
    ++fragments_cut_;
    // Recorded so that compaction can tell a fragment cut at the byte limit from a small one.
    finishing->uncompressed_bytes = finishing->writer->bytes_buffered();
    STRATA_RETURN_IF_ERROR(JoinFinishing());  // fragments are recorded in order
    if (!in_background) {
      finishing->file = finishing->writer->Finish();
      return Record(*finishing);
    }
    Finishing* f = finishing.get();
    // Started before finishing_ holds it: a thread that cannot be created throws here and
    // leaves nothing to join.
    f->thread = std::thread([f] {
      try {
        f->file = f->writer->Finish();
        f->writer.reset();
      } catch (...) {
        f->exception = std::current_exception();
      }
    });
    finishing_ = std::move(finishing);
    return Status::OK();
  }

  // Waits for the fragment finishing in the background, if any, and records it.
  Status JoinFinishing() {
    if (!finishing_) return Status::OK();
    finishing_->thread.join();
    std::unique_ptr<Finishing> finishing = std::move(finishing_);
    if (finishing->exception) {
      failed_ = Status::Internal("a data file failed to finish (exception)");
      std::rethrow_exception(finishing->exception);
    }
    Status recorded = Record(*finishing);
    if (!recorded.ok()) failed_ = recorded;
    return recorded;
  }

  Status Record(Finishing& finishing) {
    STRATA_ASSIGN_OR_RETURN(pb::DataFile file, std::move(finishing.file));
    file.set_uncompressed_bytes(finishing.uncompressed_bytes);
    pb::Fragment fragment;
    fragment.set_id(0);
    fragment.set_physical_rows(finishing.rows);
    written_.bytes_written += file.size();
    *fragment.add_files() = std::move(file);
    written_.fragments.push_back(std::move(fragment));
    written_.rows += finishing.rows;
    return Status::OK();
  }

  TableContext& context_;
  SchemaPtr file_schema_;
  std::vector<int32_t> field_ids_;
  int key_input_column_;
  std::optional<KeySegmentBuilder> keys_;
  std::unique_ptr<DataFileWriter> current_;
  int64_t fragment_rows_ = 0;  // rows given to current_
  int64_t fragments_cut_ = 0;  // fragments with rows handed to FinishFragment; current_ is next
  std::unique_ptr<Finishing> finishing_;
  Status failed_;  // a fragment that failed to finish fails every later call
  int64_t average_row_bytes_ = 0;
  WrittenFragments written_;
  bool finished_ = false;
};

}  // namespace

Result<std::unique_ptr<FragmentSetWriter>> FragmentSetWriter::Make(TableContext& context,
                                                                   const Snapshot& snapshot,
                                                                   SchemaPtr input_schema) {
  STRATA_RETURN_IF_ERROR(CheckAppendSchema(snapshot, *input_schema));
  const Schema& table = *snapshot.schema;
  std::vector<FieldPtr> fields;
  std::vector<int32_t> field_ids;
  int key_input_column = -1;
  for (int i = 0; i < input_schema->num_fields(); ++i) {
    const int column = table.GetFieldIndex(input_schema->field(i)->name());
    fields.push_back(table.field(column));
    field_ids.push_back(snapshot.field_ids[column]);
    if (snapshot.key_column && *snapshot.key_column == column) key_input_column = i;
  }
  std::optional<KeyKind> key_kind;
  if (snapshot.key_column) {
    if (key_input_column < 0) {
      return Status::InvalidArgument(
          fmt::format("the appended batch lacks the primary-key column '{}'",
                      table.field(*snapshot.key_column)->name()));
    }
    STRATA_ASSIGN_OR_RETURN(key_kind, KeyKindForType(*table.field(*snapshot.key_column)->type()));
  }
  return std::make_unique<FragmentSetWriterImpl>(context, schema(std::move(fields)),
                                                 std::move(field_ids), key_input_column, key_kind);
}

}  // namespace strata::table::internal
