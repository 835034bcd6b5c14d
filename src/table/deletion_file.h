// Deletion vectors: the set of deleted row offsets of one fragment, stored as a portable
// Roaring bitmap inside the strata envelope (kind "DELV"; docs/format/table.md §6.1).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/object_store.h"
#include "strata/status.h"
#include "table/manifest.pb.h"
#include "util/clock.h"

struct roaring_bitmap_s;

namespace strata::table::internal {

// A set of uint32 row offsets. Movable, copyable (deep copy).
class DeletionVector {
 public:
  DeletionVector();
  ~DeletionVector();
  DeletionVector(const DeletionVector& other);
  DeletionVector& operator=(const DeletionVector& other);
  DeletionVector(DeletionVector&& other) noexcept;
  DeletionVector& operator=(DeletionVector&& other) noexcept;

  void Add(uint32_t offset);
  void AddRange(uint32_t begin, uint32_t end);  // [begin, end)
  bool Contains(uint32_t offset) const;
  int64_t Cardinality() const;
  bool empty() const { return Cardinality() == 0; }
  void UnionWith(const DeletionVector& other);
  // Offsets in ascending order.
  std::vector<uint32_t> ToVector() const;
  // Number of members in [0, end).
  int64_t CountBelow(uint32_t end) const;
  bool Equals(const DeletionVector& other) const;
  // The largest member. REQUIRES: !empty().
  uint32_t Maximum() const;

  // Portable Roaring serialization.
  std::string Serialize() const;
  // Corruption (naming `what`) when the bytes are not a valid bitmap.
  static Result<DeletionVector> Deserialize(std::string_view bytes, std::string_view what);

 private:
  roaring_bitmap_s* bitmap_;
};

// Puts `deleted` at NewDeletionFileKey(fragment_id, read_version, random) and returns the
// entry. InvalidArgument when an offset is >= physical_rows or the vector is empty.
Result<pb::DeletionFile> WriteDeletionFile(ObjectStore& store, const std::string& table_prefix,
                                           uint32_t fragment_id, uint64_t read_version,
                                           int64_t physical_rows, const DeletionVector& deleted,
                                           RandomSource* random = nullptr);
// Reads and verifies (envelope checksum, size and count against the entry, offsets below
// physical_rows).
Result<DeletionVector> ReadDeletionFile(ObjectStore& store, const std::string& table_prefix,
                                        const pb::DeletionFile& entry, int64_t physical_rows);

}  // namespace strata::table::internal
