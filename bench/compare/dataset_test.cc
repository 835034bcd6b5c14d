// The compare suite's data set: the same seed gives the same data, its shape is what
// dataset.h documents, and the files the Node peers read are valid Arrow IPC and JSON.
#include "dataset.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "answers.h"
#include "report.h"
#include "strata/ipc.h"
#include "strata/record_batch.h"

namespace strata::bench::compare {
namespace {

DatasetSizes Small() {
  DatasetSizes s;
  s.rows = 2000;
  s.lookups = 300;
  s.get_many_batches = 3;
  s.get_many_ids = 50;
  s.puts_per_writer = 10;
  s.vectors = 400;
  s.vector_dim = 16;
  s.vector_queries = 3;
  s.hybrid_records = 3000;
  s.hybrid_dim = 8;
  s.hybrid_queries = 12;
  return s;
}

bool IsHexId(const std::string& id) {
  if (id.size() != 16) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(CompareDatasetTest, SameSeedGivesSameDataAndOtherSeedDiffers) {
  const Dataset a = GenerateDataset(Small());
  const Dataset b = GenerateDataset(Small());
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    ASSERT_EQ(a.rows[i].id, b.rows[i].id);
    ASSERT_EQ(a.rows[i].text, b.rows[i].text);
    ASSERT_EQ(a.rows[i].output_tokens, b.rows[i].output_tokens);
  }
  EXPECT_EQ(a.lookup_ids, b.lookup_ids);
  EXPECT_EQ(a.get_many_ids, b.get_many_ids);
  EXPECT_EQ(a.vectors, b.vectors);
  EXPECT_EQ(a.hybrid.texts, b.hybrid.texts);
  EXPECT_EQ(a.hybrid.vectors, b.hybrid.vectors);
  EXPECT_EQ(a.hybrid.query_texts, b.hybrid.query_texts);
  EXPECT_EQ(ExpectedScan(a), ExpectedScan(b));
  DatasetSizes other = Small();
  other.seed += 1;
  EXPECT_NE(GenerateDataset(other).rows[0].id, a.rows[0].id);
}

TEST(CompareDatasetTest, ShapeIsAsDocumented) {
  const DatasetSizes s = Small();
  const Dataset d = GenerateDataset(s);
  ASSERT_EQ(static_cast<int64_t>(d.rows.size()), s.rows);
  std::unordered_set<std::string> ids;
  for (const BenchRow& r : d.rows) {
    EXPECT_TRUE(IsHexId(r.id)) << r.id;
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id " << r.id;
    EXPECT_TRUE(r.rollout_id.starts_with("roll-")) << r.rollout_id;
    EXPECT_EQ(r.policy_version.size(), 2u);
    EXPECT_TRUE(r.role == "assistant" || r.role == "tool" || r.role == "grade") << r.role;
    const float k = r.reward * 1024;
    EXPECT_EQ(k, static_cast<float>(static_cast<int>(k)));
    EXPECT_GE(r.input_tokens.size(), 16u);
    EXPECT_LE(r.output_tokens.size(), 64u);
    EXPECT_GE(r.text.size(), 1024u);
    EXPECT_LE(r.text.size(), 2048u);
  }
  int misses = 0;
  for (const std::string& id : d.lookup_ids) {
    EXPECT_TRUE(IsHexId(id)) << id;
    misses += ids.count(id) == 0;
  }
  EXPECT_EQ(misses, s.lookups / 10);
  ASSERT_EQ(static_cast<int64_t>(d.get_many_ids.size()), s.get_many_batches);
  for (const auto& batch : d.get_many_ids) {
    EXPECT_EQ(static_cast<int64_t>(batch.size()), s.get_many_ids);
    EXPECT_EQ(std::set<std::string>(batch.begin(), batch.end()).size(), batch.size());
    for (const std::string& id : batch) EXPECT_EQ(ids.count(id), 1u) << id;
  }
  EXPECT_EQ(static_cast<int64_t>(d.overwrite_rows.size()), s.rows / 10);
  std::set<std::string> overwritten;
  for (const BenchRow& r : d.overwrite_rows) {
    EXPECT_EQ(ids.count(r.id), 1u);
    EXPECT_TRUE(overwritten.insert(r.id).second);
    EXPECT_GE(r.sequence_order, 1'000'000);
  }
  EXPECT_EQ(static_cast<int64_t>(d.put_rows.size()), s.puts_per_writer * 8);
  for (const BenchRow& r : d.put_rows) EXPECT_TRUE(r.id.starts_with("put-")) << r.id;
  EXPECT_EQ(d.vectors.size(), static_cast<size_t>(s.vectors * s.vector_dim));
  EXPECT_EQ(d.vector_ids[7], "vec-0000007");
  EXPECT_EQ(d.scan.Predicate(), "policy_version = 'v3' AND reward > 0.5");
  EXPECT_GT(ExpectedScan(d).count, 0);
  // After W6 the same rows match (it keeps the filtered columns) with their new
  // sequence_order; a data set whose overwrites change the filtered columns matches others.
  EXPECT_EQ(ExpectedScan(d, /*overwritten=*/true).count, ExpectedScan(d).count);
  EXPECT_NE(ExpectedScan(d, /*overwritten=*/true).digest, ExpectedScan(d).digest);
  Dataset changed = d;
  for (BenchRow& r : changed.overwrite_rows) r.policy_version = "none";
  const Answer fewer = ExpectedScan(changed, /*overwritten=*/true);
  int64_t dropped = 0;
  std::set<std::string> overwritten_ids;
  for (const BenchRow& r : d.overwrite_rows) overwritten_ids.insert(r.id);
  for (const BenchRow& r : d.rows) {
    dropped += overwritten_ids.count(r.id) != 0 && r.policy_version == d.scan.policy_version &&
               r.reward > d.scan.reward_gt;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(fewer.count, ExpectedScan(d).count - dropped);
  EXPECT_EQ(ExpectedLookup(d).count, s.lookups - s.lookups / 10);
  EXPECT_EQ(ExpectedVector(d).count, s.vector_queries);
}

TEST(CompareDatasetTest, FilesAreReadableArrowAndJson) {
  const Dataset d = GenerateDataset(Small());
  const char* base = ::getenv("STRATA_TEST_TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(base ? base : ::testing::TempDir()) / "compare-dataset-files";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteDatasetFiles(d, dir.string()).ok());

  std::ifstream in(dir / "rows.arrows", std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string stream = bytes.str();
  auto batches = ipc::ReadStream(Buffer::Copy(stream));
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  int64_t rows = 0;
  for (const RecordBatch& b : *batches) {
    EXPECT_LE(b.num_rows(), d.sizes.batch_rows);
    rows += b.num_rows();
    EXPECT_EQ(b.schema()->ToString(), (*batches)[0].schema()->ToString());
  }
  EXPECT_EQ(rows, static_cast<int64_t>(d.rows.size()));
  EXPECT_EQ((*batches)[0].num_columns(), 9);

  std::ifstream params_in(dir / "params.json");
  const nlohmann::json params = nlohmann::json::parse(params_in);
  EXPECT_EQ(params["sizes"]["rows"], d.sizes.rows);
  EXPECT_EQ(params["sizes"]["put_writers"], nlohmann::json({1, 8}));
  EXPECT_EQ(params["scan"]["predicate"], d.scan.Predicate());
  EXPECT_EQ(params["lookup_ids"].size(), d.lookup_ids.size());
  EXPECT_EQ(params["get_many_ids"].size(), d.get_many_ids.size());
  EXPECT_EQ(params["overwrite_rows"], d.overwrite_rows.size());
  EXPECT_EQ(params["sizes"]["sql_runs"], d.sizes.sql_runs);
  EXPECT_EQ(params["sql"]["queries"].get<std::vector<std::string>>(), d.sql.queries);
  EXPECT_EQ(params["sql"]["table_placeholder"], "{table}");
  EXPECT_EQ(std::filesystem::file_size(dir / "vectors.f32"), d.vectors.size() * sizeof(float));
  EXPECT_EQ(params["sizes"]["hybrid_records"], d.sizes.hybrid_records);
  EXPECT_EQ(std::filesystem::file_size(dir / "hybrid_vectors.f32"),
            d.hybrid.vectors.size() * sizeof(float));
  EXPECT_EQ(std::filesystem::file_size(dir / "hybrid_queries.f32"),
            d.hybrid.query_vectors.size() * sizeof(float));
  std::ifstream hybrid_in(dir / "hybrid.json");
  const nlohmann::json hybrid = nlohmann::json::parse(hybrid_in);
  EXPECT_EQ(hybrid["texts"].get<std::vector<std::string>>(), d.hybrid.texts);
  EXPECT_EQ(hybrid["topics"][5], HybridTopicName(d.hybrid.topics[5]));
  EXPECT_EQ(hybrid["query_topics"][2], HybridTopicName(d.hybrid.query_topics[2]));
  std::filesystem::remove_all(dir);
}

// W9's records: ids, 8-24 words of the vocabulary with Zipf frequencies (the most common
// word in most texts, most words rare), topics in range; each query's text holds its target's
// rarest word, so the reference ranks the target first (nearest vector, best text rank).
TEST(CompareDatasetTest, HybridRecordsAndQueriesHaveTheirShape) {
  const DatasetSizes s = Small();
  const Dataset d = GenerateDataset(s);
  const HybridData& h = d.hybrid;
  ASSERT_EQ(static_cast<int64_t>(h.ids.size()), s.hybrid_records);
  EXPECT_EQ(h.ids[7], "doc-0000007");
  ASSERT_EQ(h.texts.size(), h.ids.size());
  ASSERT_EQ(h.topics.size(), h.ids.size());
  EXPECT_EQ(h.vectors.size(), h.ids.size() * static_cast<size_t>(s.hybrid_dim));
  std::map<std::string, int> frequency;
  for (size_t i = 0; i < h.texts.size(); ++i) {
    std::istringstream words(h.texts[i]);
    int n = 0;
    for (std::string w; words >> w; ++n) {
      EXPECT_EQ(w.size(), 6u) << w;
      ++frequency[w];
    }
    EXPECT_GE(n, 8);
    EXPECT_LE(n, 24);
    EXPECT_GE(h.topics[i], 0);
    EXPECT_LT(h.topics[i], s.hybrid_topics);
  }
  int most = 0;
  for (const auto& [word, n] : frequency) most = std::max(most, n);
  EXPECT_GT(most, static_cast<int>(h.ids.size()) / 2);  // the top word is in most texts
  EXPECT_GT(frequency.size(), 1000u);                   // and the tail is long
  ASSERT_EQ(static_cast<int64_t>(h.query_texts.size()), s.hybrid_queries);
  ASSERT_EQ(h.query_vectors.size(), h.query_texts.size() * static_cast<size_t>(s.hybrid_dim));
  const std::vector<std::vector<std::string>> reference = ExpectedHybrid(d);
  ASSERT_EQ(reference.size(), h.query_texts.size());
  std::map<std::string, int32_t> topic;
  for (size_t i = 0; i < h.ids.size(); ++i) topic[h.ids[i]] = h.topics[i];
  for (size_t q = 0; q < reference.size(); ++q) {
    EXPECT_EQ(reference[q].size(), static_cast<size_t>(s.top_k));
    for (const std::string& id : reference[q]) EXPECT_EQ(topic[id], h.query_topics[q]) << id;
  }
  // The check: the reference itself has recall 1 and no id outside the filter; a wrong id
  // counts.
  HybridQuality q = CheckHybrid(d, reference, reference);
  EXPECT_EQ(q.queries, s.hybrid_queries);
  EXPECT_DOUBLE_EQ(q.recall, 1.0);
  EXPECT_EQ(q.outside_filter, 0);
  std::vector<std::vector<std::string>> wrong = reference;
  wrong[0][0] = "doc-unknown";
  q = CheckHybrid(d, reference, wrong);
  EXPECT_EQ(q.outside_filter, 1);
  EXPECT_LT(q.recall, 1.0);
}

// W10's queries name their table through the placeholder, and its expected answer is the
// lines engine.h defines: Q1 per (policy_version, role), Q2 per role over reward > 0.5 (0.5
// itself excluded), each in its ORDER BY order.
TEST(CompareDatasetTest, SqlQueriesAndTheirExpectedAnswer) {
  const SqlSpec spec;
  ASSERT_EQ(spec.queries.size(), 2u);
  EXPECT_EQ(spec.Query(0, "rows"),
            "SELECT policy_version, role, count(*) FROM rows GROUP BY policy_version, role "
            "ORDER BY policy_version, role");
  EXPECT_EQ(spec.Query(1, "records").find("{table}"), std::string::npos);
  EXPECT_NE(spec.Query(1, "records").find("FROM records WHERE reward > 0.5"), std::string::npos);

  Dataset d;
  auto row = [](std::string pv, std::string role, float reward, std::string rollout) {
    BenchRow r;
    r.policy_version = std::move(pv);
    r.role = std::move(role);
    r.reward = reward;
    r.rollout_id = std::move(rollout);
    return r;
  };
  d.rows = {row("v1", "tool", 0.75f, "roll-0000002"), row("v0", "grade", 0.25f, "roll-0000001"),
            row("v1", "tool", 0.5f, "roll-0000009"),
            row("v0", "assistant", 0.5009765625f, "roll-0000003"),
            row("v1", "tool", 0.875f, "roll-0000001")};
  const Answer a = ExpectedSql(d);
  EXPECT_EQ(a.count, 5);
  EXPECT_EQ(a.digest, Sha256Hex("q1\tv0\tassistant\t1\n"
                                "q1\tv0\tgrade\t1\n"
                                "q1\tv1\ttool\t3\n"
                                "q2\tassistant\t1\troll-0000003\n"
                                "q2\ttool\t2\troll-0000002\n"));
}

// The W10 answer does not depend on whether W6 ran: its overwrites keep every column the
// queries read.
TEST(CompareDatasetTest, SqlAnswerIsTheSameAfterTheOverwrites) {
  const Dataset d = GenerateDataset(Small());
  Dataset overwritten = d;
  std::unordered_map<std::string, const BenchRow*> by_id;
  for (const BenchRow& r : d.overwrite_rows) by_id[r.id] = &r;
  int replaced = 0;
  for (BenchRow& r : overwritten.rows) {
    auto it = by_id.find(r.id);
    if (it == by_id.end()) continue;
    r = *it->second;
    ++replaced;
  }
  ASSERT_EQ(replaced, static_cast<int>(d.overwrite_rows.size()));
  const Answer before = ExpectedSql(d);
  EXPECT_EQ(before.count, 8 * 3 + 3);  // every (version, role) pair, then every role
  EXPECT_EQ(ExpectedSql(overwritten), before);
}

Outcome Answered(Answer answer, int64_t total_rows = -1) {
  Outcome o;
  o.kind = Outcome::Kind::kOk;
  o.result.answer = std::move(answer);
  o.result.total_rows = total_rows;
  return o;
}

TEST(CompareDatasetTest, JsonLinesCarryEveryValueOfEveryRow) {
  Dataset d = GenerateDataset(Small());
  d.rows[0].text += "\"quoted\" \\ back\tslash\n";  // escapes
  std::string json;
  AppendRowsAsJsonLines(d.rows.data(), d.rows.size(), &json);
  std::istringstream lines(json);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    ASSERT_LT(n, d.rows.size());
    const BenchRow& r = d.rows[n++];
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j.size(), 9u);
    EXPECT_EQ(j["id"], r.id);
    EXPECT_EQ(j["rollout_id"], r.rollout_id);
    EXPECT_EQ(j["policy_version"], r.policy_version);
    EXPECT_EQ(j["role"], r.role);
    EXPECT_EQ(j["sequence_order"], r.sequence_order);
    EXPECT_EQ(j["reward"].get<float>(), r.reward);
    EXPECT_EQ(j["input_tokens"].get<std::vector<int32_t>>(), r.input_tokens);
    EXPECT_EQ(j["output_tokens"].get<std::vector<int32_t>>(), r.output_tokens);
    EXPECT_EQ(j["text"], r.text);
  }
  EXPECT_EQ(n, d.rows.size());
  const nlohmann::json spec = nlohmann::json::parse(BenchSchemaSpecJson());
  ASSERT_EQ(spec["columns"].size(), 9u);
  EXPECT_EQ(spec["columns"][0][0], "id");
  EXPECT_EQ(spec["columns"][8][0], "text");
}

TEST(CompareAnswersTest, DisagreementAndWrongRowCountsAreMismatches) {
  const Dataset d = GenerateDataset(Small());
  RunReport report;
  report.sizes = d.sizes;
  report.engines.resize(3);
  report.engines[0].label = "strata";
  report.engines[1].label = "sqlite";
  report.engines[2].label = "duckdb";
  report.steps = {{Workload::kScan, 0}, {Workload::kOverwrite, 0}};
  report.expected["W3"] = ExpectedScan(d);
  report.expected["W6"] = ExpectedOverwrite(d);
  report.outcomes["W3"] = {Answered(ExpectedScan(d)), Answered(ExpectedScan(d)), Outcome{}};
  report.outcomes["W6"] = {Answered(ExpectedOverwrite(d), d.sizes.rows),
                           Answered(ExpectedOverwrite(d), d.sizes.rows), Outcome{}};
  EXPECT_TRUE(CheckAnswers(&report));

  Answer wrong = ExpectedScan(d);
  wrong.count -= 1;
  report.outcomes["W3"][2] = Answered(wrong);
  EXPECT_FALSE(CheckAnswers(&report));
  ASSERT_EQ(report.checks.size(), 2u);
  EXPECT_EQ(report.checks[0].engines_checked, 3);
  EXPECT_FALSE(report.checks[0].problems.empty());
  EXPECT_TRUE(report.checks[1].problems.empty());

  report.outcomes["W3"][2] = Answered(ExpectedScan(d));
  report.outcomes["W6"][1] = Answered(ExpectedOverwrite(d), d.sizes.rows + 5);  // added rows
  EXPECT_FALSE(CheckAnswers(&report));
  EXPECT_TRUE(report.checks[0].problems.empty());
  EXPECT_FALSE(report.checks[1].problems.empty());

  report.outcomes["W6"][1] = Outcome{};
  report.outcomes["W6"][1].kind = Outcome::Kind::kOk;  // ran, but gave no answer
  EXPECT_FALSE(CheckAnswers(&report));
}

// W10 is checked like W3-W6, under a key of its own ("W10", not W1's "W1").
TEST(CompareAnswersTest, WrongSqlAnswerIsAMismatch) {
  const Dataset d = GenerateDataset(Small());
  EXPECT_EQ((Step{Workload::kSql, 0}).key(), "W10");
  EXPECT_EQ((Step{Workload::kIngest, 0}).key(), "W1");
  RunReport report;
  report.sizes = d.sizes;
  report.engines.resize(2);
  report.engines[0].label = "strata";
  report.engines[1].label = "duckdb";
  report.steps = {{Workload::kIngest, 0}, {Workload::kSql, 0}};
  report.expected["W10"] = ExpectedSql(d);
  report.outcomes["W10"] = {Answered(ExpectedSql(d)), Answered(ExpectedSql(d))};
  EXPECT_TRUE(CheckAnswers(&report));
  ASSERT_EQ(report.checks.size(), 1u);
  EXPECT_EQ(report.checks[0].step, "W10");
  EXPECT_EQ(report.checks[0].engines_checked, 2);

  Answer wrong = ExpectedSql(d);
  wrong.digest = Sha256Hex("q1\tv0\tassistant\t0\n");
  report.outcomes["W10"][1] = Answered(wrong);
  EXPECT_FALSE(CheckAnswers(&report));
  EXPECT_FALSE(report.checks[0].problems.empty());
}

}  // namespace
}  // namespace strata::bench::compare
