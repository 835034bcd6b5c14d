// The compare suite's deterministic data set: rollout-like rows, the ids each read workload
// asks for, the rows that overwrite 10% of the keys, single-row puts, float32 vectors and
// the hybrid-retrieval records (text + embedding + topic) with their queries.
// Every engine gets the same data from the same seed; Node peers read the files that
// WriteDatasetFiles puts beside it (docs in bench/compare/README.md).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "strata/record_batch.h"
#include "strata/status.h"

namespace strata::bench::compare {

struct BenchRow {
  std::string id;              // 16 lowercase hex digits, random order
  std::string rollout_id;      // "roll-%07d"; ~8 rows per rollout
  std::string policy_version;  // "v0".."v7"
  std::string role;            // "assistant", "tool", "grade"
  int32_t sequence_order = 0;
  float reward = 0;  // k / 1024 for an integer k in [0, 1024): exact in float and double
  std::vector<int32_t> input_tokens;   // 16..64 tokens
  std::vector<int32_t> output_tokens;  // 16..64 tokens
  std::string text;                    // 1..2 KiB of pseudo-English words

  // The bytes a row carries (strings + 4 per int/float/token): the numerator of every MB/s.
  int64_t LogicalBytes() const;
};

struct DatasetSizes {
  int64_t rows = 1'000'000;
  int64_t batch_rows = 256;
  int64_t lookups = 10'000;         // W4, 10% of them missing ids
  int64_t get_many_batches = 100;   // W5
  int64_t get_many_ids = 512;       //     ids per batch (all present)
  double overwrite_fraction = 0.1;  // W6
  int64_t puts_per_writer = 500;    // W2, each writer's own rows
  // W2: a writer that has not made its puts after this long stops; the puts it made count
  // (LanceDB's concurrent adds run at a few per second and would otherwise take minutes).
  double puts_seconds = 20;
  std::vector<int> put_writers = {1, 8};
  int64_t vectors = 100'000;  // W8
  int vector_dim = 1536;
  int vector_queries = 10;
  int top_k = 10;  // W8 and W9
  // W9: records of a short text, an embedding and a topic (the filter), and hybrid queries.
  // 384 dimensions (a small sentence-embedding model's) keep the load of 100k records short.
  int64_t hybrid_records = 100'000;
  int hybrid_dim = 384;
  int hybrid_queries = 100;  // enough for a p99 that is not just the maximum
  int hybrid_topics = 10;
  int sql_runs = 3;  // W10: runs of each query, each timed (p50 over runs)
  uint64_t seed = 20261130;
};

// Every field of `sizes` as a JSON object keyed by field name: params.json's "sizes" and the
// --json report's "dataset" both start from it.
nlohmann::json SizesJson(const DatasetSizes& sizes);

struct ScanSpec {  // W3
  std::string policy_version = "v3";
  float reward_gt = 0.5f;
  std::vector<std::string> columns = {"id", "sequence_order", "reward"};
  // As an SQL / strata expression: policy_version = 'v3' AND reward > 0.5
  std::string Predicate() const;
};

// W10: GROUP BY queries over W1's rows, the same text for every engine but the table's name,
// written as kTablePlaceholder (strata's SQL reads `records`, SQLite's and DuckDB's table is
// `rows`). They read policy_version, role, reward and rollout_id only: W6 leaves those as
// they were. reward is k / 1024, so `reward > 0.5` is exact in float32 and double alike.
struct SqlSpec {
  static constexpr std::string_view kTablePlaceholder = "{table}";
  std::vector<std::string> queries = {
      "SELECT policy_version, role, count(*) FROM {table} GROUP BY policy_version, role "
      "ORDER BY policy_version, role",
      "SELECT role, count(*), max(rollout_id) FROM {table} WHERE reward > 0.5 GROUP BY role "
      "ORDER BY role"};
  // queries[q] with every kTablePlaceholder replaced by `table`.
  std::string Query(size_t q, std::string_view table) const;
};

// W9's records and queries. Texts are 8..24 words drawn from a vocabulary of kHybridWords
// synthetic lowercase ASCII words with Zipf (s = 1) frequencies, so common words are in most
// texts and rare ones in a few, as BM25 expects; embeddings are uniform in [-1, 1)^dim. Query
// q is built around a random target record: its topic is the filter, its vector is the
// target's plus uniform noise of scale 0.5 (the target is by far its nearest record), its
// text the target's rarest word plus 1-2 words drawn from the Zipf distribution.
struct HybridData {
  std::vector<std::string> ids;    // "doc-%07d"
  std::vector<std::string> texts;  // words separated by single spaces
  std::vector<int32_t> topics;     // in [0, hybrid_topics); HybridTopicName
  std::vector<float> vectors;      // row-major, ids x hybrid_dim
  std::vector<std::string> query_texts;
  std::vector<int32_t> query_topics;  // the filter: topic = HybridTopicName(query_topics[q])
  std::vector<float> query_vectors;   // hybrid_queries x hybrid_dim
};
inline constexpr int kHybridWords = 4096;
std::string HybridTopicName(int32_t topic);  // "topic-3"

struct Dataset {
  DatasetSizes sizes;
  std::vector<BenchRow> rows;           // ingest order; batch b = rows[b*batch_rows, ...)
  std::vector<std::string> lookup_ids;  // W4, request order
  std::vector<std::vector<std::string>> get_many_ids;  // W5
  // W6: same ids as existing rows (the first overwrite_fraction of a shuffled order) with
  // sequence_order + 1'000'000 and new text; readers must see these values.
  std::vector<BenchRow> overwrite_rows;
  // W2: rows for writer w of a run with N writers are put_rows[w * puts_per_writer, ...);
  // ids start with "put-" so they never collide with `rows`. Each run uses its own table.
  std::vector<BenchRow> put_rows;
  std::vector<std::string> vector_ids;  // W8: "vec-%07d"
  std::vector<float> vectors;           // row-major, vectors x vector_dim
  std::vector<float> queries;           // vector_queries x vector_dim
  HybridData hybrid;                    // W9
  ScanSpec scan;
  SqlSpec sql;  // W10

  int64_t batch_count() const;
  int64_t LogicalBytes() const;  // of `rows`
};

// rows[0, n) as one batch of `schema`: the 9 columns of BenchRow in its order (utf8, int32,
// float32 and list<int32> columns; nullability as the schema says).
Result<RecordBatch> EncodeRows(const SchemaPtr& schema, const BenchRow* rows, size_t n);

// rows[0, n) as JSON Lines, one object per row with the 9 columns of BenchRow by name
// (reward as its exact decimal, tokens as arrays of integers) appended to *out: what a user
// of a generic store sends (strata-generic's W1, the codec benchmark). Written here, apart
// from the codec under test.
void AppendRowsAsJsonLines(const BenchRow* rows, size_t n, std::string* out);
// The suite's schema as a generic store's SchemaSpec JSON (include/strata/generic_store.h):
// the columns of BenchRow with the types EncodeRows writes, id not nullable.
std::string BenchSchemaSpecJson();

// Generates everything from sizes.seed (the same sizes and seed give identical data).
Dataset GenerateDataset(const DatasetSizes& sizes);

// Writes the files Node peers read into `dir` (created): rows.arrows, overwrite.arrows,
// puts.arrows (Arrow IPC streams, uncompressed, batches of batch_rows; columns as BenchRow,
// reward float32, tokens list<int32>), vectors.f32 and queries.f32 (raw little-endian
// float32, row-major), vector_ids.json, hybrid_vectors.f32 and hybrid_queries.f32 (W9, as
// the W8 files), hybrid.json (W9: ids, texts, topic names, query_texts, query_topics as
// names), and params.json (sizes, scan spec, lookup_ids, get_many_ids, expected answer
// counts, and "sql": {"queries": [...], "table_placeholder": "{table}"} for W10).
Status WriteDatasetFiles(const Dataset& data, const std::string& dir);

}  // namespace strata::bench::compare
