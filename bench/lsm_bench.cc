// The LSM write path (StorageBase / RolloutStore) on a local directory: durable put latency
// beside the fdatasync floor, concurrent writers (group commit), rollout ingest beside the
// disk's write bandwidth, point lookups with pending generations, merge throughput and peak
// RSS — each beside the floor measured in the same run, then a summary with the goals.
//
//   build/release/bench/lsm_bench [--dir DIR] [--quick]
#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "floor.h"
#include "strata/builder.h"
#include "strata/expr.h"
#include "strata/ipc.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "strata/storage_base.h"

namespace strata::bench {
namespace {

using store::RolloutRecord;
using store::RolloutStore;
using store::StorageBase;

struct Config {
  std::string parent_dir = "/tmp";
  bool quick = false;
  // Sequential-write floor: 1 GiB, as table_bench (smaller writes are partly absorbed by
  // this VM's host-side write cache and measure faster than the disk sustains).
  int64_t floor_bytes = int64_t{1} << 30;
  int fdatasync_samples = 200;
  int put_samples = 500;        // 1. single-row puts per durability level
  double writer_seconds = 3.0;  // 2. per thread count
  std::vector<int> writer_threads = {1, 4, 16};
  int64_t ingest_rows = 300000;  // 3. ~2.3 KiB rows: three default memtables
  int64_t ingest_batch_rows = 256;
  int64_t lookup_base_rows = 20000;  // 4. rows merged into the base before lookups
  int64_t generation_rows = 64;      //    rows per pending generation
  std::vector<int> pending_generations = {0, 16, 256};
  int lookups = 1000;          // per measurement
  int merge_generations = 16;  // 5. second merge: generations of merge_generation_rows
  int64_t merge_generation_rows = 2048;
  int64_t rss_rows = 1'000'000;  // 6. ~200 B rows
  int64_t rss_batch_rows = 1000;
};

// Wrong results are reported, not fatal: the run continues so every figure is printed.
std::vector<std::string> g_problems;
void Expect(bool ok, std::string what) {
  if (!ok) {
    fmt::print("  PROBLEM: {}\n", what);
    g_problems.push_back(std::move(what));
  }
}

const char* Met(bool met) { return met ? "met" : "NOT met"; }

std::string LoadAverage() {
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) != 3) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", load[0], load[1], load[2]);
}

Result<std::shared_ptr<ObjectStore>> OpenStore(const std::string& root, bool sync) {
  return OpenLocalObjectStore(root, LocalObjectStoreOptions{.sync = sync});
}

const char* Durability(bool sync) { return sync ? "sync" : "process"; }

int64_t DirectoryBytes(const std::string& root) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root, ec)) {
    if (entry.is_regular_file(ec)) n += static_cast<int64_t>(entry.file_size(ec));
  }
  return n;
}

// ---- Peak RSS (Linux /proc) ------------------------------------------------------------

// A "VmXXX:   123 kB" field of /proc/self/status in KiB, -1 when absent.
int64_t ProcStatusKiB(std::string_view name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(name) && line.size() > name.size() && line[name.size()] == ':') {
      return std::atoll(line.c_str() + name.size() + 1);
    }
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0: write "5" to clear_refs).
bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return out.good();
}

// ---- Data ------------------------------------------------------------------------------

std::string Text(std::mt19937_64& rng, size_t bytes) {
  static const char* kWords[32] = {
      "the",    "agent", "called", "search", "tool",   "and",    "result", "answer",
      "plan",   "step",  "reward", "model",  "before", "after",  "check",  "value",
      "error",  "retry", "user",   "asked",  "for",    "code",   "test",   "passed",
      "failed", "file",  "line",   "output", "query",  "return", "state",  "done"};
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
  out.resize(bytes);
  return out;
}

std::string RolloutKey(int64_t i) { return fmt::format("ro-{:010d}", i); }

// Row i of a rollout data set: content text of `content_bytes`, and `tokens` output tokens
// with their logprobs (4 + 4 bytes each).
RolloutRecord MakeRollout(int64_t i, size_t content_bytes, int tokens, std::mt19937_64& rng) {
  RolloutRecord r;
  r.id = RolloutKey(i);
  r.rollout_id = fmt::format("traj-{:08d}", i / 16);
  r.problem_id = fmt::format("prob-{:06d}", (i / 16) % 5000);
  r.dataset = "math-v2";
  r.sequence_order = static_cast<int32_t>(i % 16);
  r.created_at_micros = 1'764'000'000'000'000 + i * 1'000'003;
  r.content = Text(rng, content_bytes);
  if (tokens > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    std::vector<float> logprobs(static_cast<size_t>(tokens));
    for (int t = 0; t < tokens; ++t) {
      ids[static_cast<size_t>(t)] = static_cast<int32_t>(rng() % 151000);
      logprobs[static_cast<size_t>(t)] = -static_cast<float>(rng() % 10000) / 1000.0f;
    }
    r.output_tokens = std::move(ids);
    r.output_logprobs = std::move(logprobs);
    r.num_output_tokens = tokens;
  }
  r.reward = static_cast<float>(rng() % 1000) / 1000.0f;
  r.policy_version = "v3";
  r.include_in_training = true;
  return r;
}

std::vector<RolloutRecord> MakeRollouts(int64_t first, int64_t n, size_t content_bytes, int tokens,
                                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<RolloutRecord> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = first; i < first + n; ++i) {
    out.push_back(MakeRollout(i, content_bytes, tokens, rng));
  }
  return out;
}

// The input bytes of a batch of records: the size of the batch as an uncompressed Arrow IPC
// file in the rollout schema (what RolloutStore::Add hands to the store).
Result<int64_t> IpcBytes(const std::vector<RolloutRecord>& records) {
  const SchemaPtr schema = store::RolloutSchema();
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, store::EncodeRolloutRecords(records, schema));
  STRATA_ASSIGN_OR_RETURN(Buffer file, ipc::WriteFileToBuffer(schema, {batch}));
  return static_cast<int64_t>(file.size());
}

// Rollout store options for the benchmark: no count-triggered merges, a Cleanup folds
// every pending generation, no read warnings at the generation counts used here.
store::RolloutStoreOptions RolloutOptions() {
  store::RolloutStoreOptions options;
  options.base.merge_max_generations = 0;
  options.base.merge_max_bytes = 0;
  options.base.pending_generations_warn = 0;
  options.base.pending_generations_max = 100000;
  return options;
}

// ---- 1. Single-row durable puts ----------------------------------------------------------

// The small schema of the put and writer tests: key, a counter and ~100 bytes of text.
SchemaPtr PutSchema() {
  return schema({field("id", utf8(), false), field("step", int64()), field("value", utf8())});
}

RecordBatch PutRow(const SchemaPtr& s, const std::string& id, int64_t step) {
  static const std::string kValue = std::string(100, 'v');
  auto builder = *RecordBatchBuilder::Make(s);
  (void)builder->GetAs<BinaryBuilder>(0)->Append(id);
  builder->GetAs<Int64Builder>(1)->Append(step);
  (void)builder->GetAs<BinaryBuilder>(2)->Append(kValue);
  return *builder->Finish();
}

Result<std::unique_ptr<StorageBase>> OpenPutStore(const std::string& root, bool sync) {
  STRATA_ASSIGN_OR_RETURN(auto objects, OpenStore(root, sync));
  store::StorageBaseOptions options;
  options.schema = PutSchema();
  options.key_column = "id";
  return StorageBase::Open(objects, "", options);
}

struct PutRun {
  bool sync = true;
  Latency put;
  // Primitive steps of one put through the same local object store, for the time split:
  // append 4 KiB to an appendable object + Sync (a WAL group's write), and Head of a
  // missing key (the fence check after each group).
  Latency append_sync;
  Latency head;
  // 4 KiB append + fdatasync on a plain file, one sample after each timed put: the floor
  // under the same conditions (fdatasync latency on a shared VM changes within seconds).
  Latency floor_interleaved;
};

Result<PutRun> RunPuts(const Config& config, const std::string& root, bool sync) {
  PutRun r{sync};
  STRATA_ASSIGN_OR_RETURN(auto s, OpenPutStore(root, sync));
  STRATA_RETURN_IF_ERROR(s->OpenWriter());
  const SchemaPtr schema = PutSchema();
  std::vector<RecordBatch> rows;
  for (int i = 0; i < config.put_samples + 10; ++i) {
    rows.push_back(PutRow(schema, fmt::format("k-{:08d}", i), i));
  }
  const std::string floor_path = root + "-floor.bin";
  int fd = ::open(floor_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IOError(fmt::format("open {}: {}", floor_path, std::strerror(errno)));
  }
  const std::string block(4096, 'f');
  std::vector<double> us, floor_us;
  Status st;
  for (int i = 0; i < static_cast<int>(rows.size()) && st.ok(); ++i) {
    auto start = Clock::now();
    st = s->Put({rows[static_cast<size_t>(i)]});
    if (i >= 10) us.push_back(Seconds(start) * 1e6);  // the first 10 warm up
    if (!st.ok() || !sync) continue;
    start = Clock::now();
    st = WriteAll(fd, block.data(), block.size());
    if (st.ok() && ::fdatasync(fd) != 0) st = Status::IOError("fdatasync failed");
    if (i >= 10) floor_us.push_back(Seconds(start) * 1e6);
  }
  ::close(fd);
  ::unlink(floor_path.c_str());
  STRATA_RETURN_IF_ERROR(st);
  r.put = Summarize(std::move(us));
  r.floor_interleaved = Summarize(std::move(floor_us));
  STRATA_RETURN_IF_ERROR(s->Flush().status());
  STRATA_ASSIGN_OR_RETURN(int64_t count, s->Count());
  Expect(count == static_cast<int64_t>(rows.size()),
         fmt::format("after {} single-row puts Count() = {}", rows.size(), count));
  s.reset();

  STRATA_ASSIGN_OR_RETURN(auto objects, OpenStore(root + "-steps", sync));
  STRATA_ASSIGN_OR_RETURN(auto log, objects->CreateAppendable("steps.log"));
  std::vector<double> append_us, head_us;
  for (int i = 0; i < config.put_samples / 2; ++i) {
    auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(log->Append(block));
    STRATA_RETURN_IF_ERROR(log->Sync());
    append_us.push_back(Seconds(start) * 1e6);
    start = Clock::now();
    Result<ObjectMeta> missing = objects->Head(fmt::format("manifest/{:020d}", i));
    head_us.push_back(Seconds(start) * 1e6);
    Expect(!missing.ok() && missing.status().IsNotFound(), "Head of a missing key found it");
  }
  STRATA_RETURN_IF_ERROR(log->Close());
  r.append_sync = Summarize(std::move(append_us));
  r.head = Summarize(std::move(head_us));
  std::filesystem::remove_all(root + "-steps");
  return r;
}

// ---- 2. Concurrent writers on one handle -------------------------------------------------

struct WriterRun {
  int threads = 0;
  int64_t puts = 0;
  double seconds = 0;
  Latency put;
};

Result<WriterRun> RunWriters(StorageBase& s, int threads, double seconds, int64_t* next_key) {
  WriterRun r{threads};
  const SchemaPtr schema = PutSchema();
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> us(static_cast<size_t>(threads));
  std::vector<Status> errors(static_cast<size_t>(threads));
  const int64_t base_key = *next_key;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int64_t n = 0; !failed.load() && Clock::now() < deadline; ++n) {
        // Keys are disjoint across threads and runs: thread t writes base + n * 64 + t.
        RecordBatch row = PutRow(schema, fmt::format("w-{:012d}", base_key + n * 64 + t), n);
        const auto put_start = Clock::now();
        Status st = s.Put({row});
        if (!st.ok()) {
          errors[static_cast<size_t>(t)] = st;
          failed = true;
          return;
        }
        us[static_cast<size_t>(t)].push_back(Seconds(put_start) * 1e6);
      }
    });
  }
  for (auto& th : pool) th.join();
  r.seconds = Seconds(start);
  for (const Status& st : errors) STRATA_RETURN_IF_ERROR(st);
  std::vector<double> all;
  int64_t max_n = 0;
  for (const auto& v : us) {
    all.insert(all.end(), v.begin(), v.end());
    max_n = std::max<int64_t>(max_n, static_cast<int64_t>(v.size()));
  }
  r.puts = static_cast<int64_t>(all.size());
  r.put = Summarize(std::move(all));
  *next_key = base_key + (max_n + 1) * 64;
  return r;
}

// ---- 3. Rollout ingest -----------------------------------------------------------------

struct IngestData {
  std::vector<std::vector<RolloutRecord>> batches;
  int64_t rows = 0;
  int64_t ipc_bytes = 0;          // uncompressed Arrow IPC files of the batches
  double encode_seconds = 0;      // records -> RecordBatch (EncodeRolloutRecords) alone
  double ipc_encode_seconds = 0;  // RecordBatch -> IPC stream in memory alone
};

Result<IngestData> MakeIngestData(const Config& config) {
  IngestData d;
  const SchemaPtr schema = store::RolloutSchema();
  for (int64_t first = 0, b = 0; first < config.ingest_rows;
       first += config.ingest_batch_rows, ++b) {
    const int64_t n = std::min(config.ingest_batch_rows, config.ingest_rows - first);
    d.batches.push_back(MakeRollouts(first, n, 1000, 128, 1000 + static_cast<uint64_t>(b)));
    d.rows += n;
  }
  for (const auto& records : d.batches) {
    auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, store::EncodeRolloutRecords(records, schema));
    d.encode_seconds += Seconds(start);
    start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(Buffer stream, ipc::WriteStreamToBuffer(schema, {batch}));
    d.ipc_encode_seconds += Seconds(start);
    STRATA_ASSIGN_OR_RETURN(Buffer file, ipc::WriteFileToBuffer(schema, {batch}));
    d.ipc_bytes += static_cast<int64_t>(file.size());
  }
  return d;
}

struct IngestRun {
  bool sync = true;
  double add_seconds = 0;    // every Add
  double flush_seconds = 0;  // the final Flush (seal + publish)
  Latency add;
  int64_t generations = 0;   // pending after the Flush
  int64_t stored_bytes = 0;  // in the store directory after the Flush
  double seconds() const { return add_seconds + flush_seconds; }
};

Result<IngestRun> RunIngest(const IngestData& d, RolloutStore& s, const std::string& root,
                            bool sync, int threads) {
  IngestRun r{sync};
  std::vector<double> us;
  if (threads <= 1) {
    for (const auto& records : d.batches) {
      const auto start = Clock::now();
      STRATA_RETURN_IF_ERROR(s.Add(records).status());
      us.push_back(Seconds(start) * 1e6);
      r.add_seconds += us.back() / 1e6;
    }
  } else {
    // Writers take the next batch until none is left; their WAL appends share syncs.
    std::atomic<size_t> next{0};
    std::vector<std::vector<double>> per_thread(static_cast<size_t>(threads));
    std::vector<Status> errors(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    const auto start = Clock::now();
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (size_t i; (i = next.fetch_add(1)) < d.batches.size();) {
          const auto one = Clock::now();
          Status st = s.Add(d.batches[i]).status();
          if (!st.ok()) {
            errors[static_cast<size_t>(t)] = st;
            return;
          }
          per_thread[static_cast<size_t>(t)].push_back(Seconds(one) * 1e6);
        }
      });
    }
    for (std::thread& t : pool) t.join();
    r.add_seconds = Seconds(start);
    for (const Status& st : errors) STRATA_RETURN_IF_ERROR(st);
    for (auto& v : per_thread) us.insert(us.end(), v.begin(), v.end());
  }
  const auto start = Clock::now();
  STRATA_RETURN_IF_ERROR(s.Flush().status());
  r.flush_seconds = Seconds(start);
  r.add = Summarize(std::move(us));
  STRATA_ASSIGN_OR_RETURN(r.generations, s.PendingGenerations());
  r.stored_bytes = DirectoryBytes(root);
  STRATA_ASSIGN_OR_RETURN(store::RolloutObservation o, s.Observe());
  Expect(o.row_count == d.rows,
         fmt::format("after ingesting {} rows Observe().row_count = {}", d.rows, o.row_count));
  return r;
}

// ---- 4. Point lookups with pending generations ----------------------------------------------

struct LookupRun {
  int pending = 0;
  Latency by_id_base;        // RolloutStore::GetById, key in the base table
  Latency by_id_generation;  // RolloutStore::GetById, key in a pending generation
  Latency get_many_base;     // StorageBase::GetMany (kAll) of one key in the base
  // Time split of a base lookup: GetMany(kFragments) of one base key, every column and the
  // key column only (the rest of a base lookup's time is decoding the row's record batch).
  Latency base_only_all, base_only_id;
};

enum class LookupKind { kGetById, kGetManyAll, kBaseAllColumns, kBaseIdColumn };

Result<Latency> TimeLookups(const RolloutStore& s, const std::vector<int64_t>& keys,
                            LookupKind kind) {
  std::vector<double> us;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string key = RolloutKey(keys[i]);
    const auto start = Clock::now();
    if (kind == LookupKind::kGetById) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RolloutRecord> row, s.GetById(key));
      us.push_back(Seconds(start) * 1e6);
      Expect(row.has_value() && row->id == key, fmt::format("GetById({}) did not find it", key));
    } else {
      std::vector<std::string> columns;
      if (kind == LookupKind::kBaseIdColumn) columns = {"id"};
      STRATA_ASSIGN_OR_RETURN(
          RecordBatch rows,
          s.base().GetMany({expr::Scalar::String(key)}, columns,
                           kind == LookupKind::kGetManyAll ? store::ListSource::kAll
                                                           : store::ListSource::kFragments));
      us.push_back(Seconds(start) * 1e6);
      Expect(rows.num_rows() == 1 && rows.column(0).StringValue(0) == key,
             fmt::format("GetMany({}) returned {} rows", key, rows.num_rows()));
    }
  }
  return Summarize(std::move(us));
}

// Random picks in [first, first + n), a fixed sequence per seed.
std::vector<int64_t> Picks(int64_t first, int64_t n, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(first, first + n - 1);
  std::vector<int64_t> out;
  for (int i = 0; i < count; ++i) out.push_back(pick(rng));
  return out;
}

Result<std::vector<LookupRun>> RunLookups(const Config& config, const std::string& root,
                                          double* build_seconds) {
  std::vector<LookupRun> out;
  const auto build_start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(auto objects, OpenStore(root, false));
  STRATA_ASSIGN_OR_RETURN(auto s, RolloutStore::Open(objects, "", RolloutOptions()));
  for (int64_t first = 0; first < config.lookup_base_rows; first += 1024) {
    const int64_t n = std::min<int64_t>(1024, config.lookup_base_rows - first);
    STRATA_RETURN_IF_ERROR(s->Add(MakeRollouts(first, n, 1000, 128, 5000 + first)).status());
  }
  STRATA_ASSIGN_OR_RETURN(store::MergeReport built, s->Cleanup());
  STRATA_RETURN_IF_ERROR(built.follow_up);
  *build_seconds = Seconds(build_start);
  int64_t next = config.lookup_base_rows;
  int pending = 0;
  for (int target : config.pending_generations) {
    const auto start = Clock::now();
    for (; pending < target; ++pending) {
      STRATA_RETURN_IF_ERROR(
          s->Add(MakeRollouts(next, config.generation_rows, 1000, 128, 9000 + next)).status());
      STRATA_RETURN_IF_ERROR(s->Flush().status());
      next += config.generation_rows;
    }
    *build_seconds += Seconds(start);
    STRATA_ASSIGN_OR_RETURN(int64_t have, s->PendingGenerations());
    Expect(have == target, fmt::format("{} pending generations, expected {}", have, target));
    LookupRun r{target};
    const auto base_keys = Picks(0, config.lookup_base_rows, config.lookups, 11 + target);
    // Warm-up (untimed): the same keys once, so the base's batches and every pending
    // generation have been read (page cache, mappings, file and footer caches) before.
    STRATA_RETURN_IF_ERROR(TimeLookups(*s, base_keys, LookupKind::kGetManyAll).status());
    STRATA_ASSIGN_OR_RETURN(r.by_id_base, TimeLookups(*s, base_keys, LookupKind::kGetById));
    STRATA_ASSIGN_OR_RETURN(r.get_many_base, TimeLookups(*s, base_keys, LookupKind::kGetManyAll));
    if (target == 0) {
      STRATA_ASSIGN_OR_RETURN(r.base_only_all,
                              TimeLookups(*s, base_keys, LookupKind::kBaseAllColumns));
      STRATA_ASSIGN_OR_RETURN(r.base_only_id,
                              TimeLookups(*s, base_keys, LookupKind::kBaseIdColumn));
    }
    if (target > 0) {
      const int64_t gen_rows = next - config.lookup_base_rows;
      const auto gen_keys = Picks(config.lookup_base_rows, gen_rows, config.lookups, 21 + target);
      STRATA_RETURN_IF_ERROR(TimeLookups(*s, gen_keys, LookupKind::kGetById).status());
      STRATA_ASSIGN_OR_RETURN(r.by_id_generation, TimeLookups(*s, gen_keys, LookupKind::kGetById));
    }
    out.push_back(r);
  }
  return out;
}

// ---- 5. Merge --------------------------------------------------------------------------

struct MergeRun {
  std::string what;
  int64_t generations = 0;  // pending before
  int64_t base_rows_before = 0;
  store::MergeReport report;
  double seconds = 0;
  int64_t ipc_bytes = 0;  // input bytes of the merged rows (uncompressed IPC)
};

Result<MergeRun> TimeCleanup(RolloutStore& s, std::string what, double bytes_per_row) {
  MergeRun r{std::move(what)};
  STRATA_ASSIGN_OR_RETURN(r.generations, s.PendingGenerations());
  STRATA_ASSIGN_OR_RETURN(store::StoreObservation before, s.base().Observe());
  r.base_rows_before = before.base_rows;
  const auto start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(r.report, s.Cleanup());
  r.seconds = Seconds(start);
  STRATA_RETURN_IF_ERROR(r.report.follow_up);  // committed, then failed: not a clean merge
  r.ipc_bytes = static_cast<int64_t>(static_cast<double>(r.report.rows_merged) * bytes_per_row);
  STRATA_ASSIGN_OR_RETURN(int64_t left, s.PendingGenerations());
  Expect(r.report.generations_reclaimed == r.generations && left == 0,
         fmt::format("Cleanup reclaimed {} of {} generations, {} left",
                     r.report.generations_reclaimed, r.generations, left));
  return r;
}

// ---- 6. Peak RSS -----------------------------------------------------------------------

struct RssRun {
  bool reset = false;  // VmHWM was reset before the ingest
  int64_t rows = 0;
  int64_t ipc_bytes = 0;
  double seconds = 0;  // Adds + Flush (records generated between the timed calls)
  int64_t rss_before_kib = 0, hwm_before_kib = 0, hwm_after_kib = 0, rss_after_kib = 0;
  int64_t generations = 0;
};

Result<RssRun> RunRss(const Config& config, const std::string& root) {
  RssRun r;
  STRATA_ASSIGN_OR_RETURN(auto objects, OpenStore(root, true));
  STRATA_ASSIGN_OR_RETURN(auto s, RolloutStore::Open(objects, "", RolloutOptions()));
  r.reset = ResetPeakRss();
  r.rss_before_kib = ProcStatusKiB("VmRSS");
  r.hwm_before_kib = ProcStatusKiB("VmHWM");
  for (int64_t first = 0; first < config.rss_rows; first += config.rss_batch_rows) {
    const int64_t n = std::min(config.rss_batch_rows, config.rss_rows - first);
    std::vector<RolloutRecord> records = MakeRollouts(first, n, 80, 0, 77 + first);
    if (first == 0) {
      STRATA_ASSIGN_OR_RETURN(int64_t bytes, IpcBytes(records));
      r.ipc_bytes = bytes * config.rss_rows / n;  // estimated from the first batch
    }
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(s->Add(records).status());
    r.seconds += Seconds(start);
    r.rows += n;
  }
  const auto start = Clock::now();
  STRATA_RETURN_IF_ERROR(s->Flush().status());
  r.seconds += Seconds(start);
  r.hwm_after_kib = ProcStatusKiB("VmHWM");
  r.rss_after_kib = ProcStatusKiB("VmRSS");
  STRATA_ASSIGN_OR_RETURN(r.generations, s->PendingGenerations());
  STRATA_ASSIGN_OR_RETURN(store::RolloutObservation o, s->Observe());
  Expect(o.row_count == r.rows,
         fmt::format("after {} rows Observe().row_count = {}", r.rows, o.row_count));
  return r;
}

// ---- Driver ----------------------------------------------------------------------------

void PrintLatency(std::string_view what, const Latency& l) {
  fmt::print("{:<46} {:>7} {:>9.0f} {:>9.0f} {:>9.0f}\n", what, l.samples, l.p50_us, l.p99_us,
             l.max_us);
}

Status Run(const Config& config, const std::string& dir) {
  fmt::print("== lsm_bench{}: data dir {}, load average at start {}\n",
             config.quick ? " --quick" : "", dir, LoadAverage());

  // 0. The disk.
  STRATA_ASSIGN_OR_RETURN(DiskFloor disk,
                          MeasureDiskFloor(config.floor_bytes, dir, config.fdatasync_samples));
  fmt::print("\n-- 0. disk floor ({:.0f} MiB in 1 MiB writes; {} fdatasync samples)\n",
             MiB(config.floor_bytes), config.fdatasync_samples);
  fmt::print("sequential write + fdatasync  {:>12}\n", FormatRate(disk.sync_write_bps));
  fmt::print("sequential write, page cache  {:>12}\n", FormatRate(disk.cached_write_bps));
  fmt::print("4 KiB append + fdatasync p50  {:>9.0f} us\n", disk.fdatasync_4k_p50_us);

  std::fflush(stdout);

  // 6 runs first, while the process holds little memory: afterwards the heap keeps pages
  // freed by the other sections resident, and an ingest reusing them would not show.
  fmt::print("\n(section 6, peak RSS, runs now and is printed at the end)\n");
  std::fflush(stdout);
  STRATA_ASSIGN_OR_RETURN(RssRun rss, RunRss(config, dir + "/rss"));
  std::filesystem::remove_all(dir + "/rss");

  // 1. Single-row puts.
  fmt::print("\n-- 1. StorageBase::Put of one row (~120 B), {} samples per durability\n",
             config.put_samples);
  fmt::print("{:<46} {:>7} {:>9} {:>9} {:>9}\n", "", "samples", "p50 us", "p99 us", "max us");
  STRATA_ASSIGN_OR_RETURN(PutRun put_sync, RunPuts(config, dir + "/put-sync", true));
  STRATA_ASSIGN_OR_RETURN(PutRun put_process, RunPuts(config, dir + "/put-process", false));
  std::filesystem::remove_all(dir + "/put-sync");
  std::filesystem::remove_all(dir + "/put-process");
  for (const PutRun* p : {&put_sync, &put_process}) {
    const std::string d = Durability(p->sync);
    PrintLatency(fmt::format("Put, {}", d), p->put);
    PrintLatency(fmt::format("  step: Append 4 KiB + Sync, {}", d), p->append_sync);
    PrintLatency(fmt::format("  step: Head of a missing key, {}", d), p->head);
    if (p->sync) {
      PrintLatency("floor: 4 KiB append + fdatasync, after each put", p->floor_interleaved);
    }
  }
  fmt::print(
      "Put (sync) p50 = {:.2f}x the interleaved floor p50 ({:.2f}x the section-0 floor p50 "
      "{:.0f} us)\n",
      put_sync.put.p50_us / put_sync.floor_interleaved.p50_us,
      put_sync.put.p50_us / disk.fdatasync_4k_p50_us, disk.fdatasync_4k_p50_us);

  std::fflush(stdout);

  // 2. Concurrent writers.
  fmt::print("\n-- 2. single-row Puts from N threads on one handle (sync), {:.0f} s each\n",
             config.writer_seconds);
  fmt::print("{:>7} {:>9} {:>10} {:>9} {:>9} {:>12}\n", "threads", "puts", "puts/s", "p50 us",
             "p99 us", "vs 1 thread");
  std::vector<WriterRun> writers;
  {
    STRATA_ASSIGN_OR_RETURN(auto s, OpenPutStore(dir + "/writers", true));
    STRATA_RETURN_IF_ERROR(s->OpenWriter());
    int64_t next_key = 0;
    int64_t total = 0;
    for (int threads : config.writer_threads) {
      STRATA_ASSIGN_OR_RETURN(WriterRun w,
                              RunWriters(*s, threads, config.writer_seconds, &next_key));
      total += w.puts;
      const double rate = w.puts / w.seconds;
      const double base = writers.empty() ? rate : writers[0].puts / writers[0].seconds;
      fmt::print("{:>7} {:>9} {:>10.0f} {:>9.0f} {:>9.0f} {:>11.2f}x\n", threads, w.puts, rate,
                 w.put.p50_us, w.put.p99_us, rate / base);
      writers.push_back(w);
    }
    STRATA_RETURN_IF_ERROR(s->Flush().status());
    STRATA_ASSIGN_OR_RETURN(int64_t count, s->Count());
    Expect(count == total, fmt::format("after {} puts Count() = {}", total, count));
  }
  std::filesystem::remove_all(dir + "/writers");
  fmt::print("floor: one fdatasync per put = {:.0f} puts/s\n", 1e6 / disk.fdatasync_4k_p50_us);

  std::fflush(stdout);

  // 3. Ingest.
  STRATA_ASSIGN_OR_RETURN(IngestData data, MakeIngestData(config));
  const double row_bytes = static_cast<double>(data.ipc_bytes) / data.rows;
  fmt::print(
      "\n-- 3. RolloutStore::Add of {} rows in batches of {} + final Flush\n"
      "input bytes = the batches as uncompressed Arrow IPC files in the rollout schema: "
      "{:.1f} MiB, {:.0f} B/row\n"
      "(rows: 1000 B content text, 128 output tokens + logprobs, ids and scalars)\n",
      data.rows, config.ingest_batch_rows, MiB(data.ipc_bytes), row_bytes);
  fmt::print("{:<26} {:>8} {:>8} {:>8} {:>9} {:>10} {:>10} {:>5} {:>9}\n", "durable", "rate",
             "vs disk", "time", "flush", "Add p50", "Add p99", "gens", "stored");
  std::vector<IngestRun> ingests;
  std::unique_ptr<RolloutStore> merge_store;
  // The default store (memtable sealed in the background every 100,000 rows), the same with
  // process durability, and (time split) one memtable sealed only by the final Flush: its
  // Adds are the WAL + memtable path alone and its Flush is the seal alone.
  // Then the default store again with 4 writers whose Adds share WAL syncs.
  struct IngestVariant {
    bool sync;
    bool one_seal;
    int threads;
  };
  for (auto [sync, one_seal, threads] :
       {IngestVariant{true, false, 1}, IngestVariant{false, false, 1}, IngestVariant{true, true, 1},
        IngestVariant{true, false, 4}}) {
    const std::string label = fmt::format("{}{}{}", Durability(sync), one_seal ? ", 1 seal" : "",
                                          threads > 1 ? fmt::format(", {} writers", threads) : "");
    const std::string root =
        dir + fmt::format("/ingest-{}-{}-{}", Durability(sync), one_seal, threads);
    store::RolloutStoreOptions options = RolloutOptions();
    if (one_seal) {
      options.base.max_memtable_rows = config.ingest_rows + 1;
      options.base.max_memtable_bytes = int64_t{4} << 30;
      options.base.max_unflushed_bytes = int64_t{4} << 30;
    }
    STRATA_ASSIGN_OR_RETURN(auto objects, OpenStore(root, sync));
    STRATA_ASSIGN_OR_RETURN(auto s, RolloutStore::Open(objects, "", options));
    STRATA_ASSIGN_OR_RETURN(IngestRun in, RunIngest(data, *s, root, sync, threads));
    const double rate = data.ipc_bytes / in.seconds();
    fmt::print("{:<26} {:>8} {:>8} {:>6.2f} s {:>7.2f} s {:>7.1f} ms {:>7.1f} ms {:>5} {:>8.0f}M\n",
               label, FormatRate(rate), Pct(rate, disk.sync_write_bps), in.seconds(),
               in.flush_seconds, in.add.p50_us / 1e3, in.add.p99_us / 1e3, in.generations,
               MiB(in.stored_bytes));
    if (one_seal) {
      fmt::print("{:<26} Adds alone {} ({:.2f} s), final seal alone {} ({:.2f} s)\n", "",
                 FormatRate(data.ipc_bytes / in.add_seconds), in.add_seconds,
                 FormatRate(data.ipc_bytes / in.flush_seconds), in.flush_seconds);
    }
    ingests.push_back(in);
    if (sync && !one_seal && threads == 1) {
      merge_store = std::move(s);  // the default store is kept for the merges
    } else {
      s.reset();
      std::filesystem::remove_all(root);
    }
  }
  fmt::print(
      "time split: records -> batch (EncodeRolloutRecords) {:.2f} s, batch -> IPC stream "
      "{:.2f} s in memory alone; input at the sync disk floor {:.2f} s\n",
      data.encode_seconds, data.ipc_encode_seconds, data.ipc_bytes / disk.sync_write_bps);
  fmt::print("(stored = bytes in the store directory after the Flush: WAL + generations)\n");
  data.batches.clear();
  data.batches.shrink_to_fit();

  std::fflush(stdout);

  // 4. Lookups.
  double lookup_build_seconds = 0;
  STRATA_ASSIGN_OR_RETURN(std::vector<LookupRun> lookups,
                          RunLookups(config, dir + "/lookup", &lookup_build_seconds));
  std::filesystem::remove_all(dir + "/lookup");
  fmt::print(
      "\n-- 4. point lookups of one random key, warm ({} rows in the base; pending generations "
      "of {} rows; built with process durability in {:.1f} s)\n",
      config.lookup_base_rows, config.generation_rows, lookup_build_seconds);
  fmt::print("{:<46} {:>7} {:>9} {:>9} {:>9}\n", "", "samples", "p50 us", "p99 us", "max us");
  for (const LookupRun& l : lookups) {
    PrintLatency(fmt::format("{:>3} pending: GetById, key in base", l.pending), l.by_id_base);
    if (l.pending > 0) {
      PrintLatency(fmt::format("{:>3} pending: GetById, key in a generation", l.pending),
                   l.by_id_generation);
    }
    PrintLatency(fmt::format("{:>3} pending: GetMany(kAll) 1 key in base", l.pending),
                 l.get_many_base);
    if (l.pending == 0) {
      PrintLatency("  split: GetMany(kFragments), all columns", l.base_only_all);
      PrintLatency("  split: GetMany(kFragments), column id only", l.base_only_id);
    }
  }
  fmt::print(
      "(GetById asks the base first and the generations only when the base lacks the "
      "key; GetMany(kAll) always reads every source)\n");

  std::fflush(stdout);

  // 5. Merges, on the sync ingest store.
  fmt::print("\n-- 5. StorageBase::Cleanup (seal + merge every pending generation), sync\n");
  fmt::print("{:<40} {:>5} {:>9} {:>10} {:>8} {:>10} {:>10}\n", "", "gens", "base rows", "rows",
             "time", "MB/s", "rows/s");
  std::vector<MergeRun> merges;
  {
    STRATA_ASSIGN_OR_RETURN(
        MergeRun m1, TimeCleanup(*merge_store, "ingest's generations -> empty base", row_bytes));
    merges.push_back(m1);
    int64_t next = config.ingest_rows;
    for (int g = 0; g < config.merge_generations; ++g) {
      STRATA_RETURN_IF_ERROR(
          merge_store->Add(MakeRollouts(next, config.merge_generation_rows, 1000, 128, 300 + g))
              .status());
      STRATA_RETURN_IF_ERROR(merge_store->Flush().status());
      next += config.merge_generation_rows;
    }
    STRATA_ASSIGN_OR_RETURN(
        MergeRun m2, TimeCleanup(*merge_store,
                                 fmt::format("{} x {} rows -> base", config.merge_generations,
                                             config.merge_generation_rows),
                                 row_bytes));
    merges.push_back(m2);
    for (const MergeRun& m : merges) {
      fmt::print("{:<40} {:>5} {:>9} {:>10} {:>6.2f} s {:>10} {:>10.0f}\n", m.what, m.generations,
                 m.base_rows_before, m.report.rows_merged, m.seconds,
                 FormatRate(m.ipc_bytes / m.seconds), m.report.rows_merged / m.seconds);
    }
    fmt::print("(MB/s = merged rows x {:.0f} B/row of uncompressed IPC input, per second)\n",
               row_bytes);
    const int64_t expected = next;
    STRATA_ASSIGN_OR_RETURN(int64_t count, merge_store->base().Count());
    Expect(count == expected,
           fmt::format("after the merges Count() = {}, expected {}", count, expected));
    merge_store.reset();
    std::filesystem::remove_all(dir + "/ingest-sync-false-1");
  }

  std::fflush(stdout);

  // 6. Peak RSS (measured first, above).
  fmt::print(
      "\n-- 6. peak RSS while ingesting {} rows of ~{:.0f} B (80 B content, no tokens) in "
      "batches of {}, sync\n",
      rss.rows, static_cast<double>(rss.ipc_bytes) / rss.rows, config.rss_batch_rows);
  fmt::print("measured before every other section; VmHWM reset before the ingest: {}\n",
             rss.reset ? "yes (clear_refs)" : "NO: the peak includes earlier sections");
  fmt::print("RSS before {:.0f} MiB, peak during {:.0f} MiB (+{:.0f} MiB), after {:.0f} MiB\n",
             rss.rss_before_kib / 1024.0, rss.hwm_after_kib / 1024.0,
             (rss.hwm_after_kib - rss.rss_before_kib) / 1024.0, rss.rss_after_kib / 1024.0);
  fmt::print(
      "input {:.0f} MiB (est. from the first batch) in {:.1f} s = {}, {:.0f} rows/s, {} "
      "generations\n",
      MiB(rss.ipc_bytes), rss.seconds, FormatRate(rss.ipc_bytes / rss.seconds),
      rss.rows / rss.seconds, rss.generations);

  std::fflush(stdout);

  // Summary.
  const IngestRun& ingest = ingests[0];
  const double ingest_rate = data.ipc_bytes / ingest.seconds();
  const double floor_us = put_sync.floor_interleaved.p50_us;
  const double ratio = put_sync.put.p50_us / floor_us;
  fmt::print("\n== summary (durability: sync unless stated; load average now {})\n", LoadAverage());
  fmt::print(
      "1. durable Put p50 {:.0f} us, p99 {:.0f} us vs fdatasync floor {:.0f} us (interleaved) "
      "= {:.2f}x; goal <= 1.3x: {}\n",
      put_sync.put.p50_us, put_sync.put.p99_us, floor_us, ratio, Met(ratio <= 1.3));
  fmt::print("2. puts/s:");
  for (const WriterRun& w : writers) {
    fmt::print(" {} thr {:.0f} ({:.2f}x);", w.threads, w.puts / w.seconds,
               (w.puts / w.seconds) / (writers[0].puts / writers[0].seconds));
  }
  fmt::print(" floor 1 fdatasync/put = {:.0f}/s\n", 1e6 / disk.fdatasync_4k_p50_us);
  const double ingest4_rate = data.ipc_bytes / ingests[3].seconds();
  fmt::print(
      "3. ingest, 1 writer {} = {}, 4 writers {} = {} of disk write+fdatasync {}; goal >= "
      "60%: 1 writer {}, 4 writers {}\n",
      FormatRate(ingest_rate), Pct(ingest_rate, disk.sync_write_bps), FormatRate(ingest4_rate),
      Pct(ingest4_rate, disk.sync_write_bps), FormatRate(disk.sync_write_bps),
      Met(ingest_rate >= 0.6 * disk.sync_write_bps),
      Met(ingest4_rate >= 0.6 * disk.sync_write_bps));
  fmt::print("4. lookup p50 (GetById key in base / in a generation / GetMany kAll):");
  for (const LookupRun& l : lookups) {
    fmt::print(" {} pending {:.0f}/{}/{:.0f} us;", l.pending, l.by_id_base.p50_us,
               l.pending > 0 ? fmt::format("{:.0f}", l.by_id_generation.p50_us) : "-",
               l.get_many_base.p50_us);
  }
  fmt::print("\n5. merge:");
  for (const MergeRun& m : merges) {
    fmt::print(" {} gens {} ({:.0f} rows/s);", m.generations, FormatRate(m.ipc_bytes / m.seconds),
               m.report.rows_merged / m.seconds);
  }
  fmt::print(
      "\n6. peak RSS ingesting {} rows of ~{:.0f} B: {:.0f} MiB (+{:.0f} MiB over the "
      "{:.0f} MiB before)\n",
      rss.rows, static_cast<double>(rss.ipc_bytes) / rss.rows, rss.hwm_after_kib / 1024.0,
      (rss.hwm_after_kib - rss.rss_before_kib) / 1024.0, rss.rss_before_kib / 1024.0);
  return Status::OK();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using strata::bench::Config;
  Config config;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--dir" && i + 1 < argc) {
      config.parent_dir = argv[++i];
    } else if (arg == "--quick") {
      config.quick = true;
    } else {
      fmt::print(stderr, "usage: {} [--dir DIR] [--quick]\n", argv[0]);
      return 2;
    }
  }
  if (config.quick) {
    config.floor_bytes = int64_t{32} << 20;
    config.fdatasync_samples = 50;
    config.put_samples = 100;
    config.writer_seconds = 1.0;
    config.ingest_rows = 4096;
    config.lookup_base_rows = 2000;
    config.lookups = 200;
    config.merge_generations = 8;
    config.merge_generation_rows = 256;
    config.rss_rows = 50000;
  }
  // A fresh directory under --dir (default /tmp), removed at the end.
  std::string pattern = config.parent_dir + "/lsm_bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    fmt::print(stderr, "mkdtemp {}: {}\n", pattern, std::strerror(errno));
    return 1;
  }
  strata::Status st = strata::bench::Run(config, pattern);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!st.ok()) {
    fmt::print(stderr, "lsm_bench failed: {}\n", st.ToString());
    return 1;
  }
  if (!strata::bench::g_problems.empty()) {
    fmt::print("\n{} PROBLEMS (wrong results):\n", strata::bench::g_problems.size());
    for (const auto& p : strata::bench::g_problems) fmt::print("  {}\n", p);
    return 1;
  }
  return 0;
}
