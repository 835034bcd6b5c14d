// ContextStore's approximate search: per-fragment IVF indexes over the base table
// (vector_index.h), built by IndexVectors after merges and compactions, and the search that
// combines them with exact scoring of everything they do not cover.
//
// One search reads one consistent view split by source (StorageBase::ReadLayered): the base
// version and the pending rows over it. Pending rows are few and scored exactly. Base rows
// are checked against a per-version cache of their small columns (AnnBaseState): live at that
// version, not shadowed by a pending row of the same id, visible by the lifecycle rules, not
// superseded (rule 4: by any row of the view), and matching the filters. Fragments with an index
// are searched through it, widening the request until `k` eligible rows are found or the
// index is exhausted, and then scanning the index's own vectors of the fragment's eligible
// rows: so each fragment contributes min(k, its eligible rows) and the search never returns
// fewer than `limit` visible matches when that many exist. Fragments without an index are
// scored exactly from cached vectors. Winners are read in full from the same base version and
// reported with Distance(), the exact definition.
#include "store/context_ann.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "store/vector_index.h"
#include "store/vector_kernel.h"
#include "strata/context_store.h"
#include "strata/table.h"
#include "util/mutex.h"

namespace strata::store {

std::unique_ptr<ContextStore::AnnCache> ContextStore::NewAnnCache() {
  return std::make_unique<ContextStore::AnnCache>();
}

namespace {

// Rows a widening step asks an index for, relative to the last, and the most asked for
// relative to k: a filter that leaves fewer eligible rows among that many nearest is narrow,
// and scoring the fragment's eligible rows directly is cheaper than a wider probe.
constexpr size_t kWidenFactor = 4;
constexpr size_t kMaxWidening = 16;
// Rows per Take of the winners (bounds one read's size).
constexpr size_t kTakeChunk = 1024;

// The small columns the checks read, of those the store has.
std::vector<std::string> CheckColumns(const Schema& schema) {
  static const char* const kColumns[] = {
      "id",         "created_at",       "content_type",  "expires_at", "lifecycle_status",
      "retired_at", "superseded_by_id", "supersedes_id", "bot_id",     "session_id",
      "role",       "tenant",           "source",        "metadata"};
  std::vector<std::string> out;
  for (const char* c : kColumns) {
    if (schema.GetFieldIndex(c) >= 0) out.emplace_back(c);
  }
  return out;
}

// The float32 values of row `row` of a FixedSizeList<float32> column; false for a null row or
// a row with a null item (it has no usable vector).
bool RowVector(const Array& embedding, int64_t row, const float** out) {
  if (embedding.IsNull(row)) return false;
  const auto [begin, end] = embedding.ValueRange(row);
  const Array values = embedding.values_array();
  for (int64_t i = begin; i < end; ++i) {
    if (values.IsNull(i)) return false;
  }
  *out = values.values<float>() + begin;
  return true;
}

Result<std::shared_ptr<const AnnBaseState>> BuildBaseState(const table::Table& base, size_t dim) {
  auto state = std::make_shared<AnnBaseState>();
  state->version = base.version();
  table::ScanOptions scan;
  scan.columns = CheckColumns(*base.schema());
  scan.with_row_address = true;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, base.Scan(scan));
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
    if (!batch) break;
    const int address_column = batch->schema()->GetFieldIndex(table::kRowAddressColumn);
    std::vector<int> small;
    for (int c = 0; c < batch->num_columns(); ++c) {
      if (c != address_column) small.push_back(c);
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch projected, batch->Project(small));
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, DecodeContextRecords(projected));
    const Array& addresses = batch->column(address_column);
    for (size_t i = 0; i < records.size(); ++i) {
      const uint64_t address = addresses.Value<uint64_t>(static_cast<int64_t>(i));
      const auto index = static_cast<uint32_t>(state->records.size());
      state->by_address.emplace(address, index);
      state->rows_of_fragment[table::RowAddressFragment(address)].emplace_back(
          table::RowAddressOffset(address), index);
      if (records[i].supersedes_id && *records[i].supersedes_id != records[i].id) {
        state->superseding.push_back(index);
      }
      state->records.push_back(std::move(records[i]));
    }
  }
  STRATA_ASSIGN_OR_RETURN(table::TableDescription description, base.Describe());
  std::set<uint32_t> covered;
  for (const table::IndexInfo& index : description.indexes) {
    if (index.name != kVectorIndexName) continue;
    for (const table::IndexSegmentInfo& segment : index.segments) {
      if (segment.fragment_ids.size() != 1) continue;  // ours cover one fragment each
      state->segments.push_back({segment.fragment_ids[0], segment.path});
      covered.insert(segment.fragment_ids[0]);
    }
  }
  std::vector<uint32_t> unindexed_fragments;
  for (const table::FragmentInfo& fragment : description.fragments) {
    if (!covered.contains(fragment.id)) unindexed_fragments.push_back(fragment.id);
  }
  if (!state->segments.empty() && !unindexed_fragments.empty()) {
    table::ScanOptions vectors;
    vectors.columns = {"embedding"};
    vectors.with_row_address = true;
    vectors.fragment_ids = unindexed_fragments;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> rows, base.Scan(vectors));
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, rows->Next());
      if (!batch) break;
      const Array& embedding = batch->column(0);
      const Array& addresses = batch->column(1);
      for (int64_t r = 0; r < batch->num_rows(); ++r) {
        const float* v = nullptr;
        if (!RowVector(embedding, r, &v)) continue;
        auto found = state->by_address.find(addresses.Value<uint64_t>(r));
        if (found == state->by_address.end()) continue;
        state->unindexed.push_back(found->second);
        state->unindexed_addresses.push_back(found->first);
        state->unindexed_vectors.insert(state->unindexed_vectors.end(), v, v + dim);
      }
    }
  }
  return std::shared_ptr<const AnnBaseState>(std::move(state));
}

struct Candidate {
  double distance = 0;
  std::string id;
  bool pending = false;
  uint64_t address = 0;      // base rows
  size_t pending_index = 0;  // pending rows
};

bool Closer(const Candidate& a, const Candidate& b) {
  const bool a_nan = std::isnan(a.distance);
  const bool b_nan = std::isnan(b.distance);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a.distance != b.distance) return a.distance < b.distance;
  return a.id < b.id;
}

}  // namespace

Result<std::optional<std::vector<SearchResult>>> ContextStore::SearchIndexed(
    const std::vector<float>& query, size_t k, const RecordFilters& filters,
    const LifecycleQueryOptions& lifecycle, const ReadProjection& projection) const {
  const std::vector<std::string> columns = DefaultColumns(projection);
  std::vector<std::string> read_columns = columns;
  if (std::find(read_columns.begin(), read_columns.end(), "embedding") == read_columns.end()) {
    read_columns.emplace_back("embedding");
  }
  STRATA_ASSIGN_OR_RETURN(LayeredRead layered, base_->ReadLayered(read_columns));
  if (layered.base == nullptr) return std::nullopt;
  const size_t dim = static_cast<size_t>(embedding_dim_);

  // The base version's state, built once per version.
  std::shared_ptr<const AnnBaseState> state;
  {
    MutexLock lock(ann_->mu);
    if (ann_->state && ann_->state->version == layered.base->version()) state = ann_->state;
  }
  if (!state) {
    STRATA_ASSIGN_OR_RETURN(state, BuildBaseState(*layered.base, dim));
    MutexLock lock(ann_->mu);
    ann_->state = state;
  }
  if (state->segments.empty()) return std::nullopt;

  // Pending rows, whole.
  std::vector<ContextRecord> pending;
  for (const RecordBatch& batch : layered.pending) {
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> decoded, DecodeContextRecords(batch));
    for (ContextRecord& r : decoded) pending.push_back(std::move(r));
  }
  // Rule 4 over the view: ids some row supersedes (a row never supersedes itself here).
  std::unordered_set<std::string> superseded;
  const bool check_superseded = !lifecycle.include_retired;
  if (check_superseded) {
    for (const ContextRecord& r : pending) {
      if (r.supersedes_id && *r.supersedes_id != r.id) superseded.insert(*r.supersedes_id);
    }
    for (uint32_t index : state->superseding) {
      const ContextRecord& r = state->records[index];
      if (!layered.pending_keys->Contains(r.id)) superseded.insert(*r.supersedes_id);
    }
  }
  const int64_t now = lifecycle.reference_time_micros.value_or(Now());
  auto eligible = [&](const ContextRecord& r) {
    return VisibleByLifecycle(r, lifecycle, now) && filters.Matches(r) &&
           (!check_superseded || superseded.count(r.id) == 0);
  };
  auto base_eligible = [&](uint32_t index) {
    const ContextRecord& r = state->records[index];
    return !layered.pending_keys->Contains(r.id) && eligible(r);
  };

  std::vector<Candidate> candidates;
  double distance = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    const ContextRecord& r = pending[i];
    if (!r.embedding || !eligible(r)) continue;
    VectorDistances(metric_, query, r.embedding->data(), 1, &distance);
    candidates.push_back({distance, r.id, true, 0, i});
  }
  if (!state->unindexed.empty()) {
    std::vector<double> distances(state->unindexed.size());
    VectorDistances(metric_, query, state->unindexed_vectors.data(), state->unindexed.size(),
                    distances.data());
    for (size_t i = 0; i < state->unindexed.size(); ++i) {
      const uint32_t index = state->unindexed[i];
      if (!base_eligible(index)) continue;
      candidates.push_back(
          {distances[i], state->records[index].id, false, state->unindexed_addresses[i], 0});
    }
  }
  for (const AnnBaseState::Segment& segment : state->segments) {
    std::shared_ptr<const FragmentVectorIndex> ivf;
    {
      MutexLock lock(ann_->mu);
      auto it = ann_->ivfs.find(segment.path);
      if (it != ann_->ivfs.end()) ivf = it->second;
    }
    if (!ivf) {
      STRATA_ASSIGN_OR_RETURN(Buffer bytes, layered.base->ReadIndexFile(segment.path));
      STRATA_ASSIGN_OR_RETURN(
          std::unique_ptr<FragmentVectorIndex> loaded,
          FragmentVectorIndex::Deserialize(bytes.view(), metric_, dim, vector_index_.probes));
      ivf = std::move(loaded);
      MutexLock lock(ann_->mu);
      ivf = ann_->ivfs.emplace(segment.path, ivf).first->second;
    }
    auto address_of = [&](uint32_t offset) {
      return table::MakeRowAddress(segment.fragment, offset);
    };
    std::vector<uint32_t> found;
    size_t want = k;
    size_t hits = 0;
    while (true) {
      std::vector<uint32_t> labels = ivf->Search(query.data(), want);
      found.clear();
      hits = 0;
      for (uint32_t label : labels) {
        auto row = state->by_address.find(address_of(label));
        if (row == state->by_address.end() || !base_eligible(row->second)) continue;
        found.push_back(label);
        ++hits;
      }
      if (hits >= k || labels.size() >= ivf->size() || want >= ivf->size() ||
          want >= k * kMaxWidening) {
        break;
      }
      want *= kWidenFactor;
    }
    if (hits < k) {
      // Fewer than k eligible rows among the nearest the index gave: score every eligible row
      // of the fragment from the index's own vectors (the filter is narrow, or the fragment
      // holds fewer than k of them).
      found.clear();
      auto rows = state->rows_of_fragment.find(segment.fragment);
      if (rows != state->rows_of_fragment.end()) {
        for (const auto& [offset, index] : rows->second) {
          if (base_eligible(index) && ivf->Vector(offset) != nullptr) found.push_back(offset);
        }
      }
    }
    for (uint32_t label : found) {
      const float* v = ivf->Vector(label);
      if (v == nullptr) continue;
      // The index holds unit vectors for cosine: the same cosine distance.
      VectorDistances(metric_, query, v, 1, &distance);
      const uint64_t address = address_of(label);
      candidates.push_back(
          {distance, state->records[state->by_address.at(address)].id, false, address, 0});
    }
  }
  const size_t keep = std::min(candidates.size(), k);
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(keep),
                    candidates.end(), Closer);
  candidates.resize(keep);

  // The winners in full: base rows from the same base version, pending rows as read.
  std::vector<SearchResult> out;
  std::vector<uint64_t> addresses;
  for (const Candidate& c : candidates) {
    if (c.pending) {
      out.push_back(SearchResult{pending[c.pending_index], 0});
    } else {
      addresses.push_back(c.address);
    }
  }
  for (size_t at = 0; at < addresses.size(); at += kTakeChunk) {
    const size_t end = std::min(addresses.size(), at + kTakeChunk);
    STRATA_ASSIGN_OR_RETURN(
        RecordBatch batch,
        layered.base->Take(std::span<const uint64_t>(addresses.data() + at, end - at), columns));
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, DecodeContextRecords(batch));
    for (ContextRecord& r : records) out.push_back(SearchResult{std::move(r), 0});
  }
  for (SearchResult& r : out) {
    r.distance = r.record.embedding ? Distance(metric_, query, *r.record.embedding) : std::nan("");
  }
  std::sort(out.begin(), out.end(), [](const SearchResult& a, const SearchResult& b) {
    const bool a_nan = std::isnan(a.distance);
    const bool b_nan = std::isnan(b.distance);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.distance != b.distance) return a.distance < b.distance;
    return a.record.id < b.record.id;
  });
  return std::optional<std::vector<SearchResult>>(std::move(out));
}

namespace internal {

Result<std::vector<table::FragmentInfo>> FragmentsToIndex(const StorageBase& base,
                                                          std::string_view index_name,
                                                          int64_t min_rows) {
  if (base.pinned()) {
    return Status::InvalidArgument("a checked-out store is read-only; call RefreshLatest first");
  }
  STRATA_RETURN_IF_ERROR(base.base_table()->Refresh());
  STRATA_ASSIGN_OR_RETURN(table::TableDescription description, base.base_table()->Describe());
  std::set<uint32_t> covered;
  for (const table::IndexInfo& index : description.indexes) {
    if (index.name != index_name) continue;
    for (const table::IndexSegmentInfo& segment : index.segments) {
      covered.insert(segment.fragment_ids.begin(), segment.fragment_ids.end());
    }
  }
  std::vector<table::FragmentInfo> out;
  for (const table::FragmentInfo& fragment : description.fragments) {
    if (covered.contains(fragment.id)) continue;
    if (fragment.physical_rows - fragment.deleted_rows < min_rows) continue;
    out.push_back(fragment);
  }
  return out;
}

Result<table::IndexSegmentInfo> WriteFragmentIndex(table::Table& table, std::string_view extension,
                                                   const std::string& bytes, int64_t entries,
                                                   uint32_t fragment) {
  STRATA_ASSIGN_OR_RETURN(std::string path, table.WriteIndexFile(extension, bytes));
  table::IndexSegmentInfo segment;
  segment.path = std::move(path);
  segment.size = static_cast<int64_t>(bytes.size());
  segment.num_entries = entries;
  segment.fragment_ids = {fragment};
  return segment;
}

}  // namespace internal

Result<int> ContextStore::IndexVectors() {
  STRATA_ASSIGN_OR_RETURN(
      std::vector<table::FragmentInfo> fragments,
      internal::FragmentsToIndex(*base_, kVectorIndexName, vector_index_.min_fragment_rows));
  const std::shared_ptr<table::Table>& table = base_->base_table();
  const size_t dim = static_cast<size_t>(embedding_dim_);
  std::vector<table::IndexSegmentInfo> built;
  for (const table::FragmentInfo& fragment : fragments) {
    table::ScanOptions scan;
    scan.columns = {"embedding"};
    scan.with_row_address = true;
    scan.fragment_ids = {fragment.id};
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, table->Scan(scan));
    std::vector<float> vectors;
    std::vector<uint32_t> offsets;
    bool finite = true;
    while (finite) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
      if (!batch) break;
      const Array& embedding = batch->column(0);
      const Array& addresses = batch->column(1);
      for (int64_t r = 0; r < batch->num_rows() && finite; ++r) {
        const float* v = nullptr;
        if (!RowVector(embedding, r, &v)) continue;
        finite = std::all_of(v, v + dim, [](float x) { return std::isfinite(x); });
        vectors.insert(vectors.end(), v, v + dim);
        offsets.push_back(table::RowAddressOffset(addresses.Value<uint64_t>(r)));
      }
    }
    // A NaN or infinite item has no list (k-means would drop the row): such a fragment stays
    // unindexed and is scored exactly, NaN distances included.
    if (offsets.empty() || !finite) continue;
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<FragmentVectorIndex> ivf,
        FragmentVectorIndex::Build(metric_, dim, vectors.data(), offsets, vector_index_));
    STRATA_ASSIGN_OR_RETURN(std::string bytes, ivf->Serialize());
    STRATA_ASSIGN_OR_RETURN(
        table::IndexSegmentInfo segment,
        internal::WriteFragmentIndex(*table, kVectorIndexExtension, bytes,
                                     static_cast<int64_t>(offsets.size()), fragment.id));
    built.push_back(std::move(segment));
  }
  if (built.empty()) return 0;
  STRATA_RETURN_IF_ERROR(
      table->AddIndexSegments(kVectorIndexName, kVectorIndexType, "embedding", built).status());
  return static_cast<int>(built.size());
}

}  // namespace strata::store
