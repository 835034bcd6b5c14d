// LinkedFragmentWriter (linked_fragments.h): DescribeDataFile per linked file, a deletion
// vector per fragment, one key segment over all of them, committed by
// AppendWrittenFragments exactly as Append commits what it wrote.
#include "table/linked_fragments.h"

#include <fmt/format.h>

#include "table/commit.h"
#include "table/table_internal.h"

namespace strata::table {

struct LinkedFragmentWriter::State {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;
  std::shared_ptr<Table> table;
  internal::SnapshotPtr snapshot;  // the version the fragments are described against
  internal::KeySegmentBuilder keys;
  internal::WrittenFragments written;
  std::vector<internal::DeletionVector> deleted;  // per fragment

  explicit State(internal::KeyKind kind) : keys(kind) {}

  Status NeedFragment(std::string_view what) const {
    if (written.fragments.empty()) {
      return Status::InvalidArgument(fmt::format("{} before any linked file was added", what));
    }
    return Status::OK();
  }
  int64_t CurrentRows() const { return written.fragments.back().physical_rows(); }
};

LinkedFragmentWriter::LinkedFragmentWriter(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
LinkedFragmentWriter::~LinkedFragmentWriter() = default;

Result<std::unique_ptr<LinkedFragmentWriter>> LinkedFragmentWriter::Make(
    std::shared_ptr<ObjectStore> store, std::string prefix, std::shared_ptr<Table> table) {
  if (!table) return Status::InvalidArgument("linked fragments without a table");
  const std::optional<int> key_column = table->primary_key_column();
  if (!key_column.has_value()) {
    return Status::InvalidArgument("linked fragments need a table with a primary key");
  }
  STRATA_ASSIGN_OR_RETURN(internal::KeyKind kind,
                          internal::KeyKindForType(*table->schema()->field(*key_column)->type()));
  // Field ids come from the manifest of the handle's version.
  STRATA_ASSIGN_OR_RETURN(internal::SnapshotPtr snapshot,
                          internal::LoadVersion(*store, prefix, table->version()));
  auto state = std::make_unique<State>(kind);
  state->store = std::move(store);
  state->prefix = std::move(prefix);
  state->table = std::move(table);
  state->snapshot = std::move(snapshot);
  return std::unique_ptr<LinkedFragmentWriter>(new LinkedFragmentWriter(std::move(state)));
}

Result<std::vector<LinkedFragmentWriter::FileBatch>> LinkedFragmentWriter::AddFile(
    const std::string& path, const Schema& file_schema) {
  const internal::Snapshot& snapshot = *state_->snapshot;
  std::vector<int32_t> field_ids;
  field_ids.reserve(static_cast<size_t>(file_schema.num_fields()));
  for (int i = 0; i < file_schema.num_fields(); ++i) {
    const std::string& name = file_schema.field(i)->name();
    const int column = snapshot.schema->GetFieldIndex(name);
    if (column < 0) {
      return Status::InvalidArgument(
          fmt::format("linked file {}: column '{}' is not in the table", path, name));
    }
    field_ids.push_back(snapshot.field_ids[static_cast<size_t>(column)]);
  }
  STRATA_ASSIGN_OR_RETURN(pb::DataFile file,
                          internal::DescribeDataFile(*state_->store, state_->prefix, path,
                                                     file_schema, std::move(field_ids)));
  std::vector<FileBatch> batches;
  batches.reserve(static_cast<size_t>(file.batches_size()));
  int64_t rows = 0;
  for (const pb::BatchInfo& info : file.batches()) {
    batches.push_back({static_cast<int64_t>(info.region().offset() + info.region().length()),
                       static_cast<int64_t>(info.num_rows())});
    rows += static_cast<int64_t>(info.num_rows());
  }
  pb::Fragment fragment;
  *fragment.add_files() = std::move(file);
  fragment.set_physical_rows(rows);
  state_->written.fragments.push_back(std::move(fragment));
  state_->deleted.emplace_back();
  return batches;
}

Status LinkedFragmentWriter::DeleteRows(int64_t first, int64_t count) {
  STRATA_RETURN_IF_ERROR(state_->NeedFragment("DeleteRows"));
  if (first < 0 || count < 0 || first + count > state_->CurrentRows()) {
    return Status::InvalidArgument(fmt::format("rows [{}, {}) are outside the fragment's {} rows",
                                               first, first + count, state_->CurrentRows()));
  }
  state_->deleted.back().AddRange(static_cast<uint32_t>(first),
                                  static_cast<uint32_t>(first + count));
  return Status::OK();
}

Status LinkedFragmentWriter::AddKeys(int64_t first, const Array& keys) {
  STRATA_RETURN_IF_ERROR(state_->NeedFragment("AddKeys"));
  if (first < 0 || first + keys.length() > state_->CurrentRows()) {
    return Status::InvalidArgument(
        fmt::format("keys of rows [{}, {}) are outside the fragment's {} rows", first,
                    first + keys.length(), state_->CurrentRows()));
  }
  const auto local = static_cast<uint32_t>(state_->written.fragments.size() - 1);
  return state_->keys.Add(local, static_cast<uint32_t>(first), keys);
}

Result<AppendResult> LinkedFragmentWriter::Commit() {
  STRATA_RETURN_IF_ERROR(state_->NeedFragment("Commit"));
  internal::WrittenFragments& written = state_->written;
  std::vector<uint32_t> locals;
  int64_t live = 0;
  for (size_t i = 0; i < written.fragments.size(); ++i) {
    pb::Fragment& fragment = written.fragments[i];
    const auto local = static_cast<uint32_t>(i);
    locals.push_back(local);
    const internal::DeletionVector& deleted = state_->deleted[i];
    live += fragment.physical_rows() - deleted.Cardinality();
    if (deleted.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(*fragment.mutable_deletion(),
                            internal::WriteDeletionFile(*state_->store, state_->prefix, local,
                                                        state_->snapshot->version(),
                                                        fragment.physical_rows(), deleted));
  }
  STRATA_ASSIGN_OR_RETURN(written.key_segment,
                          state_->keys.Finish(*state_->store, state_->prefix, std::move(locals)));
  written.rows = live;
  return internal::AppendWrittenFragments(*state_->table, std::move(written));
}

}  // namespace strata::table
