// ContextStore search and retrieve (include/strata/context_store.h): exact nearest records by
// each metric, the text channel's two scorings and reciprocal-rank fusion, each against an
// independent computation in this file.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "store/store_test_util.h"
#include "store/text_index.h"
#include "strata/context_store.h"
#include "util/clock.h"

namespace strata::store {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000;

class ContextSearchTest : public testing::StoreFixture {
 protected:
  Result<std::unique_ptr<ContextStore>> Open(int32_t dim, DistanceMetric metric) {
    ContextStoreOptions options;
    options.embedding_dim = dim;
    options.distance_metric = metric;
    options.base.shard_id = "solo";
    options.base.clock = &clock_;
    return ContextStore::Open(store_, fmt::format("{}-{}/", DistanceMetricName(metric), dim),
                              std::move(options));
  }

  static ContextRecord Rec(std::string id, std::optional<std::vector<float>> embedding,
                           std::optional<std::string> text = {}) {
    ContextRecord r;
    r.id = std::move(id);
    r.run_id = "run";
    r.created_at_micros = kT0;
    r.embedding = std::move(embedding);
    r.text_payload = std::move(text);
    return r;
  }

  // Defined with the test that uses it.
  void RetrieveEqualsBruteForce(bool text_index);

  ManualClock clock_{kT0 + 1'000'000};
};

// Independent distances, in float then double as written in the reference.
double Expected(DistanceMetric metric, const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0;
  double na = 0;
  double nb = 0;
  double sq = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * double{b[i]};
    na += double{a[i]} * double{a[i]};
    nb += double{b[i]} * double{b[i]};
    sq += (double{a[i]} - double{b[i]}) * (double{a[i]} - double{b[i]});
  }
  if (metric == DistanceMetric::kL2) return std::sqrt(sq);
  if (metric == DistanceMetric::kDot) return -dot;
  return na == 0 || nb == 0 ? 1.0 : 1.0 - dot / std::sqrt(na * nb);
}

TEST(ContextTextTokensTest, RunsOfLettersAndNumbersLowercased) {
  EXPECT_EQ(TextTokens("Hello, World! hello 42x"),
            (std::vector<std::string>{"hello", "world", "hello", "42x"}));
  EXPECT_EQ(TextTokens("Café—ÜBER_straße ½"),
            (std::vector<std::string>{"café", "über", "straße", "½"}));
  EXPECT_EQ(TextTokens(std::string("a\xff"
                                   "b",
                                   3)),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(TextTokens(" ,.;").empty());
}

// Tokens are in Unicode normalization form C: a letter with combining marks is one token,
// equal to its precomposed form; a mark with no letter before it separates like punctuation.
TEST(ContextTextTokensTest, CombiningMarksJoinTheirLetterAndTokensAreComposed) {
  EXPECT_EQ(TextTokens("e\u0301cole E\u0301COLE \u00e9cole"),
            (std::vector<std::string>{"\u00e9cole", "\u00e9cole", "\u00e9cole"}));
  // Hangul jamo compose into the syllable.
  EXPECT_EQ(TextTokens("\u1112\u1161\u11ab \ud55c"),
            (std::vector<std::string>{"\ud55c", "\ud55c"}));
  EXPECT_EQ(TextTokens("\u0301a b\u0301\u0327"),
            (std::vector<std::string>{"a", TextTokens("b\u0327\u0301").front()}));
  EXPECT_EQ(TextTokens("a\u0301").front(), "\u00e1");
}

// Tokens of lowercase ASCII pass through without a copy; a capital or a non-ASCII letter in
// the middle of a token switches to the built path; both must give TextTokens' definition.
TEST(ContextTextTokensTest, MixedCaseAndNonAsciiInsideTokens) {
  EXPECT_EQ(
      TextTokens("abcDef ghi Jkl mnoP 12ab ÉCOLE écoleX aÜb"),
      (std::vector<std::string>{"abcdef", "ghi", "jkl", "mnop", "12ab", "école", "écolex", "aüb"}));
  EXPECT_EQ(TextTokens("x"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(TextTokens("Q"), (std::vector<std::string>{"q"}));
  EXPECT_EQ(TextTokens("end. ÄND"), (std::vector<std::string>{"end", "änd"}));
  EXPECT_EQ(TextTokens(std::string("ab\xc3", 3)), (std::vector<std::string>{"ab"}));
}

TEST_F(ContextSearchTest, ExactSearchEqualsBruteForceForEveryMetric) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1, 1);
  for (DistanceMetric metric :
       {DistanceMetric::kL2, DistanceMetric::kCosine, DistanceMetric::kDot}) {
    SCOPED_TRACE(DistanceMetricName(metric));
    ASSERT_OK_AND_ASSIGN(auto store, Open(8, metric));
    std::vector<ContextRecord> records;
    for (int i = 0; i < 60; ++i) {
      std::vector<float> e(8);
      for (float& x : e) x = value(rng);
      if (i % 10 == 0) e.assign(8, 0);  // zero vectors: cosine distance 1
      records.push_back(
          Rec(fmt::format("r{:02}", i), i % 7 == 3 ? std::nullopt : std::optional(e)));
    }
    records.push_back(Rec("twin-a", std::vector<float>(8, 0.5F)));
    records.push_back(Rec("twin-b", std::vector<float>(8, 0.5F)));  // a tie, broken by id
    ASSERT_OK(store->Add(records).status());
    std::vector<float> query(8);
    for (float& x : query) x = value(rng);
    for (int64_t k : {1, 10, 100}) {
      ASSERT_OK_AND_ASSIGN(auto got, store->Search(query, k));
      std::vector<std::pair<double, std::string>> want;
      for (const ContextRecord& r : records) {
        if (r.embedding) want.emplace_back(Expected(metric, query, *r.embedding), r.id);
      }
      std::sort(want.begin(), want.end());
      want.resize(std::min(want.size(), static_cast<size_t>(k)));
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].record.id, want[i].second) << i;
        EXPECT_NEAR(got[i].distance, want[i].first, 1e-9) << i;
      }
    }
    ASSERT_OK_AND_ASSIGN(auto twins, store->Search(std::vector<float>(8, 0.5F), 2));
    if (metric == DistanceMetric::kL2) {
      EXPECT_EQ(twins[0].record.id, "twin-a");
      EXPECT_EQ(twins[1].record.id, "twin-b");
    }
  }
}

TEST_F(ContextSearchTest, SearchSeesOnlyVisibleFilteredRecordsAndTheNewestVersion) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(2, DistanceMetric::kL2));
  ContextRecord a = Rec("a", std::vector<float>{0, 0});
  a.external_id = "doc";
  ContextRecord b = Rec("b", std::vector<float>{1, 0});
  b.bot_id = "bot";
  ASSERT_OK(store->Add({a, b, Rec("c", std::vector<float>{2, 0})}).status());
  // The new version of "doc" sits far away; the old one is hidden.
  ContextRecord a2 = Rec("a2", std::vector<float>{9, 9});
  a2.external_id = "doc";
  ASSERT_OK(store->UpsertByExternalId(a2).status());
  ASSERT_OK(store->DeleteById("c").status());
  ASSERT_OK_AND_ASSIGN(auto got, store->Search({0, 0}));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].record.id, "b");
  EXPECT_EQ(got[1].record.id, "a2");
  ASSERT_OK_AND_ASSIGN(RecordFilters bot, RecordFilters::FromJson(R"({"bot_id":"bot"})"));
  ASSERT_OK_AND_ASSIGN(got, store->Search({9, 9}, 10, bot));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].record.id, "b");
  ASSERT_OK_AND_ASSIGN(got, store->Search({0, 0}, 0));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(store->Search({0, 0, 0}).status().message(),
            "query length 3 does not match embedding dimension 2");
  // A NaN query makes every distance NaN: still a well-defined order (by id).
  ASSERT_OK_AND_ASSIGN(got, store->Search({std::nanf(""), 0}));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].record.id, "a2");
  EXPECT_EQ(got[1].record.id, "b");
}

// The oracle of exact search: every visible record by ListFiltered, scored one by one.
std::vector<std::pair<double, std::string>> BruteForce(const ContextStore& store,
                                                       const std::vector<float>& query, size_t k,
                                                       const RecordFilters& filters,
                                                       const LifecycleQueryOptions& lifecycle) {
  Result<std::vector<ContextRecord>> visible =
      store.ListFiltered(filters, std::nullopt, 0, lifecycle);
  EXPECT_TRUE(visible.ok()) << visible.status();
  std::vector<std::pair<double, std::string>> out;
  if (!visible.ok()) return out;
  for (const ContextRecord& r : *visible) {
    if (r.embedding) out.emplace_back(Expected(store.distance_metric(), query, *r.embedding), r.id);
  }
  auto key = [](double d) { return std::isnan(d) ? std::numeric_limits<double>::infinity() : d; };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    if (key(a.first) != key(b.first)) return key(a.first) < key(b.first);
    return a.second < b.second;
  });
  out.resize(std::min(out.size(), k));
  return out;
}

// Random adds (duplicate, null, NaN-holding and null-item-free embeddings; dimension 13, not a
// multiple of any lane count), updates that keep the embedding (the superseded row scores
// exactly as its successor), lifecycle changes, deletes, merges into the base table and
// unflushed rows: every search equals the brute force over ListFiltered.
TEST_F(ContextSearchTest, SearchEqualsBruteForceAcrossBaseGenerationsAndMemtable) {
  constexpr int32_t kDim = 13;
  const uint32_t seed = 20261204;
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  for (DistanceMetric metric :
       {DistanceMetric::kL2, DistanceMetric::kCosine, DistanceMetric::kDot}) {
    SCOPED_TRACE(DistanceMetricName(metric));
    ContextStoreOptions options;
    options.embedding_dim = kDim;
    options.distance_metric = metric;
    options.base.shard_id = "solo";
    options.base.clock = &clock_;
    options.seal_on_add = false;  // rows stay in the memtable until a Flush
    ASSERT_OK_AND_ASSIGN(
        auto store, ContextStore::Open(store_, fmt::format("mixed-{}/", DistanceMetricName(metric)),
                                       std::move(options)));
    std::vector<std::vector<float>> seen;
    std::vector<std::string> ids;
    int next = 0;
    auto random_vector = [&] {
      std::vector<float> e(kDim);
      for (float& x : e) x = value(rng);
      return e;
    };
    for (int round = 0; round < 5; ++round) {
      SCOPED_TRACE(fmt::format("round {}", round));
      std::vector<ContextRecord> batch;
      for (int i = 0; i < 30; ++i) {
        ContextRecord r = Rec(fmt::format("r{:04}", next++), random_vector());
        const int kind = static_cast<int>(rng() % 10);
        if (kind == 0) r.embedding.reset();
        if (kind == 1 && !seen.empty()) r.embedding = seen[rng() % seen.size()];  // a tie
        if (kind == 2) (*r.embedding)[rng() % kDim] = std::nanf("");
        if (kind == 3) r.embedding->assign(kDim, 0.0F);
        r.bot_id = rng() % 2 == 0 ? "x" : "y";
        r.metadata = fmt::format(R"({{"n":{}}})", rng() % 3);
        if (r.embedding) seen.push_back(*r.embedding);
        ids.push_back(r.id);
        batch.push_back(std::move(r));
      }
      ASSERT_OK(store->Add(batch).status());
      for (int i = 0; i < 10; ++i) {
        const std::string& id = ids[rng() % ids.size()];
        ContextPatch patch;
        switch (rng() % 5) {
          case 0:
            patch.metadata = R"({"n":9})";
            break;
          case 1:
            patch.lifecycle_status = "archived";
            break;
          case 2:
            patch.retired_at_micros = kT0;
            break;
          case 3:
            patch.expires_at_micros = kT0;  // already expired
            break;
          default:
            ASSERT_OK(store->DeleteById(id).status());
            continue;
        }
        ASSERT_OK(store->UpdateById(id, patch).status());
      }
      if (round % 2 == 0) ASSERT_OK(store->Flush().status());
      if (round % 3 == 1) {
        ASSERT_OK(store->Flush().status());
        ASSERT_OK(store->base().Cleanup().status());
      }
      ASSERT_OK_AND_ASSIGN(RecordFilters bot_x, RecordFilters::FromJson(R"({"bot_id":"x"})"));
      ASSERT_OK_AND_ASSIGN(RecordFilters n1, RecordFilters::FromJson(R"({"n":1})"));
      RecordFilters none;
      LifecycleQueryOptions retired;
      retired.include_retired = true;
      retired.include_expired = true;
      for (const std::vector<float>& query : {random_vector(), seen[rng() % seen.size()]}) {
        for (size_t k : {3, 1000}) {
          for (const RecordFilters* filters : {&none, &bot_x, &n1}) {
            for (const LifecycleQueryOptions& lifecycle : {LifecycleQueryOptions(), retired}) {
              ASSERT_OK_AND_ASSIGN(
                  auto got, store->Search(query, static_cast<int64_t>(k), *filters, lifecycle));
              const auto want = BruteForce(*store, query, k, *filters, lifecycle);
              ASSERT_EQ(got.size(), want.size());
              for (size_t i = 0; i < got.size(); ++i) {
                EXPECT_EQ(got[i].record.id, want[i].second) << i;
                if (std::isnan(want[i].first)) {
                  EXPECT_TRUE(std::isnan(got[i].distance)) << i;
                } else {
                  EXPECT_NEAR(got[i].distance, want[i].first, 1e-9) << i;
                }
              }
            }
          }
        }
      }
    }
  }
}

// --- Retrieve ------------------------------------------------------------------------------

// The reference's fusion, computed independently from per-channel rankings.
struct Fused {
  std::string id;
  double score = 0;
  std::optional<double> distance;
  std::optional<double> text;
};

std::vector<std::string> AsciiTokens(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

TEST_F(ContextSearchTest, RetrieveFusesBothChannelsByReciprocalRankWithBothTextScorings) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(2, DistanceMetric::kL2));
  const std::vector<std::pair<std::string, std::string>> corpus = {
      {"d1", "The cat sat on the mat"},      {"d2", "A dog and a cat"},
      {"d3", "Dogs chase cats in the park"}, {"d4", "Stock markets fell sharply"},
      {"d5", "the cat the cat the cat"},
  };
  std::vector<ContextRecord> records;
  for (size_t i = 0; i < corpus.size(); ++i) {
    records.push_back(
        Rec(corpus[i].first,
            i == 3 ? std::nullopt : std::optional(std::vector<float>{static_cast<float>(i), 1}),
            corpus[i].second));
  }
  records.push_back(Rec("d6", std::vector<float>{0.5F, 1}));  // no text
  ASSERT_OK(store->Add(records).status());

  const std::string query_text = "cat on the MAT, cat";
  const std::vector<float> query_vector = {1.2F, 1};
  for (TextScoring scoring : {TextScoring::kOverlap, TextScoring::kBm25}) {
    SCOPED_TRACE(scoring == TextScoring::kBm25 ? "bm25" : "overlap");
    // Independent text scores.
    std::vector<std::string> q = AsciiTokens(query_text);
    std::sort(q.begin(), q.end());
    q.erase(std::unique(q.begin(), q.end()), q.end());
    std::map<std::string, std::vector<std::string>> docs;
    double total = 0;
    for (const ContextRecord& r : records) {
      docs[r.id] = r.text_payload ? AsciiTokens(*r.text_payload) : std::vector<std::string>();
      total += static_cast<double>(docs[r.id].size());
    }
    const double n = static_cast<double>(records.size());
    const double avg = total / n;
    std::map<std::string, double> text;
    for (const auto& [id, tokens] : docs) {
      int matched = 0;
      double bm25 = 0;
      for (const std::string& t : q) {
        const double tf = static_cast<double>(std::count(tokens.begin(), tokens.end(), t));
        if (tf == 0) continue;
        ++matched;
        double df = 0;
        for (const auto& [other, other_tokens] : docs) {
          df += std::count(other_tokens.begin(), other_tokens.end(), t) > 0 ? 1 : 0;
        }
        const double idf = std::log(1 + (n - df + 0.5) / (df + 0.5));
        bm25 +=
            idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * static_cast<double>(tokens.size()) / avg));
      }
      if (matched > 0) {
        text[id] = scoring == TextScoring::kOverlap
                       ? static_cast<double>(matched) / static_cast<double>(q.size())
                       : bm25;
      }
    }
    // Independent vector ranks and fusion.
    std::vector<std::pair<double, std::string>> by_distance;
    for (const ContextRecord& r : records) {
      if (r.embedding)
        by_distance.emplace_back(Expected(DistanceMetric::kL2, query_vector, *r.embedding), r.id);
    }
    std::sort(by_distance.begin(), by_distance.end());
    std::vector<std::pair<double, std::string>> by_text;
    for (const auto& [id, s] : text) by_text.emplace_back(-s, id);
    std::sort(by_text.begin(), by_text.end());
    std::map<std::string, Fused> fused;
    for (size_t r = 0; r < by_distance.size(); ++r) {
      Fused& f = fused[by_distance[r].second];
      f.id = by_distance[r].second;
      f.score += 1.0 / (60.0 + static_cast<double>(r + 1));
      f.distance = by_distance[r].first;
    }
    for (size_t r = 0; r < by_text.size(); ++r) {
      Fused& f = fused[by_text[r].second];
      f.id = by_text[r].second;
      f.score += 1.0 / (60.0 + static_cast<double>(r + 1));
      f.text = -by_text[r].first;
    }
    std::vector<Fused> want;
    for (auto& [id, f] : fused) want.push_back(f);
    std::sort(want.begin(), want.end(), [](const Fused& a, const Fused& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.distance.has_value() != b.distance.has_value()) return a.distance.has_value();
      if (a.distance && *a.distance != *b.distance) return *a.distance < *b.distance;
      if (a.text.has_value() != b.text.has_value()) return a.text.has_value();
      if (a.text && *a.text != *b.text) return *a.text > *b.text;
      return a.id < b.id;
    });

    RetrieveOptions options;
    options.text = query_text;
    options.vector = query_vector;
    options.text_scoring = scoring;
    ASSERT_OK_AND_ASSIGN(std::vector<RetrieveResult> got, store->Retrieve(options));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(want[i].id);
      EXPECT_EQ(got[i].record.id, want[i].id);
      EXPECT_NEAR(got[i].score, want[i].score, 1e-12);
      EXPECT_EQ(got[i].vector_distance.has_value(), want[i].distance.has_value());
      if (got[i].vector_distance) {
        EXPECT_NEAR(*got[i].vector_distance, *want[i].distance, 1e-9);
      }
      EXPECT_EQ(got[i].text_score.has_value(), want[i].text.has_value());
      if (got[i].text_score) {
        EXPECT_NEAR(*got[i].text_score, *want[i].text, 1e-9);
      }
      std::vector<std::string> channels;
      if (want[i].distance) channels.emplace_back("vector");
      if (want[i].text) channels.emplace_back("text");
      EXPECT_EQ(got[i].matched_channels, channels);
    }
    options.limit = 2;
    ASSERT_OK_AND_ASSIGN(got, store->Retrieve(options));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].record.id, want[0].id);
  }
}

// The oracle of retrieve: every visible record by ListFiltered, each channel ranked and the
// ranks fused as the reference defines them (tokens by TextTokens, tested above).
std::vector<std::pair<Fused, ContextRecord>> RetrieveBruteForce(const ContextStore& store,
                                                                const RetrieveOptions& options) {
  std::vector<std::pair<Fused, ContextRecord>> out;
  Result<std::vector<ContextRecord>> visible =
      store.ListFiltered(options.filters, std::nullopt, 0, options.lifecycle);
  EXPECT_TRUE(visible.ok()) << visible.status();
  if (!visible.ok()) return out;
  // Distinct query tokens in first-seen order: BM25 adds their terms in this order, so
  // records whose scores are equal sums of the same terms in another order tie exactly.
  std::vector<std::string> q;
  for (const std::string& t :
       options.text ? TextTokens(*options.text) : std::vector<std::string>()) {
    if (std::find(q.begin(), q.end(), t) == q.end()) q.push_back(t);
  }
  std::vector<std::vector<std::string>> docs;
  double total = 0;
  for (const ContextRecord& r : *visible) {
    docs.push_back(r.text_payload ? TextTokens(*r.text_payload) : std::vector<std::string>());
    total += static_cast<double>(docs.back().size());
  }
  const double n = static_cast<double>(visible->size());
  const double avg = n > 0 ? total / n : 0;
  auto key = [](double d, double nan) { return std::isnan(d) ? nan : d; };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::tuple<double, std::string, size_t>> by_distance, by_text;
  std::vector<Fused> fused(visible->size());
  for (size_t i = 0; i < visible->size(); ++i) {
    const ContextRecord& r = (*visible)[i];
    fused[i].id = r.id;
    if (options.vector && r.embedding) {
      fused[i].distance = Expected(store.distance_metric(), *options.vector, *r.embedding);
      by_distance.emplace_back(key(*fused[i].distance, inf), r.id, i);
    }
    int matched = 0;
    double bm25 = 0;
    for (const std::string& t : q) {
      const double tf = static_cast<double>(std::count(docs[i].begin(), docs[i].end(), t));
      if (tf == 0) continue;
      ++matched;
      double df = 0;
      for (const auto& other : docs) df += std::count(other.begin(), other.end(), t) > 0 ? 1 : 0;
      const double idf = std::log(1 + (n - df + 0.5) / (df + 0.5));
      bm25 +=
          idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * static_cast<double>(docs[i].size()) / avg));
    }
    if (matched == 0) continue;
    fused[i].text = options.text_scoring == TextScoring::kOverlap
                        ? static_cast<double>(matched) / static_cast<double>(q.size())
                        : bm25;
    by_text.emplace_back(-key(*fused[i].text, -inf), r.id, i);
  }
  std::sort(by_distance.begin(), by_distance.end());
  std::sort(by_text.begin(), by_text.end());
  for (size_t r = 0; r < by_distance.size(); ++r) {
    fused[std::get<2>(by_distance[r])].score += 1.0 / (60.0 + static_cast<double>(r + 1));
  }
  for (size_t r = 0; r < by_text.size(); ++r) {
    fused[std::get<2>(by_text[r])].score += 1.0 / (60.0 + static_cast<double>(r + 1));
  }
  for (size_t i = 0; i < visible->size(); ++i) {
    if (fused[i].distance || fused[i].text) out.emplace_back(fused[i], (*visible)[i]);
  }
  std::sort(out.begin(), out.end(), [&](const auto& x, const auto& y) {
    const Fused& a = x.first;
    const Fused& b = y.first;
    if (a.score != b.score) return a.score > b.score;
    if (a.distance.has_value() != b.distance.has_value()) return a.distance.has_value();
    if (a.distance && key(*a.distance, inf) != key(*b.distance, inf)) {
      return key(*a.distance, inf) < key(*b.distance, inf);
    }
    if (a.text.has_value() != b.text.has_value()) return a.text.has_value();
    if (a.text && key(*a.text, -inf) != key(*b.text, -inf)) {
      return key(*a.text, -inf) > key(*b.text, -inf);
    }
    return a.id < b.id;
  });
  out.resize(std::min(out.size(), static_cast<size_t>(options.limit.value_or(10))));
  return out;
}

// Records are equal, NaN embedding items equal to each other.
bool SameRecord(ContextRecord a, ContextRecord b) {
  if (a.embedding.has_value() != b.embedding.has_value()) return false;
  if (a.embedding) {
    if (!std::equal(a.embedding->begin(), a.embedding->end(), b.embedding->begin(),
                    b.embedding->end(),
                    [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); })) {
      return false;
    }
    a.embedding.reset();
    b.embedding.reset();
  }
  return a == b;
}

// Random records (texts of mixed case and non-ASCII words, null texts and embeddings, ties,
// NaN items; metadata written compactly, with spaces or with escapes) under updates, lifecycle
// changes, deletes, merges and unflushed rows: every retrieve — text, vector or both, with
// and without filters (a metadata key with a number, a string, a contains; a column filter),
// both scorings, with and without retired rows — equals the brute force over ListFiltered,
// records included.
// Retrieve against RetrieveBruteForce over random records in the base, in pending generations
// and in the memtable, under updates, deletes, filters and both scorings. With `text_index`
// the base fragments of at least 60 rows get a text index as they are merged, so retrieve
// reads indexed fragments, unindexed ones and pending rows together.
void ContextSearchTest::RetrieveEqualsBruteForce(bool text_index) {
  constexpr int32_t kDim = 5;
  const uint32_t seed = 20261205;
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  const std::vector<std::string> words = {"alpha", "Beta", "gamma", "DELTA", "école",
                                          "Über",  "東京", "x1",    "beta",  "alphabet"};
  const std::vector<std::string> metadata = {R"({"n":1,"s":"ab","tags":["x","y"]})",
                                             R"({"n": 1, "s": "ab"})",
                                             R"({"n":2,"s":"ab"})",
                                             R"({"n":1,"s":"a\u0062"})",
                                             R"({"s":"abc","tags":"wxyz"})",
                                             R"(["n"])"};
  ContextStoreOptions options;
  options.embedding_dim = kDim;
  options.base.shard_id = "solo";
  options.base.clock = &clock_;
  options.seal_on_add = false;  // rows stay in the memtable until a Flush
  options.text_index.enabled = text_index;
  options.text_index.min_fragment_rows = 60;
  ASSERT_OK_AND_ASSIGN(auto store, ContextStore::Open(store_, "retrieve-mixed/", options));
  auto random_vector = [&] {
    std::vector<float> e(kDim);
    for (float& x : e) x = value(rng);
    return e;
  };
  auto random_text = [&] {
    std::string text;
    for (int w = static_cast<int>(rng() % 8); w >= 0; --w) {
      text += words[rng() % words.size()];
      text += rng() % 4 == 0 ? ", " : " ";
    }
    return text;
  };
  std::vector<std::vector<float>> seen;
  std::vector<std::string> ids;
  int next = 0;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    std::vector<ContextRecord> batch;
    for (int i = 0; i < 40; ++i) {
      ContextRecord r = Rec(fmt::format("r{:04}", next++), random_vector(), random_text());
      const int kind = static_cast<int>(rng() % 10);
      if (kind == 0) r.embedding.reset();
      if (kind == 1 && !seen.empty()) r.embedding = seen[rng() % seen.size()];  // a tie
      if (kind == 2) (*r.embedding)[rng() % kDim] = std::nanf("");
      if (kind == 3) r.text_payload.reset();
      if (kind == 4) r.text_payload = "alpha beta";  // equal texts: equal text scores
      r.bot_id = rng() % 2 == 0 ? "x" : "y";
      if (rng() % 5 != 0) r.metadata = metadata[rng() % metadata.size()];
      if (r.embedding) seen.push_back(*r.embedding);
      ids.push_back(r.id);
      batch.push_back(std::move(r));
    }
    ASSERT_OK(store->Add(batch).status());
    for (int i = 0; i < 12; ++i) {
      const std::string& id = ids[rng() % ids.size()];
      ContextPatch patch;
      switch (rng() % 5) {
        case 0:
          patch.metadata = metadata[rng() % metadata.size()];
          break;
        case 1:
          patch.lifecycle_status = "archived";
          break;
        case 2:
          patch.retired_at_micros = kT0;
          break;
        case 3:
          patch.expires_at_micros = kT0;  // already expired
          break;
        default:
          ASSERT_OK(store->DeleteById(id).status());
          continue;
      }
      ASSERT_OK(store->UpdateById(id, patch).status());
    }
    if (round % 2 == 0) ASSERT_OK(store->Flush().status());
    if (round == 1 || (text_index && round == 2)) {
      ASSERT_OK(store->Flush().status());
      ASSERT_OK(store->base().Cleanup().status());
    }
    if (text_index && round == 3) {
      // The rounds left the base one indexed fragment and one too small for an index.
      ASSERT_OK_AND_ASSIGN(table::TableDescription description,
                           store->base().base_table()->Describe());
      size_t segments = 0;
      for (const table::IndexInfo& index : description.indexes) {
        if (index.name == kTextIndexName) segments += index.segments.size();
      }
      EXPECT_EQ(segments, 1u);
      EXPECT_EQ(description.fragments.size(), 2u);
    }
    std::vector<RecordFilters> filters(1);
    for (const char* json : {R"({"bot_id":"x"})", R"({"n":1})", R"({"s":"ab"})",
                             R"({"tags":{"contains":"x"}})", R"({"s":"ab","bot_id":"y"})"}) {
      ASSERT_OK_AND_ASSIGN(RecordFilters f, RecordFilters::FromJson(json));
      filters.push_back(std::move(f));
    }
    LifecycleQueryOptions retired;
    retired.include_retired = true;
    retired.include_expired = true;
    for (int shape = 0; shape < 3; ++shape) {  // text and vector, text alone, vector alone
      RetrieveOptions request;
      if (shape != 2) request.text = words[rng() % words.size()] + " " + random_text();
      if (shape != 1) request.vector = rng() % 2 == 0 ? random_vector() : seen[rng() % seen.size()];
      for (int64_t limit : {3, 1000}) {
        request.limit = limit;
        for (const RecordFilters& f : filters) {
          request.filters = f;
          for (const LifecycleQueryOptions& lifecycle : {LifecycleQueryOptions(), retired}) {
            request.lifecycle = lifecycle;
            for (TextScoring scoring : {TextScoring::kBm25, TextScoring::kOverlap}) {
              request.text_scoring = scoring;
              SCOPED_TRACE(fmt::format("shape {} limit {} filter {} retired {} overlap {}", shape,
                                       limit, &f - filters.data(), lifecycle.include_retired,
                                       scoring == TextScoring::kOverlap));
              ASSERT_OK_AND_ASSIGN(std::vector<RetrieveResult> got, store->Retrieve(request));
              // No writer runs alongside: the scan's figures are the records' own.
              ASSERT_EQ(store->retrieve_rereads(), 0);
              const auto want = RetrieveBruteForce(*store, request);
              ASSERT_EQ(got.size(), want.size());
              for (size_t i = 0; i < got.size(); ++i) {
                const Fused& w = want[i].first;
                SCOPED_TRACE(w.id);
                EXPECT_TRUE(SameRecord(got[i].record, want[i].second));
                EXPECT_NEAR(got[i].score, w.score, 1e-12);
                ASSERT_EQ(got[i].vector_distance.has_value(), w.distance.has_value());
                if (w.distance && std::isnan(*w.distance)) {
                  EXPECT_TRUE(std::isnan(*got[i].vector_distance));
                } else if (w.distance) {
                  EXPECT_NEAR(*got[i].vector_distance, *w.distance, 1e-9);
                }
                ASSERT_EQ(got[i].text_score.has_value(), w.text.has_value());
                if (w.text) {
                  EXPECT_NEAR(*got[i].text_score, *w.text, 1e-9);
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(ContextSearchTest, RetrieveEqualsBruteForceAcrossBaseGenerationsAndMemtable) {
  RetrieveEqualsBruteForce(false);
}

TEST_F(ContextSearchTest, RetrieveThroughTextIndexesEqualsBruteForce) {
  RetrieveEqualsBruteForce(true);
}

TEST_F(ContextSearchTest, RetrieveChannelsAloneAndItsErrors) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(2, DistanceMetric::kCosine));
  ASSERT_OK(
      store
          ->Add({Rec("a", std::vector<float>{1, 0}, "alpha beta"),
                 Rec("b", std::vector<float>{0, 1}, "beta gamma"), Rec("c", std::nullopt, "gamma")})
          .status());
  EXPECT_EQ(store->Retrieve({}).status().message(), "retrieve requires text or vector");
  RetrieveOptions bad;
  bad.vector = std::vector<float>{1};
  EXPECT_EQ(store->Retrieve(bad).status().message(),
            "query length 1 does not match embedding dimension 2");
  // Text alone, overlap: "beta gamma" matches b fully, a and c half.
  RetrieveOptions text;
  text.text = "beta gamma";
  text.text_scoring = TextScoring::kOverlap;
  ASSERT_OK_AND_ASSIGN(auto got, store->Retrieve(text));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].record.id, "b");
  EXPECT_DOUBLE_EQ(*got[0].text_score, 1.0);
  EXPECT_EQ(got[1].record.id, "a");  // a tie at 0.5, broken by id
  EXPECT_EQ(got[2].record.id, "c");
  EXPECT_EQ(got[2].matched_channels, (std::vector<std::string>{"text"}));
  // A query without tokens has no text channel: nothing matches.
  text.text = " ... ";
  ASSERT_OK_AND_ASSIGN(got, store->Retrieve(text));
  EXPECT_TRUE(got.empty());
  // Vector alone: records without an embedding do not show.
  RetrieveOptions vector;
  vector.vector = std::vector<float>{1, 0.1F};
  ASSERT_OK_AND_ASSIGN(got, store->Retrieve(vector));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].record.id, "a");
  EXPECT_FALSE(got[0].text_score.has_value());
}

}  // namespace
}  // namespace strata::store
