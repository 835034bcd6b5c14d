// strata in the compare suite: a StorageBase (the LSM store every typed store is built on)
// with the bench schema on a local-directory object store, driven as a bulk-ingest user
// would (large memtables, no merges during ingest, merge + compaction in W7); and the same
// through a GenericStore declared with the suite's schema ("strata-generic"), whose writes
// are JSON rows through its codec and whose reads are its List / Get / GetMany; and the
// plain store marked for replication with a follower running beside the writes
// ("strata-replicated"), for the write path's cost of replication in the same run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "../floor.h"
#include "engine.h"
#include "row_codec.h"
#include "strata/builder.h"
#include "strata/context_store.h"
#include "strata/expr.h"
#include "strata/generic_store.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/replication.h"
#include "strata/sql.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "strata/type.h"

namespace strata::bench::compare {
namespace {

using store::GenericStore;
using store::StorageBase;

constexpr int64_t kGetManyChunk = 1024;  // StorageBase::GetMany's key limit per call
constexpr const char* kRowsPrefix = "rows/";
constexpr int kMaxCompactions = 8;
constexpr const char* kNoSyncReason =
    "same store as strata; run only for the durability comparison";
constexpr const char* kReplicatedReason =
    "same store as strata; run only for the write path's cost of replication";
constexpr auto kFollowInterval = std::chrono::seconds(1);
constexpr const char* kVectorsPrefix = "vectors/";
constexpr size_t kVectorLoadRecords = 5000;
constexpr const char* kGenericVectorReason = "same context store as strata; W8 runs on strata only";
constexpr const char* kHybridPrefix = "hybrid/";
constexpr const char* kGenericHybridReason = "same context store as strata; W9 runs on strata only";

// A follower of the store at `prefix`: marks it for replication (replication::MarkBase),
// then every kFollowInterval exports what changed, publishes it under `bundles-<prefix>`
// and applies it to the replica at `replica-<prefix>` (replication::FollowOnce), until
// Stop. Lives in the engine's object store, so it competes for the same disk and cores.
class Follower {
 public:
  static Result<std::unique_ptr<Follower>> Start(std::shared_ptr<ObjectStore> objects,
                                                 const std::string& prefix) {
    replication::StoreLocation source{objects, prefix};
    STRATA_RETURN_IF_ERROR(replication::MarkBase(source, "compare").status());
    return std::unique_ptr<Follower>(new Follower(std::move(objects), prefix));
  }
  ~Follower() { Stop().IgnoreError(); }  // Stop's outcome was taken already, or is moot

  // Waits for the round under way to finish (a round after a large seal can take seconds),
  // stops, and returns the round's error, if one failed.
  Status Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    return error_;
  }
  // "N rounds, lag p50 X s max Y s" over the rounds that ran.
  std::string Summary() {
    std::vector<double> lags;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lags = lags_;
    }
    std::sort(lags.begin(), lags.end());
    if (lags.empty()) return "follower: no round finished";
    return fmt::format(
        "follower: {} rounds every {} s, export-to-applied lag p50 {:.2f} s max "
        "{:.2f} s",
        lags.size(), kFollowInterval.count(), lags[lags.size() / 2], lags.back());
  }

 private:
  Follower(std::shared_ptr<ObjectStore> objects, const std::string& prefix)
      : source_{objects, prefix}, replica_{objects, "replica-" + prefix} {
    thread_ = std::thread([this, prefix] {
      replication::FollowOptions options;
      options.consumer = "compare";
      std::unique_lock<std::mutex> lock(mu_);
      while (!stop_) {
        const auto next = std::chrono::steady_clock::now() + kFollowInterval;
        lock.unlock();
        Result<replication::FollowReport> round = Status::Internal("no round ran");
        try {
          round = replication::FollowOnce(source_, replica_, *source_.store, "bundles-" + prefix,
                                          options);
        } catch (const std::exception& e) {  // not past the thread: std::terminate
          round = Status::Internal(fmt::format("follow round threw: {}", e.what()));
        }
        lock.lock();
        if (!round.ok()) {
          error_ = round.status().WithContext("replication follower");
          return;
        }
        lags_.push_back(round->lag_seconds);
        wake_.wait_until(lock, next, [this] { return stop_; });
      }
    });
  }

  const replication::StoreLocation source_;
  const replication::StoreLocation replica_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  Status error_;
  std::vector<double> lags_;
  std::thread thread_;
};

SchemaPtr BenchSchema() {
  return schema({field("id", utf8(), false), field("rollout_id", utf8()),
                 field("policy_version", utf8()), field("role", utf8()),
                 field("sequence_order", int32()), field("reward", float32()),
                 field("input_tokens", list(int32())), field("output_tokens", list(int32())),
                 field("text", utf8())});
}

// `rows` cut into batches of `batch_rows`, each a one-batch Put.
Result<std::vector<RecordBatch>> EncodeBatches(const SchemaPtr& s,
                                               const std::vector<BenchRow>& rows,
                                               int64_t batch_rows) {
  std::vector<RecordBatch> out;
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, batch_rows));
  for (size_t first = 0; first < rows.size(); first += step) {
    STRATA_ASSIGN_OR_RETURN(
        RecordBatch batch, EncodeRows(s, rows.data() + first, std::min(step, rows.size() - first)));
    out.push_back(std::move(batch));
  }
  return out;
}

int64_t LogicalBytes(const std::vector<BenchRow>& rows) {
  int64_t n = 0;
  for (const BenchRow& r : rows) n += r.LogicalBytes();
  return n;
}

std::vector<expr::Scalar> Keys(const std::vector<std::string>& ids, size_t first, size_t n) {
  std::vector<expr::Scalar> keys;
  keys.reserve(n);
  for (size_t i = first; i < first + n; ++i) keys.push_back(expr::Scalar::String(ids[i]));
  return keys;
}

// id -> sequence_order of every row of `batch` (columns id, sequence_order).
Status CollectSequence(const RecordBatch& batch, std::unordered_map<std::string, int32_t>* out) {
  Array id = batch.GetColumnByName("id");
  Array seq = batch.GetColumnByName("sequence_order");
  if (!id.is_valid_handle() || !seq.is_valid_handle()) {
    return Status::Internal(fmt::format("GetMany returned columns without id / sequence_order: {}",
                                        batch.schema()->ToString()));
  }
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    (*out)[std::string(id.StringValue(i))] = seq.Value<int32_t>(i);
  }
  return Status::OK();
}

// W4 / W5 lines: "id\tsequence_order" or "id\t-", in request order.
void AppendLookupLines(const std::vector<std::string>& ids, size_t first, size_t n,
                       const std::unordered_map<std::string, int32_t>& found, std::string* text,
                       int64_t* count) {
  for (size_t i = first; i < first + n; ++i) {
    auto it = found.find(ids[i]);
    if (it == found.end()) {
      *text += ids[i] + "\t-\n";
    } else {
      *text += fmt::format("{}\t{}\n", ids[i], it->second);
      ++*count;
    }
  }
}

// A SQL result value as engine.h's W10 answer text.
Result<std::string> SqlValueText(const sql::Value& value) {
  if (std::holds_alternative<std::monostate>(value)) return std::string("NULL");
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  if (const auto* t = std::get_if<std::string>(&value)) return *t;
  return Status::Internal("W10: a query returned a BLOB; its answer has no text form for it");
}

// Library calls may throw (std::bad_alloc, std::system_error from threads): turn that into a
// Status at this boundary.
template <typename F>
auto Guard(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("strata {}: {}", what, e.what()));
  }
}

// `rows` cut into batches of `batch_rows`, each as JSON Lines (what strata-generic adds).
std::vector<std::string> EncodeJsonBatches(const std::vector<BenchRow>& rows, int64_t batch_rows) {
  std::vector<std::string> out;
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, batch_rows));
  for (size_t first = 0; first < rows.size(); first += step) {
    out.emplace_back();
    AppendRowsAsJsonLines(rows.data() + first, std::min(step, rows.size() - first), &out.back());
  }
  return out;
}

int64_t TotalSize(const std::vector<std::string>& texts) {
  int64_t n = 0;
  for (const std::string& t : texts) n += static_cast<int64_t>(t.size());
  return n;
}

class StrataEngine final : public Engine {
 public:
  // `generic`: through a GenericStore; `json`: its writes as JSON Lines through Add rather
  // than Arrow batches through AddBatches.
  // `replicated`: marked for replication, with a Follower during W1 and W2.
  // `linked`: recode_linked_generations off (the generations W1 seals by linking WAL
  // segments keep them until merged, docs/format/lsm.md §6.3 and §6.4).
  StrataEngine(bool fsync, bool generic, bool json, bool replicated = false, bool linked = false)
      : fsync_(fsync),
        generic_mode_(generic),
        json_(generic && json),
        replicated_(replicated && !generic),
        linked_(linked),
        schema_(BenchSchema()) {}

  std::string name() const override {
    if (generic_mode_) return json_ ? "strata-generic-json" : "strata-generic";
    if (replicated_) return "strata-replicated";
    if (linked_) return "strata-linked";
    return fsync_ ? "strata" : "strata-nosync";
  }

  std::string durability() const override {
    return fsync_ ? "fdatasync per Put (WAL group commit)" : "process crash only (no fsync)";
  }

  std::string settings() const override {
    const store::StorageBaseOptions o = Options("");
    const table::TableOptions& t = o.table_options;
    return std::string(generic_mode_
                           ? "GenericStore declared with the suite's schema (SchemaSpec: id "
                             "string not nullable, the other 8 columns nullable, token lists "
                             "list<int32>); W1, W2 and W6 write " +
                                 std::string(json_ ? "JSON Lines through GenericStore::Add (the "
                                                     "codec's parse timed with the writes)"
                                                   : "Arrow batches through "
                                                     "GenericStore::AddBatches") +
                                 ", W3 List, W4 Get, W5 and W6 GetMany; over a "
                           : std::string()) +
           (replicated_ ? std::string("strata's store marked for replication "
                                      "(replication::MarkBase) with a follower running during "
                                      "W1 and W2: replication::FollowOnce every 1 s exports what "
                                      "changed, publishes it to the same local object store and "
                                      "applies it to a replica there (one thread, the same disk); "
                                      "over a ")
                        : std::string()) +
           fmt::format(
               "StorageBase on a local object store (LocalObjectStoreOptions.sync={}, "
               "mmap_threshold={}); "
               "key id (utf8); seal_on_put=false (Put durable on return, visible after Flush); "
               "read_own_writes=false; max_memtable_rows={}, max_memtable_bytes={} MiB, "
               "max_unflushed_bytes={} MiB (memtables sealed in the background); "
               "group_commit_wait_micros={}; merge_after_generations={} (no merges during ingest; "
               "W7 merges), "
               "merge_max_generations={}, merge_max_bytes={} MiB; "
               "generation_delete_delay_seconds={}; link_wal_segments={}, "
               "recode_linked_generations={} (in the background at idle priority, once puts "
               "pause for {} s or after {} s); "
               "pending_generations_warn={}, "
               "pending_generations_max={}; table: compression={}, max_rows_per_fragment={}, "
               "max_bytes_per_fragment={} MiB, max_rows_per_batch={}, max_bytes_per_batch={} KiB, "
               "cache_bytes={} MiB; W7: Cleanup until no generation is pending, Compact with the "
               "default CompactionOptions until nothing to do (at most {}), then "
               "CleanupOldVersions of the base table (older_than=0, keep 1)",
               fsync_, LocalObjectStoreOptions{}.mmap_threshold, o.max_memtable_rows,
               o.max_memtable_bytes >> 20, o.max_unflushed_bytes >> 20, o.group_commit_wait_micros,
               o.merge_after_generations, o.merge_max_generations, o.merge_max_bytes >> 20,
               o.generation_delete_delay_seconds, o.link_wal_segments, o.recode_linked_generations,
               o.recode_quiet_seconds, o.recode_max_delay_seconds, o.pending_generations_warn,
               o.pending_generations_max,
               t.compression == ipc::Compression::kZstd ? "zstd" : "other", t.max_rows_per_fragment,
               t.max_bytes_per_fragment >> 20, t.max_rows_per_batch, t.max_bytes_per_batch >> 10,
               t.cache_bytes >> 20, kMaxCompactions);
  }

  std::string version() const override {
#ifdef STRATA_VERSION
    return std::string("strata ") + STRATA_VERSION + " (this tree)";
#else
    return "strata 0.1.0 (this tree)";
#endif
  }

  Status Open(const std::string& dir, const Dataset& /*data*/) override {
    return Guard("open", [&]() -> Status {
      STRATA_ASSIGN_OR_RETURN(objects_,
                              OpenLocalObjectStore(dir, LocalObjectStoreOptions{.sync = fsync_}));
      STRATA_RETURN_IF_ERROR(OpenRows(/*existing=*/false));
      // Claim the shard now so W1 times puts, not the writer's open.
      STRATA_RETURN_IF_ERROR(base()->OpenWriter());
      if (replicated_) {
        STRATA_ASSIGN_OR_RETURN(follower_, Follower::Start(objects_, kRowsPrefix));
      }
      return Status::OK();
    });
  }

  Result<StepResult> Ingest(const Dataset& data) override {
    return Guard("ingest", [&]() -> Result<StepResult> {
      STRATA_RETURN_IF_ERROR(CheckOpen());
      std::vector<RecordBatch> batches;
      std::vector<std::string> json;
      if (json_) {
        json = EncodeJsonBatches(data.rows, data.sizes.batch_rows);
      } else {
        STRATA_ASSIGN_OR_RETURN(batches,
                                EncodeBatches(WriteSchema(), data.rows, data.sizes.batch_rows));
      }
      const size_t count = json_ ? json.size() : batches.size();
      StepResult r;
      r.latencies_us.reserve(count);
      const auto start = Clock::now();
      for (size_t b = 0; b < count; ++b) {
        const auto put_start = Clock::now();
        STRATA_RETURN_IF_ERROR(Write(json, batches, b));
        r.latencies_us.push_back(Seconds(put_start) * 1e6);
      }
      const auto flush_start = Clock::now();
      STRATA_RETURN_IF_ERROR(base()->Flush().status());
      const double flush_seconds = Seconds(flush_start);
      r.seconds = Seconds(start);
      r.ops = static_cast<int64_t>(count);
      r.rows = static_cast<int64_t>(data.rows.size());
      r.bytes = data.LogicalBytes();
      STRATA_ASSIGN_OR_RETURN(int64_t pending, base()->PendingGenerations());
      // Untimed, as LanceDB's optimize after its W1: with recoding on, the background recodes
      // of the linked generations finish and the WAL bytes they held are deleted, so the bytes
      // on disk and the reads after W1 are those of the store at rest (no-ops otherwise).
      const auto settle_start = Clock::now();
      base()->WaitForRecodes();
      base()->WaitForPendingDeletions();
      const double settle_seconds = Seconds(settle_start);
      std::string follower;
      if (follower_ != nullptr) {
        const Status stopped = follower_->Stop();
        follower = "; " + follower_->Summary();
        follower_.reset();  // its error is W1's, not Close's too
        STRATA_RETURN_IF_ERROR(stopped);
      }
      const double put_seconds = r.seconds - flush_seconds;
      const int64_t json_bytes = TotalSize(json);
      r.note = fmt::format(
          "{} {} of {} rows ({:.2f} s: {:.1f}k rows/s durable in the WAL) + a final Flush "
          "(seal + publish, {:.2f} s) so every reader sees every row; timed together; {} "
          "generations pending after{}{}",
          r.ops,
          json_ ? fmt::format("Adds of JSON Lines ({:.1f} MiB of JSON, {:.1f} MiB/s through "
                              "the codec and the WAL)",
                              json_bytes / 1048576.0,
                              json_bytes / 1048576.0 / std::max(put_seconds, 1e-9))
                : std::string(generic_ ? "AddBatches" : "Puts"),
          data.sizes.batch_rows, put_seconds,
          static_cast<double>(r.rows) / std::max(put_seconds, 1e-9) / 1e3, flush_seconds, pending,
          Options("").recode_linked_generations
              ? fmt::format("; then, untimed: background recode of the linked "
                            "generations finished and their WAL bytes deleted {:.2f} s later",
                            settle_seconds)
              : std::string(),
          follower);
      return r;
    });
  }

  Result<StepResult> Puts(const Dataset& data, int writers) override {
    return Guard("puts", [&]() -> Result<StepResult> {
      const size_t per_writer = static_cast<size_t>(data.sizes.puts_per_writer);
      const size_t n = per_writer * static_cast<size_t>(writers);
      if (writers <= 0 || data.put_rows.size() < n) {
        return Status::InvalidArgument(
            fmt::format("W2 with {} writers needs {} put rows; the data set has {}", writers, n,
                        data.put_rows.size()));
      }
      std::vector<RecordBatch> rows;
      std::vector<std::string> json;
      rows.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        if (json_) {
          json.emplace_back();
          AppendRowsAsJsonLines(data.put_rows.data() + i, 1, &json.back());
          continue;
        }
        STRATA_ASSIGN_OR_RETURN(RecordBatch row,
                                EncodeRows(WriteSchema(), data.put_rows.data() + i, 1));
        rows.push_back(std::move(row));
      }
      // A store of its own per call (own prefix, same object store and durability).
      if (objects_ == nullptr) return Status::Internal("the strata store is not open");
      const std::string prefix = fmt::format("puts-{}w/", writers);
      std::unique_ptr<StorageBase> s;
      std::unique_ptr<GenericStore> g;
      if (generic_mode_) {
        STRATA_ASSIGN_OR_RETURN(g, GenericStore::Open(objects_, prefix, spec_, GenericOptions()));
      } else {
        STRATA_ASSIGN_OR_RETURN(s, StorageBase::Open(objects_, prefix, Options("")));
      }
      StorageBase& puts_base = g != nullptr ? g->base() : *s;
      STRATA_RETURN_IF_ERROR(puts_base.OpenWriter());
      std::unique_ptr<Follower> follower;
      if (replicated_) {
        STRATA_ASSIGN_OR_RETURN(follower, Follower::Start(objects_, prefix));
      }

      std::vector<std::vector<double>> us(static_cast<size_t>(writers));
      std::vector<Status> errors(static_cast<size_t>(writers));
      std::atomic<bool> failed{false};
      const auto start = Clock::now();
      {
        std::vector<std::jthread> pool;
        pool.reserve(static_cast<size_t>(writers));
        for (int w = 0; w < writers; ++w) {
          pool.emplace_back([&, w] {
            const size_t wi = static_cast<size_t>(w);
            us[wi].reserve(per_writer);
            for (size_t i = wi * per_writer;
                 i < (wi + 1) * per_writer && !failed && Seconds(start) < data.sizes.puts_seconds;
                 ++i) {
              const auto put_start = Clock::now();
              Status st = g == nullptr ? s->Put({rows[i]})
                          : json_      ? g->Add(json[i]).status()
                                       : g->AddBatches({rows[i]}).status();
              if (!st.ok()) {
                errors[wi] = st;
                failed = true;
                return;
              }
              us[wi].push_back(Seconds(put_start) * 1e6);
            }
          });
        }
      }
      StepResult r;
      r.seconds = Seconds(start);
      for (const Status& st : errors) STRATA_RETURN_IF_ERROR(st);
      if (follower != nullptr) STRATA_RETURN_IF_ERROR(follower->Stop());
      for (auto& v : us) r.latencies_us.insert(r.latencies_us.end(), v.begin(), v.end());
      r.ops = static_cast<int64_t>(r.latencies_us.size());
      r.rows = r.ops;
      for (size_t w = 0; w < us.size(); ++w) {
        for (size_t i = 0; i < us[w].size(); ++i) {
          r.bytes += data.put_rows[w * per_writer + i].LogicalBytes();
        }
      }
      // Seals the rows into a generation (untimed).
      STRATA_RETURN_IF_ERROR(g != nullptr ? g->Close() : s->Close());
      r.note = fmt::format(
          "{} of 1 row per call, {} thread(s) on one handle (concurrent puts "
          "share WAL syncs); own store at prefix puts-{}w/{}",
          generic_mode_ ? (json_ ? "GenericStore::Add (JSON)" : "GenericStore::AddBatches")
                        : "StorageBase::Put",
          writers, writers, follower != nullptr ? "; " + follower->Summary() : std::string());
      return r;
    });
  }

  Result<StepResult> Scan(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    return Guard("scan", [&]() -> Result<StepResult> {
      STRATA_RETURN_IF_ERROR(CheckOpen());
      store::ScanRequest request;
      request.columns = data.scan.columns;
      request.filter = data.scan.Predicate();
      const auto start = Clock::now();
      std::vector<RecordBatch> batches;
      if (generic_) {
        store::GenericListRequest list;
        list.columns = request.columns;
        list.filter = request.filter;
        STRATA_ASSIGN_OR_RETURN(batches, generic_->List(list));
      } else {
        STRATA_ASSIGN_OR_RETURN(batches, store_->Scan(request));
      }
      StepResult r;
      r.seconds = Seconds(start);
      r.ops = 1;
      std::vector<std::pair<std::string, std::string>> lines;  // id -> line
      for (const RecordBatch& b : batches) {
        Array id = b.GetColumnByName("id");
        Array seq = b.GetColumnByName("sequence_order");
        Array reward = b.GetColumnByName("reward");
        if (!id.is_valid_handle() || !seq.is_valid_handle() || !reward.is_valid_handle()) {
          return Status::Internal(fmt::format("scan returned columns {}, expected {}",
                                              b.schema()->ToString(),
                                              fmt::join(data.scan.columns, ", ")));
        }
        for (int64_t i = 0; i < b.num_rows(); ++i) {
          std::string key(id.StringValue(i));
          const long reward_k = std::lround(static_cast<double>(reward.Value<float>(i)) * 1024.0);
          lines.emplace_back(key,
                             fmt::format("{}\t{}\t{}\n", key, seq.Value<int32_t>(i), reward_k));
        }
      }
      std::sort(lines.begin(), lines.end());
      std::string text;
      for (const auto& [key, line] : lines) text += line;
      r.rows = static_cast<int64_t>(lines.size());
      r.answer = Answer{r.rows, Sha256Hex(text)};
      r.note = fmt::format("{}, filter \"{}\", columns {} ({} batches)",
                           generic_ ? "GenericStore::List" : "StorageBase::Scan", request.filter,
                           fmt::join(request.columns, ","), batches.size());
      return r;
    });
  }

  Result<StepResult> Lookup(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    return Guard("lookup", [&]() -> Result<StepResult> {
      STRATA_RETURN_IF_ERROR(CheckOpen());
      const std::vector<std::string>& ids = data.lookup_ids;
      const std::vector<std::string> columns = {"id", "sequence_order"};
      std::vector<std::vector<expr::Scalar>> keys;
      keys.reserve(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) keys.push_back(Keys(ids, i, 1));
      StepResult r;
      r.latencies_us.reserve(ids.size());
      std::unordered_map<std::string, int32_t> found;
      const auto start = Clock::now();
      for (size_t i = 0; i < ids.size(); ++i) {
        // Nothing but the read itself between the clock's two looks.
        const auto get_start = Clock::now();
        STRATA_ASSIGN_OR_RETURN(RecordBatch b, generic_ ? generic_->Get(ids[i], columns)
                                                        : store_->GetMany(keys[i], columns));
        r.latencies_us.push_back(Seconds(get_start) * 1e6);
        STRATA_RETURN_IF_ERROR(CollectSequence(b, &found));
      }
      r.seconds = Seconds(start);
      std::string text;
      int64_t count = 0;
      AppendLookupLines(ids, 0, ids.size(), found, &text, &count);
      r.ops = static_cast<int64_t>(ids.size());
      r.rows = count;
      r.answer = Answer{count, Sha256Hex(text)};
      STRATA_ASSIGN_OR_RETURN(int64_t pending, base()->PendingGenerations());
      r.note = fmt::format(
          "{}, columns id, sequence_order; {}",
          generic_ ? "GenericStore::Get of each id"
                   : "StorageBase::GetMany of 1 key per call (strata's point read)",
          pending > 0 ? fmt::format("{} generations pending (merged only in W7)", pending)
                      : std::string("every row in the base table"));
      return r;
    });
  }

  Result<StepResult> GetMany(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    return Guard("get_many", [&]() -> Result<StepResult> {
      STRATA_RETURN_IF_ERROR(CheckOpen());
      const std::vector<std::string> columns = {"id", "sequence_order"};
      std::vector<std::vector<expr::Scalar>> keys;
      for (const auto& ids : data.get_many_ids) {
        if (static_cast<int64_t>(ids.size()) > kGetManyChunk) {
          return Status::InvalidArgument(
              fmt::format("W5 batch of {} ids; StorageBase::GetMany takes at most {}", ids.size(),
                          kGetManyChunk));
        }
        keys.push_back(Keys(ids, 0, ids.size()));
      }
      StepResult r;
      std::vector<RecordBatch> results;
      results.reserve(keys.size());
      const auto start = Clock::now();
      for (const auto& k : keys) {
        const auto get_start = Clock::now();
        STRATA_ASSIGN_OR_RETURN(
            RecordBatch b, generic_ ? generic_->GetMany(data.get_many_ids[results.size()], columns)
                                    : store_->GetMany(k, columns));
        r.latencies_us.push_back(Seconds(get_start) * 1e6);
        results.push_back(std::move(b));
      }
      r.seconds = Seconds(start);
      std::string text;
      int64_t count = 0;
      for (size_t i = 0; i < results.size(); ++i) {
        std::unordered_map<std::string, int32_t> found;
        STRATA_RETURN_IF_ERROR(CollectSequence(results[i], &found));
        const auto& ids = data.get_many_ids[i];
        AppendLookupLines(ids, 0, ids.size(), found, &text, &count);
        r.rows += results[i].num_rows();
      }
      r.ops = static_cast<int64_t>(keys.size());
      r.answer = Answer{count, Sha256Hex(text)};
      r.note =
          fmt::format("{}::GetMany of each batch's ids in one call, columns id, sequence_order",
                      generic_ ? "GenericStore" : "StorageBase");
      return r;
    });
  }

  Result<StepResult> Overwrite(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    return Guard("overwrite", [&]() -> Result<StepResult> {
      STRATA_RETURN_IF_ERROR(CheckOpen());
      const std::vector<BenchRow>& rows = data.overwrite_rows;
      std::vector<RecordBatch> batches;
      std::vector<std::string> json;
      if (json_) {
        json = EncodeJsonBatches(rows, data.sizes.batch_rows);
      } else {
        STRATA_ASSIGN_OR_RETURN(batches, EncodeBatches(WriteSchema(), rows, data.sizes.batch_rows));
      }
      const size_t count = json_ ? json.size() : batches.size();
      std::vector<std::string> ids;
      ids.reserve(rows.size());
      for (const BenchRow& row : rows) ids.push_back(row.id);
      const std::vector<std::string> columns = {"id", "sequence_order"};

      StepResult r;
      const auto start = Clock::now();
      for (size_t b = 0; b < count; ++b) STRATA_RETURN_IF_ERROR(Write(json, batches, b));
      STRATA_RETURN_IF_ERROR(base()->Flush().status());
      const double write_seconds = Seconds(start);
      std::unordered_map<std::string, int32_t> found;
      found.reserve(ids.size());
      for (size_t first = 0; first < ids.size(); first += kGetManyChunk) {
        const size_t n = std::min<size_t>(kGetManyChunk, ids.size() - first);
        STRATA_ASSIGN_OR_RETURN(
            RecordBatch b,
            generic_ ? generic_->GetMany(
                           std::vector<std::string>(ids.begin() + first, ids.begin() + first + n),
                           columns)
                     : store_->GetMany(Keys(ids, first, n), columns));
        STRATA_RETURN_IF_ERROR(CollectSequence(b, &found));
      }
      r.seconds = Seconds(start);

      std::string text;
      int64_t current = 0;
      for (const BenchRow& row : rows) {
        auto it = found.find(row.id);
        if (it == found.end()) {
          text += row.id + "\t-\n";
          continue;
        }
        text += fmt::format("{}\t{}\n", row.id, it->second);
        if (it->second == row.sequence_order) ++current;
      }
      r.ops = static_cast<int64_t>(count);
      r.rows = static_cast<int64_t>(rows.size());
      r.bytes = LogicalBytes(rows);
      r.answer = Answer{current, Sha256Hex(text)};
      STRATA_ASSIGN_OR_RETURN(r.total_rows, base()->Count());
      r.note = fmt::format(
          "{} {} of {} rows + Flush {:.2f} s, then GetMany in chunks of {} {:.2f} s", count,
          json_ ? "Adds (JSON Lines)" : (generic_ ? "AddBatches" : "Puts"), data.sizes.batch_rows,
          write_seconds, kGetManyChunk, r.seconds - write_seconds);
      return r;
    });
  }

  Result<StepResult> Compact() override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    return Guard("compact", [&]() -> Result<StepResult> {
      STRATA_RETURN_IF_ERROR(CheckOpen());
      StepResult r;
      STRATA_ASSIGN_OR_RETURN(int64_t pending_before, base()->PendingGenerations());
      const auto start = Clock::now();
      int passes = 0;
      int64_t merged_rows = 0;
      int reclaimed = 0;
      for (;;) {
        STRATA_ASSIGN_OR_RETURN(int64_t pending, base()->PendingGenerations());
        if (pending == 0) break;
        if (++passes > 10000) {
          return Status::Internal(
              fmt::format("{} generations still pending after 10000 Cleanup passes", pending));
        }
        STRATA_ASSIGN_OR_RETURN(store::MergeReport m, base()->Cleanup());
        // A merge that committed and then failed a later step is not a clean merge to time.
        if (!m.complete()) return m.follow_up.WithContext("merge committed, then failed");
        if (m.generations_reclaimed == 0) {
          return Status::Internal(
              fmt::format("Cleanup merged nothing with {} generations pending", pending));
        }
        merged_rows += m.rows_merged;
        reclaimed += m.generations_reclaimed;
      }
      const double merge_seconds = Seconds(start);
      const auto compact_start = Clock::now();
      table::CompactionOptions compaction;
      int compactions = 0;
      int fragments_removed = 0, fragments_added = 0;
      bool steady = false;
      while (compactions < kMaxCompactions) {
        STRATA_ASSIGN_OR_RETURN(table::CompactionResult c, base()->Compact(compaction));
        if (c.version == 0) {
          steady = true;
          break;
        }
        ++compactions;
        fragments_removed += c.fragments_removed;
        fragments_added += c.fragments_added;
      }
      const double compact_seconds = Seconds(compact_start);
      // Merged generations' files go after generation_delete_delay_seconds on a background
      // thread, and the base keeps every old version's files until cleaned up: closing the
      // handle runs the queued deletions now, and CleanupOldVersions drops what only old
      // versions use. Then reopen for the remaining workloads.
      const auto cleanup_start = Clock::now();
      STRATA_RETURN_IF_ERROR(base()->Close());
      store_.reset();
      generic_.reset();
      STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> base,
                              table::Table::Open(objects_, kRowsPrefix));
      table::CleanupOptions cleanup;
      cleanup.older_than_micros = 0;
      cleanup.keep_at_least = 1;
      STRATA_ASSIGN_OR_RETURN(table::CleanupResult removed, base->CleanupOldVersions(cleanup));
      base.reset();
      const double cleanup_seconds = Seconds(cleanup_start);
      r.seconds = Seconds(start);
      STRATA_RETURN_IF_ERROR(OpenRows(/*existing=*/true));
      r.ops = passes + compactions;
      r.rows = merged_rows;
      r.note = fmt::format(
          "merge {:.2f} s ({} Cleanup passes, {} of {} generations, {} rows into the base); "
          "Compact {:.2f} s ({} commits{}, {} -> {} fragments); "
          "delete merged generations + "
          "CleanupOldVersions {:.2f} s ({} versions, {} files, {:.1f} MiB)",
          merge_seconds, passes, reclaimed, pending_before, merged_rows, compact_seconds,
          compactions,
          steady ? "" : fmt::format(" (stopped: still not steady after {})", compactions),
          fragments_removed, fragments_added, cleanup_seconds, removed.versions_removed,
          removed.files_removed, removed.bytes_removed / 1048576.0);
      return r;
    });
  }

  Result<StepResult> VectorSearch(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    if (generic_mode_) return StepResult::Unsupported(kGenericVectorReason);
    return Guard("W8 vector", [&]() -> Result<StepResult> { return DoVector(data); });
  }

  Result<StepResult> HybridRetrieve(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    if (generic_mode_) return StepResult::Unsupported(kGenericHybridReason);
    return Guard("W9 hybrid", [&]() -> Result<StepResult> { return DoHybrid(data); });
  }

  Result<StepResult> Sql(const Dataset& data) override {
    if (const char* reason = WritesOnly()) return StepResult::Unsupported(reason);
    return Guard("W10 sql", [&]() -> Result<StepResult> { return DoSql(data); });
  }

  Status Close() override {
    return Guard("close", [&]() -> Status {
      Status st = follower_ != nullptr ? follower_->Stop() : Status::OK();
      follower_.reset();
      Status closed = base() != nullptr ? base()->Close() : Status::OK();
      if (st.ok()) st = closed;
      closed = vectors_ != nullptr ? vectors_->Close() : Status::OK();
      if (st.ok()) st = closed;
      vectors_.reset();
      closed = hybrid_ != nullptr ? hybrid_->Close() : Status::OK();
      if (st.ok()) st = closed;
      hybrid_.reset();
      store_.reset();
      generic_.reset();
      objects_.reset();
      return st;
    });
  }

 private:
  Status CheckOpen() const {
    if (base() == nullptr) return Status::Internal("the strata store is not open (Open failed?)");
    return Status::OK();
  }

  // The schema of the batches the writes send: the generic store's (its spec's nullability
  // and list item field), or the suite's.
  SchemaPtr WriteSchema() const { return generic_ != nullptr ? generic_->schema() : schema_; }

  // Writes batch `b` of a bulk write: json[b] through GenericStore::Add, or batches[b]
  // through GenericStore::AddBatches or StorageBase::Put.
  Status Write(const std::vector<std::string>& json, const std::vector<RecordBatch>& batches,
               size_t b) {
    if (json_) return generic_->Add(json[b]).status();
    if (generic_) return generic_->AddBatches({batches[b]}).status();
    return store_->Put({batches[b]});
  }

  // Merges every pending generation of `context` into its base table, then compacts: the
  // steady state a reader of a loaded store sees (W8, W9).
  static Status MergeAndCompact(store::ContextStore& context, const char* workload) {
    STRATA_RETURN_IF_ERROR(context.Flush().status());
    StorageBase& base = context.base();
    for (;;) {
      STRATA_ASSIGN_OR_RETURN(int64_t pending, base.PendingGenerations());
      if (pending == 0) break;
      STRATA_ASSIGN_OR_RETURN(store::MergeReport m, base.Cleanup());
      if (!m.complete()) {
        return m.follow_up.WithContext(fmt::format("{} merge committed, then failed", workload));
      }
      if (m.generations_reclaimed == 0) {
        return Status::Internal(fmt::format(
            "{}: Cleanup merged nothing with {} generations pending", workload, pending));
      }
    }
    for (int c = 0; c < kMaxCompactions; ++c) {
      STRATA_ASSIGN_OR_RETURN(table::CompactionResult compacted, base.Compact());
      if (compacted.version == 0) break;
    }
    return Status::OK();
  }

  // The bytes of the segments of `context`'s base-table indexes of type `type`.
  static Result<int64_t> IndexBytes(const store::ContextStore& context, std::string_view type) {
    STRATA_ASSIGN_OR_RETURN(table::TableDescription description,
                            context.base().base_table()->Describe());
    int64_t bytes = 0;
    for (const table::IndexInfo& index : description.indexes) {
      for (const table::IndexSegmentInfo& segment : index.segments) {
        if (index.type == type) bytes += segment.size;
      }
    }
    return bytes;
  }

  // A ContextStore of the engine's object store at `prefix` for `dim`-float embeddings (l2).
  Result<std::unique_ptr<store::ContextStore>> OpenContext(const char* prefix, int dim) const {
    store::ContextStoreOptions options;
    options.base = Options("");
    options.base.schema = nullptr;
    options.base.key_column.clear();
    // Default table compression: float32 noise saves less than min_space_savings under zstd,
    // so the vector buffers are stored raw and no query decompresses them.
    options.embedding_dim = dim;
    // W8 builds the vector index and W9 the text index after the load, timed on their own.
    options.vector_index.enabled = false;
    options.text_index.enabled = false;
    options.distance_metric = store::DistanceMetric::kL2;
    return store::ContextStore::Open(objects_, prefix, options);
  }

  // W9: the records go into a ContextStore (untimed, as W8's vectors; the topic as metadata
  // JSON {"topic": "topic-N"}), then each query is one Retrieve with the text, the vector,
  // limit top_k and the metadata filter topic = the query's.
  Result<StepResult> DoHybrid(const Dataset& data) {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    const HybridData& h = data.hybrid;
    const int dim = data.sizes.hybrid_dim;
    const size_t n = h.ids.size();
    const size_t queries = h.query_texts.size();
    if (dim < 1 || h.vectors.size() != n * static_cast<size_t>(dim) ||
        h.query_vectors.size() != queries * static_cast<size_t>(dim)) {
      return Status::InvalidArgument(fmt::format(
          "W9: {} vector floats and {} query floats do not fit {} records of dimension {}",
          h.vectors.size(), h.query_vectors.size(), n, dim));
    }
    const auto load_start = Clock::now();
    if (hybrid_ == nullptr) {
      STRATA_ASSIGN_OR_RETURN(hybrid_, OpenContext(kHybridPrefix, dim));
      for (size_t first = 0; first < n; first += kVectorLoadRecords) {
        std::vector<store::ContextRecord> records;
        for (size_t i = first; i < std::min(n, first + kVectorLoadRecords); ++i) {
          store::ContextRecord r;
          r.id = h.ids[i];
          r.run_id = "w9";
          r.text_payload = h.texts[i];
          r.metadata = fmt::format(R"({{"topic":"{}"}})", HybridTopicName(h.topics[i]));
          const float* v = h.vectors.data() + i * static_cast<size_t>(dim);
          r.embedding = std::vector<float>(v, v + dim);
          records.push_back(std::move(r));
        }
        STRATA_RETURN_IF_ERROR(hybrid_->Add(std::move(records)).status());
      }
      STRATA_RETURN_IF_ERROR(MergeAndCompact(*hybrid_, "W9"));
    }
    const double load_seconds = Seconds(load_start);
    std::vector<store::RetrieveOptions> requests(queries);
    for (size_t q = 0; q < queries; ++q) {
      store::RetrieveOptions& o = requests[q];
      o.text = h.query_texts[q];
      const float* v = h.query_vectors.data() + q * static_cast<size_t>(dim);
      o.vector = std::vector<float>(v, v + dim);
      o.limit = data.sizes.top_k;
      o.filters.metadata["topic"] = store::RecordFilters::MetadataMatch{
          store::RecordFilters::MetadataMatch::Kind::kEquals,
          fmt::format(R"("{}")", HybridTopicName(h.query_topics[q]))};
    }
    // Untimed for the table: the same queries without the text index (every record's text
    // tokenized per query), for the note; then the index is built, timed on its own.
    std::vector<double> unindexed_us;
    std::vector<std::vector<std::string>> unindexed_ids;
    for (size_t q = 0; q < queries; ++q) {
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(std::vector<store::RetrieveResult> found,
                              hybrid_->Retrieve(requests[q]));
      unindexed_us.push_back(Seconds(t0) * 1e6);
      std::vector<std::string>& ids = unindexed_ids.emplace_back();
      for (const store::RetrieveResult& f : found) ids.push_back(f.record.id);
    }
    const Latency unindexed = Summarize(std::move(unindexed_us));
    const auto build_start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(int indexed, hybrid_->IndexText());
    const double build_seconds = Seconds(build_start);
    STRATA_ASSIGN_OR_RETURN(int64_t index_bytes, IndexBytes(*hybrid_, "inverted"));
    // One untimed query loads the indexes.
    STRATA_RETURN_IF_ERROR(hybrid_->Retrieve(requests[0]).status());

    StepResult r;
    const auto start = Clock::now();
    for (size_t q = 0; q < queries; ++q) {
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(std::vector<store::RetrieveResult> found,
                              hybrid_->Retrieve(requests[q]));
      r.latencies_us.push_back(Seconds(t0) * 1e6);
      std::vector<std::string>& ids = r.result_ids.emplace_back();
      for (const store::RetrieveResult& f : found) ids.push_back(f.record.id);
    }
    r.seconds = Seconds(start);
    if (r.result_ids != unindexed_ids) {
      return Status::Internal("W9: results through the text index differ from those without it");
    }
    r.ops = static_cast<int64_t>(queries);
    r.rows = static_cast<int64_t>(queries) * data.sizes.top_k;
    r.note = fmt::format(
        "timed: ContextStore::Retrieve(text, vector, limit {}, metadata filter topic) per query "
        "(exact: BM25 over the matching records' text, token counts from the per-fragment text "
        "index, and every matching record's L2 distance, fused by RRF k=60); untimed: load of {} "
        "records (text, {} float32 dims, metadata "
        "{{\"topic\": ...}}) into a ContextStore (as W8: l2, default table compression, Add of {} "
        "records at a time, merged into the base table and compacted) {:.1f} s. Text index: "
        "{} fragment(s) built in {:.2f} s, {:.1f} MiB; without it (every text tokenized per "
        "query, same answers) p50 {:.0f} us p99 {:.0f} us",
        data.sizes.top_k, n, dim, kVectorLoadRecords, load_seconds, indexed, build_seconds,
        static_cast<double>(index_bytes) / 1048576.0, unindexed.p50_us, unindexed.p99_us);
    return r;
  }

  // W10: each query through strata's public SQL API over the rows store (the generic store's
  // StorageBase for strata-generic): SQLite over the virtual table `records`, which streams
  // the store's batches with the query's filter and columns pushed down.
  Result<StepResult> DoSql(const Dataset& data) {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    sql::QueryOptions options;
    options.max_rows = 0;                          // every result row
    std::map<std::string, sql::QueryStats> stats;  // by query text: its last run's
    STRATA_ASSIGN_OR_RETURN(
        StepResult r,
        row_codec::TimedSql(
            data, sql::kRecordsTable,
            [&](const std::string& text) -> Result<std::vector<std::vector<std::string>>> {
              sql::QueryStats run_stats;
              STRATA_ASSIGN_OR_RETURN(sql::QueryResult result,
                                      sql::Query(*base(), text, options, &run_stats));
              if (result.truncated) {
                return Status::Internal(fmt::format("W10: '{}' was truncated", text));
              }
              std::vector<std::vector<std::string>> rows;
              for (const std::vector<sql::Value>& row : result.rows) {
                std::vector<std::string>& out = rows.emplace_back();
                for (const sql::Value& value : row) {
                  STRATA_ASSIGN_OR_RETURN(std::string v, SqlValueText(value));
                  out.push_back(std::move(v));
                }
              }
              stats[text] = std::move(run_stats);
              return rows;
            }));
    std::vector<std::string> per_query;
    for (size_t q = 0; q < data.sql.queries.size(); ++q) {
      const sql::QueryStats& st = stats[data.sql.Query(q, sql::kRecordsTable)];
      per_query.push_back(
          fmt::format("Q{} handed SQLite {} of {} rows, columns {}, filter pushed to strata: {}",
                      q + 1, st.rows_scanned, data.rows.size(), fmt::join(st.columns_read, ","),
                      st.pushed_filters.empty() || st.pushed_filters == std::vector<std::string>{""}
                          ? std::string("none")
                          : fmt::format("{}", fmt::join(st.pushed_filters, " | "))));
    }
    r.note = fmt::format(
        "strata::sql::Query per run (max_rows 0){}: SQLite over the virtual table `records` "
        "streaming the store's batches; {}",
        generic_ ? " over GenericStore::base()" : "", fmt::join(per_query, "; "));
    return r;
  }

  // W8: the vectors go into a ContextStore (untimed: Add in batches, Flush, merge every
  // generation into the base table, compact), then each query is one exact Search.
  Result<StepResult> DoVector(const Dataset& data) {
    STRATA_RETURN_IF_ERROR(CheckOpen());
    const int dim = data.sizes.vector_dim;
    const size_t n = data.vector_ids.size();
    const size_t queries = data.queries.size() / static_cast<size_t>(std::max(dim, 1));
    if (dim < 1 || data.vectors.size() != n * static_cast<size_t>(dim) ||
        data.queries.size() != queries * static_cast<size_t>(dim)) {
      return Status::InvalidArgument(
          fmt::format("W8: {} vector floats and {} query floats do not fit {} ids of dimension {}",
                      data.vectors.size(), data.queries.size(), n, dim));
    }
    const auto load_start = Clock::now();
    if (vectors_ == nullptr) {
      STRATA_ASSIGN_OR_RETURN(vectors_, OpenContext(kVectorsPrefix, dim));
      for (size_t first = 0; first < n; first += kVectorLoadRecords) {
        std::vector<store::ContextRecord> records;
        for (size_t i = first; i < std::min(n, first + kVectorLoadRecords); ++i) {
          store::ContextRecord r;
          r.id = data.vector_ids[i];
          r.run_id = "w8";
          const float* v = data.vectors.data() + i * static_cast<size_t>(dim);
          r.embedding = std::vector<float>(v, v + dim);
          records.push_back(std::move(r));
        }
        STRATA_RETURN_IF_ERROR(vectors_->Add(std::move(records)).status());
      }
      STRATA_RETURN_IF_ERROR(MergeAndCompact(*vectors_, "W8"));
    }
    const double load_seconds = Seconds(load_start);
    std::vector<std::vector<float>> query_vectors;
    for (size_t q = 0; q < queries; ++q) {
      const float* v = data.queries.data() + q * static_cast<size_t>(dim);
      query_vectors.emplace_back(v, v + dim);
    }
    StepResult r;
    std::vector<std::vector<std::string>> results(queries);
    const auto start = Clock::now();
    for (size_t q = 0; q < queries; ++q) {
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(
          std::vector<store::SearchResult> found,
          vectors_->Search(query_vectors[q], data.sizes.top_k, {}, {}, store::SearchMode::kExact));
      for (const store::SearchResult& f : found) results[q].push_back(f.record.id);
      r.latencies_us.push_back(Seconds(t0) * 1e6);
    }
    r.seconds = Seconds(start);
    r.ops = static_cast<int64_t>(queries);
    r.rows = static_cast<int64_t>(queries) * data.sizes.top_k;
    r.answer = row_codec::VectorAnswer(results);

    // The approximate index: build (timed on its own), its size, then the same queries through
    // it, each answer compared with the exact one (recall@k).
    const auto build_start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(int indexed, vectors_->IndexVectors());
    const double build_seconds = Seconds(build_start);
    STRATA_ASSIGN_OR_RETURN(int64_t index_bytes, IndexBytes(*vectors_, "ivf_flat"));
    // One untimed query loads the indexes.
    STRATA_RETURN_IF_ERROR(vectors_->Search(query_vectors[0], data.sizes.top_k).status());
    int64_t hits = 0;
    int64_t wanted = 0;
    std::vector<double> ann_us;
    const auto ann_start = Clock::now();
    for (size_t q = 0; q < queries; ++q) {
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(std::vector<store::SearchResult> found,
                              vectors_->Search(query_vectors[q], data.sizes.top_k));
      ann_us.push_back(Seconds(t0) * 1e6);
      const std::set<std::string> truth(results[q].begin(), results[q].end());
      for (const store::SearchResult& f : found) hits += truth.count(f.record.id);
      wanted += static_cast<int64_t>(results[q].size());
    }
    const double ann_seconds = Seconds(ann_start);
    std::sort(ann_us.begin(), ann_us.end());
    r.note = fmt::format(
        "timed: ContextStore::Search(query, top_k, kExact) per query (every visible row scored "
        "by the SIMD kernel, then the winners' records read); untimed: load of {} x {} "
        "into a ContextStore (l2, default table compression, Add of {} records at a time, "
        "Flush, merged into the base table and compacted) {:.1f} s. ANN: IVF-Flat (faiss, "
        "sqrt(rows) lists per fragment, {} probes) over {} fragment(s) built in {:.1f} s, "
        "{:.1f} MiB; {:.1f} queries/s ({:.1f}x exact), p50 {:.0f} us, recall@{} {:.3f} vs exact",
        n, dim, kVectorLoadRecords, load_seconds, store::VectorIndexOptions().probes, indexed,
        build_seconds, static_cast<double>(index_bytes) / 1048576.0,
        static_cast<double>(queries) / ann_seconds,
        (static_cast<double>(queries) / ann_seconds) / (static_cast<double>(queries) / r.seconds),
        ann_us.empty() ? 0.0 : ann_us[ann_us.size() / 2], data.sizes.top_k,
        wanted == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(wanted));
    return r;
  }

  // The StorageBase every workload's maintenance (Flush, merges, counts) goes through: the
  // engine's own, or the generic store's.
  StorageBase* base() const { return generic_ != nullptr ? &generic_->base() : store_.get(); }

  // Opens the rows store at kRowsPrefix: a StorageBase, or a GenericStore created from the
  // suite's spec (reopened with its persisted spec when `existing`).
  Status OpenRows(bool existing) {
    if (!generic_mode_) {
      STRATA_ASSIGN_OR_RETURN(store_, StorageBase::Open(objects_, kRowsPrefix, Options("")));
      return Status::OK();
    }
    if (existing) {
      STRATA_ASSIGN_OR_RETURN(generic_,
                              GenericStore::OpenExisting(objects_, kRowsPrefix, GenericOptions()));
      return Status::OK();
    }
    STRATA_ASSIGN_OR_RETURN(spec_, store::SchemaSpec::FromJson(BenchSchemaSpecJson()));
    STRATA_ASSIGN_OR_RETURN(generic_,
                            GenericStore::Open(objects_, kRowsPrefix, spec_, GenericOptions()));
    return Status::OK();
  }

  // Options() without the knobs a generic store sets from its spec.
  store::GenericStoreOptions GenericOptions() const {
    store::GenericStoreOptions o;
    o.base = Options("");
    o.base.schema = nullptr;
    o.base.key_column.clear();
    return o;
  }

  // Bulk ingest: memtables bounded by bytes (256 MiB: ~140k rows of the bench's ~1.9 KB) so
  // 1M rows make a handful of generations; sealing runs in the background beside the puts.
  // No count-triggered merges: everything pending is merged in W7.
  store::StorageBaseOptions Options(std::string shard_id) const {
    store::StorageBaseOptions o;
    o.schema = schema_;
    o.key_column = "id";
    o.shard_id = std::move(shard_id);
    o.max_memtable_rows = 1'000'000;
    o.max_memtable_bytes = int64_t{256} << 20;
    o.max_unflushed_bytes = int64_t{1} << 30;
    o.merge_after_generations = 0;
    o.recode_linked_generations = !linked_;
    return o;
  }

  // Why a read workload does not run on this engine (it runs W1 and W2 only), or nullptr.
  const char* WritesOnly() const {
    if (!fsync_) return kNoSyncReason;
    if (replicated_) return kReplicatedReason;
    return nullptr;
  }

  const bool fsync_;
  const bool generic_mode_;
  const bool json_;
  const bool replicated_;
  const bool linked_;
  std::unique_ptr<Follower> follower_;  // strata-replicated, during W1
  const SchemaPtr schema_;
  std::shared_ptr<ObjectStore> objects_;
  std::unique_ptr<StorageBase> store_;            // strata, strata-nosync
  store::SchemaSpec spec_;                        // strata-generic
  std::unique_ptr<GenericStore> generic_;         // strata-generic, strata-generic-json
  std::unique_ptr<store::ContextStore> vectors_;  // W8
  std::unique_ptr<store::ContextStore> hybrid_;   // W9
};

}  // namespace

std::unique_ptr<Engine> MakeStrataEngine(bool fsync) {
  return std::make_unique<StrataEngine>(fsync, /*generic=*/false, /*json=*/false);
}

std::unique_ptr<Engine> MakeStrataReplicatedEngine() {
  return std::make_unique<StrataEngine>(/*fsync=*/true, /*generic=*/false, /*json=*/false,
                                        /*replicated=*/true);
}

std::unique_ptr<Engine> MakeStrataLinkedEngine() {
  return std::make_unique<StrataEngine>(/*fsync=*/true, /*generic=*/false, /*json=*/false,
                                        /*replicated=*/false, /*linked=*/true);
}

std::unique_ptr<Engine> MakeStrataGenericEngine(bool json) {
  return std::make_unique<StrataEngine>(/*fsync=*/true, /*generic=*/true, json);
}

}  // namespace strata::bench::compare
