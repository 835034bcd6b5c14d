// ContextStore's exact vector search (include/strata/context_store.h; reference §3.2
// "search"), over the visible records of one consistent read. Retrieve and the tokenizer are
// in context_retrieve.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "store/context_columns.h"
#include "store/vector_kernel.h"
#include "strata/buffer.h"
#include "strata/context_store.h"
#include "strata/expr.h"

namespace strata::store {
namespace {

// StorageBase::GetMany's key limit per call.
constexpr size_t kGetManyKeys = 1024;

// A distance or score as a sort key: NaN (a null embedding item, a NaN query) sorts after
// every number, so the orders below stay strict weak orders.
double Key(double v, bool descending) {
  if (std::isnan(v)) {
    return descending ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
  }
  return v;
}

// Ranks search results: distance ascending (NaN last), then id.
bool Closer(const SearchResult& a, const SearchResult& b) {
  const double x = Key(a.distance, false);
  const double y = Key(b.distance, false);
  if (x != y) return x < y;
  return a.record.id < b.record.id;
}

// Scores decoded records and keeps the k closest: the search over whole records, for when the
// columnar path cannot answer (see Search).
std::vector<SearchResult> ScoreRecords(DistanceMetric metric, const std::vector<float>& query,
                                       size_t k, std::vector<ContextRecord> candidates) {
  std::vector<SearchResult> scored;
  for (ContextRecord& r : candidates) {
    if (!r.embedding) continue;
    const double distance = Distance(metric, query, *r.embedding);
    scored.push_back(SearchResult{std::move(r), distance});
  }
  const size_t keep = std::min(scored.size(), k);
  std::partial_sort(scored.begin(), scored.begin() + static_cast<ptrdiff_t>(keep), scored.end(),
                    Closer);
  scored.resize(keep);
  return scored;
}

// What one search asks for; `now` is the expiry instant of its visibility rules.
struct SearchRequest {
  const std::vector<float>& query;
  size_t k = 0;
  const RecordFilters& filters;
  const LifecycleQueryOptions& lifecycle;
  int64_t now = 0;
};

// A visible row with an embedding, by its place in the scan, and its kernel distance.
struct Candidate {
  double distance = 0;
  uint32_t batch = 0;
  uint32_t row = 0;
};

// The scan's candidates (visible by rules 1-4, matching the filters) and their ids.
struct ScoredRows {
  std::vector<Candidate> candidates;
  std::vector<Array> ids;  // per scanned batch, its id column
  std::set<std::string, std::less<>> superseded;

  std::string_view Id(const Candidate& c) const { return ids[c.batch].StringValue(c.row); }
  bool Closer(const Candidate& a, const Candidate& b) const {
    const double x = Key(a.distance, false);
    const double y = Key(b.distance, false);
    if (x != y) return x < y;
    return Id(a) < Id(b);
  }
};

// Row `row` of the embedding column as Distance() sees it: a null item reads as NaN.
std::vector<float> EmbeddingWithNulls(const Array& embedding, int64_t row) {
  const auto [begin, end] = embedding.ValueRange(row);
  const Array values = embedding.values_array();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) {
    out.push_back(values.IsValid(i) ? values.Value<float>(i) : std::nanf(""));
  }
  return out;
}

// One scan of the visibility columns and the embeddings: the kernel scores each batch's
// vectors where they lie, and only the small columns are decoded into records.
Result<ScoredRows> ScoreVisibleRows(const StorageBase& base, DistanceMetric metric,
                                    const SearchRequest& request) {
  ScanRequest scan;
  scan.columns = internal::VisibilityColumns(*base.schema(), request.filters, {"embedding"});
  ScoredRows out;
  std::vector<double> distances;
  auto consume = [&](RecordBatch batch) -> Status {
    const int embedding_index = batch.schema()->GetFieldIndex("embedding");
    if (embedding_index < 0) return Status::Internal("search scan returned no embedding column");
    std::vector<int> others;
    for (int c = 0; c < batch.num_columns(); ++c) {
      if (c != embedding_index) others.push_back(c);
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch small, batch.Project(others));
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> rows, DecodeContextRecords(small));
    const Array& embedding = batch.column(embedding_index);
    const Array values = embedding.values_array();
    // Rows lie one after another in the child: row r at (offset + r) * dim.
    const float* first = values.values<float>() + embedding.ValueRange(0).first;
    distances.resize(rows.size());
    VectorDistances(metric, request.query, first, rows.size(), distances.data());
    const auto batch_index = static_cast<uint32_t>(out.ids.size());
    out.ids.push_back(batch.GetColumnByName("id"));
    for (size_t i = 0; i < rows.size(); ++i) {
      const ContextRecord& r = rows[i];
      if (!request.lifecycle.include_retired && r.supersedes_id && *r.supersedes_id != r.id) {
        out.superseded.insert(*r.supersedes_id);
      }
      const auto row = static_cast<int64_t>(i);
      if (embedding.IsNull(row) || !VisibleByLifecycle(r, request.lifecycle, request.now) ||
          !request.filters.Matches(r)) {
        continue;
      }
      double distance = distances[i];
      const auto [begin, end] = embedding.ValueRange(row);
      if (!internal::ItemsValid(values, begin, end)) {
        const std::vector<float> items = EmbeddingWithNulls(embedding, row);
        VectorDistances(metric, request.query, items.data(), 1, &distance);
      }
      out.candidates.push_back(Candidate{distance, batch_index, static_cast<uint32_t>(i)});
    }
    return Status::OK();
  };
  auto restart = [&]() -> Status {
    out = ScoredRows();
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(base.ScanEach(scan, consume, restart).status());
  // Rule 4 needs every row's supersedes_id, so it applies once the scan is done.
  if (!out.superseded.empty()) {
    std::erase_if(out.candidates,
                  [&](const Candidate& c) { return out.superseded.count(out.Id(c)) > 0; });
  }
  return out;
}

// Candidates whose kernel distance lies this close to the k-th one may rank either side of it
// by Distance() (the two add the same terms in another order); they are scored again by it.
double RoundingSlack(double kth) { return 1e-9 * std::max(1.0, std::abs(kth)); }

// Reads the winners' whole records by id and ranks them by Distance(). Nullopt when a
// winner's newest row is no longer the row the scan scored (written since).
Result<std::optional<std::vector<SearchResult>>> FetchWinners(
    const StorageBase& base, DistanceMetric metric, const SearchRequest& request,
    const std::vector<std::string>& columns, ScoredRows& scored) {
  std::vector<Candidate>& all = scored.candidates;
  const size_t keep = std::min(all.size(), request.k);
  auto closer = [&](const Candidate& a, const Candidate& b) { return scored.Closer(a, b); };
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(keep), all.end(), closer);
  std::vector<Candidate> chosen(all.begin(), all.begin() + static_cast<ptrdiff_t>(keep));
  if (keep > 0 && keep < all.size() && std::isfinite(all[keep - 1].distance)) {
    const double kth = all[keep - 1].distance;
    for (size_t i = keep; i < all.size(); ++i) {
      if (std::abs(all[i].distance - kth) <= RoundingSlack(kth)) chosen.push_back(all[i]);
    }
  }
  std::vector<SearchResult> out;
  for (size_t at = 0; at < chosen.size(); at += kGetManyKeys) {
    const size_t end = std::min(chosen.size(), at + kGetManyKeys);
    std::vector<expr::Scalar> keys;
    for (size_t i = at; i < end; ++i) {
      keys.push_back(expr::Scalar::String(std::string(scored.Id(chosen[i]))));
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, base.GetMany(keys, columns));
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, DecodeContextRecords(batch));
    if (records.size() != end - at) return std::nullopt;
    for (size_t i = at; i < end; ++i) {
      ContextRecord& r = records[i - at];
      if (r.id != scored.Id(chosen[i]) || !r.embedding ||
          !VisibleByLifecycle(r, request.lifecycle, request.now) || !request.filters.Matches(r)) {
        return std::nullopt;
      }
      double again = 0;
      VectorDistances(metric, request.query, r.embedding->data(), 1, &again);
      const double was = chosen[i].distance;
      if (again != was && !(std::isnan(again) && std::isnan(was))) return std::nullopt;
      const double distance = Distance(metric, request.query, *r.embedding);
      out.push_back(SearchResult{std::move(r), distance});
    }
  }
  std::sort(out.begin(), out.end(), Closer);
  out.resize(keep);
  return std::optional<std::vector<SearchResult>>(std::move(out));
}

}  // namespace

Status ContextStore::CheckQuery(const std::vector<float>& query) const {
  if (static_cast<int64_t>(query.size()) != embedding_dim_) {
    return Status::InvalidArgument(fmt::format(
        "query length {} does not match embedding dimension {}", query.size(), embedding_dim_));
  }
  return Status::OK();
}

Result<std::vector<SearchResult>> ContextStore::Search(const std::vector<float>& query,
                                                       std::optional<int64_t> limit,
                                                       const RecordFilters& filters,
                                                       const LifecycleQueryOptions& lifecycle,
                                                       SearchMode mode) const {
  STRATA_RETURN_IF_ERROR(CheckQuery(query));
  const int64_t k = limit.value_or(kDefaultSearchLimit);
  if (k < 0) return Status::InvalidArgument("limit must not be negative");
  if (k == 0) return std::vector<SearchResult>();
  ReadProjection projection;
  projection.binary = blob_columns_.count("binary_payload") == 0;
  projection.text = blob_columns_.count("text_payload") == 0;
  // One instant for every visibility check of this call, the fallback's included.
  LifecycleQueryOptions at_now = lifecycle;
  at_now.reference_time_micros = lifecycle.reference_time_micros.value_or(Now());
  if (mode == SearchMode::kAuto) {
    STRATA_ASSIGN_OR_RETURN(
        std::optional<std::vector<SearchResult>> indexed,
        SearchIndexed(query, static_cast<size_t>(k), filters, at_now, projection));
    if (indexed) return std::move(*indexed);
  }
  const SearchRequest request{query, static_cast<size_t>(k), filters, at_now,
                              *at_now.reference_time_micros};
  STRATA_ASSIGN_OR_RETURN(ScoredRows scored, ScoreVisibleRows(*base_, metric_, request));
  STRATA_ASSIGN_OR_RETURN(
      std::optional<std::vector<SearchResult>> winners,
      FetchWinners(*base_, metric_, request, DefaultColumns(projection), scored));
  if (winners) return std::move(*winners);
  // A winner changed between the scan and the fetch (a concurrent delete or re-add): search
  // again on one consistent read of whole records, as slow as that is.
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> candidates,
                          ListFiltered(filters, std::nullopt, 0, at_now, projection));
  return ScoreRecords(metric_, query, static_cast<size_t>(k), std::move(candidates));
}

}  // namespace strata::store
