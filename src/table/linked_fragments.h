// Committing Arrow IPC files that something else wrote and then copied or hard-linked under
// a table's prefix, as the data files of new fragments (one file per fragment), with rows
// of those files left out by deletion files and a key index built from keys the caller
// supplies. This is what the LSM layer needs to turn WAL segments into a generation table
// without rewriting rows (docs/format/lsm.md §6.3); it keeps the table's manifest, deletion
// file and key index types inside the table layer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/array.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/table.h"
#include "strata/type.h"

namespace strata::table {

// Not thread safe; one writer per commit.
class LinkedFragmentWriter {
 public:
  // One record batch of a linked file, in file order.
  struct FileBatch {
    int64_t message_end = 0;  // byte offset just past the batch's IPC message
    int64_t rows = 0;
  };

  // `table` is the writable handle of the table at `prefix` in `store`; it must have a
  // primary-key column (InvalidArgument otherwise), whose index AddKeys fills.
  static Result<std::unique_ptr<LinkedFragmentWriter>> Make(std::shared_ptr<ObjectStore> store,
                                                            std::string prefix,
                                                            std::shared_ptr<Table> table);
  ~LinkedFragmentWriter();
  LinkedFragmentWriter(const LinkedFragmentWriter&) = delete;
  LinkedFragmentWriter& operator=(const LinkedFragmentWriter&) = delete;

  // Starts the next fragment on the IPC file at `path` (relative to the table prefix),
  // whose schema is `file_schema`: table columns, by name, with the table's types; table
  // columns it lacks must be nullable and read as null. Returns the file's batches (see
  // DescribeDataFile for how regions are cut; bytes between messages belong to a batch).
  Result<std::vector<FileBatch>> AddFile(const std::string& path, const Schema& file_schema);
  // Rows [first, first + count) of the current fragment are not part of the table.
  Status DeleteRows(int64_t first, int64_t count);
  // Key index entries for rows [first, first + keys.length()) of the current fragment
  // (`keys`: non-null, of the key column's type). Entries of deleted rows are allowed;
  // lookups drop them.
  Status AddKeys(int64_t first, const Array& keys);
  // Writes each fragment's deletion file and the key segment, then commits every fragment
  // as one append version (table.h AppendResult; rows = the live rows). InvalidArgument
  // when no file was added.
  Result<AppendResult> Commit();

 private:
  struct State;
  explicit LinkedFragmentWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace strata::table
