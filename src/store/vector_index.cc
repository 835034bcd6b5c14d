// IVF-Flat indexes over one fragment's embeddings (vector_index.h), on Debian's faiss
// (1.7.3): k-means centroids (the coarse quantizer) and, per centroid, the list of the rows
// nearest to it with their full vectors. A search scores the query against the centroids and
// then every vector of the `nprobe` nearest lists. Cosine indexes hold normalised vectors and
// rank by inner product; dot by inner product; l2 by squared distance.
//
// Chosen over HNSW (hnswlib) by measurement on W8 (100k x 1536, top 10 planted as a tight
// cluster around each query in uniform noise): HNSW graphs reached recall@10 0.63, a graph
// walk over uniform noise rarely entering the cluster, while an IVF list holds the cluster
// with its query (recall 1.00 from one probe).
#include "store/vector_index.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <typeinfo>
#include <utility>

#include "store/vector_kernel.h"
#include "util/envelope.h"
#include "util/little_endian.h"

namespace strata::store {
namespace {

constexpr std::string_view kEnvelopeKind = "IVFF";
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 24;  // version, metric, dim, count
// k-means wants this many training points per centroid (faiss warns below it).
constexpr size_t kMinPointsPerList = 39;

// The vector as the index holds it: unit length for cosine (a zero vector stays zero).
void Prepare(DistanceMetric metric, const float* in, size_t dim, float* out) {
  std::memcpy(out, in, dim * sizeof(float));
  if (metric != DistanceMetric::kCosine) return;
  double norm = 0;
  for (size_t i = 0; i < dim; ++i) norm += static_cast<double>(in[i]) * in[i];
  if (norm == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(norm));
  for (size_t i = 0; i < dim; ++i) out[i] *= scale;
}

faiss::MetricType FaissMetric(DistanceMetric metric) {
  return metric == DistanceMetric::kL2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
}

// Reads faiss's serialised index from a view of the file's bytes.
struct ViewReader final : faiss::IOReader {
  explicit ViewReader(std::string_view bytes) : bytes_(bytes) {}
  size_t operator()(void* ptr, size_t size, size_t nitems) override {
    if (size == 0) return 0;
    const size_t items = std::min(nitems, (bytes_.size() - at_) / size);
    if (items == 0) return 0;
    std::memcpy(ptr, bytes_.data() + at_, items * size);
    at_ += items * size;
    return items;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace

struct FragmentVectorIndex::State {
  DistanceMetric metric = DistanceMetric::kL2;
  size_t dim = 0;
  size_t nprobe = 1;
  std::unique_ptr<faiss::IndexIVFFlat> index;
  const float* centroids = nullptr;  // nlist x dim, the quantizer's
  // label (row offset) -> its vector in the index's lists, null for labels it does not hold
  std::vector<const float*> by_label;

  // Fills centroids and by_label. Corruption when the quantizer is not a flat index, a label
  // repeats or a list is not flat.
  Status MapLabels() {
    const auto* flat = dynamic_cast<const faiss::IndexFlat*>(index->quantizer);
    if (flat == nullptr || flat->codes.size() != index->nlist * dim * sizeof(float)) {
      return Status::Corruption("vector index file: the quantizer is not flat centroids");
    }
    centroids = flat->get_xb();
    const faiss::InvertedLists& lists = *index->invlists;
    if (lists.code_size != dim * sizeof(float)) {
      return Status::Corruption("vector index file: lists do not hold float32 vectors");
    }
    by_label.clear();
    size_t held = 0;
    for (size_t list = 0; list < lists.nlist; ++list) {
      const size_t n = lists.list_size(list);
      const faiss::Index::idx_t* ids = lists.get_ids(list);
      const auto* codes = reinterpret_cast<const float*>(lists.get_codes(list));
      for (size_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] > UINT32_MAX) {
          return Status::Corruption("vector index file: a label out of range");
        }
        const auto label = static_cast<size_t>(ids[i]);
        if (label >= by_label.size()) by_label.resize(label + 1, nullptr);
        if (by_label[label] != nullptr) {
          return Status::Corruption("vector index file: a label held twice");
        }
        by_label[label] = codes + i * dim;
        ++held;
      }
    }
    if (held != static_cast<size_t>(index->ntotal)) {
      return Status::Corruption("vector index file: the lists hold another number of rows");
    }
    return Status::OK();
  }
};

FragmentVectorIndex::FragmentVectorIndex(std::unique_ptr<State> state) : state_(std::move(state)) {}
FragmentVectorIndex::~FragmentVectorIndex() = default;

Result<std::unique_ptr<FragmentVectorIndex>> FragmentVectorIndex::Build(
    DistanceMetric metric, size_t dim, const float* vectors, const std::vector<uint32_t>& offsets,
    const VectorIndexOptions& options) {
  if (dim == 0 || offsets.empty()) {
    return Status::InvalidArgument("a vector index needs at least one vector of dimension >= 1");
  }
  const size_t n = offsets.size();
  // Lists: the option, or sqrt(rows); at most one per kMinPointsPerList rows, at least one.
  size_t lists = options.lists > 0 ? static_cast<size_t>(options.lists)
                                   : static_cast<size_t>(std::sqrt(static_cast<double>(n)));
  lists = std::clamp<size_t>(lists, 1, std::max<size_t>(1, n / kMinPointsPerList));
  std::vector<float> prepared(n * dim);
  for (size_t r = 0; r < n; ++r) Prepare(metric, vectors + r * dim, dim, &prepared[r * dim]);
  std::vector<faiss::Index::idx_t> labels(offsets.begin(), offsets.end());
  auto state = std::make_unique<State>();
  state->metric = metric;
  state->dim = dim;
  state->nprobe = static_cast<size_t>(std::max(1, options.probes));
  try {
    std::unique_ptr<faiss::Index> quantizer;
    if (metric == DistanceMetric::kL2) {
      quantizer = std::make_unique<faiss::IndexFlatL2>(dim);
    } else {
      quantizer = std::make_unique<faiss::IndexFlatIP>(dim);
    }
    state->index =
        std::make_unique<faiss::IndexIVFFlat>(quantizer.get(), dim, lists, FaissMetric(metric));
    // The index deletes the quantizer from here on.
    state->index->quantizer = quantizer.release();
    state->index->own_fields = true;
    state->index->cp.seed = 20261204;  // the same rows give the same index
    state->index->train(static_cast<faiss::Index::idx_t>(n), prepared.data());
    state->index->add_with_ids(static_cast<faiss::Index::idx_t>(n), prepared.data(), labels.data());
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("building the IVF index failed: {}", e.what()));
  }
  STRATA_RETURN_IF_ERROR(state->MapLabels());
  return std::unique_ptr<FragmentVectorIndex>(new FragmentVectorIndex(std::move(state)));
}

Result<std::string> FragmentVectorIndex::Serialize() const {
  faiss::VectorIOWriter writer;
  try {
    faiss::write_index(state_->index.get(), &writer);
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("serialising the IVF index: {}", e.what()));
  }
  std::string payload;
  payload.reserve(kHeaderBytes + writer.data.size());
  PutFixed32(&payload, kFormatVersion);
  PutFixed32(&payload, static_cast<uint32_t>(state_->metric));
  PutFixed64(&payload, state_->dim);
  PutFixed64(&payload, static_cast<uint64_t>(state_->index->ntotal));
  payload.append(reinterpret_cast<const char*>(writer.data.data()), writer.data.size());
  return EncodeEnvelope(kEnvelopeKind, payload);
}

Result<std::unique_ptr<FragmentVectorIndex>> FragmentVectorIndex::Deserialize(
    std::string_view bytes, DistanceMetric metric, size_t dim, int probes) {
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kEnvelopeKind, bytes, "vector index file"));
  if (payload.size() < kHeaderBytes) {
    return Status::Corruption("vector index file: shorter than its header");
  }
  const uint32_t version = DecodeFixed32(payload.data());
  if (version != kFormatVersion) {
    return Status::NotSupported(fmt::format(
        "vector index file: format version {} (this build reads {})", version, kFormatVersion));
  }
  const uint32_t file_metric = DecodeFixed32(payload.data() + 4);
  const uint64_t file_dim = DecodeFixed64(payload.data() + 8);
  const uint64_t count = DecodeFixed64(payload.data() + 16);
  if (file_metric != static_cast<uint32_t>(metric) || file_dim != dim) {
    return Status::Corruption(fmt::format(
        "vector index file: built for metric {} and dimension {}, the store has {} and {}",
        file_metric, file_dim, static_cast<uint32_t>(metric), dim));
  }
  auto state = std::make_unique<State>();
  state->metric = metric;
  state->dim = dim;
  state->nprobe = static_cast<size_t>(std::max(1, probes));
  ViewReader reader(payload.substr(kHeaderBytes));
  try {
    std::unique_ptr<faiss::Index> index(faiss::read_index(&reader));
    const faiss::Index* read = index.get();
    if (read == nullptr || typeid(*read) != typeid(faiss::IndexIVFFlat)) {
      return Status::Corruption("vector index file: not an IVF-Flat index");
    }
    state->index.reset(static_cast<faiss::IndexIVFFlat*>(index.release()));
  } catch (const std::exception& e) {
    return Status::Corruption(fmt::format("vector index file: {}", e.what()));
  }
  if (!reader.done()) return Status::Corruption("vector index file: bytes after the index");
  const faiss::IndexIVFFlat& ivf = *state->index;
  if (static_cast<size_t>(ivf.d) != dim || ivf.metric_type != FaissMetric(metric) ||
      static_cast<uint64_t>(ivf.ntotal) != count || !ivf.is_trained || ivf.quantizer == nullptr ||
      static_cast<size_t>(ivf.quantizer->d) != dim ||
      ivf.quantizer->metric_type != FaissMetric(metric) ||
      static_cast<size_t>(ivf.quantizer->ntotal) != ivf.nlist || ivf.invlists == nullptr ||
      ivf.invlists->nlist != ivf.nlist) {
    return Status::Corruption("vector index file: the index differs from its header");
  }
  STRATA_RETURN_IF_ERROR(state->MapLabels());
  return std::unique_ptr<FragmentVectorIndex>(new FragmentVectorIndex(std::move(state)));
}

std::vector<uint32_t> FragmentVectorIndex::Search(const float* query, size_t k) const {
  const size_t dim = state_->dim;
  const faiss::IndexIVFFlat& index = *state_->index;
  const faiss::InvertedLists& lists = *index.invlists;
  k = std::min(k, size());
  std::vector<uint32_t> labels;
  if (k == 0) return labels;
  std::vector<float> prepared(dim);
  Prepare(state_->metric, query, dim, prepared.data());
  // Scored with strata's SIMD kernel rather than faiss's search (Debian builds faiss with its
  // scalar reference distances, ~60% of a search's time when it did the scoring): the index
  // ranks by squared l2 or by inner product (held vectors are unit length for cosine), which
  // kL2 and kDot distances order the same way.
  const DistanceMetric order =
      state_->metric == DistanceMetric::kL2 ? DistanceMetric::kL2 : DistanceMetric::kDot;
  const std::span<const float> q(prepared);
  const size_t nlist = index.nlist;
  std::vector<double> centroid_distance(nlist);
  VectorDistances(order, q, state_->centroids, nlist, centroid_distance.data());
  std::vector<uint32_t> probe_order(nlist);
  for (uint32_t l = 0; l < nlist; ++l) probe_order[l] = l;
  std::sort(probe_order.begin(), probe_order.end(), [&](uint32_t a, uint32_t b) {
    if (centroid_distance[a] != centroid_distance[b]) {
      return centroid_distance[a] < centroid_distance[b];
    }
    return a < b;
  });
  // The `probes` nearest lists, then more while they hold fewer than k rows.
  std::vector<std::pair<double, uint32_t>> found;
  std::vector<double> distances;
  for (size_t p = 0; p < nlist && (p < state_->nprobe || found.size() < k); ++p) {
    const size_t list = probe_order[p];
    const size_t n = lists.list_size(list);
    if (n == 0) continue;
    const auto* vectors = reinterpret_cast<const float*>(lists.get_codes(list));
    const faiss::Index::idx_t* ids = lists.get_ids(list);
    distances.resize(n);
    VectorDistances(order, q, vectors, n, distances.data());
    for (size_t i = 0; i < n; ++i) {
      // NaN sorts last (the index holds finite vectors, but a query may not be).
      found.emplace_back(std::isnan(distances[i]) ? HUGE_VAL : distances[i],
                         static_cast<uint32_t>(ids[i]));
    }
  }
  const size_t keep = std::min(k, found.size());
  std::partial_sort(found.begin(), found.begin() + static_cast<ptrdiff_t>(keep), found.end());
  labels.reserve(keep);
  for (size_t i = 0; i < keep; ++i) labels.push_back(found[i].second);
  return labels;
}

const float* FragmentVectorIndex::Vector(uint32_t label) const {
  return label < state_->by_label.size() ? state_->by_label[label] : nullptr;
}

size_t FragmentVectorIndex::size() const { return static_cast<size_t>(state_->index->ntotal); }

int64_t FragmentVectorIndex::memory_bytes() const {
  const faiss::IndexIVFFlat& index = *state_->index;
  return static_cast<int64_t>((static_cast<size_t>(index.ntotal) + index.nlist) * state_->dim *
                                  sizeof(float) +
                              static_cast<size_t>(index.ntotal) * sizeof(faiss::Index::idx_t));
}

}  // namespace strata::store
