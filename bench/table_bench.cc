// Table throughput and latency on rollout-like rows: append (beside this disk's sequential
// write bandwidth, measured in the same run), filtered scan, counts, point lookups and
// compaction. Prints one table per workload, then a summary with the goals and ratios.
//
//   build/release/bench/table_bench [--rows N] [--dir DIR] [--quick]
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "floor.h"
#include "strata/builder.h"
#include "strata/expr.h"
#include "strata/ipc.h"
#include "strata/object_store.h"
#include "strata/table.h"

namespace strata::bench {
namespace {

using table::Table;

constexpr std::string_view kFilter = "policy_version = 'v3' AND reward > 0.5";
const std::vector<std::string> kScanColumns = {"id", "reward", "step"};

struct Config {
  int64_t rows = 1'000'000;
  std::string parent_dir = "/tmp";
  bool quick = false;
  int64_t append_batch_rows = 65536;  // rows per Table::Append call
  // Sequential-write floor: 1 GiB, the order of what the append writes, and more than this
  // VM's host-side write cache absorbs (256 MiB measured up to 1.3 GB/s, 1 GiB ~350 MB/s).
  int64_t floor_bytes = int64_t{1} << 30;
  int scan_repeats = 3;
  int lookups = 2000;  // warm point lookups
  int cold_opens = 5;  // open + first lookup samples
  int compaction_appends = 200;
  int64_t compaction_append_rows = 5000;
  int64_t target_rows_per_fragment = int64_t{1} << 20;
};

// Wrong results are reported, not fatal: the run continues so every figure is printed.
std::vector<std::string> g_problems;
void Expect(bool ok, std::string what) {
  if (!ok) {
    fmt::print("  PROBLEM: {}\n", what);
    g_problems.push_back(std::move(what));
  }
}

// ---- Data ------------------------------------------------------------------------------

SchemaPtr RolloutSchema() {
  return schema({field("id", utf8(), false, {{std::string(table::kPrimaryKeyMetadata), "true"}}),
                 field("policy_version", utf8()), field("reward", float64()),
                 field("step", int64()), field("created_at", timestamp_us("UTC")),
                 field("prompt", utf8()), field("response", utf8()), field("tags", list(utf8()))});
}

std::string RolloutId(int64_t i) { return fmt::format("r-{:09d}", i); }

struct Dataset {
  SchemaPtr schema;
  std::vector<RecordBatch> batches;  // append_batch_rows each (the last may be shorter)
  int64_t rows = 0;
  int64_t uncompressed_bytes = 0;  // the rows as uncompressed Arrow IPC files
  int64_t filter_matches = 0;      // rows matching kFilter
  double generate_seconds = 0;
};

// Row i of the data set is the same in every run: batch b uses its own seed, text is drawn
// from a small vocabulary (compresses like prose), rewards are uniform in [0, 1).
RecordBatch MakeBatch(const SchemaPtr& s, int64_t start, int64_t n, uint64_t seed) {
  static const char* kWords[32] = {
      "the",    "agent", "called", "search", "tool",   "and",    "result", "answer",
      "plan",   "step",  "reward", "model",  "before", "after",  "check",  "value",
      "error",  "retry", "user",   "asked",  "for",    "code",   "test",   "passed",
      "failed", "file",  "line",   "output", "query",  "return", "state",  "done"};
  static const char* kTags[8] = {"math",  "code",  "tool-use", "long",
                                 "retry", "judge", "safety",   "multi-turn"};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto builder = *RecordBatchBuilder::Make(s);
  for (int c = 0; c < s->num_fields(); ++c) builder->builder(c)->Reserve(n);
  auto text = [&](size_t bytes) {
    std::string out;
    out.reserve(bytes + 8);
    uint64_t bits = 0;
    int left = 0;
    while (out.size() < bytes) {
      if (left == 0) bits = rng(), left = 12;
      out += kWords[bits & 31];
      out += ' ';
      bits >>= 5;
      --left;
    }
    return out;
  };
  for (int64_t i = start; i < start + n; ++i) {
    const int version = 1 + static_cast<int>(rng() % 5);
    const double reward = uniform(rng);
    (void)builder->GetAs<BinaryBuilder>(0)->Append(RolloutId(i));
    (void)builder->GetAs<BinaryBuilder>(1)->Append(fmt::format("v{}", version));
    builder->GetAs<Float64Builder>(2)->Append(reward);
    builder->GetAs<Int64Builder>(3)->Append(static_cast<int64_t>(rng() % 10000));
    builder->GetAs<TimestampBuilder>(4)->Append(1'764'000'000'000'000 + i * 1'000'003);
    (void)builder->GetAs<BinaryBuilder>(5)->Append(text(200));
    (void)builder->GetAs<BinaryBuilder>(6)->Append(text(600));
    auto* tags = builder->GetAs<ListBuilder>(7);
    tags->Append();
    const int num_tags = static_cast<int>(rng() % 4);
    for (int t = 0; t < num_tags; ++t) {
      (void)static_cast<BinaryBuilder*>(tags->value_builder())->Append(kTags[rng() % 8]);
    }
  }
  return *builder->Finish();
}

// Rows among the first `rows` of `batch` that match kFilter, counted directly on the
// generated arrays: the expected answer of the table's filtered scans and counts.
int64_t CountMatches(const RecordBatch& batch, int64_t rows) {
  int64_t matches = 0;
  for (int64_t i = 0; i < std::min(rows, batch.num_rows()); ++i) {
    if (batch.column(1).StringValue(i) == "v3" && batch.column(2).Value<double>(i) > 0.5) {
      ++matches;
    }
  }
  return matches;
}

Dataset MakeDataset(const Config& config) {
  Dataset d;
  const auto start = Clock::now();
  d.schema = RolloutSchema();
  d.rows = config.rows;
  for (int64_t first = 0, b = 0; first < config.rows; first += config.append_batch_rows, ++b) {
    const int64_t n = std::min(config.append_batch_rows, config.rows - first);
    d.batches.push_back(MakeBatch(d.schema, first, n, 42 + b));
  }
  d.generate_seconds = Seconds(start);
  for (const auto& batch : d.batches) d.filter_matches += CountMatches(batch, batch.num_rows());
  return d;
}

// Batches of at most `rows` rows, as the table cuts them in its data files.
std::vector<RecordBatch> Slices(const RecordBatch& batch, int64_t rows) {
  std::vector<RecordBatch> out;
  for (int64_t at = 0; at < batch.num_rows(); at += rows) {
    out.push_back(batch.Slice(at, std::min(rows, batch.num_rows() - at)));
  }
  return out;
}

// Encoding alone (in memory, no table): the CPU part of an append's data files.
struct EncodeRun {
  ipc::Compression codec;
  double seconds = 0;
  int64_t bytes = 0;
};

Result<EncodeRun> MeasureEncode(const Dataset& d, ipc::Compression codec) {
  EncodeRun r{codec};
  const auto start = Clock::now();
  for (const auto& batch : d.batches) {
    STRATA_ASSIGN_OR_RETURN(
        Buffer file, ipc::WriteFileToBuffer(d.schema, Slices(batch, 8192), {.compression = codec}));
    r.bytes += file.size();
  }
  r.seconds = Seconds(start);
  return r;
}

// ---- Append ----------------------------------------------------------------------------

struct AppendRun {
  ipc::Compression codec;
  bool sync = true;
  int appends = 0;
  double seconds = 0;  // Append calls only (not Create)
  double p50_append_s = 0;
  int64_t bytes_written = 0;
  int64_t fragments = 0;
  int64_t files = 0;  // in the table directory after the appends (Create's included)
  // Time split through the progress callback, which Append calls once the rows have been
  // given to the data file writer (batches encoded, except the last pending one): before it
  // and after it (the last batch, data file put, key segment put and the commit).
  double rows_seconds = 0;
  double finish_seconds = 0;
};

// Files under a table's directory: each was one put (file fsync + directory fsync with sync).
int64_t CountFiles(const std::string& root) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root, ec)) {
    if (entry.is_regular_file()) ++n;
  }
  return n;
}

Result<std::shared_ptr<ObjectStore>> OpenStore(const std::string& root, bool sync) {
  return OpenLocalObjectStore(root, LocalObjectStoreOptions{.sync = sync});
}

Result<AppendRun> RunAppend(const Dataset& d, const std::string& root, ipc::Compression codec,
                            bool sync) {
  AppendRun r{codec, sync};
  STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(root, sync));
  STRATA_ASSIGN_OR_RETURN(auto t, Table::Create(store, "", d.schema, {.compression = codec}));
  std::vector<double> per_append;
  for (const auto& batch : d.batches) {
    const auto start = Clock::now();
    Clock::time_point rows_done = start;
    STRATA_ASSIGN_OR_RETURN(table::AppendResult a, t->Append({batch}, [&](int64_t, int64_t) {
      rows_done = Clock::now();
    }));
    per_append.push_back(Seconds(start));
    r.rows_seconds += std::chrono::duration<double>(rows_done - start).count();
    r.finish_seconds += Seconds(rows_done);
    r.bytes_written += a.bytes_written;
    Expect(a.rows == batch.num_rows(),
           fmt::format("Append of {} rows reported {} rows", batch.num_rows(), a.rows));
  }
  for (double s : per_append) r.seconds += s;
  r.appends = static_cast<int>(per_append.size());
  std::sort(per_append.begin(), per_append.end());
  r.p50_append_s = per_append.empty() ? 0 : per_append[per_append.size() / 2];
  STRATA_ASSIGN_OR_RETURN(table::TableStats stats, t->Stats());
  r.fragments = stats.num_fragments;
  r.files = CountFiles(root);
  Expect(stats.num_rows == d.rows,
         fmt::format("after appending {} rows Stats().num_rows = {}", d.rows, stats.num_rows));
  return r;
}

// ---- Scan and count --------------------------------------------------------------------

struct ScanRun {
  std::string what;
  double first_s = 0;
  double best_s = 0;
  int64_t rows_returned = 0;
};

Result<ScanRun> RunScan(const Table& t, std::string what, const table::ScanOptions& options,
                        int repeats) {
  ScanRun r{std::move(what)};
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(auto it, t.Scan(options));
    int64_t rows = 0;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
      if (!batch) break;
      rows += batch->num_rows();
    }
    const double s = Seconds(start);
    if (i == 0) r.first_s = r.best_s = s;
    r.best_s = std::min(r.best_s, s);
    Expect(i == 0 || rows == r.rows_returned, "repeated scans returned different row counts");
    r.rows_returned = rows;
  }
  return r;
}

struct CountRun {
  std::string what;
  double seconds = 0;  // best of the repeats
  int64_t count = 0;
};

Result<CountRun> RunCount(const Table& t, std::string what, std::string_view filter, int repeats) {
  CountRun r{std::move(what)};
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(r.count, t.CountRows(filter));
    const double s = Seconds(start);
    r.seconds = i == 0 ? s : std::min(r.seconds, s);
  }
  return r;
}

// ---- Point lookups ---------------------------------------------------------------------

struct LookupRun {
  Latency warm;          // LookupKeys, all columns
  Latency warm_narrow;   // LookupKeys, columns id and reward
  Latency take;          // Take of one row address, all columns
  Latency open_store;    // OpenLocalObjectStore
  Latency open;          // Table::Open
  Latency first_lookup;  // the first LookupKeys on the new handle
  // The first LookupKeys of an absent key on a new handle: loads every key segment but
  // opens no data file, so it is the index-loading part of first_lookup.
  Latency first_absent;
};

// Looks up row i's key and checks that exactly that row comes back.
Status LookupOne(const Table& t, int64_t i, const std::vector<std::string>& columns = {}) {
  std::vector<expr::Scalar> keys = {expr::Scalar::String(RolloutId(i))};
  STRATA_ASSIGN_OR_RETURN(RecordBatch rows, t.LookupKeys(keys, columns));
  Expect(rows.num_rows() == 1 && rows.column(0).StringValue(0) == RolloutId(i),
         fmt::format("LookupKeys({}) returned {} rows", RolloutId(i), rows.num_rows()));
  return Status::OK();
}

// Warm LookupKeys of `samples` random keys among rows [0, rows).
Result<Latency> WarmLookups(const Table& t, int64_t rows, int samples, uint64_t seed,
                            const std::vector<std::string>& columns = {}) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, rows - 1);
  std::vector<double> us;
  for (int i = 0; i < samples; ++i) {
    const int64_t key = pick(rng);
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(LookupOne(t, key, columns));
    us.push_back(Seconds(start) * 1e6);
  }
  return Summarize(std::move(us));
}

Result<LookupRun> RunLookups(const Config& config, const Dataset& d, const std::string& root) {
  LookupRun r;
  std::mt19937_64 rng(1234);
  std::uniform_int_distribution<int64_t> pick(0, d.rows - 1);
  std::vector<double> store_us, open_us, first_us;
  std::shared_ptr<Table> t;
  for (int i = 0; i < config.cold_opens; ++i) {
    t.reset();
    auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(root, true));
    store_us.push_back(Seconds(start) * 1e6);
    start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(t, Table::Open(store, ""));
    open_us.push_back(Seconds(start) * 1e6);
    start = Clock::now();
    STRATA_RETURN_IF_ERROR(LookupOne(*t, pick(rng)));
    first_us.push_back(Seconds(start) * 1e6);
  }
  std::vector<double> absent_us;
  for (int i = 0; i < config.cold_opens; ++i) {
    t.reset();
    STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(root, true));
    STRATA_ASSIGN_OR_RETURN(t, Table::Open(store, ""));
    const auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(RecordBatch none, t->LookupKeys({expr::Scalar::String("r-absent")}));
    absent_us.push_back(Seconds(start) * 1e6);
    Expect(none.num_rows() == 0,
           fmt::format("LookupKeys of an absent key returned {} rows", none.num_rows()));
  }
  r.open_store = Summarize(std::move(store_us));
  r.open = Summarize(std::move(open_us));
  r.first_lookup = Summarize(std::move(first_us));
  r.first_absent = Summarize(std::move(absent_us));
  STRATA_ASSIGN_OR_RETURN(r.warm, WarmLookups(*t, d.rows, config.lookups, 1));
  STRATA_ASSIGN_OR_RETURN(r.warm_narrow,
                          WarmLookups(*t, d.rows, config.lookups, 2, {"id", "reward"}));
  // Take: the row fetch without the index probe. Addresses come from untimed lookups.
  std::vector<uint64_t> addresses;
  for (int i = 0; i < config.lookups; ++i) {
    std::vector<expr::Scalar> keys = {expr::Scalar::String(RolloutId(pick(rng)))};
    STRATA_ASSIGN_OR_RETURN(RecordBatch row, t->LookupKeys(keys, {"id"}, true));
    if (row.num_rows() == 1) addresses.push_back(row.column(1).Value<uint64_t>(0));
  }
  std::vector<double> take_us;
  for (uint64_t address : addresses) {
    const auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(RecordBatch row, t->Take({&address, 1}));
    take_us.push_back(Seconds(start) * 1e6);
    Expect(row.num_rows() == 1,
           fmt::format("Take of one address returned {} rows", row.num_rows()));
  }
  r.take = Summarize(std::move(take_us));
  return r;
}

// ---- Compaction ------------------------------------------------------------------------

struct CompactionRun {
  int appends = 0;
  int64_t rows = 0;
  double append_seconds = 0;  // building the table by small appends
  int64_t files = 0;          // files in the table directory after building it
  // Median append time of the first and the last tenth of the appends: does a commit get
  // slower as versions pile up?
  double first_tenth_p50_s = 0, last_tenth_p50_s = 0;
  int64_t fragments_before = 0, fragments_after = 0;
  int64_t stored_bytes_before = 0, stored_bytes_after = 0;
  double seconds = 0;
  table::CompactionResult result;
  int64_t uncompressed_rewritten = 0;  // estimated from rows_written
  // Time split through the progress callback (called after each source batch is written):
  // until the first batch, between the first and the last, and after the last (the last
  // data files, key index and commit).
  double before_rows_seconds = 0, rows_seconds = 0, after_rows_seconds = 0;
  // Warm point lookups before (one key segment per append) and after compaction.
  Latency lookup_before, lookup_after;
};

Result<CompactionRun> RunCompaction(const Config& config, const Dataset& d,
                                    const std::string& root) {
  CompactionRun r;
  STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(root, true));
  STRATA_ASSIGN_OR_RETURN(auto t, Table::Create(store, "", d.schema));
  // Small appends of fresh rows of the same kind (generated between the timed calls).
  int64_t expected = 0;
  std::vector<double> per_append;
  for (; r.appends < config.compaction_appends; ++r.appends) {
    RecordBatch batch =
        MakeBatch(d.schema, r.rows, config.compaction_append_rows, 1'000'000 + r.appends);
    expected += CountMatches(batch, batch.num_rows());
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(t->Append({batch}).status());
    per_append.push_back(Seconds(start));
    r.append_seconds += per_append.back();
    r.rows += batch.num_rows();
  }
  const size_t tenth = std::max<size_t>(1, per_append.size() / 10);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  r.first_tenth_p50_s = median({per_append.begin(), per_append.begin() + tenth});
  r.last_tenth_p50_s = median({per_append.end() - tenth, per_append.end()});
  STRATA_ASSIGN_OR_RETURN(table::TableStats before, t->Stats());
  r.fragments_before = before.num_fragments;
  r.files = CountFiles(root);
  r.stored_bytes_before = before.data_bytes;
  STRATA_ASSIGN_OR_RETURN(r.lookup_before, WarmLookups(*t, r.rows, config.lookups / 4, 3));

  table::CompactionOptions options;
  options.target_rows_per_fragment = config.target_rows_per_fragment;
  options.max_source_fragments = 0;  // everything in one call
  const auto start = Clock::now();
  Clock::time_point first_progress{}, last_progress{};
  options.progress = [&](int64_t, int64_t) {
    last_progress = Clock::now();
    if (first_progress == Clock::time_point{}) first_progress = last_progress;
  };
  STRATA_ASSIGN_OR_RETURN(r.result, t->Compact(options));
  r.seconds = Seconds(start);
  if (first_progress != Clock::time_point{}) {
    r.before_rows_seconds = std::chrono::duration<double>(first_progress - start).count();
    r.rows_seconds = std::chrono::duration<double>(last_progress - first_progress).count();
    r.after_rows_seconds = Seconds(last_progress);
  }

  STRATA_ASSIGN_OR_RETURN(table::TableStats after, t->Stats());
  r.fragments_after = after.num_fragments;
  r.stored_bytes_after = after.data_bytes;
  r.uncompressed_rewritten = static_cast<int64_t>(static_cast<double>(r.result.rows_written) *
                                                  d.uncompressed_bytes / d.rows);
  // The compacted table must still hold every row, answer filters and find keys.
  Expect(after.num_rows == r.rows,
         fmt::format("after compaction num_rows = {}, expected {}", after.num_rows, r.rows));
  STRATA_ASSIGN_OR_RETURN(int64_t count, t->CountRows(kFilter));
  Expect(count == expected,
         fmt::format("after compaction CountRows(filter) = {}, expected {}", count, expected));
  STRATA_ASSIGN_OR_RETURN(r.lookup_after, WarmLookups(*t, r.rows, config.lookups / 4, 3));
  Expect(after.unindexed_fragments == 0,
         fmt::format("after compaction {} fragments are not in the key index",
                     after.unindexed_fragments));
  return r;
}

// ---- Driver ----------------------------------------------------------------------------

std::string CodecName(ipc::Compression c) { return std::string(ipc::CompressionName(c)); }

Status Run(const Config& config, const std::string& dir) {
  fmt::print("== table_bench: {} rows, data dir {}\n", config.rows, dir);
  Dataset d = MakeDataset(config);
  STRATA_ASSIGN_OR_RETURN(EncodeRun encode_none, MeasureEncode(d, ipc::Compression::kNone));
  STRATA_ASSIGN_OR_RETURN(EncodeRun encode_zstd, MeasureEncode(d, ipc::Compression::kZstd));
  d.uncompressed_bytes = encode_none.bytes;
  const double row_bytes = static_cast<double>(d.uncompressed_bytes) / d.rows;
  fmt::print(
      "data: {:.1f} MiB uncompressed IPC ({:.0f} B/row) in {} batches of {} rows, "
      "generated in {:.1f} s; {} rows match \"{}\"\n",
      MiB(d.uncompressed_bytes), row_bytes, d.batches.size(), config.append_batch_rows,
      d.generate_seconds, d.filter_matches, kFilter);

  // 1. The disk.
  STRATA_ASSIGN_OR_RETURN(DiskFloor disk, MeasureDiskFloor(config.floor_bytes, dir));
  fmt::print("\n-- 1. disk floor ({:.0f} MiB in 1 MiB writes)\n", MiB(config.floor_bytes));
  fmt::print("sequential write + fdatasync  {:>12}\n", FormatRate(disk.sync_write_bps));
  fmt::print("sequential write, page cache  {:>12}\n", FormatRate(disk.cached_write_bps));
  fmt::print("4 KiB append + fdatasync p50  {:>9.0f} us\n", disk.fdatasync_4k_p50_us);
  fmt::print("IPC encode in memory: none {}, zstd {} ({:.1f}x smaller)\n",
             FormatRate(d.uncompressed_bytes / encode_none.seconds),
             FormatRate(d.uncompressed_bytes / encode_zstd.seconds),
             static_cast<double>(encode_none.bytes) / encode_zstd.bytes);

  // 2. Append. The first table (default options: zstd, sync) is kept for the reads.
  fmt::print("\n-- 2. Table::Append, {} calls of {} rows, uncompressed input bytes/s\n",
             d.batches.size(), config.append_batch_rows);
  fmt::print("{:<6} {:<8} {:>10} {:>8} {:>10} {:>10} {:>8} {:>11} {:>10}\n", "codec", "durable",
             "rate", "vs disk", "time", "p50 call", "stored", "frags/files", "model");
  const std::string main_root = dir + "/t-zstd-sync";
  std::vector<AppendRun> appends;
  for (auto [codec, sync] :
       {std::pair{ipc::Compression::kZstd, true}, std::pair{ipc::Compression::kNone, true},
        std::pair{ipc::Compression::kZstd, false}, std::pair{ipc::Compression::kNone, false}}) {
    const std::string root =
        dir + fmt::format("/t-{}-{}", CodecName(codec), sync ? "sync" : "process");
    STRATA_ASSIGN_OR_RETURN(AppendRun a, RunAppend(d, root, codec, sync));
    if (root != main_root) std::filesystem::remove_all(root);
    // Time split estimate: encoding (measured above) + writing what was stored at the
    // floor rate of this durability level. The rest is the table's own work.
    const EncodeRun& e = codec == ipc::Compression::kZstd ? encode_zstd : encode_none;
    const double write_s = a.bytes_written / (sync ? disk.sync_write_bps : disk.cached_write_bps);
    const double rate = d.uncompressed_bytes / a.seconds;
    fmt::print(
        "{:<6} {:<8} {:>10} {:>8} {:>8.2f} s {:>7.0f} ms {:>7.0f}M {:>11} {:>4.1f}+{:.1f}s\n",
        CodecName(codec), sync ? "sync" : "process", FormatRate(rate),
        Pct(rate, disk.sync_write_bps), a.seconds, a.p50_append_s * 1e3, MiB(a.bytes_written),
        fmt::format("{}/{}", a.fragments, a.files), e.seconds, write_s);
    appends.push_back(a);
  }
  fmt::print("time split (sum over calls): rows given to the writer / last batch + puts + commit:");
  for (const AppendRun& a : appends) {
    fmt::print(" {}-{} {:.2f}/{:.2f}s", CodecName(a.codec), a.sync ? "sync" : "process",
               a.rows_seconds, a.finish_seconds);
  }
  fmt::print("\n");
  fmt::print(
      "(model = IPC encode time + stored bytes at the floor write rate; the rest of "
      "'time' is the table's own work)\n");

  // 3. Scans and counts on the kept table, through a freshly opened handle.
  STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(main_root, true));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Table::Open(store, ""));
  fmt::print("\n-- 3. scans of {} rows (zstd table, {} fragments); first and best of {}\n", d.rows,
             appends[0].fragments, config.scan_repeats);
  fmt::print("{:<44} {:>12} {:>12} {:>10} {:>12}\n", "scan", "rows/s first", "rows/s best",
             "returned", "MB/s best");
  table::ScanOptions filtered{.columns = kScanColumns, .filter = std::string(kFilter)};
  table::ScanOptions projected{.columns = kScanColumns};
  std::vector<ScanRun> scans;
  STRATA_ASSIGN_OR_RETURN(ScanRun s1,
                          RunScan(*t, "filter, 3 columns", filtered, config.scan_repeats));
  STRATA_ASSIGN_OR_RETURN(ScanRun s2,
                          RunScan(*t, "no filter, 3 columns", projected, config.scan_repeats));
  STRATA_ASSIGN_OR_RETURN(ScanRun s3, RunScan(*t, "no filter, all columns", {}, 1));
  Expect(s1.rows_returned == d.filter_matches,
         fmt::format("filtered scan returned {} rows, expected {}", s1.rows_returned,
                     d.filter_matches));
  Expect(s2.rows_returned == d.rows && s3.rows_returned == d.rows,
         fmt::format("unfiltered scans returned {} / {} rows, expected {}", s2.rows_returned,
                     s3.rows_returned, d.rows));
  for (const ScanRun* s : {&s1, &s2, &s3}) {
    const bool all = s == &s3;
    fmt::print("{:<44} {:>12.3g} {:>12.3g} {:>10} {:>12}\n", s->what, d.rows / s->first_s,
               d.rows / s->best_s, s->rows_returned,
               all ? FormatRate(d.uncompressed_bytes / s->best_s) : "-");
  }
  STRATA_ASSIGN_OR_RETURN(CountRun c1, RunCount(*t, "CountRows()", {}, config.scan_repeats));
  STRATA_ASSIGN_OR_RETURN(CountRun c2,
                          RunCount(*t, "CountRows(filter)", kFilter, config.scan_repeats));
  Expect(c1.count == d.rows, fmt::format("CountRows() = {}, expected {}", c1.count, d.rows));
  Expect(c2.count == d.filter_matches,
         fmt::format("CountRows(filter) = {}, expected {}", c2.count, d.filter_matches));
  fmt::print("{:<44} {:>9.3f} ms {:>12} {:>10}\n", c1.what, c1.seconds * 1e3, "", c1.count);
  fmt::print("{:<44} {:>9.1f} ms {:>12.3g} {:>10}\n", c2.what, c2.seconds * 1e3,
             d.rows / c2.seconds, c2.count);

  // 4. Point lookups.
  t.reset();
  STRATA_ASSIGN_OR_RETURN(LookupRun lookups, RunLookups(config, d, main_root));
  fmt::print("\n-- 4. LookupKeys of one random key, all columns ({} rows)\n", d.rows);
  fmt::print("{:<38} {:>8} {:>10} {:>10} {:>10}\n", "", "samples", "p50 us", "p99 us", "max us");
  auto print_latency = [](std::string_view what, const Latency& l) {
    fmt::print("{:<38} {:>8} {:>10.0f} {:>10.0f} {:>10.0f}\n", what, l.samples, l.p50_us, l.p99_us,
               l.max_us);
  };
  print_latency("warm handle", lookups.warm);
  print_latency("warm, columns id + reward", lookups.warm_narrow);
  print_latency("warm Take(1 address), all columns", lookups.take);
  print_latency("OpenLocalObjectStore", lookups.open_store);
  print_latency("Table::Open", lookups.open);
  print_latency("first lookup after open", lookups.first_lookup);
  print_latency("first lookup after open, absent key", lookups.first_absent);
  fmt::print("(OS page cache warm in every case)\n");
  std::filesystem::remove_all(main_root);

  // 5. Compaction.
  STRATA_ASSIGN_OR_RETURN(CompactionRun comp, RunCompaction(config, d, dir + "/t-compact"));
  std::filesystem::remove_all(dir + "/t-compact");
  const auto& cr = comp.result;
  fmt::print("\n-- 5. Compact() of {} appends of {} rows (zstd, sync), target {} rows\n",
             comp.appends, config.compaction_append_rows, config.target_rows_per_fragment);
  fmt::print("building: {:.1f} s, {:.0f} appends/s, {}, {:.1f} ms per append, {} files\n",
             comp.append_seconds, comp.appends / comp.append_seconds,
             FormatRate(comp.rows * row_bytes / comp.append_seconds),
             comp.append_seconds * 1e3 / comp.appends, comp.files);
  fmt::print("append p50: {:.1f} ms over the first tenth, {:.1f} ms over the last tenth\n",
             comp.first_tenth_p50_s * 1e3, comp.last_tenth_p50_s * 1e3);
  fmt::print("fragments {} -> {} (removed {}, added {}), stored {:.1f} -> {:.1f} MiB\n",
             comp.fragments_before, comp.fragments_after, cr.fragments_removed, cr.fragments_added,
             MiB(comp.stored_bytes_before), MiB(comp.stored_bytes_after));
  fmt::print(
      "rewrote {} rows in {:.2f} s: uncompressed {} ({:.1f} MiB), stored read {} "
      "({:.1f} MiB), stored written {} ({:.1f} MiB)\n",
      cr.rows_written, comp.seconds, FormatRate(comp.uncompressed_rewritten / comp.seconds),
      MiB(comp.uncompressed_rewritten), FormatRate(cr.bytes_read / comp.seconds),
      MiB(cr.bytes_read), FormatRate(cr.bytes_written / comp.seconds), MiB(cr.bytes_written));
  fmt::print(
      "time split: {:.2f} s to the first source batch, {:.2f} s reading and writing "
      "rows, {:.2f} s after the last (last files, key index, commit)\n",
      comp.before_rows_seconds, comp.rows_seconds, comp.after_rows_seconds);
  fmt::print("warm LookupKeys p50 / p99: {:.0f} / {:.0f} us before, {:.0f} / {:.0f} us after\n",
             comp.lookup_before.p50_us, comp.lookup_before.p99_us, comp.lookup_after.p50_us,
             comp.lookup_after.p99_us);

  // Summary.
  const AppendRun& main_append = appends[0];
  const double main_rate = d.uncompressed_bytes / main_append.seconds;
  const double none_rate = d.uncompressed_bytes / appends[1].seconds;
  fmt::print("\n== summary ({} rows, {:.0f} MiB uncompressed)\n", d.rows,
             MiB(d.uncompressed_bytes));
  fmt::print("disk floor: {} write+fdatasync\n", FormatRate(disk.sync_write_bps));
  fmt::print("goal: Append (zstd, sync) >= 60% of disk write: {} = {} ({})\n",
             FormatRate(main_rate), Pct(main_rate, disk.sync_write_bps),
             main_rate >= 0.6 * disk.sync_write_bps ? "met" : "NOT met");
  fmt::print("      Append (none, sync): {} = {} ({})\n", FormatRate(none_rate),
             Pct(none_rate, disk.sync_write_bps),
             none_rate >= 0.6 * disk.sync_write_bps ? "met" : "NOT met");
  fmt::print("filtered scan: {:.3g} rows/s, {} rows returned; CountRows(filter) {:.1f} ms\n",
             d.rows / s1.best_s, s1.rows_returned, c2.seconds * 1e3);
  fmt::print("point lookup: p50 {:.0f} us, p99 {:.0f} us warm; first after open {:.0f} us\n",
             lookups.warm.p50_us, lookups.warm.p99_us, lookups.first_lookup.p50_us);
  fmt::print("compaction: {} uncompressed ({} as stored written), {} -> {} fragments\n",
             FormatRate(comp.uncompressed_rewritten / comp.seconds),
             FormatRate(cr.bytes_written / comp.seconds), comp.fragments_before,
             comp.fragments_after);
  return Status::OK();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using strata::bench::Config;
  Config config;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--rows" && i + 1 < argc) {
      config.rows = std::max(1L, std::atol(argv[++i]));
    } else if (arg == "--dir" && i + 1 < argc) {
      config.parent_dir = argv[++i];
    } else if (arg == "--quick") {
      config.quick = true;
    } else {
      fmt::print(stderr, "usage: {} [--rows N] [--dir DIR] [--quick]\n", argv[0]);
      return 2;
    }
  }
  config.compaction_appends =
      static_cast<int>(std::clamp<int64_t>(config.rows / config.compaction_append_rows, 1, 200));
  if (config.quick) {
    config.rows = std::min<int64_t>(config.rows, 20000);
    config.append_batch_rows = 4096;
    config.floor_bytes = int64_t{32} << 20;
    config.scan_repeats = 2;
    config.lookups = 200;
    config.cold_opens = 2;
    config.compaction_appends = 40;
    config.compaction_append_rows = 500;
  }
  // A fresh directory under --dir (default /tmp), removed at the end.
  std::string pattern = config.parent_dir + "/table_bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    fmt::print(stderr, "mkdtemp {}: {}\n", pattern, std::strerror(errno));
    return 1;
  }
  strata::Status st = strata::bench::Run(config, pattern);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!st.ok()) {
    fmt::print(stderr, "table_bench failed: {}\n", st.ToString());
    return 1;
  }
  if (!strata::bench::g_problems.empty()) {
    fmt::print("\n{} PROBLEMS (wrong results):\n", strata::bench::g_problems.size());
    for (const auto& p : strata::bench::g_problems) fmt::print("  {}\n", p);
    return 1;
  }
  return 0;
}
