// Answer digests (SHA-256 through OpenSSL), workload names, and the answers expected from the
// data set (definitions in engine.h).
#include "answers.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace strata::bench::compare {

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kIngest:
      return "W1 ingest";
    case Workload::kPuts:
      return "W2 puts";
    case Workload::kScan:
      return "W3 scan";
    case Workload::kLookup:
      return "W4 lookup";
    case Workload::kGetMany:
      return "W5 get_many";
    case Workload::kOverwrite:
      return "W6 overwrite";
    case Workload::kCompact:
      return "W7 compact";
    case Workload::kScanMerged:
      return "W3m scan after W7";
    case Workload::kVector:
      return "W8 vector";
    case Workload::kHybrid:
      return "W9 hybrid retrieve";
    case Workload::kSql:
      return "W10 sql";
  }
  return "W? unknown";
}

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    return "sha256-failed";  // never equal to a real digest, so it shows as a mismatch
  }
  std::string hex;
  hex.reserve(size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

namespace {

using RowIndex = std::unordered_map<std::string_view, size_t>;

RowIndex IndexRows(const std::vector<BenchRow>& rows) {
  RowIndex index;
  index.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) index.emplace(rows[i].id, i);
  return index;
}

// "id\tsequence_order\n" or "id\t-\n"; counts the ids found.
void AppendLookup(const RowIndex& index, const std::vector<BenchRow>& rows, const std::string& id,
                  std::string* lines, int64_t* found) {
  auto it = index.find(id);
  if (it == index.end()) {
    *lines += fmt::format("{}\t-\n", id);
  } else {
    *lines += fmt::format("{}\t{}\n", id, rows[it->second].sequence_order);
    ++*found;
  }
}

}  // namespace

Answer ExpectedScan(const Dataset& data, bool overwritten) {
  // With W6's rows in place of the rows of their ids.
  std::unordered_map<std::string_view, const BenchRow*> replaced;
  if (overwritten) {
    for (const BenchRow& r : data.overwrite_rows) replaced[r.id] = &r;
  }
  std::vector<const BenchRow*> match;
  for (const BenchRow& original : data.rows) {
    auto it = replaced.find(original.id);
    const BenchRow& r = it == replaced.end() ? original : *it->second;
    if (r.policy_version == data.scan.policy_version && r.reward > data.scan.reward_gt) {
      match.push_back(&r);
    }
  }
  std::sort(match.begin(), match.end(),
            [](const BenchRow* a, const BenchRow* b) { return a->id < b->id; });
  std::string lines;
  for (const BenchRow* r : match) {
    lines += fmt::format("{}\t{}\t{}\n", r->id, r->sequence_order,
                         std::llround(static_cast<double>(r->reward) * 1024));
  }
  return Answer{static_cast<int64_t>(match.size()), Sha256Hex(lines)};
}

Answer ExpectedLookup(const Dataset& data) {
  const RowIndex index = IndexRows(data.rows);
  std::string lines;
  int64_t found = 0;
  for (const std::string& id : data.lookup_ids) AppendLookup(index, data.rows, id, &lines, &found);
  return Answer{found, Sha256Hex(lines)};
}

Answer ExpectedGetMany(const Dataset& data) {
  const RowIndex index = IndexRows(data.rows);
  std::string lines;
  int64_t found = 0;
  for (const auto& batch : data.get_many_ids) {
    for (const std::string& id : batch) AppendLookup(index, data.rows, id, &lines, &found);
  }
  return Answer{found, Sha256Hex(lines)};
}

Answer ExpectedOverwrite(const Dataset& data) {
  std::string lines;
  for (const BenchRow& r : data.overwrite_rows) {
    lines += fmt::format("{}\t{}\n", r.id, r.sequence_order);
  }
  return Answer{static_cast<int64_t>(data.overwrite_rows.size()), Sha256Hex(lines)};
}

Answer ExpectedVector(const Dataset& data) {
  const size_t dim = static_cast<size_t>(data.sizes.vector_dim);
  const size_t n = data.vector_ids.size();
  const size_t queries = dim == 0 ? 0 : data.queries.size() / dim;
  const size_t k = std::min(n, static_cast<size_t>(std::max(0, data.sizes.top_k)));
  std::string lines;
  std::vector<double> distance(n);
  std::vector<size_t> order(n);
  for (size_t q = 0; q < queries; ++q) {
    const float* query = &data.queries[q * dim];
    for (size_t i = 0; i < n; ++i) {
      const float* v = &data.vectors[i * dim];
      double sum = 0;
      for (size_t j = 0; j < dim; ++j) {
        const double d = static_cast<double>(v[j]) - static_cast<double>(query[j]);
        sum += d * d;
      }
      distance[i] = sum;
    }
    std::iota(order.begin(), order.end(), size_t{0});
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](size_t a, size_t b) {
                        return distance[a] != distance[b] ? distance[a] < distance[b] : a < b;
                      });
    lines += fmt::format("{}\t", q);
    for (size_t i = 0; i < k; ++i) {
      if (i > 0) lines += ',';
      lines += data.vector_ids[order[i]];
    }
    lines += '\n';
  }
  return Answer{static_cast<int64_t>(queries), Sha256Hex(lines)};
}

Answer ExpectedSql(const Dataset& data) {
  // Q1: count per (policy_version, role); Q2: count and max rollout_id per role of the rows
  // with reward > 0.5. std::map orders as the queries' ORDER BY (byte-wise, ASCII values).
  std::map<std::pair<std::string, std::string>, int64_t> q1;
  struct RoleFigures {
    int64_t count = 0;
    std::string max_rollout;
  };
  std::map<std::string, RoleFigures> q2;
  for (const BenchRow& r : data.rows) {
    ++q1[{r.policy_version, r.role}];
    if (r.reward > 0.5f) {
      RoleFigures& f = q2[r.role];
      ++f.count;
      f.max_rollout = std::max(f.max_rollout, r.rollout_id);
    }
  }
  std::string lines;
  for (const auto& [key, count] : q1) {
    lines += fmt::format("q1\t{}\t{}\t{}\n", key.first, key.second, count);
  }
  for (const auto& [role, f] : q2) {
    lines += fmt::format("q2\t{}\t{}\t{}\n", role, f.count, f.max_rollout);
  }
  return Answer{static_cast<int64_t>(q1.size() + q2.size()), Sha256Hex(lines)};
}

namespace {

// Runs of ASCII letters and digits, lowercased: the W9 texts are ASCII by construction.
std::vector<std::string> AsciiTokens(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0) {
      current += static_cast<char>(std::tolower(u));
    } else if (!current.empty()) {
      out.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

struct Fused {
  size_t doc = 0;
  double score = 0;
  double distance = 0;
  std::optional<double> text;
};

}  // namespace

std::vector<std::vector<std::string>> ExpectedHybrid(const Dataset& data) {
  const HybridData& h = data.hybrid;
  const size_t dim = static_cast<size_t>(std::max(0, data.sizes.hybrid_dim));
  const size_t k = static_cast<size_t>(std::max(0, data.sizes.top_k));
  // Every text once as token numbers, so each query only counts.
  std::unordered_map<std::string, int32_t> vocabulary;
  std::vector<std::vector<int32_t>> docs(h.texts.size());
  for (size_t i = 0; i < h.texts.size(); ++i) {
    for (std::string& t : AsciiTokens(h.texts[i])) {
      auto [it, added] = vocabulary.emplace(std::move(t), static_cast<int32_t>(vocabulary.size()));
      docs[i].push_back(it->second);
    }
  }
  std::vector<std::vector<std::string>> out;
  for (size_t q = 0; q < h.query_texts.size(); ++q) {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < h.ids.size(); ++i) {
      if (h.topics[i] == h.query_topics[q]) candidates.push_back(i);
    }
    const float* query = &h.query_vectors[q * dim];
    std::vector<double> distance(h.ids.size(), 0);
    for (size_t i : candidates) {
      const float* v = &h.vectors[i * dim];
      double sum = 0;
      for (size_t j = 0; j < dim; ++j) {
        const double d = static_cast<double>(v[j]) - static_cast<double>(query[j]);
        sum += d * d;
      }
      distance[i] = std::sqrt(sum);
    }
    std::vector<size_t> by_distance = candidates;
    std::sort(by_distance.begin(), by_distance.end(), [&](size_t a, size_t b) {
      return distance[a] != distance[b] ? distance[a] < distance[b] : h.ids[a] < h.ids[b];
    });
    std::unordered_map<size_t, int64_t> vector_rank;
    for (size_t r = 0; r < by_distance.size(); ++r) {
      vector_rank[by_distance[r]] = static_cast<int64_t>(r) + 1;
    }

    // BM25 over the candidates; a query token absent from the vocabulary matches nothing.
    std::vector<int32_t> terms;
    std::set<std::string> seen;
    for (const std::string& t : AsciiTokens(h.query_texts[q])) {
      if (!seen.insert(t).second) continue;
      auto it = vocabulary.find(t);
      terms.push_back(it == vocabulary.end() ? -1 : it->second);
    }
    const auto n = static_cast<double>(candidates.size());
    double total_length = 0;
    std::vector<double> df(terms.size(), 0);
    for (size_t i : candidates) {
      total_length += static_cast<double>(docs[i].size());
      for (size_t t = 0; t < terms.size(); ++t) {
        if (std::find(docs[i].begin(), docs[i].end(), terms[t]) != docs[i].end()) ++df[t];
      }
    }
    const double average_length = n > 0 ? total_length / n : 0;
    std::unordered_map<size_t, double> text_score;
    for (size_t i : candidates) {
      bool matched = false;
      double bm25 = 0;
      for (size_t t = 0; t < terms.size(); ++t) {
        const auto f = static_cast<double>(std::count(docs[i].begin(), docs[i].end(), terms[t]));
        if (f == 0) continue;
        matched = true;
        const double idf = std::log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5));
        const double norm = static_cast<double>(docs[i].size()) / average_length;
        bm25 += idf * f * (1.2 + 1) / (f + 1.2 * (1 - 0.75 + 0.75 * norm));
      }
      if (matched) text_score[i] = bm25;
    }
    std::vector<size_t> by_text;
    by_text.reserve(text_score.size());
    for (const auto& [i, score] : text_score) by_text.push_back(i);
    std::sort(by_text.begin(), by_text.end(), [&](size_t a, size_t b) {
      const double x = text_score[a];
      const double y = text_score[b];
      return x != y ? x > y : h.ids[a] < h.ids[b];
    });

    std::vector<Fused> fused;
    fused.reserve(candidates.size());
    for (size_t i : candidates) {
      fused.push_back(Fused{i, 1.0 / static_cast<double>(60 + vector_rank[i]), distance[i], {}});
    }
    std::unordered_map<size_t, size_t> at;
    for (size_t f = 0; f < fused.size(); ++f) at[fused[f].doc] = f;
    for (size_t r = 0; r < by_text.size(); ++r) {
      Fused& f = fused[at[by_text[r]]];
      f.score += 1.0 / static_cast<double>(60 + static_cast<int64_t>(r) + 1);
      f.text = text_score[by_text[r]];
    }
    const size_t keep = std::min(k, fused.size());
    std::partial_sort(fused.begin(), fused.begin() + static_cast<std::ptrdiff_t>(keep), fused.end(),
                      [&](const Fused& a, const Fused& b) {
                        if (a.score != b.score) return a.score > b.score;
                        if (a.distance != b.distance) return a.distance < b.distance;
                        if (a.text.has_value() != b.text.has_value()) return a.text.has_value();
                        if (a.text && *a.text != *b.text) return *a.text > *b.text;
                        return h.ids[a.doc] < h.ids[b.doc];
                      });
    std::vector<std::string> ids;
    for (size_t f = 0; f < keep; ++f) ids.push_back(h.ids[fused[f].doc]);
    out.push_back(std::move(ids));
  }
  return out;
}

HybridQuality CheckHybrid(const Dataset& data,
                          const std::vector<std::vector<std::string>>& reference,
                          const std::vector<std::vector<std::string>>& got) {
  const HybridData& h = data.hybrid;
  std::unordered_map<std::string_view, int32_t> topic;
  topic.reserve(h.ids.size());
  for (size_t i = 0; i < h.ids.size(); ++i) topic.emplace(h.ids[i], h.topics[i]);
  HybridQuality quality;
  quality.queries = static_cast<int64_t>(got.size());
  double recall_sum = 0;
  for (size_t q = 0; q < got.size(); ++q) {
    for (const std::string& id : got[q]) {
      ++quality.ids;
      auto it = topic.find(id);
      if (q >= h.query_topics.size() || it == topic.end() || it->second != h.query_topics[q]) {
        ++quality.outside_filter;
      }
    }
    if (q >= reference.size() || reference[q].empty()) continue;
    const std::unordered_set<std::string> returned(got[q].begin(), got[q].end());
    size_t hits = 0;
    for (const std::string& id : reference[q]) hits += returned.count(id);
    recall_sum += static_cast<double>(hits) / static_cast<double>(reference[q].size());
  }
  // A query the engine did not answer counts as recall 0.
  quality.recall = reference.empty() ? 0 : recall_sum / static_cast<double>(reference.size());
  return quality;
}

}  // namespace strata::bench::compare
