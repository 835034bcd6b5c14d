// What the in-process engines share: the binary row value RocksDB stores, the token blobs
// SQLite stores, brute-force L2 top-k for W8, the answer lines of engine.h and the timed
// W4-W6 and W10 loops.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../floor.h"
#include "dataset.h"
#include "engine.h"
#include "strata/status.h"

namespace strata::bench::compare::row_codec {

static_assert(std::endian::native == std::endian::little,
              "token blobs and row values are written as native little-endian bytes");

// ---- Row value (RocksDB) ------------------------------------------------------------------
// The key is the id; the value holds the rest of the row. Fixed-width fields come first so
// a filter on them reads a prefix of the value:
//   u8 format (=1) | i32 sequence_order | f32 reward |
//   varint len + bytes: policy_version, rollout_id, role |
//   varint n + n x i32: input_tokens, output_tokens | varint len + bytes: text
inline constexpr uint8_t kRowFormat = 1;

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline void PutFixed32(std::string* out, const void* v) {
  out->append(static_cast<const char*>(v), 4);
}

inline void PutBytes(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

inline void PutTokens(std::string* out, const std::vector<int32_t>& tokens) {
  PutVarint(out, tokens.size());
  out->append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int32_t));
}

// Appends the value of `row` (everything but its id) to `out`.
inline void EncodeRow(const BenchRow& row, std::string* out) {
  out->push_back(static_cast<char>(kRowFormat));
  PutFixed32(out, &row.sequence_order);
  PutFixed32(out, &row.reward);
  PutBytes(out, row.policy_version);
  PutBytes(out, row.rollout_id);
  PutBytes(out, row.role);
  PutTokens(out, row.input_tokens);
  PutTokens(out, row.output_tokens);
  PutBytes(out, row.text);
}

// Reads a value written by EncodeRow. Every read checks the bounds: a short or foreign value
// is Corruption naming the field, never a read past the end.
class RowReader {
 public:
  explicit RowReader(std::string_view value) : data_(value) {}

  // The fixed prefix plus policy_version (borrowed from the value): what W3 filters on.
  Status ReadHead(int32_t* sequence_order, float* reward, std::string_view* policy_version) {
    if (data_.size() < 9 || static_cast<uint8_t>(data_[0]) != kRowFormat) {
      return Status::Corruption("row value of " + std::to_string(data_.size()) +
                                " bytes does not start with row format 1");
    }
    std::memcpy(sequence_order, data_.data() + 1, 4);
    std::memcpy(reward, data_.data() + 5, 4);
    pos_ = 9;
    return ReadBytes("policy_version", policy_version);
  }

  // The whole row; `id` is the key the value was stored under.
  Status ReadRow(std::string_view id, BenchRow* row) {
    std::string_view policy, rollout, role, text;
    STRATA_RETURN_IF_ERROR(ReadHead(&row->sequence_order, &row->reward, &policy));
    STRATA_RETURN_IF_ERROR(ReadBytes("rollout_id", &rollout));
    STRATA_RETURN_IF_ERROR(ReadBytes("role", &role));
    STRATA_RETURN_IF_ERROR(ReadTokens("input_tokens", &row->input_tokens));
    STRATA_RETURN_IF_ERROR(ReadTokens("output_tokens", &row->output_tokens));
    STRATA_RETURN_IF_ERROR(ReadBytes("text", &text));
    if (pos_ != data_.size()) {
      return Status::Corruption("row value for id " + std::string(id) + " has " +
                                std::to_string(data_.size() - pos_) + " trailing bytes");
    }
    row->id.assign(id);
    row->policy_version.assign(policy);
    row->rollout_id.assign(rollout);
    row->role.assign(role);
    row->text.assign(text);
    return Status::OK();
  }

 private:
  Status ReadVarint(const char* field, uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) break;
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return Status::OK();
    }
    return Status::Corruption(std::string("row value: truncated length of ") + field);
  }
  Status ReadBytes(const char* field, std::string_view* s) {
    uint64_t n = 0;
    STRATA_RETURN_IF_ERROR(ReadVarint(field, &n));
    if (n > data_.size() - pos_) {
      return Status::Corruption(std::string("row value: ") + field + " of " + std::to_string(n) +
                                " bytes runs past the value's end");
    }
    *s = data_.substr(pos_, n);
    pos_ += n;
    return Status::OK();
  }
  Status ReadTokens(const char* field, std::vector<int32_t>* tokens) {
    uint64_t n = 0;
    STRATA_RETURN_IF_ERROR(ReadVarint(field, &n));
    if (n > (data_.size() - pos_) / sizeof(int32_t)) {
      return Status::Corruption(std::string("row value: ") + field + " of " + std::to_string(n) +
                                " tokens runs past the value's end");
    }
    tokens->resize(n);
    std::memcpy(tokens->data(), data_.data() + pos_, n * sizeof(int32_t));
    pos_ += n * sizeof(int32_t);
    return Status::OK();
  }

  std::string_view data_;
  size_t pos_ = 0;
};

// ---- Token blobs (SQLite) -----------------------------------------------------------------
// A token list is stored as its int32 values, little-endian, back to back.
inline Status TokensFromBlob(const void* blob, int bytes, const char* field,
                             std::vector<int32_t>* tokens) {
  if (bytes < 0 || bytes % sizeof(int32_t) != 0) {
    return Status::Corruption(std::string(field) + " blob of " + std::to_string(bytes) +
                              " bytes is not a whole number of int32 tokens");
  }
  tokens->resize(static_cast<size_t>(bytes) / sizeof(int32_t));
  if (bytes > 0) std::memcpy(tokens->data(), blob, static_cast<size_t>(bytes));
  return Status::OK();
}

// ---- W8: brute-force L2 -------------------------------------------------------------------
// Squared L2 distance between a query and stored vectors given as raw float32 bytes.
// Accumulates in double so the ranking does not depend on summation order. A stored value
// may sit at any byte offset (a RocksDB value follows its key in the block), and unaligned
// loads cost about half the query time here, so it is first copied to an aligned buffer.
class L2Scorer {
 public:
  explicit L2Scorer(int dim) : dim_(dim), scratch_(static_cast<size_t>(dim)) {}
  double Distance(const float* query, const char* stored) {
    std::memcpy(scratch_.data(), stored, scratch_.size() * sizeof(float));
    const float* v = scratch_.data();
    double acc[4] = {0, 0, 0, 0};
    int i = 0;
    for (; i + 4 <= dim_; i += 4) {
      for (int j = 0; j < 4; ++j) {
        const double d = static_cast<double>(query[i + j]) - v[i + j];
        acc[j] += d * d;
      }
    }
    for (; i < dim_; ++i) {
      const double d = static_cast<double>(query[i]) - v[i];
      acc[0] += d * d;
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }

 private:
  int dim_;
  std::vector<float> scratch_;
};

// The k nearest (distance, id) seen so far; ties on distance go to the smaller id.
class TopK {
 public:
  explicit TopK(int k) : k_(static_cast<size_t>(k)) {}
  void Offer(double distance, std::string_view id) {
    if (heap_.size() < k_) {
      heap_.emplace(distance, std::string(id));
    } else if (!heap_.empty() &&
               std::pair(distance, id) <
                   std::pair(heap_.top().first, std::string_view(heap_.top().second))) {
      heap_.pop();
      heap_.emplace(distance, std::string(id));
    }
  }
  // Ids by ascending distance.
  std::vector<std::string> Take() {
    std::vector<std::string> ids(heap_.size());
    for (size_t i = ids.size(); i > 0; --i) {
      ids[i - 1] = heap_.top().second;
      heap_.pop();
    }
    return ids;
  }

 private:
  size_t k_;
  std::priority_queue<std::pair<double, std::string>> heap_;  // the worst on top
};

// ---- Answer lines (definitions in engine.h) -----------------------------------------------

struct ScanHit {
  std::string id;
  int64_t sequence_order = 0;
  double reward = 0;
};

// W3: sorts `hits` by id.
inline Answer ScanAnswer(std::vector<ScanHit>& hits) {
  std::sort(hits.begin(), hits.end(),
            [](const ScanHit& a, const ScanHit& b) { return a.id < b.id; });
  std::string text;
  for (const ScanHit& h : hits) {
    text += h.id;
    text += '\t';
    text += std::to_string(h.sequence_order);
    text += '\t';
    text += std::to_string(std::llround(h.reward * 1024));
    text += '\n';
  }
  return Answer{static_cast<int64_t>(hits.size()), Sha256Hex(text)};
}

// W4 / W5 / W6: one line per requested id; `found[i]` is the sequence_order read for ids[i],
// or nullopt when the id was absent. `count` is chosen by the caller.
inline std::string KeyedLines(const std::vector<std::string>& ids,
                              const std::vector<std::optional<int64_t>>& found) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    text += ids[i];
    text += '\t';
    text += found[i] ? std::to_string(*found[i]) : std::string("-");
    text += '\n';
  }
  return text;
}

inline double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Logical bytes of rows[begin, end).
inline int64_t LogicalBytes(const std::vector<BenchRow>& rows, size_t begin, size_t end) {
  int64_t bytes = 0;
  for (size_t i = begin; i < end; ++i) bytes += rows[i].LogicalBytes();
  return bytes;
}

// W2: when a writer started now stops (DatasetSizes::puts_seconds).
inline Clock::time_point PutsDeadline(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// W2: logical bytes of the puts made, writer w having made done[w] of its rows
// put_rows[w * per_writer, ...).
inline int64_t PutBytes(const std::vector<BenchRow>& put_rows, size_t per_writer,
                        const std::vector<std::vector<double>>& done) {
  int64_t bytes = 0;
  for (size_t w = 0; w < done.size(); ++w) {
    bytes += LogicalBytes(put_rows, w * per_writer, w * per_writer + done[w].size());
  }
  return bytes;
}

// W4 for an engine whose point read `get(id)` returns Result<std::optional<int64_t>>, the
// row's sequence_order or nullopt when absent: each read timed, then the answer.
template <typename Get>
Result<StepResult> TimedLookups(const std::vector<std::string>& ids, Get&& get, std::string note) {
  StepResult r;
  std::vector<std::optional<int64_t>> found(ids.size());
  r.latencies_us.reserve(ids.size());
  const auto start = Clock::now();
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto t0 = Clock::now();
    STRATA_ASSIGN_OR_RETURN(found[i], get(ids[i]));
    r.latencies_us.push_back(MicrosSince(t0));
  }
  r.seconds = Seconds(start);
  r.ops = static_cast<int64_t>(ids.size());
  r.rows = std::count_if(found.begin(), found.end(), [](const auto& f) { return f.has_value(); });
  r.answer = Answer{r.rows, Sha256Hex(KeyedLines(ids, found))};
  r.note = std::move(note);
  return r;
}

// W5 for an engine whose batched read `get(ids)` returns
// Result<std::vector<std::optional<int64_t>>> in request order: each batch timed.
template <typename GetBatch>
Result<StepResult> TimedGetMany(const std::vector<std::vector<std::string>>& batches,
                                GetBatch&& get, std::string note) {
  StepResult r;
  std::string lines;
  int64_t hits = 0;
  const auto start = Clock::now();
  for (const std::vector<std::string>& ids : batches) {
    const auto t0 = Clock::now();
    STRATA_ASSIGN_OR_RETURN(std::vector<std::optional<int64_t>> found, get(ids));
    r.latencies_us.push_back(MicrosSince(t0));
    hits += std::count_if(found.begin(), found.end(), [](const auto& f) { return f.has_value(); });
    lines += KeyedLines(ids, found);
  }
  r.seconds = Seconds(start);
  r.ops = static_cast<int64_t>(batches.size());
  r.rows = hits;
  r.answer = Answer{hits, Sha256Hex(lines)};
  r.note = std::move(note);
  return r;
}

// W6 for an engine that writes rows[begin, end) with `write(begin, end)` -> Status and reads
// ids back with `read(first, last)` (iterators into a vector of the rows' ids) ->
// Result<std::vector<std::optional<int64_t>>>, each id's sequence_order in request order or
// nullopt when absent; both go `batch` rows at a time. The timed region is all the writes
// followed by all the reads; the note gives each phase's seconds after `write_what` /
// `read_what`. total_rows is left to the caller, to count untimed afterwards.
template <typename Write, typename ReadBack>
Result<StepResult> TimedOverwrite(const std::vector<BenchRow>& rows, size_t batch, Write&& write,
                                  ReadBack&& read, const std::string& write_what,
                                  const std::string& read_what) {
  std::vector<std::string> ids;
  for (const BenchRow& row : rows) ids.push_back(row.id);
  std::vector<std::optional<int64_t>> found;
  found.reserve(rows.size());

  const auto start = Clock::now();
  for (size_t b = 0; b < rows.size(); b += batch) {
    STRATA_RETURN_IF_ERROR(write(b, std::min(b + batch, rows.size())));
  }
  const double write_seconds = Seconds(start);
  for (size_t b = 0; b < ids.size(); b += batch) {
    const auto first = ids.begin() + static_cast<std::ptrdiff_t>(b);
    const auto last = ids.begin() + static_cast<std::ptrdiff_t>(std::min(b + batch, ids.size()));
    STRATA_ASSIGN_OR_RETURN(std::vector<std::optional<int64_t>> got, read(first, last));
    found.insert(found.end(), got.begin(), got.end());
  }
  StepResult r;
  r.seconds = Seconds(start);

  int64_t fresh = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (found[i] && *found[i] == rows[i].sequence_order) ++fresh;
  }
  r.ops = static_cast<int64_t>((rows.size() + batch - 1) / batch);
  r.rows = static_cast<int64_t>(rows.size());
  r.bytes = LogicalBytes(rows, 0, rows.size());
  r.answer = Answer{fresh, Sha256Hex(KeyedLines(ids, found))};
  r.note = write_what + " " + std::to_string(write_seconds) + " s, " + read_what + " " +
           std::to_string(r.seconds - write_seconds) + " s";
  return r;
}

// W8: "q\tid1,id2,..." per query.
inline Answer VectorAnswer(const std::vector<std::vector<std::string>>& results) {
  std::string text;
  for (size_t q = 0; q < results.size(); ++q) {
    text += std::to_string(q);
    text += '\t';
    for (size_t i = 0; i < results[q].size(); ++i) {
      if (i > 0) text += ',';
      text += results[q][i];
    }
    text += '\n';
  }
  return Answer{static_cast<int64_t>(results.size()), Sha256Hex(text)};
}

// W10 for an engine whose `run(sql)` runs one statement and returns every result row, each
// value as engine.h's answer text (Result<std::vector<std::vector<std::string>>>): query q
// of data.sql with `table` for its table, sizes.sql_runs times in a row, each run timed
// (latencies: query 1's runs, then query 2's; seconds: their sum). Every run must return the
// same rows.
template <typename Run>
Result<StepResult> TimedSql(const Dataset& data, std::string_view table, Run&& run) {
  const int runs = std::max(1, data.sizes.sql_runs);
  StepResult r;
  std::string lines;
  for (size_t q = 0; q < data.sql.queries.size(); ++q) {
    const std::string sql = data.sql.Query(q, table);
    std::optional<std::vector<std::vector<std::string>>> first;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> rows, run(sql));
      r.latencies_us.push_back(MicrosSince(t0));
      if (!first) {
        first = std::move(rows);
      } else if (rows != *first) {
        return Status::Internal("W10: run " + std::to_string(i + 1) + " of '" + sql +
                                "' returned other rows than its first run");
      }
    }
    for (const std::vector<std::string>& row : *first) {
      lines += 'q' + std::to_string(q + 1);
      for (const std::string& value : row) {
        lines += '\t';
        lines += value;
      }
      lines += '\n';
    }
    r.rows += static_cast<int64_t>(first->size());
  }
  for (double us : r.latencies_us) r.seconds += us / 1e6;  // the runs alone
  r.ops = static_cast<int64_t>(r.latencies_us.size());
  r.answer = Answer{r.rows, Sha256Hex(lines)};
  return r;
}

}  // namespace strata::bench::compare::row_codec
