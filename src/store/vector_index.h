// The approximate vector index of a context store: one IVF-Flat index (Debian's faiss) per
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
inline constexpr std::string_view kVectorIndexName = "embedding_ivf";
inline constexpr std::string_view kVectorIndexType = "ivf_flat";
inline constexpr std::string_view kVectorIndexExtension = "ivf";

class FragmentVectorIndex {
 public:
  // Builds the index over offsets.size() vectors of `dim` floats (row r at vectors + r * dim,
  // labelled offsets[r], each label once, every value finite): options.lists k-means lists
  // (0: sqrt(rows)), at most one per 39 rows.
  static Result<std::unique_ptr<FragmentVectorIndex>> Build(DistanceMetric metric, size_t dim,
                                                            const float* vectors,
                                                            const std::vector<uint32_t>& offsets,
                                                            const VectorIndexOptions& options);
  // The index file's bytes and back. Corruption for bytes that fail their checksum or do not
  // describe an index of `metric` and `dim`.
  Result<std::string> Serialize() const;
  static Result<std::unique_ptr<FragmentVectorIndex>> Deserialize(std::string_view bytes,
                                                                  DistanceMetric metric, size_t dim,
                                                                  int probes);
  ~FragmentVectorIndex();

  // Up to `k` labels (row offsets) near `query`, nearest first, from the `probes` lists whose
  // centroids are nearest (and further lists while those hold fewer than k rows). Thread
  // safe.
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
