// What ContextStore's searches through its indexes keep between calls (context_ann.cc,
// context_retrieve.cc): per base version, the small columns of every live base row and the
// segments of the vector index; the loaded indexes and text indexes by index file. And the
// choice of fragments IndexVectors and IndexText index.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/text_index.h"
#include "store/vector_index.h"
#include "strata/context_store.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "util/mutex.h"

namespace strata::store {

// The base version a search through the index reads, reduced to what the search checks.
struct AnnBaseState {
  uint64_t version = 0;
  // Live base rows: id, created_at, the visibility columns and the filterable columns (no
  // payloads, no embedding).
  std::vector<ContextRecord> records;
  std::unordered_map<uint64_t, uint32_t> by_address;  // row address -> index in records
  // Indices in records of the rows that supersede another (rule 4 reads only these).
  std::vector<uint32_t> superseding;
  // fragment -> (row offset, index in records) of its live rows
  std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> rows_of_fragment;
  struct Segment {
    uint32_t fragment = 0;
    std::string path;
  };
  std::vector<Segment> segments;
  // Rows of fragments without a segment that have an embedding: indices in records, row
  // addresses, and their vectors one after another.
  std::vector<uint32_t> unindexed;
  std::vector<uint64_t> unindexed_addresses;
  std::vector<float> unindexed_vectors;
};

struct ContextStore::AnnCache {
  Mutex mu;
  std::shared_ptr<const AnnBaseState> state STRATA_GUARDED_BY(mu);  // the newest one built
  std::map<std::string, std::shared_ptr<const FragmentVectorIndex>> ivfs STRATA_GUARDED_BY(mu);
  std::map<std::string, std::shared_ptr<const FragmentTextIndex>> texts STRATA_GUARDED_BY(mu);
  std::atomic<int64_t> retrieve_rereads{0};
};

namespace internal {

// The fragments of the newest base version with at least `min_rows` live rows that no segment
// of index `index_name` covers (`base`'s base table is refreshed to that version).
// InvalidArgument for a checked-out store.
Result<std::vector<table::FragmentInfo>> FragmentsToIndex(const StorageBase& base,
                                                          std::string_view index_name,
                                                          int64_t min_rows);

// Writes `bytes` as an index file of `table` and describes it as the segment covering
// `fragment` with `entries` entries, for AddIndexSegments.
Result<table::IndexSegmentInfo> WriteFragmentIndex(table::Table& table, std::string_view extension,
                                                   const std::string& bytes, int64_t entries,
                                                   uint32_t fragment);

}  // namespace internal

}  // namespace strata::store
