// What ContextStore's search through the vector index keeps between calls (context_ann.cc):
// per base version, the small columns of every live base row and the segments of the index;
// the loaded graphs by index file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/vector_index.h"
#include "strata/context_store.h"
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
  std::map<std::string, std::shared_ptr<const FragmentVectorIndex>> graphs STRATA_GUARDED_BY(mu);
};

}  // namespace strata::store
