// Replication (include/strata/replication.h) on local directories, after the protocol of
// shared/reference/replication.md §1.12, beside the disk floor measured in the same run:
//
//   1. seed: a full export of a store of N rows and its apply, in MB/s of bundle bytes;
//   2. three changes — many small commits, one large write, a delete-heavy change — each
//      exported and applied: bundle bytes against the zstd-compressed changed rows (the
//      least a bundle can carry) and against a whole copy of the store, export and apply
//      wall time;
//   3. follow lag while a writer makes a steady 1,000 durable 1-row puts/s;
//   4. the write path with replication off, marked, and marked with a follower running:
//      durable put latency and bulk ingest.
//
//   build/release/bench/replication_bench [--dir DIR] [--rows N] [--runs N] [--quick]
// Defaults: 200,000 rows, 5 runs (each on a fresh store), then the median of every figure;
// --quick: 20,000 rows, one run, shorter follow and write-path phases.
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "floor.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "strata/object_store.h"
#include "strata/replication.h"
#include "strata/storage_base.h"

namespace strata::bench {
namespace {

using replication::ExportReport;
using replication::StoreLocation;

struct Config {
  std::string parent_dir = "/tmp";
  int64_t rows = 200'000;
  int small_commits = 1'000;
  int64_t large_write = 50'000;
  double delete_fraction = 0.2;
  double follow_seconds = 10;
  int put_samples = 1'000;
  int64_t ingest_rows = 100'000;
  int runs = 5;
};

std::vector<std::string> g_problems;

// Every figure of every run, by name, in the order first recorded: the medians at the end.
std::vector<std::string> g_figure_order;
std::map<std::string, std::vector<double>> g_figures;
void Record(const std::string& name, double value) {
  auto [it, added] = g_figures.try_emplace(name);
  if (added) g_figure_order.push_back(name);
  it->second.push_back(value);
}

void PrintMedians(int runs) {
  fmt::print("\nmedians of {} runs (min - max):\n", runs);
  for (const std::string& name : g_figure_order) {
    std::vector<double> v = g_figures[name];
    std::sort(v.begin(), v.end());
    fmt::print("  {:<58} {:>12.4g}   ({:.4g} - {:.4g})\n", name, v[v.size() / 2], v.front(),
               v.back());
  }
}
void Expect(bool ok, std::string what) {
  if (!ok) {
    fmt::print("  PROBLEM: {}\n", what);
    g_problems.push_back(std::move(what));
  }
}

SchemaPtr BenchSchema() {
  static const SchemaPtr schema = std::make_shared<Schema>(std::vector<FieldPtr>{
      field("id", utf8(), /*nullable=*/false),
      field("step", int64()),
      field("reward", float64()),
      field("text", utf8()),
  });
  return schema;
}

// Rows with ids "k<index>" and ~200 bytes of text that compresses like prose (2-3x).
RecordBatch MakeRows(int64_t first, int64_t count, int64_t version, std::mt19937_64& rng) {
  static const char* kWords[] = {"the",    "agent", "calls",  "a",      "tool",  "and",
                                 "reads",  "its",   "output", "before", "every", "step",
                                 "reward", "model", "policy", "answer"};
  BinaryBuilder ids(utf8());
  Int64Builder steps(int64());
  Float64Builder rewards(float64());
  BinaryBuilder texts(utf8());
  std::string text;
  for (int64_t i = 0; i < count; ++i) {
    ids.Append(fmt::format("k{:09}", first + i)).IgnoreError();  // ids are short
    steps.Append(version);
    rewards.Append(static_cast<double>(rng() % 1000) / 1000.0);
    text.clear();
    while (text.size() < 200) {
      text += kWords[rng() % 16];
      text += fmt::format(" {} ", rng() % 97);
    }
    texts.Append(text).IgnoreError();  // ~200 bytes each: no overflow
  }
  std::vector<Array> columns = {*ids.Finish(), *steps.Finish(), *rewards.Finish(), *texts.Finish()};
  return *RecordBatch::Make(BenchSchema(), count, std::move(columns));
}

// The zstd Arrow IPC stream of `batches`: what the changed rows cost compressed.
int64_t CompressedBytes(const std::vector<RecordBatch>& batches) {
  if (batches.size() > 1) {
    Result<RecordBatch> one = ConcatenateBatches(batches);
    if (one.ok()) return CompressedBytes({*one});
  }
  ipc::WriteOptions options;
  options.compression = ipc::Compression::kZstd;
  Result<Buffer> bytes = ipc::WriteStreamToBuffer(BenchSchema(), batches, options);
  return bytes.ok() ? bytes->size() : -1;
}

int64_t DirectoryBytes(const std::filesystem::path& dir, const std::string& skip = "") {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!skip.empty() && it->path().filename() == skip) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// Stops and joins `thread` when the scope ends, on every path: a joinable std::thread's
// destructor (an early error return) would terminate the process.
struct StopAndJoin {
  std::atomic<bool>& stop;
  std::thread& thread;
  ~StopAndJoin() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
};

struct Env {
  std::string dir;
  std::shared_ptr<ObjectStore> objects;
  StoreLocation source;
  StoreLocation replica;
  std::unique_ptr<store::StorageBase> writer;
};

Result<std::unique_ptr<store::StorageBase>> OpenWriter(const std::shared_ptr<ObjectStore>& objects,
                                                       const std::string& prefix) {
  store::StorageBaseOptions options;
  options.schema = BenchSchema();
  options.key_column = "id";
  options.shard_id = "bench";
  options.merge_after_generations = 8;
  return store::StorageBase::Open(objects, prefix, options);
}

// Exports (since the replica's state) into `bundles/`, applies, and prints one line.
Status ExportApply(Env& env, const std::string& what, const std::vector<RecordBatch>& changed,
                   int64_t deleted_keys, double floor_bps) {
  STRATA_RETURN_IF_ERROR(env.writer->Flush().status());
  STRATA_ASSIGN_OR_RETURN(replication::ReplicaStatus at,
                          replication::GetReplicaStatus(env.replica));
  replication::ExportOptions options;
  options.since = at.state.cursor;
  options.consumer = "bench-replica";
  auto start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(
      ExportReport exported,
      replication::ExportChanges(env.source, *env.objects, "bundles/", options));
  const double export_s = Seconds(start);
  start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(replication::ApplyPublishedReport applied,
                          replication::ApplyPublished(env.replica, *env.objects, "bundles/"));
  const double apply_s = Seconds(start);
  const int64_t compressed = CompressedBytes(changed) + deleted_keys * 11;  // + the keys
  const int64_t store_bytes = DirectoryBytes(env.dir + "/src", "_replication");
  fmt::print(
      "  {:<28} {:>7} rows {:>7} dels {:>3} bundles {:>10}  = {:.2f}x compressed changed rows "
      "({}), {} of a store copy ({})\n"
      "  {:<28} export {:.3f} s ({}, scan {:.3f} s of {} rows), apply {:.3f} s ({}); floor {}\n",
      what, exported.rows, exported.deletions, exported.bundles.size(),
      fmt::format("{:.1f} KiB", exported.bytes / 1024.0),
      static_cast<double>(exported.bytes) / static_cast<double>(std::max<int64_t>(compressed, 1)),
      fmt::format("{:.1f} KiB", compressed / 1024.0), Pct(exported.bytes, store_bytes),
      fmt::format("{:.1f} MiB", MiB(store_bytes)), "", export_s,
      FormatRate(exported.bytes / export_s), exported.scan_seconds, exported.rows_scanned, apply_s,
      FormatRate(applied.bytes / apply_s), FormatRate(floor_bps));
  Record(what + ": bundle KiB", exported.bytes / 1024.0);
  Record(what + ": x zstd changed rows", static_cast<double>(exported.bytes) /
                                             static_cast<double>(std::max<int64_t>(compressed, 1)));
  Record(what + ": export s", export_s);
  Record(what + ": apply s", apply_s);
  Expect(applied.rows == exported.rows && applied.deletions == exported.deletions,
         what + ": applied what was exported");
  STRATA_ASSIGN_OR_RETURN(replication::VerifyResult verify, replication::Verify(env.replica));
  Expect(verify.matches(), what + ": the replica's content matches its state");
  return Status::OK();
}

Status Run(const Config& config) {
  std::string tmpl = config.parent_dir + "/strata-replication-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return Status::IOError("mkdtemp failed");
  Env env;
  env.dir = tmpl;
  STRATA_ASSIGN_OR_RETURN(env.objects, OpenLocalObjectStore(env.dir));
  env.source = StoreLocation{env.objects, "src/"};
  env.replica = StoreLocation{env.objects, "rep/"};
  std::mt19937_64 rng(42);

  STRATA_ASSIGN_OR_RETURN(DiskFloor floor, MeasureDiskFloor(int64_t{256} << 20, env.dir));
  fmt::print("replication_bench: {} rows of ~240 bytes in {}\n", config.rows, env.dir);
  fmt::print(
      "  disk floor: sequential write + fdatasync {}, page cache {}; fdatasync p50 {:.0f} us\n",
      FormatRate(floor.sync_write_bps), FormatRate(floor.cached_write_bps),
      floor.fdatasync_4k_p50_us);
  Record("floor: sequential write + fdatasync MB/s", floor.sync_write_bps / 1e6);
  Record("floor: fdatasync p50 us", floor.fdatasync_4k_p50_us);

  // --- 1. Seed -----------------------------------------------------------------------------
  STRATA_ASSIGN_OR_RETURN(env.writer, OpenWriter(env.objects, env.source.prefix));
  for (int64_t at = 0; at < config.rows; at += 10'000) {
    STRATA_RETURN_IF_ERROR(
        env.writer->Put({MakeRows(at, std::min<int64_t>(10'000, config.rows - at), 0, rng)}));
  }
  STRATA_RETURN_IF_ERROR(env.writer->Cleanup().status());
  STRATA_RETURN_IF_ERROR(env.writer->Compact().status());
  auto start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(replication::MarkReport mark, replication::MarkBase(env.source, "bench"));
  const double mark_s = Seconds(start);
  replication::ExportOptions full;
  full.full = true;
  start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(ExportReport seed,
                          replication::ExportChanges(env.source, *env.objects, "bundles/", full));
  const double seed_export_s = Seconds(start);
  start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(replication::ApplyPublishedReport seeded,
                          replication::ApplyPublished(env.replica, *env.objects, "bundles/"));
  const double seed_apply_s = Seconds(start);
  const int64_t store_bytes = DirectoryBytes(env.dir + "/src", "_replication");
  Record("seed: store MiB", MiB(store_bytes));
  Record("seed: bundle MiB", MiB(seed.bytes));
  Record("seed: full export s", seed_export_s);
  Record("seed: full export MB/s", static_cast<double>(seed.bytes) / seed_export_s / 1e6);
  Record("seed: apply s", seed_apply_s);
  Record("seed: apply MB/s", static_cast<double>(seeded.bytes) / seed_apply_s / 1e6);
  fmt::print(
      "\n1. seed: store {} on disk; mark-base {:.2f} s ({} rows scanned)\n"
      "  full export {:.2f} s: {} rows in {} bundles, {} ({} of the store) -> {} "
      "({:.0f} rows/s)\n"
      "  apply       {:.2f} s: {} ({:.0f} rows/s); floor: sync write {}\n",
      fmt::format("{:.1f} MiB", MiB(store_bytes)), mark_s, mark.base.content.rows, seed_export_s,
      seed.rows, seed.bundles.size(), fmt::format("{:.1f} MiB", MiB(seed.bytes)),
      Pct(seed.bytes, store_bytes), FormatRate(seed.bytes / seed_export_s),
      seed.rows / seed_export_s, seed_apply_s, FormatRate(seeded.bytes / seed_apply_s),
      seeded.rows / seed_apply_s, FormatRate(floor.sync_write_bps));

  // --- 2. Three changes ---------------------------------------------------------------------
  fmt::print("\n2. changes (bundle bytes; export and apply wall time)\n");
  {
    std::vector<RecordBatch> changed;
    for (int i = 0; i < config.small_commits; ++i) {
      const int64_t key = (static_cast<int64_t>(i) * 97) % config.rows;  // distinct keys
      RecordBatch row = MakeRows(key, 1, 1, rng);
      STRATA_RETURN_IF_ERROR(env.writer->Put({row}));
      changed.push_back(row);
    }
    STRATA_RETURN_IF_ERROR(ExportApply(env, fmt::format("{} small commits", config.small_commits),
                                       changed, 0, floor.sync_write_bps));
  }
  {
    RecordBatch rows = MakeRows(config.rows, config.large_write, 2, rng);
    STRATA_RETURN_IF_ERROR(env.writer->Put({rows}));
    STRATA_RETURN_IF_ERROR(ExportApply(env, fmt::format("one write of {} rows", config.large_write),
                                       {rows}, 0, floor.sync_write_bps));
  }
  {
    const auto n = static_cast<int64_t>(static_cast<double>(config.rows) * config.delete_fraction);
    std::vector<expr::Scalar> keys;
    for (int64_t i = 0; i < n; ++i)
      keys.push_back(expr::Scalar::String(fmt::format("k{:09}", i * 5)));
    for (size_t at = 0; at < keys.size(); at += 10'000) {
      std::vector<expr::Scalar> part(
          keys.begin() + static_cast<ptrdiff_t>(at),
          keys.begin() + static_cast<ptrdiff_t>(std::min(keys.size(), at + 10'000)));
      STRATA_RETURN_IF_ERROR(env.writer->DeleteKeys(part));
    }
    STRATA_RETURN_IF_ERROR(
        ExportApply(env, fmt::format("delete {} keys", n), {}, n, floor.sync_write_bps));
  }
  STRATA_RETURN_IF_ERROR(env.writer->Cleanup().status());
  STRATA_RETURN_IF_ERROR(env.writer->Compact().status());
  {
    STRATA_ASSIGN_OR_RETURN(replication::ReplicaStatus at,
                            replication::GetReplicaStatus(env.replica));
    replication::ExportOptions after;
    after.since = at.state.cursor;
    STRATA_ASSIGN_OR_RETURN(
        ExportReport idle, replication::ExportChanges(env.source, *env.objects, "bundles/", after));
    fmt::print("  after merge + compaction:   {} bundles, {} rows (layout changes add nothing)\n",
               idle.bundles.size(), idle.rows);
    Expect(idle.bundles.empty(), "a compaction adds nothing to the next export");
  }

  // --- 3. Follow lag at 1,000 puts/s ----------------------------------------------------------
  {
    std::atomic<bool> stop{false};
    std::atomic<int64_t> written{0};
    std::string writer_error;
    std::vector<double> flush_us;
    std::vector<double> merge_us;
    std::thread writer([&] {
      std::mt19937_64 wrng(7);
      auto next = Clock::now();
      int64_t id = config.rows * 2;
      for (int64_t i = 1; !stop; ++i) {
        // A 1-row durable put every 1 ms; every 100 puts a Flush (sealed: visible to every
        // reader) and a MaybeMerge (a merge every 8 generations, as the typed stores' put
        // paths do).
        Status st = env.writer->Put({MakeRows(id++, 1, 3, wrng)});
        if (st.ok() && i % 100 == 0) {
          auto t = Clock::now();
          st = env.writer->Flush().status();
          flush_us.push_back(Seconds(t) * 1e6);
          t = Clock::now();
          if (st.ok()) st = env.writer->MaybeMerge().status();
          merge_us.push_back(Seconds(t) * 1e6);
        }
        if (!st.ok()) {
          writer_error = st.ToString();
          return;
        }
        ++written;
        next += std::chrono::milliseconds(1);
        std::this_thread::sleep_until(next);
      }
    });
    replication::FollowOptions follow;
    follow.consumer = "bench-replica";
    std::vector<double> lags;
    std::vector<double> behind;
    std::vector<double> rounds;
    const auto follow_start = Clock::now();
    Status round_error;
    while (Seconds(follow_start) < config.follow_seconds) {
      const auto round_start = Clock::now();
      Result<replication::FollowReport> round =
          replication::FollowOnce(env.source, env.replica, *env.objects, "bundles/", follow);
      if (!round.ok()) {
        round_error = round.status();
        break;
      }
      const replication::FollowReport& r = *round;
      lags.push_back(r.lag_seconds * 1e6);
      behind.push_back(static_cast<double>(r.rows_behind));
      rounds.push_back(r.seconds * 1e6);
      std::this_thread::sleep_until(round_start + std::chrono::seconds(1));
    }
    stop = true;
    writer.join();
    STRATA_RETURN_IF_ERROR(round_error);
    if (!writer_error.empty()) return Status::Internal("follow phase writer: " + writer_error);
    const double rate = static_cast<double>(written) / Seconds(follow_start);
    const Latency flush = Summarize(flush_us);
    const Latency merge = Summarize(merge_us);
    Latency lag = Summarize(lags);
    Latency round = Summarize(rounds);
    std::sort(behind.begin(), behind.end());
    Record("follow: writer rows/s", rate);
    Record("follow: round p50 s", round.p50_us / 1e6);
    Record("follow: export-to-applied lag p50 s", lag.p50_us / 1e6);
    Record("follow: export-to-applied lag max s", lag.max_us / 1e6);
    fmt::print(
        "\n3. follow every 1 s while a writer puts {:.0f} rows/s (1-row durable puts, a Flush "
        "every 100: p50 {:.1f} ms max {:.1f} ms, then MaybeMerge: p50 {:.1f} ms max {:.1f} ms):\n"
        "  {} rounds; round time p50 {:.3f} s max {:.3f} s; export-to-applied lag p50 {:.3f} s "
        "max {:.3f} s; rows behind per round p50 {:.0f} max {:.0f}\n"
        "  -> a reader of the replica sees the source as of at most interval + lag = {:.2f} s ago "
        "(p50)\n",
        rate, flush.p50_us / 1e3, flush.max_us / 1e3, merge.p50_us / 1e3, merge.max_us / 1e3,
        rounds.size(), round.p50_us / 1e6, round.max_us / 1e6, lag.p50_us / 1e6, lag.max_us / 1e6,
        behind[behind.size() / 2], behind.back(), 1.0 + lag.p50_us / 1e6);
  }

  // --- 4. Write path: off, marked, marked with a follower
  // -----------------------------------------
  fmt::print("\n4. write path (durable 1-row put latency; ingest of {} rows in 1,000-row puts)\n",
             config.ingest_rows);
  for (int mode = 0; mode < 3; ++mode) {
    const std::string prefix = fmt::format("w{}/", mode);
    STRATA_ASSIGN_OR_RETURN(auto w, OpenWriter(env.objects, prefix));
    StoreLocation loc{env.objects, prefix};
    STRATA_RETURN_IF_ERROR(w->Put({MakeRows(0, 1000, 0, rng)}));
    STRATA_RETURN_IF_ERROR(w->Flush().status());
    if (mode > 0) STRATA_RETURN_IF_ERROR(replication::MarkBase(loc, "w").status());
    std::atomic<bool> stop{false};
    std::thread follower;
    const StopAndJoin follower_guard{stop, follower};
    if (mode == 2) {
      follower = std::thread([&] {
        replication::FollowOptions follow;
        follow.consumer = "w";
        StoreLocation rep{env.objects, fmt::format("w{}-rep/", mode)};
        while (!stop) {
          const auto round_start = Clock::now();
          // A failed round shows in the next one; the write path is what is measured here.
          replication::FollowOnce(loc, rep, *env.objects, fmt::format("w{}-bundles/", mode), follow)
              .status()
              .IgnoreError();
          while (!stop && Clock::now() < round_start + std::chrono::seconds(1)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
        }
      });
    }
    std::vector<double> us;
    for (int i = 0; i < config.put_samples; ++i) {
      RecordBatch row = MakeRows(1000 + i, 1, 1, rng);
      const auto t = Clock::now();
      STRATA_RETURN_IF_ERROR(w->Put({row}));
      us.push_back(Seconds(t) * 1e6);
      if (i % 100 == 99) STRATA_RETURN_IF_ERROR(w->Flush().status());
    }
    std::vector<RecordBatch> batches;
    for (int64_t at = 0; at < config.ingest_rows; at += 1000) {
      batches.push_back(MakeRows(100'000 + at, 1000, 2, rng));
    }
    const auto t = Clock::now();
    for (const RecordBatch& b : batches) STRATA_RETURN_IF_ERROR(w->Put({b}));
    STRATA_RETURN_IF_ERROR(w->Flush().status());
    const double ingest_s = Seconds(t);
    stop = true;
    if (follower.joinable()) follower.join();
    Latency lat = Summarize(us);
    static const char* kModes[] = {"replication off", "marked (no export running)",
                                   "marked, follower every 1 s"};
    Record(fmt::format("write path, {}: put p50 us", kModes[mode]), lat.p50_us);
    Record(fmt::format("write path, {}: put p99 us", kModes[mode]), lat.p99_us);
    Record(fmt::format("write path, {}: ingest rows/s", kModes[mode]),
           static_cast<double>(config.ingest_rows) / ingest_s);
    fmt::print("  {:<28} put p50 {:.0f} us p99 {:.0f} us; ingest {:.2f} s = {:.0f} rows/s\n",
               kModes[mode], lat.p50_us, lat.p99_us, ingest_s,
               static_cast<double>(config.ingest_rows) / ingest_s);
  }

  STRATA_RETURN_IF_ERROR(env.writer->Close());
  env.writer.reset();
  std::error_code ec;
  std::filesystem::remove_all(env.dir, ec);
  return Status::OK();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  strata::bench::Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      config.rows = 20'000;
      config.small_commits = 200;
      config.large_write = 10'000;
      config.follow_seconds = 4;
      config.put_samples = 200;
      config.ingest_rows = 20'000;
      config.runs = 1;
    } else if (arg == "--runs" && i + 1 < argc) {
      config.runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--dir" && i + 1 < argc) {
      config.parent_dir = argv[++i];
    } else if (arg == "--rows" && i + 1 < argc) {
      config.rows = std::atoll(argv[++i]);
    } else {
      fmt::print(stderr, "usage: replication_bench [--dir DIR] [--rows N] [--runs N] [--quick]\n");
      return 2;
    }
  }
  for (int run = 1; run <= config.runs; ++run) {
    if (config.runs > 1) fmt::print("\n=== run {} of {} ===\n", run, config.runs);
    strata::Status status = strata::bench::Run(config);
    if (!status.ok()) {
      fmt::print(stderr, "replication_bench: {}\n", status.ToString());
      return 1;
    }
  }
  if (config.runs > 1) strata::bench::PrintMedians(config.runs);
  if (!strata::bench::g_problems.empty()) {
    fmt::print(stderr, "replication_bench: {} problems\n", strata::bench::g_problems.size());
    return 1;
  }
  return 0;
}
