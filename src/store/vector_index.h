// The approximate vector index of a context store: one HNSW graph (Debian's hnswlib) per
// base-table fragment, labelled by row offset within the fragment, stored as an immutable
// index file of the base table (table.h "Secondary indexes"; format in
// docs/format/stores.md §5.4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/context_store.h"
#include "strata/status.h"

namespace strata::store {

// Index name, type and file extension in the base table.
inline constexpr std::string_view kVectorIndexName = "embedding_hnsw";
inline constexpr std::string_view kVectorIndexType = "hnsw";
inline constexpr std::string_view kVectorIndexExtension = "hnsw";

class FragmentVectorIndex {
 public:
  // Builds the graph over `rows` vectors of `dim` floats (row r at vectors + r * dim,
  // labelled offsets[r]) with `threads` threads (>= 1).
  static Result<std::unique_ptr<FragmentVectorIndex>> Build(DistanceMetric metric, size_t dim,
                                                            const float* vectors,
                                                            const std::vector<uint32_t>& offsets,
                                                            const VectorIndexOptions& options);
  // The index file's bytes and back. Corruption for bytes that fail their checksum or do not
  // describe an index of `metric` and `dim`.
  Result<std::string> Serialize() const;
  static Result<std::unique_ptr<FragmentVectorIndex>> Deserialize(std::string_view bytes,
                                                                  DistanceMetric metric, size_t dim,
                                                                  int ef_search);
  ~FragmentVectorIndex();

  // Up to `k` labels (row offsets) near `query`, nearest first, found with a beam of at least
  // ef_search (and at least k). Thread safe.
  std::vector<uint32_t> Search(const float* query, size_t k) const;
  // The vector stored for `label` (the normalised one for cosine), or null.
  const float* Vector(uint32_t label) const;
  size_t size() const;
  int64_t memory_bytes() const;

  struct State;

 private:
  explicit FragmentVectorIndex(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace strata::store
