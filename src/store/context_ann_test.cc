// ContextStore search through the vector index (context_ann.cc): the index is built after a
// merge, recall@10 against exact search on a fixed seeded data set is at least 0.95 for every
// metric (a quality floor, not a timing), and what the index returns is always right: only
// visible records matching the filters, newest versions over pending rows, deletions and
// supersession respected, and never fewer than `limit` results when that many match.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "store/store_test_util.h"
#include "store/vector_index.h"
#include "strata/context_store.h"
#include "strata/table.h"

namespace strata::store {
namespace {

constexpr int32_t kDim = 32;
constexpr int kRows = 3000;
constexpr int kClusters = 30;

class ContextAnnTest : public testing::StoreFixture {
 protected:
  Result<std::unique_ptr<ContextStore>> Open(DistanceMetric metric) {
    ContextStoreOptions options;
    options.embedding_dim = kDim;
    options.distance_metric = metric;
    options.base.shard_id = "ann";
    options.vector_index.min_fragment_rows = 1000;
    return ContextStore::Open(store_, fmt::format("{}/", DistanceMetricName(metric)),
                              std::move(options));
  }

  // `rows` records around kClusters centres (seeded), bot_id "b<i % 10>", three with "rare".
  std::vector<ContextRecord> Records(int rows = kRows) {
    std::mt19937_64 rng(20261204);
    std::normal_distribution<float> noise(0, 0.15f);
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<std::vector<float>> centres(kClusters, std::vector<float>(kDim));
    for (auto& c : centres) {
      for (float& x : c) x = uniform(rng);
    }
    std::vector<ContextRecord> out;
    for (int i = 0; i < rows; ++i) {
      ContextRecord r;
      r.id = fmt::format("r{:05}", i);
      r.run_id = "run";
      r.created_at_micros = 1'700'000'000'000'000 + i;
      r.bot_id = i < 3 ? "rare" : fmt::format("b{}", i % 10);
      std::vector<float> v = centres[static_cast<size_t>(i % kClusters)];
      for (float& x : v) x += noise(rng);
      r.embedding = std::move(v);
      out.push_back(std::move(r));
    }
    return out;
  }

  std::vector<std::vector<float>> Queries(int n) {
    std::mt19937_64 rng(7);
    std::normal_distribution<float> noise(0, 0.3f);
    std::vector<ContextRecord> records = Records();
    std::vector<std::vector<float>> out;
    for (int q = 0; q < n; ++q) {
      std::vector<float> v = *records[static_cast<size_t>(q * 97 % kRows)].embedding;
      for (float& x : v) x += noise(rng);
      out.push_back(std::move(v));
    }
    return out;
  }

  static std::vector<std::string> Ids(const std::vector<SearchResult>& results) {
    std::vector<std::string> out;
    out.reserve(results.size());
    for (const SearchResult& r : results) out.push_back(r.record.id);
    return out;
  }

  // Loads the records, merges them into the base (which builds the index) and checks that
  // the base has one index segment.
  void Load(ContextStore& store, int rows = kRows) {
    ASSERT_OK(store.Add(Records(rows)).status());
    ASSERT_OK(store.base().Cleanup().status());
    ASSERT_OK_AND_ASSIGN(table::TableDescription description,
                         store.base().base_table()->Describe());
    int segments = 0;
    for (const table::IndexInfo& index : description.indexes) {
      if (index.name == kVectorIndexName) segments += static_cast<int>(index.segments.size());
    }
    ASSERT_EQ(segments, 1);
  }
};

TEST_F(ContextAnnTest, RecallAtTenIsAtLeastNinetyFivePercentForEveryMetric) {
  for (DistanceMetric metric :
       {DistanceMetric::kL2, DistanceMetric::kCosine, DistanceMetric::kDot}) {
    SCOPED_TRACE(DistanceMetricName(metric));
    ASSERT_OK_AND_ASSIGN(auto store, Open(metric));
    Load(*store);
    int found = 0;
    int wanted = 0;
    for (const std::vector<float>& query : Queries(40)) {
      ASSERT_OK_AND_ASSIGN(auto exact, store->Search(query, 10, {}, {}, SearchMode::kExact));
      ASSERT_OK_AND_ASSIGN(auto approximate, store->Search(query, 10));
      ASSERT_EQ(approximate.size(), 10u);
      std::set<std::string> truth;
      for (const SearchResult& r : exact) truth.insert(r.record.id);
      for (const SearchResult& r : approximate) {
        found += truth.count(r.record.id) > 0 ? 1 : 0;
        // Reported distances are the exact ones.
        EXPECT_EQ(r.distance, Distance(metric, query, *r.record.embedding));
      }
      wanted += static_cast<int>(exact.size());
      EXPECT_TRUE(std::is_sorted(
          approximate.begin(), approximate.end(),
          [](const SearchResult& a, const SearchResult& b) { return a.distance < b.distance; }));
    }
    const double recall = static_cast<double>(found) / wanted;
    EXPECT_GE(recall, 0.95) << found << " of " << wanted;
  }
}

// Every result is a visible record matching the filter, as exact search defines it, and the
// count is min(limit, matches), through pending deletes, updates and adds, after a merge of
// them, and on a fork.
TEST_F(ContextAnnTest, ResultsRespectPendingRowsVisibilityAndFilters) {
  ASSERT_OK_AND_ASSIGN(auto store, Open(DistanceMetric::kL2));
  constexpr int kSmall = 1200;  // just above min_fragment_rows: the checks read every row
  Load(*store, kSmall);
  const std::vector<std::vector<float>> queries = Queries(6);
  // Pending changes over the indexed base: deletes, updates (superseding), new records.
  for (int i = 0; i < kSmall; i += 120) {
    ASSERT_OK(store->DeleteById(fmt::format("r{:05}", i)).status());
  }
  ContextPatch patch;
  patch.bot_id = "updated";
  for (int i = 1; i < kSmall; i += 119) {
    ASSERT_OK(store->UpdateById(fmt::format("r{:05}", i), patch).status());
  }
  std::vector<ContextRecord> added;
  for (int i = 0; i < 20; ++i) {
    ContextRecord r;
    r.id = fmt::format("new{:02}", i);
    r.bot_id = "b1";
    r.embedding = queries[static_cast<size_t>(i % 6)];
    added.push_back(std::move(r));
  }
  ASSERT_OK(store->Add(added).status());

  auto check = [&](ContextStore& s, const std::string& stage) {
    SCOPED_TRACE(stage);
    for (const RecordFilters& filters :
         {RecordFilters{}, RecordFilters{.bot_id = "b1"}, RecordFilters{.bot_id = "rare"},
          RecordFilters{.bot_id = "updated"}}) {
      ASSERT_OK_AND_ASSIGN(auto visible, s.ListFiltered(filters, std::nullopt, 0));
      std::set<std::string> allowed;
      for (const ContextRecord& r : visible) allowed.insert(r.id);
      for (size_t q = 0; q < queries.size(); ++q) {
        ASSERT_OK_AND_ASSIGN(auto exact, s.Search(queries[q], 10, filters, {}, SearchMode::kExact));
        ASSERT_OK_AND_ASSIGN(auto approximate, s.Search(queries[q], 10, filters));
        ASSERT_EQ(approximate.size(), std::min<size_t>(10, allowed.size()));
        for (const SearchResult& r : approximate) {
          ASSERT_TRUE(allowed.count(r.record.id) > 0) << r.record.id;
        }
        // The exact nearest record, a pending one for the added vectors, is found.
        ASSERT_FALSE(exact.empty());
        EXPECT_EQ(approximate[0].record.id, exact[0].record.id) << "query " << q;
      }
    }
  };
  check(*store, "pending");
  ASSERT_OK(store->base().Cleanup().status());
  ASSERT_OK(store->base().Compact().status());
  check(*store, "merged and compacted");
  ASSERT_OK_AND_ASSIGN(auto fork, store->Fork("ann-branch"));
  check(*fork, "fork");
  // Verify checks the index files (present, recorded size) with every other file.
  ASSERT_OK_AND_ASSIGN(table::VerifyReport report,
                       VerifyStore(store_, "l2/", {.all_versions = true}));
  EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
}

TEST_F(ContextAnnTest, IndexFilesRoundTripAndRefuseAnotherShape) {
  std::vector<float> vectors(50 * 4);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& x : vectors) x = uniform(rng);
  std::vector<uint32_t> offsets;
  for (uint32_t i = 0; i < 50; ++i) offsets.push_back(i * 2);
  ASSERT_OK_AND_ASSIGN(
      auto built, FragmentVectorIndex::Build(DistanceMetric::kL2, 4, vectors.data(), offsets, {}));
  ASSERT_OK_AND_ASSIGN(std::string bytes, built->Serialize());
  ASSERT_OK_AND_ASSIGN(auto back,
                       FragmentVectorIndex::Deserialize(bytes, DistanceMetric::kL2, 4, 16));
  EXPECT_EQ(back->size(), 50u);
  EXPECT_EQ(back->Search(vectors.data() + 8, 1), std::vector<uint32_t>{4});
  for (uint32_t i = 0; i < 50; ++i) {
    ASSERT_NE(back->Vector(i * 2), nullptr);
    EXPECT_EQ(std::vector<float>(back->Vector(i * 2), back->Vector(i * 2) + 4),
              std::vector<float>(vectors.begin() + i * 4, vectors.begin() + i * 4 + 4));
    EXPECT_EQ(back->Vector(i * 2 + 1), nullptr);
  }
  EXPECT_EQ(back->Search(vectors.data(), 80).size(), 50u);
  EXPECT_TRUE(FragmentVectorIndex::Deserialize(bytes, DistanceMetric::kCosine, 4, 16)
                  .status()
                  .IsCorruption());
  EXPECT_TRUE(
      FragmentVectorIndex::Deserialize(bytes, DistanceMetric::kL2, 5, 16).status().IsCorruption());
  std::string damaged = bytes;
  damaged[damaged.size() / 2] = static_cast<char>(~damaged[damaged.size() / 2]);
  EXPECT_TRUE(FragmentVectorIndex::Deserialize(damaged, DistanceMetric::kL2, 4, 16)
                  .status()
                  .IsCorruption());
}

// A search probes more lists while those it probed hold fewer rows than it was asked for.
TEST_F(ContextAnnTest, SearchProbesMoreListsUntilItHasTheRowsAskedFor) {
  constexpr int kVectors = 4000;
  std::vector<float> vectors(kVectors * 4);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& x : vectors) x = uniform(rng);
  std::vector<uint32_t> offsets(kVectors);
  for (uint32_t i = 0; i < kVectors; ++i) offsets[i] = i;
  VectorIndexOptions options;
  options.probes = 1;
  ASSERT_OK_AND_ASSIGN(auto index, FragmentVectorIndex::Build(DistanceMetric::kL2, 4,
                                                              vectors.data(), offsets, options));
  for (size_t k : {1u, 10u, 500u, 4000u}) {
    const std::vector<uint32_t> found = index->Search(vectors.data() + 40, k);
    EXPECT_EQ(found.size(), k);
    EXPECT_EQ(std::set<uint32_t>(found.begin(), found.end()).size(), k);
    EXPECT_EQ(found.front(), 10u);  // the query is row 10's own vector
  }
}

}  // namespace
}  // namespace strata::store
