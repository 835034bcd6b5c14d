// ContextStore's exact vector search and hybrid retrieval (include/strata/context_store.h;
// reference §3.2 "search" and "retrieve"), over the visible records of one consistent read.
#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "strata/context_store.h"

namespace strata::store {
namespace {

constexpr double kBm25K1 = 1.2;
constexpr double kBm25B = 0.75;

bool IsWordCodepoint(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

void AppendCodepoint(utf8proc_int32_t c, std::string* out) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(c, buffer);
  out->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

// The distinct tokens of `tokens`, in first-seen order.
std::vector<std::string> Distinct(const std::vector<std::string>& tokens) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const std::string& t : tokens) {
    if (seen.insert(t).second) out.push_back(t);
  }
  return out;
}

// Channel ranks: 1-based rank of each candidate index present in the channel.
using Ranks = std::map<size_t, int64_t>;

// A distance or score as a sort key: NaN (a null embedding item, a NaN query) sorts after
// every number, so the orders below stay strict weak orders.
double Key(double v, bool descending) {
  if (std::isnan(v)) {
    return descending ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
  }
  return v;
}

}  // namespace

std::vector<std::string> TextTokens(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t at = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (at < size) {
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t n = utf8proc_iterate(bytes + at, size - at, &c);
    if (n <= 0) {  // an invalid byte ends a token, like any separator
      n = 1;
      c = -1;
    }
    at += n;
    if (c >= 0 && IsWordCodepoint(c)) {
      AppendCodepoint(utf8proc_tolower(c), &current);
    } else if (!current.empty()) {
      out.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

Status ContextStore::CheckQuery(const std::vector<float>& query) const {
  if (static_cast<int64_t>(query.size()) != embedding_dim_) {
    return Status::InvalidArgument(fmt::format(
        "query length {} does not match embedding dimension {}", query.size(), embedding_dim_));
  }
  return Status::OK();
}

Result<std::vector<SearchResult>> ContextStore::Search(
    const std::vector<float>& query, std::optional<int64_t> limit, const RecordFilters& filters,
    const LifecycleQueryOptions& lifecycle) const {
  STRATA_RETURN_IF_ERROR(CheckQuery(query));
  const int64_t k = limit.value_or(kDefaultSearchLimit);
  if (k < 0) return Status::InvalidArgument("limit must not be negative");
  if (k == 0) return std::vector<SearchResult>();
  ReadProjection projection;
  projection.binary = blob_columns_.count("binary_payload") == 0;
  projection.text = blob_columns_.count("text_payload") == 0;
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> candidates,
                          ListFiltered(filters, std::nullopt, 0, lifecycle, projection));
  std::vector<SearchResult> scored;
  for (ContextRecord& r : candidates) {
    if (!r.embedding) continue;
    const double distance = Distance(metric_, query, *r.embedding);
    scored.push_back(SearchResult{std::move(r), distance});
  }
  auto closer = [](const SearchResult& a, const SearchResult& b) {
    const double x = Key(a.distance, false);
    const double y = Key(b.distance, false);
    if (x != y) return x < y;
    return a.record.id < b.record.id;
  };
  const size_t keep = std::min(scored.size(), static_cast<size_t>(k));
  std::partial_sort(scored.begin(), scored.begin() + static_cast<ptrdiff_t>(keep), scored.end(),
                    closer);
  scored.resize(keep);
  return scored;
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
  STRATA_ASSIGN_OR_RETURN(
      std::vector<ContextRecord> candidates,
      ListFiltered(options.filters, std::nullopt, 0, options.lifecycle, projection));

  // Vector channel: every candidate with an embedding.
  std::vector<std::optional<double>> distance(candidates.size());
  Ranks vector_ranks;
  if (options.vector) {
    std::vector<size_t> order;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!candidates[i].embedding) continue;
      distance[i] = Distance(metric_, *options.vector, *candidates[i].embedding);
      order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double x = Key(*distance[a], false);
      const double y = Key(*distance[b], false);
      if (x != y) return x < y;
      return candidates[a].id < candidates[b].id;
    });
    for (size_t r = 0; r < order.size(); ++r) vector_ranks[order[r]] = static_cast<int64_t>(r) + 1;
  }

  // Text channel: candidates sharing a token with the query.
  std::vector<std::optional<double>> text_score(candidates.size());
  Ranks text_ranks;
  const std::vector<std::string> query_tokens =
      options.text ? Distinct(TextTokens(*options.text)) : std::vector<std::string>();
  if (!query_tokens.empty()) {
    std::vector<std::vector<std::string>> docs(candidates.size());
    double total_length = 0;
    std::map<std::string, int64_t> df;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].text_payload) docs[i] = TextTokens(*candidates[i].text_payload);
      total_length += static_cast<double>(docs[i].size());
      for (const std::string& t : Distinct(docs[i])) ++df[t];
    }
    const auto n = static_cast<double>(candidates.size());
    const double average_length = n > 0 ? total_length / n : 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::map<std::string, int64_t> tf;
      for (const std::string& t : docs[i]) ++tf[t];
      int64_t matched = 0;
      double bm25 = 0;
      for (const std::string& q : query_tokens) {
        auto it = tf.find(q);
        if (it == tf.end()) continue;
        ++matched;
        const auto f = static_cast<double>(it->second);
        const auto d = static_cast<double>(df[q]);
        const double idf = std::log(1.0 + (n - d + 0.5) / (d + 0.5));
        const double norm =
            average_length > 0 ? static_cast<double>(docs[i].size()) / average_length : 0;
        bm25 += idf * f * (kBm25K1 + 1) / (f + kBm25K1 * (1 - kBm25B + kBm25B * norm));
      }
      if (matched == 0) continue;
      text_score[i] = options.text_scoring == TextScoring::kOverlap
                          ? static_cast<double>(matched) / static_cast<double>(query_tokens.size())
                          : bm25;
    }
    std::vector<size_t> order;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (text_score[i]) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double x = Key(*text_score[a], true);
      const double y = Key(*text_score[b], true);
      if (x != y) return x > y;
      return candidates[a].id < candidates[b].id;
    });
    for (size_t r = 0; r < order.size(); ++r) text_ranks[order[r]] = static_cast<int64_t>(r) + 1;
  }

  // Fusion.
  std::vector<RetrieveResult> out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto v = vector_ranks.find(i);
    auto t = text_ranks.find(i);
    if (v == vector_ranks.end() && t == text_ranks.end()) continue;
    RetrieveResult r;
    if (v != vector_ranks.end()) {
      r.score += 1.0 / static_cast<double>(kRrfK + v->second);
      r.vector_distance = distance[i];
      r.matched_channels.emplace_back("vector");
    }
    if (t != text_ranks.end()) {
      r.score += 1.0 / static_cast<double>(kRrfK + t->second);
      r.text_score = text_score[i];
      r.matched_channels.emplace_back("text");
    }
    r.record = std::move(candidates[i]);
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const RetrieveResult& a, const RetrieveResult& b) {
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
    return a.record.id < b.record.id;
  });
  if (out.size() > static_cast<size_t>(limit)) out.resize(static_cast<size_t>(limit));
  return out;
}

}  // namespace strata::store
