// HNSW graphs over one fragment's embeddings (vector_index.h), on Debian's hnswlib. hnswlib
// computes distances through a space object: ours calls the float32 Highway kernels
// (vector_kernel.h) so the graph walk uses the widest SIMD the CPU has, whatever the compile
// flags. Cosine indexes hold normalised vectors and walk by 1 - dot; dot by 1 - dot.
//
// hnswlib (0.6.2) saves and loads through a file path only, so serialising goes through a
// private temporary file; the index file wraps those bytes in a strata envelope (checksum)
// after a small header naming the metric and dimension.
#include "store/vector_index.h"

#include <fmt/format.h>
// hnswlib's own SIMD is chosen by compile flags (baseline SSE here) and its prefetches read
// one entry past a neighbour list (hnswlib 0.6.2); our space brings its own dispatched
// kernels, so turn both off.
#define NO_MANUAL_VECTORIZATION
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "store/vector_kernel.h"
#include "util/clock.h"
#include "util/envelope.h"

namespace strata::store {
namespace {

constexpr std::string_view kEnvelopeKind = "HNSW";
constexpr uint32_t kFormatVersion = 1;

class KernelSpace final : public hnswlib::SpaceInterface<float> {
 public:
  KernelSpace(size_t dim, bool inner_product) : dim_(dim), inner_product_(inner_product) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override {
    return inner_product_ ? &InnerProductDistance : &L2Distance;
  }
  void* get_dist_func_param() override { return &dim_; }

 private:
  static float L2Distance(const void* a, const void* b, const void* dim) {
    return SquaredL2F32(static_cast<const float*>(a), static_cast<const float*>(b),
                        *static_cast<const size_t*>(dim));
  }
  static float InnerProductDistance(const void* a, const void* b, const void* dim) {
    return 1.0f - DotF32(static_cast<const float*>(a), static_cast<const float*>(b),
                         *static_cast<const size_t*>(dim));
  }
  size_t dim_;
  bool inner_product_;
};

// The vector as the graph holds it: unit length for cosine (a zero vector stays zero).
void Prepare(DistanceMetric metric, const float* in, size_t dim, float* out) {
  std::memcpy(out, in, dim * sizeof(float));
  if (metric != DistanceMetric::kCosine) return;
  double norm = 0;
  for (size_t i = 0; i < dim; ++i) norm += static_cast<double>(in[i]) * in[i];
  if (norm == 0) return;
  const auto scale = static_cast<float>(1.0 / std::sqrt(norm));
  for (size_t i = 0; i < dim; ++i) out[i] *= scale;
}

struct Header {
  uint32_t version = kFormatVersion;
  uint32_t metric = 0;
  uint64_t dim = 0;
  uint64_t count = 0;
};

// A private temporary file, removed when this goes out of scope.
class TempFile {
 public:
  TempFile()
      : path_(std::filesystem::temp_directory_path() /
              fmt::format("strata-hnsw-{:016x}.tmp", SystemRandom()->Next())) {}
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace

struct FragmentVectorIndex::State {
  DistanceMetric metric = DistanceMetric::kL2;
  size_t dim = 0;
  std::unique_ptr<KernelSpace> space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
};

FragmentVectorIndex::FragmentVectorIndex(std::unique_ptr<State> state) : state_(std::move(state)) {}
FragmentVectorIndex::~FragmentVectorIndex() = default;

Result<std::unique_ptr<FragmentVectorIndex>> FragmentVectorIndex::Build(
    DistanceMetric metric, size_t dim, const float* vectors, const std::vector<uint32_t>& offsets,
    const VectorIndexOptions& options) {
  if (dim == 0 || offsets.empty()) {
    return Status::InvalidArgument("a vector index needs at least one vector of dimension >= 1");
  }
  auto state = std::make_unique<State>();
  state->metric = metric;
  state->dim = dim;
  state->space = std::make_unique<KernelSpace>(dim, metric != DistanceMetric::kL2);
  try {
    state->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
        state->space.get(), offsets.size(), static_cast<size_t>(std::max(2, options.m)),
        static_cast<size_t>(std::max(1, options.ef_construction)));
    state->graph->setEf(static_cast<size_t>(std::max(1, options.ef_search)));
    // One thread: hnswlib 0.6.2's concurrent addPoint draws levels from one unguarded random
    // engine (a data race ThreadSanitizer reports), so graphs are built sequentially.
    std::vector<float> prepared(dim);
    for (size_t r = 0; r < offsets.size(); ++r) {
      Prepare(metric, vectors + r * dim, dim, prepared.data());
      state->graph->addPoint(prepared.data(), offsets[r]);
    }
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("building the HNSW graph failed: {}", e.what()));
  }
  return std::unique_ptr<FragmentVectorIndex>(new FragmentVectorIndex(std::move(state)));
}

Result<std::string> FragmentVectorIndex::Serialize() const {
  TempFile temp;
  try {
    state_->graph->saveIndex(temp.path());
  } catch (const std::exception& e) {
    return Status::IOError(fmt::format("saving the HNSW graph: {}", e.what()));
  }
  std::ifstream in(temp.path(), std::ios::binary);
  std::string graph((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return Status::IOError("reading back the saved HNSW graph");
  Header header;
  header.metric = static_cast<uint32_t>(state_->metric);
  header.dim = state_->dim;
  header.count = state_->graph->cur_element_count;
  std::string payload(sizeof(Header), '\0');
  std::memcpy(payload.data(), &header, sizeof(Header));
  payload += graph;
  return EncodeEnvelope(kEnvelopeKind, payload);
}

Result<std::unique_ptr<FragmentVectorIndex>> FragmentVectorIndex::Deserialize(
    std::string_view bytes, DistanceMetric metric, size_t dim, int ef_search) {
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kEnvelopeKind, bytes, "vector index file"));
  Header header;
  if (payload.size() < sizeof(Header)) {
    return Status::Corruption("vector index file: shorter than its header");
  }
  std::memcpy(&header, payload.data(), sizeof(Header));
  if (header.version != kFormatVersion) {
    return Status::NotSupported(
        fmt::format("vector index file: format version {} (this build reads {})", header.version,
                    kFormatVersion));
  }
  if (header.metric != static_cast<uint32_t>(metric) || header.dim != dim) {
    return Status::Corruption(fmt::format(
        "vector index file: built for metric {} and dimension {}, the store has {} and {}",
        header.metric, header.dim, static_cast<uint32_t>(metric), dim));
  }
  TempFile temp;
  {
    std::ofstream out(temp.path(), std::ios::binary);
    out.write(payload.data() + sizeof(Header),
              static_cast<std::streamsize>(payload.size() - sizeof(Header)));
    if (!out.good()) return Status::IOError("writing a vector index to a temporary file");
  }
  auto state = std::make_unique<State>();
  state->metric = metric;
  state->dim = dim;
  state->space = std::make_unique<KernelSpace>(dim, metric != DistanceMetric::kL2);
  try {
    state->graph =
        std::make_unique<hnswlib::HierarchicalNSW<float>>(state->space.get(), temp.path());
  } catch (const std::exception& e) {
    return Status::Corruption(fmt::format("vector index file: {}", e.what()));
  }
  if (state->graph->cur_element_count != header.count) {
    return Status::Corruption("vector index file: element count differs from its header");
  }
  state->graph->setEf(static_cast<size_t>(std::max(1, ef_search)));
  return std::unique_ptr<FragmentVectorIndex>(new FragmentVectorIndex(std::move(state)));
}

std::vector<uint32_t> FragmentVectorIndex::Search(const float* query, size_t k) const {
  std::vector<float> prepared(state_->dim);
  Prepare(state_->metric, query, state_->dim, prepared.data());
  std::priority_queue<std::pair<float, hnswlib::labeltype>> found =
      state_->graph->searchKnn(prepared.data(), std::min(k, size()));
  std::vector<uint32_t> labels(found.size());
  for (size_t i = labels.size(); i-- > 0;) {
    labels[i] = static_cast<uint32_t>(found.top().second);
    found.pop();
  }
  return labels;
}

const float* FragmentVectorIndex::Vector(uint32_t label) const {
  const hnswlib::HierarchicalNSW<float>& graph = *state_->graph;
  auto it = graph.label_lookup_.find(label);
  if (it == graph.label_lookup_.end()) return nullptr;
  return reinterpret_cast<const float*>(graph.getDataByInternalId(it->second));
}

size_t FragmentVectorIndex::size() const { return state_->graph->cur_element_count; }

int64_t FragmentVectorIndex::memory_bytes() const {
  const hnswlib::HierarchicalNSW<float>& graph = *state_->graph;
  return static_cast<int64_t>(graph.cur_element_count *
                              (graph.size_data_per_element_ + graph.size_links_per_element_));
}

}  // namespace strata::store
