// Key index segments: sorted (key, local row address) pairs for the primary-key column
// (byte layout: docs/format/table.md §6.2).
//
// A segment covers the fragments listed in its manifest entry (pb::KeySegment). Entries
// name a fragment by its position in that list ("local fragment"), not by its id, so a
// commit that is rebased and gets different fragment ids rewrites only the list. Keys are
// either integers (every integer key type and timestamps, compared as int64) or byte
// strings (utf8, large_utf8), compared bytewise. Duplicate keys are allowed (the key is
// unenforced); entries with equal keys are ordered by address.
//
// Readers filter what a segment returns: fragments no longer in the manifest (rewritten
// by compaction) and deleted rows are dropped by the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/array.h"
#include "strata/expr.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/type.h"
#include "table/manifest.pb.h"
#include "util/clock.h"

namespace strata::table::internal {

// Local row address: (position in the segment's fragment list << 32) | row offset.
using LocalAddress = uint64_t;

// Whether `type` can be a key (see table.h), and which kind of key it is.
enum class KeyKind : uint8_t { kInteger, kString };
Result<KeyKind> KeyKindForType(const DataType& type);

// Collects keys of one or more fragments, then writes a segment.
class KeySegmentBuilder {
 public:
  explicit KeySegmentBuilder(KeyKind kind);
  // Adds the keys of rows [first_offset, first_offset + keys.length()) of local fragment
  // `local_fragment`. `keys` must be a non-null array of a type of this builder's kind.
  Status Add(uint32_t local_fragment, uint32_t first_offset, const Array& keys);
  // Adds one entry (used when merging segments).
  void AddInteger(int64_t key, LocalAddress address);
  void AddString(std::string_view key, LocalAddress address);
  int64_t num_entries() const;
  // Sorts, writes the segment at a new "_indices/<uuid>.keys" key (drawn from `clock` and
  // `random`; null = the system sources) and returns the entry (fragment_ids is filled from
  // `fragment_ids`: local fragment i is fragment_ids[i]).
  Result<pb::KeySegment> Finish(ObjectStore& store, const std::string& table_prefix,
                                std::vector<uint32_t> fragment_ids, Clock* clock = nullptr,
                                RandomSource* random = nullptr);

 private:
  KeyKind kind_;
  std::vector<std::pair<int64_t, LocalAddress>> integers_;
  std::vector<std::pair<std::string, LocalAddress>> strings_;
};

// A loaded, verified segment. Immutable and thread safe.
class KeySegment {
 public:
  // Reads and verifies the segment (envelope checksum, size, sortedness, local fragment
  // positions within the entry's list).
  static Result<std::shared_ptr<const KeySegment>> Load(ObjectStore& store,
                                                        const std::string& table_prefix,
                                                        const pb::KeySegment& entry);
  KeyKind kind() const { return kind_; }
  int64_t num_entries() const;
  // Every entry whose key equals `key` (integer or string scalar; other kinds or a kind
  // mismatch find nothing), as global row addresses using the entry's fragment list.
  void Lookup(const expr::Scalar& key, std::vector<uint64_t>* addresses) const;
  // Entry i, for merging: the key as a scalar-free pair and the local address.
  int64_t IntegerKey(int64_t i) const;
  std::string_view StringKey(int64_t i) const;
  LocalAddress Address(int64_t i) const;
  const std::vector<uint32_t>& fragment_ids() const { return fragment_ids_; }
  int64_t memory_bytes() const;

 private:
  KeySegment() = default;
  KeyKind kind_ = KeyKind::kInteger;
  std::vector<uint32_t> fragment_ids_;
  std::vector<int64_t> integer_keys_;
  std::vector<uint64_t> string_offsets_;  // num_entries + 1
  std::string string_bytes_;
  // String keys' search aid: the bytes every key starts with, and for each key the 8 bytes
  // after them as a big-endian number (zeros past its end), in the keys' order.
  std::string string_common_;
  std::vector<uint64_t> string_prefixes_;
  std::vector<LocalAddress> addresses_;
};

// Converts a key scalar to the form the index compares (an integer key for integer
// columns, bytes for string columns). nullopt when it can never match (NULL, a fractional
// number, a string for an integer key...).
std::optional<expr::Scalar> NormalizeKey(const expr::Scalar& key, KeyKind kind);

}  // namespace strata::table::internal
