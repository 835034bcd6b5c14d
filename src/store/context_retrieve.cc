// ContextStore's hybrid retrieval (include/strata/context_store.h; reference §3.2 "retrieve").
// Retrieve reads one scan of the columns it needs (visibility, filters, text, embedding),
// scores both channels where the values lie, and decodes whole records only for the winners;
// when a winner changed between the scan and its read, it falls back to scoring whole records
// of one ListFiltered read. Base fragments with a text index (text_index.h) are scanned
// without their text: their rows' token counts come from the index, the same figures the
// tokenizer (text_tokens.h) gives.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "store/context_ann.h"
#include "store/context_codec.h"
#include "store/context_columns.h"
#include "store/text_index.h"
#include "store/text_tokens.h"
#include "store/vector_kernel.h"
#include "strata/buffer.h"
#include "strata/context_store.h"
#include "strata/expr.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "util/log.h"
#include "util/mutex.h"

namespace strata::store {
namespace {

constexpr double kBm25K1 = 1.2;
constexpr double kBm25B = 0.75;
// StorageBase::GetMany's key limit per call.
constexpr size_t kGetManyKeys = 1024;

// The distinct tokens of `tokens`, in first-seen order.
std::vector<std::string> Distinct(const std::vector<std::string>& tokens) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const std::string& t : tokens) {
    if (seen.insert(t).second) out.push_back(t);
  }
  return out;
}

// A distance or score as a sort key: NaN (a null embedding item, a NaN query) sorts after
// every number, so the orders below stay strict weak orders.
double Key(double v, bool descending) {
  if (std::isnan(v)) {
    return descending ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
  }
  return v;
}

// What the channels need of the candidates (visible records matching the filters), in any
// order: the text channel's statistics are over all of them.
struct Channels {
  std::vector<std::string> query_tokens;        // distinct, in first-seen order
  std::vector<std::string_view> ids;            // per candidate; the caller keeps the bytes alive
  std::vector<std::optional<double>> distance;  // vector channel: a query and an embedding
  std::vector<int64_t> length;                  // tokens of text_payload (0 without one)
  std::vector<int32_t> tf;  // candidate c's count of query token t at c * tokens + t

  size_t size() const { return ids.size(); }
  // Appends candidate `id` with its text (nullopt: none) counted against the query tokens.
  void Add(std::string_view id, std::optional<double> d, const std::optional<std::string_view>& t) {
    ids.push_back(id);
    distance.push_back(d);
    tf.resize(tf.size() + query_tokens.size(), 0);
    int64_t tokens = 0;
    if (t && !query_tokens.empty()) {
      int32_t* counts = tf.data() + tf.size() - query_tokens.size();
      internal::ForEachToken(*t, [&](std::string_view token) {
        ++tokens;
        for (size_t q = 0; q < query_tokens.size(); ++q) {
          // The first byte rejects most tokens of equal length before a whole comparison.
          const std::string& want = query_tokens[q];
          if (token.size() == want.size() && token.front() == want.front() && token == want) {
            ++counts[q];
          }
        }
      });
    }
    length.push_back(tokens);
  }
  // Appends candidate `id` whose text has `tokens` tokens, `counts[t]` of query token t.
  void AddCounted(std::string_view id, std::optional<double> d, int64_t tokens,
                  const int32_t* counts) {
    ids.push_back(id);
    distance.push_back(d);
    tf.insert(tf.end(), counts, counts + query_tokens.size());
    length.push_back(tokens);
  }
  // Whether candidate `c` has the statistics `other`'s only candidate has.
  bool SameAs(size_t c, const Channels& other) const {
    const double x = distance[c].value_or(0);
    const double y = other.distance[0].value_or(0);
    if (distance[c].has_value() != other.distance[0].has_value() ||
        (x != y && !(std::isnan(x) && std::isnan(y))) || length[c] != other.length[0]) {
      return false;
    }
    const size_t k = query_tokens.size();
    return std::equal(tf.begin() + static_cast<ptrdiff_t>(c * k),
                      tf.begin() + static_cast<ptrdiff_t>((c + 1) * k), other.tf.begin());
  }
};

// A fused result before its record is attached: candidate index and the result's figures.
struct Fused {
  size_t candidate = 0;
  double score = 0;
  std::optional<double> vector_distance;
  std::optional<double> text_score;
  std::vector<std::string> matched_channels;
};

// Ranks both channels over every candidate, fuses them by reciprocal rank and returns the
// first `limit` in the final order (context_store.h Retrieve).
std::vector<Fused> FuseChannels(const Channels& c, TextScoring scoring, size_t limit) {
  const size_t n_candidates = c.size();
  const size_t k = c.query_tokens.size();
  std::vector<int64_t> vector_rank(n_candidates, 0);  // 0: not in the channel
  std::vector<size_t> order;
  for (size_t i = 0; i < n_candidates; ++i) {
    if (c.distance[i]) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double x = Key(*c.distance[a], false);
    const double y = Key(*c.distance[b], false);
    if (x != y) return x < y;
    return c.ids[a] < c.ids[b];
  });
  for (size_t r = 0; r < order.size(); ++r) vector_rank[order[r]] = static_cast<int64_t>(r) + 1;

  std::vector<std::optional<double>> text_score(n_candidates);
  std::vector<int64_t> text_rank(n_candidates, 0);
  if (k > 0) {
    double total_length = 0;
    std::vector<double> df(k, 0);
    for (size_t i = 0; i < n_candidates; ++i) {
      total_length += static_cast<double>(c.length[i]);
      for (size_t t = 0; t < k; ++t) df[t] += c.tf[i * k + t] > 0 ? 1 : 0;
    }
    const auto n = static_cast<double>(n_candidates);
    const double average_length = n > 0 ? total_length / n : 0;
    for (size_t i = 0; i < n_candidates; ++i) {
      int64_t matched = 0;
      double bm25 = 0;
      for (size_t t = 0; t < k; ++t) {
        const int32_t count = c.tf[i * k + t];
        if (count == 0) continue;
        ++matched;
        const auto f = static_cast<double>(count);
        const double idf = std::log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5));
        const double norm =
            average_length > 0 ? static_cast<double>(c.length[i]) / average_length : 0;
        bm25 += idf * f * (kBm25K1 + 1) / (f + kBm25K1 * (1 - kBm25B + kBm25B * norm));
      }
      if (matched == 0) continue;
      text_score[i] = scoring == TextScoring::kOverlap
                          ? static_cast<double>(matched) / static_cast<double>(k)
                          : bm25;
    }
    order.clear();
    for (size_t i = 0; i < n_candidates; ++i) {
      if (text_score[i]) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double x = Key(*text_score[a], true);
      const double y = Key(*text_score[b], true);
      if (x != y) return x > y;
      return c.ids[a] < c.ids[b];
    });
    for (size_t r = 0; r < order.size(); ++r) text_rank[order[r]] = static_cast<int64_t>(r) + 1;
  }

  std::vector<Fused> out;
  for (size_t i = 0; i < n_candidates; ++i) {
    if (vector_rank[i] == 0 && text_rank[i] == 0) continue;
    Fused f;
    f.candidate = i;
    if (vector_rank[i] > 0) {
      f.score += 1.0 / static_cast<double>(kRrfK + vector_rank[i]);
      f.vector_distance = c.distance[i];
    }
    if (text_rank[i] > 0) {
      f.score += 1.0 / static_cast<double>(kRrfK + text_rank[i]);
      f.text_score = text_score[i];
    }
    out.push_back(std::move(f));
  }
  auto before = [&](const Fused& a, const Fused& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.vector_distance.has_value() != b.vector_distance.has_value()) {
      return a.vector_distance.has_value();
    }
    if (a.vector_distance) {
      const double x = Key(*a.vector_distance, false);
      const double y = Key(*b.vector_distance, false);
      if (x != y) return x < y;
    }
    if (a.text_score.has_value() != b.text_score.has_value()) return a.text_score.has_value();
    if (a.text_score) {
      const double x = Key(*a.text_score, true);
      const double y = Key(*b.text_score, true);
      if (x != y) return x > y;
    }
    return c.ids[a.candidate] < c.ids[b.candidate];
  };
  const size_t keep = std::min(out.size(), limit);
  std::partial_sort(out.begin(), out.begin() + static_cast<ptrdiff_t>(keep), out.end(), before);
  out.resize(keep);
  for (Fused& f : out) {
    if (f.vector_distance) f.matched_channels.emplace_back("vector");
    if (f.text_score) f.matched_channels.emplace_back("text");
  }
  return out;
}

// The channels of whole decoded records.
Channels RecordChannels(DistanceMetric metric, const RetrieveOptions& options,
                        std::vector<std::string> query_tokens,
                        const std::vector<ContextRecord>& records) {
  Channels c;
  c.query_tokens = std::move(query_tokens);
  for (const ContextRecord& r : records) {
    std::optional<double> distance;
    if (options.vector && r.embedding) {
      double d = 0;
      VectorDistances(metric, *options.vector, r.embedding->data(), 1, &d);
      distance = d;
    }
    std::optional<std::string_view> text;
    if (r.text_payload) text = std::string_view(*r.text_payload);
    c.Add(r.id, distance, text);
  }
  return c;
}

std::vector<RetrieveResult> Attach(std::vector<Fused> fused, std::vector<ContextRecord> records) {
  std::vector<RetrieveResult> out;
  out.reserve(fused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    RetrieveResult r;
    r.record = std::move(records[i]);
    r.score = fused[i].score;
    r.vector_distance = fused[i].vector_distance;
    r.text_score = fused[i].text_score;
    r.matched_channels = std::move(fused[i].matched_channels);
    out.push_back(std::move(r));
  }
  return out;
}

// What one retrieval asks for; `now` is the expiry instant of its visibility rules.
struct RetrieveRequest {
  const RetrieveOptions& options;
  const std::vector<std::string>& query_tokens;
  const LifecycleQueryOptions& lifecycle;  // reference_time_micros set
  int64_t now = 0;
};

// The columns visibility and the filters read, plus text_payload and the embedding when a
// channel needs them: what Retrieve's scan projects, of those the store has.
std::vector<std::string> RetrieveColumns(const Schema& schema, const RetrieveRequest& request) {
  std::vector<std::string> extra;
  if (!request.query_tokens.empty()) extra.emplace_back("text_payload");
  if (request.options.vector) extra.emplace_back("embedding");
  return internal::VisibilityColumns(schema, request.options.filters, std::move(extra));
}

// A necessary condition of RecordFilters::Matches' metadata part on a record's raw metadata
// JSON, so most non-matching rows are skipped without parsing (or even decoding) them: in a
// document without a backslash every string is written literally, so a key the filter needs
// appears as "key" and an Equals string value as "value" in the text. Needles that would need
// escaping are not used.
class MetadataPrefilter {
 public:
  explicit MetadataPrefilter(const RecordFilters& filters) : active_(!filters.metadata.empty()) {
    for (const auto& [key, match] : filters.metadata) {
      AddNeedle(key);
      if (match.kind == RecordFilters::MetadataMatch::Kind::kEquals && match.json.size() >= 2 &&
          match.json.front() == '"' && match.json.back() == '"') {
        AddNeedle(std::string_view(match.json).substr(1, match.json.size() - 2));
      }
    }
  }
  // Whether metadata filters apply at all (a null metadata then never matches).
  bool active() const { return active_; }
  // False only when Matches would be false for a record with this metadata.
  bool MayMatch(std::string_view metadata) const {
    if (metadata.find('\\') != std::string_view::npos) return true;
    for (const std::string& needle : needles_) {
      if (metadata.find(needle) == std::string_view::npos) return false;
    }
    return true;
  }

 private:
  // `text` as a JSON string literal when that needs no escape.
  void AddNeedle(std::string_view text) {
    for (char c : text) {
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return;
    }
    needles_.push_back(fmt::format("\"{}\"", text));
  }

  bool active_;
  std::vector<std::string> needles_;
};

// RecordFilters::Matches split in two: its metadata part depends on the metadata text alone,
// so it is decided once per distinct text of a call (stores repeat a few metadata values
// across many records) and before a row is decoded; the rest is checked on the decoded row.
// Matches(r) == MetadataMatches(r.metadata) && OthersMatch(r).
class FilterMatcher {
 public:
  explicit FilterMatcher(const RecordFilters& filters) : prefilter_(filters), others_(filters) {
    metadata_only_.metadata = filters.metadata;
    others_.metadata.clear();
  }
  bool has_metadata() const { return prefilter_.active(); }
  bool MetadataMatches(std::optional<std::string_view> metadata) {
    if (!prefilter_.active()) return true;
    if (!metadata || !prefilter_.MayMatch(*metadata)) return false;
    auto it = known_.find(*metadata);
    if (it != known_.end()) return it->second;
    ContextRecord probe;
    probe.metadata = std::string(*metadata);
    const bool match = metadata_only_.Matches(probe);
    if (known_.size() < kMaxKnown) known_.emplace(*probe.metadata, match);
    return match;
  }
  bool OthersMatch(const ContextRecord& record) const { return others_.Matches(record); }

 private:
  // Distinct texts remembered per call: bounds the memory of a store with unique metadata.
  static constexpr size_t kMaxKnown = 4096;
  const MetadataPrefilter prefilter_;
  RecordFilters metadata_only_;
  RecordFilters others_;
  std::map<std::string, bool, std::less<>> known_;
};

// The candidates of one scan and what keeps their ids' bytes alive.
struct ScannedChannels {
  Channels channels;
  std::vector<Array> id_columns;  // per scanned batch
};

// A base fragment's text index and the posting lists of one query's tokens in it.
struct IndexedFragment {
  std::shared_ptr<const FragmentTextIndex> index;
  std::vector<std::span<const FragmentTextIndex::Posting>> postings;  // per query token

  // Row `offset`'s count of each query token, into `counts`.
  void Counts(uint32_t offset, std::vector<int32_t>* counts) const {
    counts->assign(postings.size(), 0);
    for (size_t t = 0; t < postings.size(); ++t) {
      const auto it = std::lower_bound(
          postings[t].begin(), postings[t].end(), offset,
          [](const FragmentTextIndex::Posting& p, uint32_t want) { return p.offset < want; });
      if (it != postings[t].end() && it->offset == offset) {
        (*counts)[t] = static_cast<int32_t>(it->count);
      }
    }
  }
};

// Where a batch's rows come from, beyond their columns.
struct BatchSource {
  // Base rows of a layered read: a row whose id a pending row holds is not in the view.
  const PendingKeys* shadowed = nullptr;
  // Base rows of indexed fragments (the batch has the row address column and no
  // text_payload): their token counts, by fragment.
  const std::map<uint32_t, IndexedFragment>* indexed = nullptr;
};

// Retrieve's candidates gathered batch by batch: the kernel scores each batch's vectors where
// they lie, text is tokenized from the column (or counted from a text index), and only the
// small columns are decoded into records (text_payload too when it is binary, for the lossy
// UTF-8 the records read).
class ChannelScan {
 public:
  ChannelScan(DistanceMetric metric, const RetrieveRequest& request)
      : metric_(metric), request_(request), filter_(request.options.filters) {
    out_.channels.query_tokens = request.query_tokens;
  }

  Status Consume(const RecordBatch& batch, const BatchSource& source) {
    const int embedding_index = batch.schema()->GetFieldIndex("embedding");
    const int address_index = batch.schema()->GetFieldIndex(table::kRowAddressColumn);
    int text_index = batch.schema()->GetFieldIndex("text_payload");
    if (text_index >= 0 && batch.column(text_index).type()->id() != TypeId::kLargeUtf8) {
      text_index = -1;  // decoded with the record
    }
    // Decoded: what visibility and the other filters read (ids stay in their column, the
    // metadata was matched on its text).
    std::vector<int> small_columns;
    for (int c = 0; c < batch.num_columns(); ++c) {
      const std::string& name = batch.schema()->field(c)->name();
      if (c == embedding_index || c == text_index || c == address_index || name == "id" ||
          (name == "metadata" && filter_.has_metadata())) {
        continue;
      }
      small_columns.push_back(c);
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch small, batch.Project(small_columns));
    const int64_t rows = batch.num_rows();
    out_.id_columns.push_back(batch.GetColumnByName("id"));
    const Array& ids = out_.id_columns.back();
    auto in_view = [&](int64_t row) {
      return source.shadowed == nullptr || !source.shadowed->Contains(ids.StringValue(row));
    };
    // Rule 4 reads every row's supersedes_id (as decoded: the column's string), candidate or
    // not.
    const Array supersedes = batch.GetColumnByName("supersedes_id");
    if (!request_.lifecycle.include_retired && supersedes.is_valid_handle()) {
      for (int64_t row = 0; row < rows; ++row) {
        if (!supersedes.IsValid(row) || !in_view(row)) continue;
        const std::string_view target = supersedes.StringValue(row);
        if (target != ids.StringValue(row)) superseded_.emplace(target);
      }
    }
    // Rows in the view whose metadata matches; only they are decoded.
    kept_.clear();
    const Array metadata = filter_.has_metadata() ? batch.GetColumnByName("metadata") : Array();
    for (int64_t row = 0; row < rows; ++row) {
      if (!in_view(row)) continue;
      if (filter_.has_metadata()) {
        std::optional<std::string_view> text;
        if (metadata.is_valid_handle() && metadata.IsValid(row)) text = metadata.StringValue(row);
        if (!filter_.MetadataMatches(text)) continue;
      }
      kept_.push_back(row);
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> decoded,
                            DecodeContextRecordRows(small, kept_));
    Array embedding;
    Array values;
    const float* first = nullptr;
    const size_t dim = request_.options.vector ? request_.options.vector->size() : 0;
    if (embedding_index >= 0) {
      embedding = batch.column(embedding_index);
      values = embedding.values_array();
      // Rows lie one after another in the child: row r at (offset + r) * dim. Only the
      // candidates are scored (the kernel gives a row the same figure alone or in a block).
      first = values.values<float>() + embedding.ValueRange(0).first;
    }
    Array text;
    if (text_index >= 0) text = batch.column(text_index);
    Array addresses;
    if (source.indexed != nullptr) addresses = batch.column(address_index);
    for (size_t k = 0; k < kept_.size(); ++k) {
      const ContextRecord& r = decoded[k];
      if (!VisibleByLifecycle(r, request_.lifecycle, request_.now) || !filter_.OthersMatch(r)) {
        continue;
      }
      const int64_t row = kept_[k];
      std::optional<double> distance;
      if (embedding_index >= 0 && !embedding.IsNull(row)) {
        double d = 0;
        const auto [begin, end] = embedding.ValueRange(row);
        if (internal::ItemsValid(values, begin, end)) {
          VectorDistances(metric_, *request_.options.vector, first + static_cast<size_t>(row) * dim,
                          1, &d);
        } else {  // null items read as NaN, as decoded
          std::vector<float> items;
          for (int64_t at = begin; at < end; ++at) {
            items.push_back(values.IsValid(at) ? values.Value<float>(at) : std::nanf(""));
          }
          VectorDistances(metric_, *request_.options.vector, items.data(), 1, &d);
        }
        distance = d;
      }
      if (source.indexed != nullptr) {
        const uint64_t address = addresses.Value<uint64_t>(row);
        const IndexedFragment& fragment = source.indexed->at(table::RowAddressFragment(address));
        const uint32_t offset = table::RowAddressOffset(address);
        if (offset >= fragment.index->rows()) {
          return Status::Corruption(
              fmt::format("the text index of fragment {} covers {} rows; row {} is live",
                          table::RowAddressFragment(address), fragment.index->rows(), offset));
        }
        fragment.Counts(offset, &counts_);
        out_.channels.AddCounted(ids.StringValue(row), distance, fragment.index->length(offset),
                                 counts_.data());
        continue;
      }
      std::optional<std::string_view> payload;
      if (text_index >= 0) {
        if (text.IsValid(row)) payload = text.StringValue(row);
      } else if (r.text_payload) {
        // Binary text: the lossy decoding lives in this batch's records, which go away; the
        // text is counted now and only the id is kept.
        payload = std::string_view(*r.text_payload);
      }
      out_.channels.Add(ids.StringValue(row), distance, payload);
    }
    return Status::OK();
  }

  // Forgets every batch (the scan restarts on a newer view).
  void Restart() {
    Channels fresh;
    fresh.query_tokens = std::move(out_.channels.query_tokens);
    out_ = ScannedChannels();
    out_.channels = std::move(fresh);
    superseded_.clear();
  }

  // The candidates of every batch consumed; rule 4 needs every row's supersedes_id, so it
  // applies once the scan is done.
  ScannedChannels Finish() && {
    if (superseded_.empty()) return std::move(out_);
    Channels kept;
    kept.query_tokens = out_.channels.query_tokens;
    const Channels& all = out_.channels;
    const size_t k = all.query_tokens.size();
    for (size_t i = 0; i < all.size(); ++i) {
      if (superseded_.count(all.ids[i]) > 0) continue;
      kept.ids.push_back(all.ids[i]);
      kept.distance.push_back(all.distance[i]);
      kept.length.push_back(all.length[i]);
      kept.tf.insert(kept.tf.end(), all.tf.begin() + static_cast<ptrdiff_t>(i * k),
                     all.tf.begin() + static_cast<ptrdiff_t>((i + 1) * k));
    }
    out_.channels = std::move(kept);
    return std::move(out_);
  }

 private:
  const DistanceMetric metric_;
  const RetrieveRequest& request_;
  FilterMatcher filter_;
  ScannedChannels out_;
  std::set<std::string, std::less<>> superseded_;
  std::vector<int64_t> kept_;
  std::vector<int32_t> counts_;  // scratch: one row's query-token counts
};

// One scan of the store's newest-wins view (StorageBase::ScanEach).
Result<ScannedChannels> ScanChannels(const StorageBase& base, DistanceMetric metric,
                                     const RetrieveRequest& request) {
  ScanRequest scan;
  scan.columns = RetrieveColumns(*base.schema(), request);
  ChannelScan channels(metric, request);
  auto consume = [&](RecordBatch batch) { return channels.Consume(batch, BatchSource()); };
  auto restart = [&]() -> Status {
    channels.Restart();
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(base.ScanEach(scan, consume, restart).status());
  return std::move(channels).Finish();
}

// Whether the handle's base version has text index segments: a cheap check before a layered
// read (ScanChannelsIndexed reads again at its own version and decides for itself).
bool HasTextIndex(const StorageBase& base) {
  const std::shared_ptr<table::Table>& table = base.base_table();
  if (table == nullptr) return false;
  Result<table::TableDescription> description = table->Describe();
  if (!description.ok()) return true;  // the layered read reports the error
  return std::any_of(description->indexes.begin(), description->indexes.end(),
                     [](const table::IndexInfo& index) {
                       return index.name == kTextIndexName && !index.segments.empty();
                     });
}

// The same candidates from one layered read (StorageBase::ReadLayered) when the base version
// has text index segments and the query has tokens: indexed fragments are scanned without
// their text, their token counts read from the index; other fragments and the pending rows
// are tokenized. Nullopt when there is no index to use.
Result<std::optional<ScannedChannels>> ScanChannelsIndexed(
    const StorageBase& base, DistanceMetric metric, const RetrieveRequest& request,
    const std::function<Result<std::shared_ptr<const FragmentTextIndex>>(
        const table::Table&, const std::string&)>& load) {
  if (request.query_tokens.empty()) return std::nullopt;
  const std::vector<std::string> columns = RetrieveColumns(*base.schema(), request);
  STRATA_ASSIGN_OR_RETURN(LayeredRead layered, base.ReadLayered(columns));
  if (layered.base == nullptr) return std::nullopt;
  STRATA_ASSIGN_OR_RETURN(table::TableDescription description, layered.base->Describe());
  std::set<uint32_t> live;
  for (const table::FragmentInfo& fragment : description.fragments) live.insert(fragment.id);
  std::map<uint32_t, IndexedFragment> indexed;
  for (const table::IndexInfo& index : description.indexes) {
    if (index.name != kTextIndexName) continue;
    for (const table::IndexSegmentInfo& segment : index.segments) {
      // Ours cover one fragment each; a compacted fragment's segment waits for cleanup.
      if (segment.fragment_ids.size() != 1 || !live.contains(segment.fragment_ids[0])) continue;
      Result<std::shared_ptr<const FragmentTextIndex>> loaded = load(*layered.base, segment.path);
      if (!loaded.ok()) {
        // The index is derived data: its fragment is tokenized instead (verify reports the
        // file), so one damaged or newer-format file does not fail every text query.
        LogWarning("text index {} of fragment {} unreadable, tokenizing the fragment: {}",
                   segment.path, segment.fragment_ids[0], loaded.status().ToString());
        continue;
      }
      IndexedFragment fragment;
      fragment.index = std::move(*loaded);
      for (const std::string& token : request.query_tokens) {
        fragment.postings.push_back(fragment.index->Lookup(token));
      }
      indexed.emplace(segment.fragment_ids[0], std::move(fragment));
    }
  }
  if (indexed.empty()) return std::nullopt;
  std::vector<uint32_t> indexed_ids;
  indexed_ids.reserve(indexed.size());
  for (const auto& [id, fragment] : indexed) indexed_ids.push_back(id);
  std::vector<uint32_t> other_ids;
  for (const table::FragmentInfo& fragment : description.fragments) {
    if (!indexed.contains(fragment.id)) other_ids.push_back(fragment.id);
  }

  ChannelScan channels(metric, request);
  auto scan_base = [&](std::vector<std::string> scan_columns, std::vector<uint32_t> fragments,
                       const BatchSource& source) -> Status {
    table::ScanOptions scan;
    scan.columns = std::move(scan_columns);
    scan.with_row_address = source.indexed != nullptr;
    scan.fragment_ids = std::move(fragments);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, layered.base->Scan(scan));
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
      if (!batch) return Status::OK();
      STRATA_RETURN_IF_ERROR(channels.Consume(*batch, source));
    }
  };
  std::vector<std::string> without_text;
  for (const std::string& c : columns) {
    if (c != "text_payload") without_text.push_back(c);
  }
  STRATA_RETURN_IF_ERROR(scan_base(std::move(without_text), std::move(indexed_ids),
                                   BatchSource{layered.pending_keys.get(), &indexed}));
  if (!other_ids.empty()) {
    STRATA_RETURN_IF_ERROR(
        scan_base(columns, std::move(other_ids), BatchSource{layered.pending_keys.get(), nullptr}));
  }
  for (const RecordBatch& batch : layered.pending) {
    STRATA_RETURN_IF_ERROR(channels.Consume(batch, BatchSource()));
  }
  return std::optional<ScannedChannels>(std::move(channels).Finish());
}

// Reads the winners' whole records by id. Nullopt when a winner's newest row is no longer
// what the scan scored (written since): not visible, not matching, or other channel figures.
Result<std::optional<std::vector<ContextRecord>>> FetchWinners(
    const StorageBase& base, DistanceMetric metric, const RetrieveRequest& request,
    const std::vector<std::string>& columns, const Channels& scanned,
    const std::vector<Fused>& winners) {
  std::vector<ContextRecord> out;
  for (size_t at = 0; at < winners.size(); at += kGetManyKeys) {
    const size_t end = std::min(winners.size(), at + kGetManyKeys);
    std::vector<expr::Scalar> keys;
    for (size_t i = at; i < end; ++i) {
      keys.push_back(expr::Scalar::String(std::string(scanned.ids[winners[i].candidate])));
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, base.GetMany(keys, columns));
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, DecodeContextRecords(batch));
    if (records.size() != end - at) return std::nullopt;
    for (size_t i = at; i < end; ++i) {
      ContextRecord& r = records[i - at];
      const size_t c = winners[i].candidate;
      if (r.id != scanned.ids[c] || !VisibleByLifecycle(r, request.lifecycle, request.now) ||
          !request.options.filters.Matches(r)) {
        return std::nullopt;
      }
      const Channels again = RecordChannels(metric, request.options, scanned.query_tokens, {r});
      if (!scanned.SameAs(c, again)) return std::nullopt;
      out.push_back(std::move(r));
    }
  }
  return std::optional<std::vector<ContextRecord>>(std::move(out));
}

}  // namespace

std::vector<std::string> TextTokens(std::string_view text) {
  std::vector<std::string> out;
  internal::ForEachToken(text, [&](std::string_view token) { out.emplace_back(token); });
  return out;
}

Result<std::vector<RetrieveResult>> ContextStore::Retrieve(const RetrieveOptions& options) const {
  if (!options.text && !options.vector) {
    return Status::InvalidArgument("retrieve requires text or vector");
  }
  if (options.vector) STRATA_RETURN_IF_ERROR(CheckQuery(*options.vector));
  const int64_t limit = options.limit.value_or(kDefaultSearchLimit);
  if (limit < 0) return Status::InvalidArgument("limit must not be negative");
  ReadProjection projection;
  projection.binary = blob_columns_.count("binary_payload") == 0;
  // One instant for every visibility check of this call, the fallback's included.
  LifecycleQueryOptions at_now = options.lifecycle;
  at_now.reference_time_micros = options.lifecycle.reference_time_micros.value_or(Now());
  const std::vector<std::string> query_tokens =
      options.text ? Distinct(TextTokens(*options.text)) : std::vector<std::string>();
  const RetrieveRequest request{options, query_tokens, at_now, *at_now.reference_time_micros};

  // Through the text index when the base has one, else one scan of the view.
  auto load = [this](const table::Table& table,
                     const std::string& path) -> Result<std::shared_ptr<const FragmentTextIndex>> {
    {
      MutexLock lock(ann_->mu);
      auto it = ann_->texts.find(path);
      if (it != ann_->texts.end()) return it->second;
    }
    STRATA_ASSIGN_OR_RETURN(Buffer bytes, table.ReadIndexFile(path));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FragmentTextIndex> loaded,
                            FragmentTextIndex::Deserialize(bytes.view()));
    std::shared_ptr<const FragmentTextIndex> index = std::move(loaded);
    MutexLock lock(ann_->mu);
    return ann_->texts.emplace(path, std::move(index)).first->second;
  };
  std::optional<ScannedChannels> indexed;
  if (HasTextIndex(*base_)) {
    STRATA_ASSIGN_OR_RETURN(indexed, ScanChannelsIndexed(*base_, metric_, request, load));
  }
  ScannedChannels scanned;
  if (indexed) {
    scanned = std::move(*indexed);
  } else {
    STRATA_ASSIGN_OR_RETURN(scanned, ScanChannels(*base_, metric_, request));
  }
  std::vector<Fused> winners =
      FuseChannels(scanned.channels, options.text_scoring, static_cast<size_t>(limit));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<ContextRecord>> records,
                          FetchWinners(*base_, metric_, request, DefaultColumns(projection),
                                       scanned.channels, winners));
  if (records) return Attach(std::move(winners), std::move(*records));
  // A winner changed between the scan and the fetch (a concurrent write): retrieve again on
  // one consistent read of whole records, as slow as that is.
  ann_->retrieve_rereads.fetch_add(1, std::memory_order_relaxed);
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> candidates,
                          ListFiltered(options.filters, std::nullopt, 0, at_now, projection));
  const Channels channels = RecordChannels(metric_, options, query_tokens, candidates);
  winners = FuseChannels(channels, options.text_scoring, static_cast<size_t>(limit));
  std::vector<ContextRecord> chosen;
  chosen.reserve(winners.size());
  for (const Fused& f : winners) chosen.push_back(std::move(candidates[f.candidate]));
  return Attach(std::move(winners), std::move(chosen));
}

int64_t ContextStore::retrieve_rereads() const {
  return ann_->retrieve_rereads.load(std::memory_order_relaxed);
}

}  // namespace strata::store
