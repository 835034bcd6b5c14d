// The compare suite's deterministic data set (dataset.h) and the files the Node peers read.
// Randomness is our own splitmix64-seeded xoshiro256** so the same seed gives the same bytes
// with any standard library (std:: distributions differ between implementations).
#include "dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "strata/builder.h"
#include "strata/ipc.h"
#include "strata/record_batch.h"
#include "strata/type.h"

namespace strata::bench::compare {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : s_) word = SplitMix64(&seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) up to a modulo bias far below anything measured here. n > 0.
  uint64_t Below(uint64_t n) { return Next() % n; }
  int64_t Between(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo + 1)));
  }
  // Uniform in [-1, 1), exactly representable in float (24 random bits).
  float Symmetric() { return static_cast<float>(Next() >> 40) * 0x1p-23f - 1.0f; }
  // Uniform in [0, 1) (53 random bits).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1p-53; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

template <typename T>
void Shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
}

// Words of agent transcripts, weighted by repetition so the text has a skewed word
// distribution (and compresses) like real English.
constexpr const char* kWords[] = {
    "the",     "the",      "the",      "the",     "a",        "a",         "to",       "to",
    "of",      "of",       "and",      "and",     "is",       "in",        "in",       "it",
    "that",    "for",      "on",       "with",    "as",       "this",      "we",       "be",
    "was",     "not",      "you",      "are",     "by",       "at",        "from",     "or",
    "an",      "can",      "if",       "then",    "so",       "will",      "have",     "has",
    "but",     "all",      "one",      "two",     "three",    "first",     "next",     "value",
    "result",  "answer",   "question", "problem", "step",     "steps",     "function", "call",
    "called",  "tool",     "search",   "query",   "output",   "input",     "file",     "line",
    "code",    "test",     "tests",    "passed",  "failed",   "error",     "retry",    "return",
    "returns", "state",    "model",    "agent",   "user",     "asked",     "plan",     "check",
    "checked", "reward",   "correct",  "wrong",   "because",  "therefore", "however",  "let",
    "us",      "compute",  "number",   "sum",     "total",    "equal",     "equals",   "greater",
    "less",    "than",     "list",     "table",   "column",   "row",       "index",    "key",
    "found",   "missing",  "update",   "write",   "read",     "open",      "close",    "data",
    "set",     "case",     "example",  "simple",  "solution", "approach",  "method",   "variable",
    "loop",    "while",    "each",     "every",   "after",    "before",    "now",      "again",
    "done",    "finally",  "note",     "assume",  "given",    "need",      "needs",    "use",
    "using",   "used",     "time",     "size",    "string",   "integer",   "array",    "object",
    "request", "response", "server",   "client",  "cache",    "memory",    "disk",     "fast",
    "slow",    "small",    "large",    "new",     "old",      "good",      "bad",      "true",
    "false",   "should",   "would",    "could",   "might",    "must",      "may",      "look",
    "looks",   "like",     "see",      "which",   "what",     "when",      "where",    "how",
    "why",     "there",    "here",     "its",     "their",    "our",       "more",     "most",
    "some",    "any",      "no",       "yes",     "only",     "also",      "very",     "into",
    "out",     "up",       "down",     "over",    "under",    "between",   "about",    "i",
    "I",       "think",    "know",     "try",     "trying",   "works",     "work",     "run",
    "running", "print",    "debug",    "fix",     "fixed",    "bug",       "patch",    "review",
    "merge",   "branch",   "commit",   "build",   "config",   "option",    "default",  "path",
    "module",  "import",   "class",    "method",  "type",     "types",     "format",   "parse",
    "parsed",  "token",    "tokens",   "prompt",  "policy",   "score",     "grade",    "graded",
    "final",   "x",        "y",        "n",       "k",        "0",         "1",        "2",
    "10",      "100",      "=",        "+"};
constexpr uint64_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

std::string Text(Rng& rng, size_t bytes) {
  std::string out;
  out.reserve(bytes + 16);
  size_t sentence = 0;
  while (out.size() < bytes) {
    std::string_view word = kWords[rng.Below(kWordCount)];
    out += word;
    if (++sentence >= 6 && rng.Below(8) == 0) {
      out += ". ";
      sentence = 0;
    } else {
      out += ' ';
    }
  }
  out.resize(bytes);  // ASCII only, so any cut is valid UTF-8
  return out;
}

std::string HexId(Rng& rng) { return fmt::format("{:016x}", rng.Next()); }

// ---- W9 vocabulary ---------------------------------------------------------------------

// Word w of the W9 vocabulary: three of 16 syllables, so kHybridWords = 16^3 distinct
// six-letter words that every tokenizer (strata's, LanceDB's "simple") splits alike.
std::string HybridWord(int w) {
  static constexpr const char* kSyllables[16] = {"ka", "lo", "mi", "nu", "re", "sa", "ti", "vo",
                                                 "be", "du", "fe", "go", "hi", "ju", "pe", "zo"};
  return std::string(kSyllables[w % 16]) + kSyllables[(w / 16) % 16] + kSyllables[w / 256 % 16];
}

// Draws word ranks with probability proportional to 1 / (rank + 1): Zipf with s = 1.
class ZipfWords {
 public:
  ZipfWords() : cumulative_(kHybridWords) {
    double total = 0;
    for (int w = 0; w < kHybridWords; ++w) {
      total += 1.0 / (w + 1);
      cumulative_[static_cast<size_t>(w)] = total;
    }
  }
  int Draw(Rng& rng) const {
    const double u = rng.Unit() * cumulative_.back();
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return static_cast<int>(std::min<std::ptrdiff_t>(it - cumulative_.begin(), kHybridWords - 1));
  }

 private:
  std::vector<double> cumulative_;
};

void GenerateHybrid(const DatasetSizes& sizes, Rng& rng, HybridData* out) {
  const ZipfWords zipf;
  const int64_t n = std::max<int64_t>(0, sizes.hybrid_records);
  const size_t dim = static_cast<size_t>(std::max(0, sizes.hybrid_dim));
  const int topics = std::max(1, sizes.hybrid_topics);
  std::vector<std::vector<int>> words(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out->ids.push_back(fmt::format("doc-{:07d}", i));
    std::vector<int>& w = words[static_cast<size_t>(i)];
    w.resize(static_cast<size_t>(rng.Between(8, 24)));
    std::string text;
    for (int& word : w) {
      word = zipf.Draw(rng);
      if (!text.empty()) text += ' ';
      text += HybridWord(word);
    }
    out->texts.push_back(std::move(text));
    out->topics.push_back(static_cast<int32_t>(rng.Below(static_cast<uint64_t>(topics))));
  }
  out->vectors.resize(static_cast<size_t>(n) * dim);
  for (float& x : out->vectors) x = rng.Symmetric();
  if (n == 0) return;
  for (int q = 0; q < sizes.hybrid_queries; ++q) {
    const auto target = static_cast<size_t>(rng.Below(static_cast<uint64_t>(n)));
    out->query_topics.push_back(out->topics[target]);
    const int rarest = *std::max_element(words[target].begin(), words[target].end());
    std::string text = HybridWord(rarest);
    for (int64_t extra = rng.Between(1, 2); extra > 0; --extra) {
      text += ' ' + HybridWord(zipf.Draw(rng));
    }
    out->query_texts.push_back(std::move(text));
    const float* v = &out->vectors[target * dim];
    for (size_t j = 0; j < dim; ++j) out->query_vectors.push_back(v[j] + 0.5f * rng.Symmetric());
  }
}

// A 16-hex-digit id not in `taken`, which it joins.
std::string FreshId(Rng& rng, std::unordered_set<std::string>& taken) {
  for (;;) {
    std::string id = HexId(rng);
    if (taken.insert(id).second) return id;
  }
}

std::vector<int32_t> Tokens(Rng& rng) {
  std::vector<int32_t> tokens(static_cast<size_t>(rng.Between(16, 64)));
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.Below(151'000));
  return tokens;
}

constexpr const char* kRoles[] = {"assistant", "tool", "grade"};

// ---- Arrow IPC files -------------------------------------------------------------------

SchemaPtr RowSchema() {
  auto tokens = list(field("item", int32(), false));
  return schema({field("id", utf8(), false), field("rollout_id", utf8(), false),
                 field("policy_version", utf8(), false), field("role", utf8(), false),
                 field("sequence_order", int32(), false), field("reward", float32(), false),
                 field("input_tokens", tokens, false), field("output_tokens", tokens, false),
                 field("text", utf8(), false)});
}

Status WriteRowsStream(const std::vector<BenchRow>& rows, int64_t batch_rows,
                       const std::string& path) {
  const SchemaPtr s = RowSchema();
  STRATA_ASSIGN_OR_RETURN(auto out, ipc::OpenFileOutputStream(path, {.sync_on_close = false}));
  STRATA_ASSIGN_OR_RETURN(auto writer, ipc::StreamWriter::Make(out.get(), s));
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, batch_rows));
  for (size_t first = 0; first < rows.size(); first += step) {
    const size_t n = std::min(step, rows.size() - first);
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, EncodeRows(s, rows.data() + first, n));
    STRATA_RETURN_IF_ERROR(writer->WriteBatch(batch).WithContext(path));
  }
  STRATA_RETURN_IF_ERROR(writer->Close().WithContext(path));
  return out->Close().WithContext(path);
}

Status WriteBytes(const std::string& path, const void* data, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError(fmt::format("open {}: {}", path, std::strerror(errno)));
  const bool ok = n == 0 || std::fwrite(data, 1, n, f) == n;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return Status::IOError(fmt::format("write {} failed", path));
  return Status::OK();
}

Status WriteJson(const std::string& path, const nlohmann::json& j) {
  const std::string text = j.dump() + "\n";
  return WriteBytes(path, text.data(), text.size());
}

Status WriteFloats(const std::string& path, const std::vector<float>& v) {
  static_assert(std::endian::native == std::endian::little, "raw float files are little-endian");
  return WriteBytes(path, v.data(), v.size() * sizeof(float));
}

}  // namespace

Result<RecordBatch> EncodeRows(const SchemaPtr& s, const BenchRow* rows, size_t n) {
  STRATA_ASSIGN_OR_RETURN(auto builder, RecordBatchBuilder::Make(s));
  auto* id = builder->GetAs<BinaryBuilder>(0);
  auto* rollout = builder->GetAs<BinaryBuilder>(1);
  auto* policy = builder->GetAs<BinaryBuilder>(2);
  auto* role = builder->GetAs<BinaryBuilder>(3);
  auto* seq = builder->GetAs<Int32Builder>(4);
  auto* reward = builder->GetAs<Float32Builder>(5);
  auto* input = builder->GetAs<ListBuilder>(6);
  auto* output = builder->GetAs<ListBuilder>(7);
  auto* text = builder->GetAs<BinaryBuilder>(8);
  for (size_t i = 0; i < n; ++i) {
    const BenchRow& r = rows[i];
    STRATA_RETURN_IF_ERROR(id->Append(r.id));
    STRATA_RETURN_IF_ERROR(rollout->Append(r.rollout_id));
    STRATA_RETURN_IF_ERROR(policy->Append(r.policy_version));
    STRATA_RETURN_IF_ERROR(role->Append(r.role));
    seq->Append(r.sequence_order);
    reward->Append(r.reward);
    input->Append();
    static_cast<Int32Builder*>(input->value_builder())
        ->AppendValues(r.input_tokens.data(), static_cast<int64_t>(r.input_tokens.size()));
    output->Append();
    static_cast<Int32Builder*>(output->value_builder())
        ->AppendValues(r.output_tokens.data(), static_cast<int64_t>(r.output_tokens.size()));
    STRATA_RETURN_IF_ERROR(text->Append(r.text));
  }
  return builder->Finish();
}

int64_t BenchRow::LogicalBytes() const {
  return static_cast<int64_t>(id.size() + rollout_id.size() + policy_version.size() + role.size() +
                              text.size()) +
         4 * (2 + static_cast<int64_t>(input_tokens.size() + output_tokens.size()));
}

namespace {

void AppendJsonString(std::string_view text, std::string* out) {
  *out += '"';
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += c;
    } else if (u < 0x20) {
      *out += fmt::format("\\u{:04x}", u);
    } else {
      *out += c;
    }
  }
  *out += '"';
}

void AppendJsonInts(const std::vector<int32_t>& values, std::string* out) {
  *out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) *out += ',';
    fmt::format_to(std::back_inserter(*out), "{}", values[i]);
  }
  *out += ']';
}

}  // namespace

void AppendRowsAsJsonLines(const BenchRow* rows, size_t n, std::string* out) {
  for (size_t i = 0; i < n; ++i) {
    const BenchRow& r = rows[i];
    *out += "{\"id\":";
    AppendJsonString(r.id, out);
    *out += ",\"rollout_id\":";
    AppendJsonString(r.rollout_id, out);
    *out += ",\"policy_version\":";
    AppendJsonString(r.policy_version, out);
    *out += ",\"role\":";
    AppendJsonString(r.role, out);
    // reward is k / 1024: fmt's shortest round-trip form parses back to the same float.
    fmt::format_to(std::back_inserter(*out), ",\"sequence_order\":{},\"reward\":{}",
                   r.sequence_order, r.reward);
    *out += ",\"input_tokens\":";
    AppendJsonInts(r.input_tokens, out);
    *out += ",\"output_tokens\":";
    AppendJsonInts(r.output_tokens, out);
    *out += ",\"text\":";
    AppendJsonString(r.text, out);
    *out += "}\n";
  }
}

std::string BenchSchemaSpecJson() {
  return R"({"columns": [["id", {"type": "string", "nullable": false}],)"
         R"( ["rollout_id", {"type": "string"}], ["policy_version", {"type": "string"}],)"
         R"( ["role", {"type": "string"}], ["sequence_order", {"type": "int32"}],)"
         R"( ["reward", {"type": "float32"}],)"
         R"( ["input_tokens", {"type": "list", "item": {"type": "int32"}}],)"
         R"( ["output_tokens", {"type": "list", "item": {"type": "int32"}}],)"
         R"( ["text", {"type": "string"}]]})";
}

std::string ScanSpec::Predicate() const {
  return fmt::format("policy_version = '{}' AND reward > {}", policy_version, reward_gt);
}

std::string SqlSpec::Query(size_t q, std::string_view table) const {
  std::string out;
  std::string_view text = queries.at(q);
  for (size_t at; (at = text.find(kTablePlaceholder)) != std::string_view::npos;) {
    out.append(text.substr(0, at));
    out.append(table);
    text.remove_prefix(at + kTablePlaceholder.size());
  }
  out.append(text);
  return out;
}

int64_t Dataset::batch_count() const {
  const int64_t n = static_cast<int64_t>(rows.size());
  return sizes.batch_rows > 0 ? (n + sizes.batch_rows - 1) / sizes.batch_rows : 0;
}

int64_t Dataset::LogicalBytes() const {
  int64_t total = 0;
  for (const BenchRow& r : rows) total += r.LogicalBytes();
  return total;
}

Dataset GenerateDataset(const DatasetSizes& sizes) {
  Dataset d;
  d.sizes = sizes;
  // Separate streams per part, so changing one size leaves the other parts' data unchanged.
  Rng row_rng(sizes.seed);
  Rng read_rng(sizes.seed ^ 0x5eed0001);
  Rng put_rng(sizes.seed ^ 0x5eed0002);
  Rng vec_rng(sizes.seed ^ 0x5eed0003);
  Rng hybrid_rng(sizes.seed ^ 0x5eed0004);

  // Rows: rollouts of 4..12 steps (8 on average), one policy version per rollout.
  const int64_t n = std::max<int64_t>(0, sizes.rows);
  std::unordered_set<std::string> ids;
  ids.reserve(static_cast<size_t>(n + sizes.lookups));
  d.rows.reserve(static_cast<size_t>(n));
  int64_t rollout = 0;
  int64_t left_in_rollout = 0;
  int32_t step = 0;
  std::string policy;
  for (int64_t i = 0; i < n; ++i) {
    if (left_in_rollout == 0) {
      left_in_rollout = row_rng.Between(4, 12);
      step = 0;
      ++rollout;
      policy = fmt::format("v{}", row_rng.Below(8));
    }
    --left_in_rollout;
    BenchRow r;
    r.id = FreshId(row_rng, ids);
    r.rollout_id = fmt::format("roll-{:07d}", rollout - 1);
    r.policy_version = policy;
    r.role = left_in_rollout == 0 ? kRoles[2] : kRoles[step % 2];
    r.sequence_order = step++;
    r.reward = static_cast<float>(row_rng.Below(1024)) / 1024.0f;
    r.input_tokens = Tokens(row_rng);
    r.output_tokens = Tokens(row_rng);
    r.text = Text(row_rng, static_cast<size_t>(row_rng.Between(1024, 2048)));
    d.rows.push_back(std::move(r));
  }

  // W4: exactly 10% misses (fresh ids of the same shape), at random positions.
  if (n > 0) {
    const int64_t misses = sizes.lookups / 10;
    std::vector<char> miss(static_cast<size_t>(std::max<int64_t>(0, sizes.lookups)), 0);
    for (int64_t i = 0; i < misses; ++i) miss[static_cast<size_t>(i)] = 1;
    Shuffle(miss, read_rng);
    for (char m : miss) {
      d.lookup_ids.push_back(m ? FreshId(read_rng, ids) : d.rows[read_rng.Below(n)].id);
    }
    // W5: distinct present ids within each batch.
    const int64_t per_batch = std::min(sizes.get_many_ids, n);
    for (int64_t b = 0; b < sizes.get_many_batches; ++b) {
      std::unordered_set<uint64_t> chosen;
      std::vector<std::string> batch;
      while (static_cast<int64_t>(batch.size()) < per_batch) {
        const uint64_t k = read_rng.Below(n);
        if (chosen.insert(k).second) batch.push_back(d.rows[k].id);
      }
      d.get_many_ids.push_back(std::move(batch));
    }
    // W6: the first overwrite_fraction of a shuffled order.
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    Shuffle(order, read_rng);
    const auto m = static_cast<int64_t>(
        std::llround(static_cast<double>(n) * std::clamp(sizes.overwrite_fraction, 0.0, 1.0)));
    for (int64_t i = 0; i < m; ++i) {
      BenchRow r = d.rows[static_cast<size_t>(order[static_cast<size_t>(i)])];
      r.sequence_order += 1'000'000;
      r.text = Text(read_rng, static_cast<size_t>(read_rng.Between(1024, 2048)));
      d.overwrite_rows.push_back(std::move(r));
    }
  }

  // W2: rows for the largest writer count; "put-" ids never collide with `rows`.
  int max_writers = 0;
  for (int w : sizes.put_writers) max_writers = std::max(max_writers, w);
  const int64_t puts = std::max<int64_t>(0, sizes.puts_per_writer) * max_writers;
  for (int64_t i = 0; i < puts; ++i) {
    BenchRow r;
    r.id = fmt::format("put-{:012x}", put_rng.Next() >> 16);
    r.rollout_id = fmt::format("roll-put-{:07d}", i / 8);
    r.policy_version = fmt::format("v{}", put_rng.Below(8));
    r.role = kRoles[i % 2];
    r.sequence_order = static_cast<int32_t>(i % 8);
    r.reward = static_cast<float>(put_rng.Below(1024)) / 1024.0f;
    r.input_tokens = Tokens(put_rng);
    r.output_tokens = Tokens(put_rng);
    r.text = Text(put_rng, static_cast<size_t>(put_rng.Between(1024, 2048)));
    d.put_rows.push_back(std::move(r));
  }
  {  // 48 random bits per put id can collide: make them unique by index on a collision.
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < d.put_rows.size(); ++i) {
      if (!seen.insert(d.put_rows[i].id).second) {
        d.put_rows[i].id = fmt::format("put-i{:011d}", i);
        seen.insert(d.put_rows[i].id);
      }
    }
  }

  // W8: uniform vectors in [-1, 1)^dim. For each query, top_k vectors are planted at
  // clearly increasing distances (query + noise of scale 0.05 * (rank + 1), squared
  // distances ~ dim/3 * scale^2, far below a random vector's ~ 2 dim/3), so the top-k ids
  // and their order do not depend on float rounding or summation order.
  const int64_t nv = std::max<int64_t>(0, sizes.vectors);
  const size_t dim = static_cast<size_t>(std::max(0, sizes.vector_dim));
  d.vector_ids.reserve(static_cast<size_t>(nv));
  for (int64_t i = 0; i < nv; ++i) d.vector_ids.push_back(fmt::format("vec-{:07d}", i));
  d.vectors.resize(static_cast<size_t>(nv) * dim);
  for (float& x : d.vectors) x = vec_rng.Symmetric();
  d.queries.resize(static_cast<size_t>(std::max(0, sizes.vector_queries)) * dim);
  for (float& x : d.queries) x = vec_rng.Symmetric();
  std::vector<int64_t> slots(static_cast<size_t>(nv));
  for (int64_t i = 0; i < nv; ++i) slots[static_cast<size_t>(i)] = i;
  Shuffle(slots, vec_rng);
  size_t next_slot = 0;
  for (int q = 0; q < sizes.vector_queries; ++q) {
    for (int k = 0; k < sizes.top_k && next_slot < slots.size(); ++k) {
      float* v = &d.vectors[static_cast<size_t>(slots[next_slot++]) * dim];
      const float* query = &d.queries[static_cast<size_t>(q) * dim];
      const float scale = 0.05f * static_cast<float>(k + 1);
      for (size_t j = 0; j < dim; ++j) v[j] = query[j] + scale * vec_rng.Symmetric();
    }
  }

  GenerateHybrid(sizes, hybrid_rng, &d.hybrid);
  return d;
}

std::string HybridTopicName(int32_t topic) { return fmt::format("topic-{}", topic); }

nlohmann::json SizesJson(const DatasetSizes& s) {
  return {{"rows", s.rows},
          {"batch_rows", s.batch_rows},
          {"lookups", s.lookups},
          {"get_many_batches", s.get_many_batches},
          {"get_many_ids", s.get_many_ids},
          {"overwrite_fraction", s.overwrite_fraction},
          {"puts_per_writer", s.puts_per_writer},
          {"puts_seconds", s.puts_seconds},
          {"put_writers", s.put_writers},
          {"vectors", s.vectors},
          {"vector_dim", s.vector_dim},
          {"vector_queries", s.vector_queries},
          {"top_k", s.top_k},
          {"hybrid_records", s.hybrid_records},
          {"hybrid_dim", s.hybrid_dim},
          {"hybrid_queries", s.hybrid_queries},
          {"hybrid_topics", s.hybrid_topics},
          {"sql_runs", s.sql_runs},
          {"seed", s.seed}};
}

Status WriteDatasetFiles(const Dataset& data, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("create directory {}: {}", dir, ec.message()));
  const int64_t batch = data.sizes.batch_rows;
  STRATA_RETURN_IF_ERROR(WriteRowsStream(data.rows, batch, dir + "/rows.arrows"));
  STRATA_RETURN_IF_ERROR(WriteRowsStream(data.overwrite_rows, batch, dir + "/overwrite.arrows"));
  STRATA_RETURN_IF_ERROR(WriteRowsStream(data.put_rows, batch, dir + "/puts.arrows"));
  STRATA_RETURN_IF_ERROR(WriteFloats(dir + "/vectors.f32", data.vectors));
  STRATA_RETURN_IF_ERROR(WriteFloats(dir + "/queries.f32", data.queries));
  STRATA_RETURN_IF_ERROR(WriteJson(dir + "/vector_ids.json", nlohmann::json(data.vector_ids)));
  const HybridData& h = data.hybrid;
  STRATA_RETURN_IF_ERROR(WriteFloats(dir + "/hybrid_vectors.f32", h.vectors));
  STRATA_RETURN_IF_ERROR(WriteFloats(dir + "/hybrid_queries.f32", h.query_vectors));
  auto names = [](const std::vector<int32_t>& topics) {
    std::vector<std::string> out;
    out.reserve(topics.size());
    for (int32_t t : topics) out.push_back(HybridTopicName(t));
    return out;
  };
  STRATA_RETURN_IF_ERROR(
      WriteJson(dir + "/hybrid.json", {{"ids", h.ids},
                                       {"texts", h.texts},
                                       {"topics", names(h.topics)},
                                       {"query_texts", h.query_texts},
                                       {"query_topics", names(h.query_topics)}}));

  nlohmann::json params;
  params["sizes"] = SizesJson(data.sizes);
  // params.json has never carried overwrite_fraction: the peers read the overwrite rows
  // themselves (overwrite.arrows, counted by "overwrite_rows").
  params["sizes"].erase("overwrite_fraction");
  params["scan"] = {{"policy_version", data.scan.policy_version},
                    {"reward_gt", data.scan.reward_gt},
                    {"columns", data.scan.columns},
                    {"predicate", data.scan.Predicate()}};
  params["lookup_ids"] = data.lookup_ids;
  params["get_many_ids"] = data.get_many_ids;
  params["overwrite_rows"] = data.overwrite_rows.size();
  params["sql"] = {{"queries", data.sql.queries},
                   {"table_placeholder", std::string(SqlSpec::kTablePlaceholder)}};
  return WriteJson(dir + "/params.json", params);
}

}  // namespace strata::bench::compare
