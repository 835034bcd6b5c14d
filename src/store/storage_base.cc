// StorageBase: the resident shard writer with its fence retry, newest-wins reads that
// survive concurrent merges, merge triggers and compaction over one base table
// (include/strata/storage_base.h).
#include "strata/storage_base.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "lsm/generation.h"
#include "lsm/key.h"
#include "lsm/layout.h"
#include "lsm/lsm_read.h"
#include "lsm/merge.h"
#include "lsm/shard_manifest.h"
#include "lsm/shard_writer.h"
#include "strata/builder.h"
#include "util/log.h"
#include "util/mutex.h"

namespace strata::store {
namespace {

using Watermarks = std::map<Uuid, uint64_t>;

constexpr int kReadAttempts = 3;
constexpr int kMergeAttempts = 3;

// The merge watermarks recorded in a base version's metadata.
Result<Watermarks> ReadWatermarks(const KeyValueMetadata& metadata) {
  Watermarks out;
  for (const auto& [key, value] : metadata.entries()) {
    if (!key.starts_with(lsm::kMergedWatermarkPrefix)) continue;
    std::string_view id = std::string_view(key).substr(lsm::kMergedWatermarkPrefix.size());
    STRATA_ASSIGN_OR_RETURN(Uuid shard, Uuid::Parse(id));
    STRATA_ASSIGN_OR_RETURN(uint64_t generation, lsm::ParseWatermark(value));
    out[shard] = generation;
  }
  return out;
}

uint64_t WatermarkOf(const Watermarks& watermarks, const Uuid& shard) {
  auto it = watermarks.find(shard);
  return it == watermarks.end() ? 0 : it->second;
}

// An array of `type` holding `keys` (for tombstones).
Result<Array> KeysToArray(const std::vector<expr::Scalar>& keys, const DataTypePtr& type) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ArrayBuilder> builder, MakeBuilder(type));
  for (size_t i = 0; i < keys.size(); ++i) {
    const expr::Scalar& key = keys[i];
    auto mismatch = [&] {
      return Status::InvalidArgument(fmt::format("key {} ({}) does not fit the key column type {}",
                                                 i, key.ToString(), type->ToString()));
    };
    switch (type->id()) {
      case TypeId::kUtf8:
      case TypeId::kBinary:
        if (key.kind() != expr::Scalar::Kind::kString) return mismatch();
        STRATA_RETURN_IF_ERROR(static_cast<BinaryBuilder&>(*builder).Append(key.string_value()));
        break;
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        if (key.kind() != expr::Scalar::Kind::kString) return mismatch();
        STRATA_RETURN_IF_ERROR(
            static_cast<LargeBinaryBuilder&>(*builder).Append(key.string_value()));
        break;
      default: {
        // Integer and timestamp keys go through their encoded form, which checks the range.
        STRATA_ASSIGN_OR_RETURN(std::string encoded, lsm::EncodeKeyScalar(key, *type));
        (void)encoded;
        int64_t value = key.kind() == expr::Scalar::Kind::kUInt64
                            ? static_cast<int64_t>(key.uint64_value())
                            : key.int64_value();
        switch (type->id()) {
          case TypeId::kInt8:
            static_cast<NumericBuilder<int8_t>&>(*builder).Append(static_cast<int8_t>(value));
            break;
          case TypeId::kInt16:
            static_cast<NumericBuilder<int16_t>&>(*builder).Append(static_cast<int16_t>(value));
            break;
          case TypeId::kInt32:
            static_cast<NumericBuilder<int32_t>&>(*builder).Append(static_cast<int32_t>(value));
            break;
          case TypeId::kInt64:
          case TypeId::kTimestamp:
            static_cast<NumericBuilder<int64_t>&>(*builder).Append(value);
            break;
          case TypeId::kUInt8:
            static_cast<NumericBuilder<uint8_t>&>(*builder).Append(static_cast<uint8_t>(value));
            break;
          case TypeId::kUInt16:
            static_cast<NumericBuilder<uint16_t>&>(*builder).Append(static_cast<uint16_t>(value));
            break;
          case TypeId::kUInt32:
            static_cast<NumericBuilder<uint32_t>&>(*builder).Append(static_cast<uint32_t>(value));
            break;
          default:
            return mismatch();
        }
      }
    }
  }
  return builder->Finish();
}

// Histograms and counters of one store handle (reference §2.16 names, "strata_" prefix).
struct StoreMetrics {
  Histogram* add_duration = nullptr;
  Counter* add_errors = nullptr;
  Histogram* flush_duration[3] = {nullptr, nullptr, nullptr};  // by FlushOutcome
  Counter* flush_errors = nullptr;
  std::map<std::string, Histogram*> merge_duration;  // by phase
  std::map<std::string, Counter*> merge_errors;
  Histogram* pending_generations = nullptr;
  Counter* reads_refused = nullptr;
  Counter* generations_reclaimed = nullptr;
  Histogram* budget_wait = nullptr;

  static constexpr const char* kPhases[] = {"seal", "read", "commit", "delete"};

  StoreMetrics(MetricsRegistry& registry, const std::string& store_label) {
    auto histogram = [&](std::string_view name, std::string_view help, const MetricLabels& labels,
                         std::vector<double> bounds) -> Histogram* {
      Result<Histogram*> h = registry.GetHistogram(name, help, std::move(bounds), labels);
      return h.ok() ? *h : nullptr;
    };
    auto counter = [&](std::string_view name, std::string_view help,
                       const MetricLabels& labels) -> Counter* {
      Result<Counter*> c = registry.GetCounter(name, help, labels);
      return c.ok() ? *c : nullptr;
    };
    add_duration = histogram("strata_add_duration_seconds", "Durable put latency (incl. seal)", {},
                             DefaultLatencyBuckets());
    add_errors = counter("strata_add_errors_total", "Failed puts", {});
    const char* outcomes[] = {"sealed", "noop", "fenced"};
    for (int i = 0; i < 3; ++i) {
      flush_duration[i] = histogram("strata_flush_duration_seconds", "Flush (seal + publish)",
                                    {{"outcome", outcomes[i]}}, DefaultLatencyBuckets());
    }
    flush_errors = counter("strata_flush_errors_total", "Failed flushes", {});
    for (const char* phase : kPhases) {
      merge_duration[phase] = histogram("strata_wal_merge_duration_seconds", "Merge phase duration",
                                        {{"phase", phase}}, DefaultLatencyBuckets());
      merge_errors[phase] =
          counter("strata_wal_merge_errors_total", "Failed merge phases", {{"phase", phase}});
    }
    pending_generations =
        histogram("strata_wal_pending_generations", "Pending generations per shard per read", {},
                  ExponentialBuckets(1, 2, 14));
    reads_refused =
        counter("strata_reads_refused_pending_total",
                "Reads refused past the pending-generation cap", {{"store", store_label}});
    budget_wait =
        histogram("strata_merge_budget_wait_seconds",
                  "Waits for the process-wide merge memory budget", {}, DefaultLatencyBuckets());
    generations_reclaimed = counter("strata_wal_generations_reclaimed_total",
                                    "Generations merged into the base table", {});
  }
};

void Increment(Counter* counter) {
  if (counter != nullptr) counter->Increment();
}

// Deletes merged generations' files on one background thread, `delay` after their drain:
// a reader that built its view just before the drain still finds the files for that long
// (after it, a vanished generation makes the read retry with a fresh view). On Stop the
// remaining deletions run at once.
class BackgroundDeleter {
 public:
  BackgroundDeleter(std::shared_ptr<ObjectStore> store, std::string prefix,
                    lsm::GenerationCache* cache, std::chrono::microseconds delay,
                    Histogram* duration, Counter* errors)
      : store_(std::move(store)),
        prefix_(std::move(prefix)),
        cache_(cache),
        delay_(delay),
        duration_(duration),
        errors_(errors) {}
  ~BackgroundDeleter() { Stop(); }

  void Enqueue(const Uuid& shard, std::vector<std::string> paths) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      const auto due = std::chrono::steady_clock::now() + delay_;
      for (std::string& path : paths) queue_.push_back(Entry{shard, std::move(path), due});
      if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    }
    cv_.notify_all();
  }

  // True while `path` of `shard` waits for (or is in) deletion.
  bool Pending(const Uuid& shard, const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ && in_progress_.shard == shard && in_progress_.path == path) return true;
    for (const Entry& e : queue_) {
      if (e.shard == shard && e.path == path) return true;
    }
    return false;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Deletes one generation directory now.
  void Delete(const Uuid& shard, const std::string& path) {
    ScopedTimer timer(duration_);
    const std::string dir = lsm::ShardDir(prefix_, shard) + path;
    Result<int64_t> removed = store_->DeletePrefix(dir);
    if (!removed.ok()) {
      Increment(errors_);
      LogWarning("could not delete merged generation {}: {}", dir, removed.status().ToString());
    }
    cache_->Forget(shard, path);
  }

 private:
  struct Entry {
    Uuid shard;
    std::string path;
    std::chrono::steady_clock::time_point due;
  };

  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (queue_.empty()) {
        if (stopping_) return;
        cv_.wait(lock);
        continue;
      }
      if (!stopping_ && std::chrono::steady_clock::now() < queue_.front().due) {
        cv_.wait_until(lock, queue_.front().due);
        continue;
      }
      in_progress_ = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      Delete(in_progress_.shard, in_progress_.path);
      lock.lock();
      busy_ = false;
    }
  }

  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
  lsm::GenerationCache* cache_;
  std::chrono::microseconds delay_;
  Histogram* duration_;
  Counter* errors_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;
  Entry in_progress_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

std::string StoreLabel(const std::string& prefix) {
  std::string_view p = prefix;
  if (!p.empty() && p.back() == '/') p.remove_suffix(1);
  size_t slash = p.rfind('/');
  std::string_view name = slash == std::string_view::npos ? p : p.substr(slash + 1);
  return name.empty() ? std::string("root") : std::string(name);
}

}  // namespace

struct StorageBase::Impl {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;
  StorageBaseOptions options;
  Uuid shard;
  std::shared_ptr<table::Table> base;
  SchemaPtr schema;
  int key_index = 0;
  std::string store_label;
  lsm::ShardManifestStore manifests;
  std::unique_ptr<lsm::GenerationCache> generations;
  StoreMetrics metrics;
  std::unique_ptr<BackgroundDeleter> deleter;

  mutable Mutex state_mutex;
  std::shared_ptr<table::Table> pinned STRATA_GUARDED_BY(state_mutex);
  SchemaPtr current_schema STRATA_GUARDED_BY(state_mutex);

  mutable Mutex writer_mutex;
  std::shared_ptr<lsm::ShardWriter> writer STRATA_GUARDED_BY(writer_mutex);

  Mutex merge_mutex;    // one merge of the own shard per handle at a time
  Mutex compact_mutex;  // one compaction per handle at a time

  Impl(std::shared_ptr<ObjectStore> s, std::string p, StorageBaseOptions o,
       std::shared_ptr<table::Table> b)
      : store(std::move(s)),
        prefix(std::move(p)),
        options(std::move(o)),
        shard(lsm::DeriveShardId(options.shard_id)),
        base(std::move(b)),
        store_label(StoreLabel(prefix)),
        manifests(store, prefix, shard),
        generations(std::make_unique<lsm::GenerationCache>(store, prefix, options.table_options)),
        metrics(options.metrics != nullptr ? *options.metrics : DefaultMetrics(), store_label) {
    deleter = std::make_unique<BackgroundDeleter>(
        store, prefix, generations.get(),
        std::chrono::microseconds(
            static_cast<int64_t>(options.generation_delete_delay_seconds * 1e6)),
        metrics.merge_duration["delete"], metrics.merge_errors["delete"]);
  }

  std::shared_ptr<table::Table> Pinned() const {
    MutexLock lock(state_mutex);
    return pinned;
  }

  SchemaPtr Schema() const {
    MutexLock lock(state_mutex);
    return current_schema;
  }

  Status CheckWritable() const {
    if (Pinned() != nullptr) {
      return Status::InvalidArgument(
          "checked-out store is read-only; call RefreshLatest before writing");
    }
    return Status::OK();
  }

  // The resident writer, opened (claiming the epoch) on first use.
  Result<std::shared_ptr<lsm::ShardWriter>> GetWriter() {
    MutexLock lock(writer_mutex);
    if (writer != nullptr) return writer;
    lsm::ShardWriterOptions writer_options;
    writer_options.max_memtable_rows = options.max_memtable_rows;
    writer_options.max_memtable_bytes = options.max_memtable_bytes;
    writer_options.max_unflushed_bytes = options.max_unflushed_bytes;
    writer_options.max_wal_segment_bytes = options.max_wal_segment_bytes;
    writer_options.generation_options = options.table_options;
    writer_options.generation_options.compression = options.generation_compression;
    writer_options.link_wal_segments = options.link_wal_segments;
    STRATA_ASSIGN_OR_RETURN(
        writer, lsm::ShardWriter::Open(store, prefix, shard, Schema(), key_index, writer_options));
    return writer;
  }

  // Drops `stale` from the slot if it is still there (identity-checked: of N puts that saw
  // one fence, only the first clears the slot, so the writer is reopened once).
  void InvalidateWriter(const std::shared_ptr<lsm::ShardWriter>& stale) {
    MutexLock lock(writer_mutex);
    if (writer == stale) writer.reset();
  }

  std::shared_ptr<lsm::ShardWriter> CurrentWriter() const {
    MutexLock lock(writer_mutex);
    return writer;
  }

  // Adds the columns of latest_schema the base lacks (all null). A concurrent opener may do
  // the same: a failed commit is accepted when the columns are there afterwards.
  Status EnsureLatestSchema() {
    if (options.latest_schema == nullptr) return Status::OK();
    SchemaPtr current = base->schema();
    std::vector<FieldPtr> missing;
    for (const FieldPtr& target : options.latest_schema->fields()) {
      int index = current->GetFieldIndex(target->name());
      if (index < 0) {
        if (!target->nullable()) {
          return Status::InvalidArgument(fmt::format(
              "latest schema column '{}' is not nullable, so it cannot be added to existing "
              "rows",
              target->name()));
        }
        missing.push_back(target->WithMetadata({}));
        continue;
      }
      const FieldPtr& have = current->field(index);
      if (!have->type()->Equals(*target->type())) {
        return Status::InvalidArgument(fmt::format("store column '{}' has type {}, expected {}",
                                                   target->name(), have->type()->ToString(),
                                                   target->type()->ToString()));
      }
    }
    if (!missing.empty()) {
      Result<uint64_t> added = base->AddColumns(missing);
      if (!added.ok()) {
        STRATA_RETURN_IF_ERROR(base->Refresh());
        for (const FieldPtr& f : missing) {
          if (base->schema()->GetFieldIndex(f->name()) < 0) return added.status();
        }
      }
    }
    MutexLock lock(state_mutex);
    current_schema = base->schema();
    return Status::OK();
  }

  struct View {
    lsm::LsmView view;
    uint64_t base_version = 0;
    Watermarks watermarks;
    bool pinned = false;
  };

  // The sources a read of `source` sees now. Memtables are snapshotted before the shard
  // manifests are read, so a seal published in between shows its rows twice (resolved by
  // newest-wins), never zero times.
  Result<View> BuildView(ListSource source) const {
    View out;
    out.view.schema = Schema();
    out.view.key_column = key_index;
    if (std::shared_ptr<table::Table> p = Pinned()) {
      out.view.base = p;
      out.view.schema = p->schema();
      out.pinned = true;
      out.base_version = p->version();
      return out;
    }
    STRATA_RETURN_IF_ERROR(base->Refresh());
    KeyValueMetadata metadata = base->metadata();
    out.base_version = base->version();
    STRATA_ASSIGN_OR_RETURN(out.watermarks, ReadWatermarks(metadata));
    out.view.schema = base->schema();
    if (source != ListSource::kWal) out.view.base = base;
    if (source == ListSource::kFragments) return out;

    if (options.read_own_writes) {
      if (std::shared_ptr<lsm::ShardWriter> w = CurrentWriter()) {
        out.view.memtables = w->MemTables();
      }
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<Uuid> shards, lsm::ListShards(*store, prefix));
    int64_t total = 0;
    std::vector<std::shared_ptr<lsm::Generation>> gens;
    for (const Uuid& shard_id : shards) {
      lsm::ShardManifestStore manifest_store(store, prefix, shard_id);
      Result<lsm::pb::ShardManifest> manifest = manifest_store.ReadLatest();
      if (!manifest.ok()) {
        if (manifest.status().IsNotFound()) continue;
        return manifest.status();
      }
      int64_t pending = manifest->generations_size();
      if (metrics.pending_generations != nullptr) {
        metrics.pending_generations->Observe(static_cast<double>(pending));
      }
      if (options.pending_generations_max > 0 && pending > options.pending_generations_max) {
        Increment(metrics.reads_refused);
        return Status::Unavailable(fmt::format(
            "{}: shard {} has {} generations pending merge (cap {}); retry after the merge "
            "catches up",
            kPendingGenerationsExceeded, shard_id.ToString(), pending,
            options.pending_generations_max));
      }
      if (options.pending_generations_warn > 0 && pending >= options.pending_generations_warn) {
        LogWarning("store {}: shard {} has {} generations pending merge (warning at {})",
                   store_label, shard_id.ToString(), pending, options.pending_generations_warn);
      }
      total += pending;
      uint64_t watermark = WatermarkOf(out.watermarks, shard_id);
      for (const lsm::pb::Generation& entry : manifest->generations()) {
        if (entry.generation() <= watermark) continue;
        STRATA_ASSIGN_OR_RETURN(std::shared_ptr<lsm::Generation> generation,
                                generations->Get(shard_id, entry));
        gens.push_back(std::move(generation));
      }
    }
    if (options.pending_generations_max > 0 && total > options.pending_generations_max) {
      Increment(metrics.reads_refused);
      return Status::Unavailable(fmt::format(
          "{}: {} generations pending merge across {} shards (cap {}); retry after the merge "
          "catches up",
          kPendingGenerationsExceeded, total, shards.size(), options.pending_generations_max));
    }
    // Newest first: by seal time, then generation number, then shard.
    std::sort(gens.begin(), gens.end(), [](const auto& a, const auto& b) {
      const lsm::pb::Generation& x = a->entry();
      const lsm::pb::Generation& y = b->entry();
      if (x.sealed_at_micros() != y.sealed_at_micros()) {
        return x.sealed_at_micros() > y.sealed_at_micros();
      }
      if (x.generation() != y.generation()) return x.generation() > y.generation();
      return a->shard() > b->shard();
    });
    out.view.generations = std::move(gens);
    return out;
  }

  // True when no merge committed since `view` was built: the latest base version records
  // the same watermarks (compactions and other commits do not matter to the view).
  Result<bool> StillConsistent(const View& view) const {
    if (view.pinned) return true;
    STRATA_ASSIGN_OR_RETURN(uint64_t latest, base->LatestVersion());
    if (latest == view.base_version) return true;
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> at, base->Checkout(latest));
    STRATA_ASSIGN_OR_RETURN(Watermarks now, ReadWatermarks(at->metadata()));
    return now == view.watermarks;
  }

  // Runs `read` on a view, retrying when a generation vanished or a merge committed while
  // it read; never returns a result from an inconsistent view.
  template <typename T>
  Result<T> ReadConsistent(ListSource source,
                           const std::function<Result<T>(const lsm::LsmView&)>& read) const {
    Status last;
    for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
      Result<View> view = BuildView(source);
      if (!view.ok()) {
        if (view.status().IsNotFound() && attempt + 1 < kReadAttempts) {
          last = view.status();
          continue;
        }
        return view.status();
      }
      Result<T> result = read(view->view);
      if (!result.ok()) {
        if (result.status().IsNotFound() && !view->pinned && attempt + 1 < kReadAttempts) {
          last = result.status();
          continue;
        }
        return result.status();
      }
      if (source == ListSource::kFragments && !view->pinned) return result;
      STRATA_ASSIGN_OR_RETURN(bool consistent, StillConsistent(*view));
      if (consistent) return result;
    }
    if (!last.ok()) return last;
    return Status::Busy(fmt::format(
        "store changed during read ({} attempts: merges kept committing); retry the request",
        kReadAttempts));
  }

  Result<MergeReport> RunMerge(int min_generations, bool seal_first);

  // Deletes directories of this shard's generations that were merged (at or below the
  // base watermark), are no longer in the shard manifest and are not waiting in this
  // process's deleter: leftovers of a merger that died before its delayed deletion ran.
  // Best effort; returns how many were deleted.
  int SweepMergedGenerations() {
    Result<Watermarks> watermarks = ReadWatermarks(base->metadata());
    Result<lsm::pb::ShardManifest> manifest = manifests.ReadLatest();
    if (!watermarks.ok() || !manifest.ok()) return 0;
    const uint64_t watermark = WatermarkOf(*watermarks, shard);
    std::set<std::string> listed;
    for (const lsm::pb::Generation& g : manifest->generations()) listed.insert(g.path());
    const std::string gen_dir = lsm::ShardDir(prefix, shard) + "gen/";
    Result<std::vector<ObjectMeta>> objects = store->List(gen_dir);
    if (!objects.ok()) return 0;
    std::set<std::string> dirs;
    for (const ObjectMeta& object : *objects) {
      std::string_view rest = std::string_view(object.key).substr(gen_dir.size());
      size_t slash = rest.find('/');
      if (slash == std::string_view::npos) continue;
      dirs.insert("gen/" + std::string(rest.substr(0, slash)) + "/");
    }
    int deleted = 0;
    for (const std::string& path : dirs) {
      // "gen/<generation:020>-<8 hex>/"
      uint64_t number = 0;
      std::string_view digits = std::string_view(path).substr(4, 20);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
      if (ec != std::errc() || end != digits.data() + digits.size()) continue;
      if (number > watermark || listed.count(path) || deleter->Pending(shard, path)) continue;
      deleter->Delete(shard, path);
      ++deleted;
    }
    return deleted;
  }
};

StorageBase::StorageBase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StorageBase::~StorageBase() {
  Status closed = Close();
  if (!closed.ok()) {
    LogWarning(
        "store {}: sealing unflushed rows while closing failed: {} (the rows are durable "
        "in the WAL and replayed by the shard's next writer)",
        impl_->store_label, closed.ToString());
  }
  impl_->deleter->Stop();
}

Result<std::unique_ptr<StorageBase>> StorageBase::Open(std::shared_ptr<ObjectStore> store,
                                                       std::string prefix,
                                                       StorageBaseOptions options,
                                                       bool create_if_missing) {
  if (store == nullptr) return Status::InvalidArgument("StorageBase::Open: no object store");
  STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(prefix));
  if (!prefix.empty() && prefix.back() != '/') {
    return Status::InvalidArgument(fmt::format("store prefix '{}' must end with '/'", prefix));
  }
  if (options.key_column.empty()) {
    return Status::InvalidArgument("StorageBase::Open: key_column is required");
  }
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*store, prefix));
  std::shared_ptr<table::Table> base;
  if (!exists) {
    if (!create_if_missing) {
      return Status::NotFound(
          fmt::format("no store at '{}{}'", store->Describe(), prefix.empty() ? "" : "/" + prefix));
    }
    if (options.schema == nullptr) {
      return Status::InvalidArgument("StorageBase::Open: a schema is needed to create the store");
    }
    int key = options.schema->GetFieldIndex(options.key_column);
    if (key < 0) {
      return Status::InvalidArgument(
          fmt::format("key column '{}' is not present in the store schema", options.key_column));
    }
    std::vector<FieldPtr> fields = options.schema->fields();
    KeyValueMetadata key_metadata = fields[key]->metadata();
    key_metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
    fields[key] = fields[key]->WithMetadata(std::move(key_metadata));
    auto created = table::Table::Create(
        store, prefix, std::make_shared<Schema>(std::move(fields), options.schema->metadata()),
        options.table_options);
    if (created.ok()) {
      base = std::move(*created);
    } else if (created.status().code() == StatusCode::kAlreadyExists) {
      STRATA_ASSIGN_OR_RETURN(base, table::Table::Open(store, prefix, options.table_options));
    } else {
      return created.status();
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(base, table::Table::Open(store, prefix, options.table_options));
  }
  int key = base->schema()->GetFieldIndex(options.key_column);
  if (key < 0) {
    return Status::InvalidArgument(
        fmt::format("key column '{}' is not present in the store schema", options.key_column));
  }
  if (base->primary_key_column() != key) {
    return Status::InvalidArgument(fmt::format(
        "column '{}' is not the primary key of the store's base table", options.key_column));
  }
  auto impl = std::make_unique<Impl>(std::move(store), std::move(prefix), std::move(options),
                                     std::move(base));
  impl->key_index = key;
  {
    MutexLock lock(impl->state_mutex);
    impl->current_schema = impl->base->schema();
  }
  STRATA_RETURN_IF_ERROR(impl->EnsureLatestSchema());
  return std::unique_ptr<StorageBase>(new StorageBase(std::move(impl)));
}

Status StorageBase::Put(const std::vector<RecordBatch>& batches) {
  STRATA_RETURN_IF_ERROR(impl_->CheckWritable());
  SchemaPtr schema = impl_->Schema();
  std::vector<RecordBatch> aligned;
  for (const RecordBatch& batch : batches) {
    if (batch.num_rows() == 0) continue;
    STRATA_ASSIGN_OR_RETURN(RecordBatch a, AlignBatchToSchema(batch, schema));
    aligned.push_back(std::move(a));
  }
  if (aligned.empty()) return Status::OK();
  Status status = [&]() -> Status {
    ScopedTimer timer(impl_->metrics.add_duration);
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<lsm::ShardWriter> writer, impl_->GetWriter());
    Status put = writer->Put(aligned);
    if (put.code() == StatusCode::kFenced) {
      // Another writer claimed this shard: reopen once (re-claiming) and retry once.
      impl_->InvalidateWriter(writer);
      STRATA_ASSIGN_OR_RETURN(writer, impl_->GetWriter());
      put = writer->Put(aligned);
    }
    STRATA_RETURN_IF_ERROR(put);
    if (impl_->options.seal_on_put) {
      STRATA_ASSIGN_OR_RETURN(lsm::SealOutcome outcome, writer->Seal(/*wait=*/true));
      if (outcome == lsm::SealOutcome::kFenced) {
        impl_->InvalidateWriter(writer);
        return Status::Fenced(
            "the rows are durable but could not be published: another writer claimed the "
            "shard (they become visible when its writer replays the WAL)");
      }
    }
    return Status::OK();
  }();
  if (!status.ok()) Increment(impl_->metrics.add_errors);
  return status;
}

Status StorageBase::DeleteKeys(const std::vector<expr::Scalar>& keys) {
  STRATA_RETURN_IF_ERROR(impl_->CheckWritable());
  if (keys.empty()) return Status::OK();
  SchemaPtr schema = impl_->Schema();
  STRATA_ASSIGN_OR_RETURN(Array array, KeysToArray(keys, schema->field(impl_->key_index)->type()));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<lsm::ShardWriter> writer, impl_->GetWriter());
  Status status = writer->PutTombstones(array);
  if (status.code() == StatusCode::kFenced) {
    impl_->InvalidateWriter(writer);
    STRATA_ASSIGN_OR_RETURN(writer, impl_->GetWriter());
    status = writer->PutTombstones(array);
  }
  STRATA_RETURN_IF_ERROR(status);
  if (impl_->options.seal_on_put) {
    STRATA_ASSIGN_OR_RETURN(lsm::SealOutcome outcome, writer->Seal(/*wait=*/true));
    if (outcome == lsm::SealOutcome::kFenced) impl_->InvalidateWriter(writer);
  }
  return Status::OK();
}

Status StorageBase::OpenWriter() {
  STRATA_RETURN_IF_ERROR(impl_->CheckWritable());
  return impl_->GetWriter().status();
}

Result<FlushOutcome> StorageBase::Flush() {
  std::shared_ptr<lsm::ShardWriter> writer = impl_->CurrentWriter();
  FlushOutcome outcome = FlushOutcome::kNoop;
  Result<lsm::SealOutcome> sealed = lsm::SealOutcome::kNoop;
  {
    int64_t start = SystemClock()->MonotonicNanos();
    if (writer != nullptr) sealed = writer->Seal(/*wait=*/true);
    if (!sealed.ok()) {
      Increment(impl_->metrics.flush_errors);
      return sealed.status();
    }
    switch (*sealed) {
      case lsm::SealOutcome::kSealed:
        outcome = FlushOutcome::kSealed;
        break;
      case lsm::SealOutcome::kNoop:
        outcome = FlushOutcome::kNoop;
        break;
      case lsm::SealOutcome::kFenced:
        outcome = FlushOutcome::kFenced;
        impl_->InvalidateWriter(writer);
        break;
    }
    Histogram* h = impl_->metrics.flush_duration[static_cast<int>(outcome)];
    if (h != nullptr) {
      h->Observe(static_cast<double>(SystemClock()->MonotonicNanos() - start) / 1e9);
    }
  }
  return outcome;
}

Status StorageBase::Close() {
  std::shared_ptr<lsm::ShardWriter> writer;
  {
    MutexLock lock(impl_->writer_mutex);
    writer = std::move(impl_->writer);
    impl_->writer.reset();
  }
  if (writer == nullptr) return Status::OK();
  Status closed = impl_->options.seal_on_close ? writer->Close() : writer->CloseWithoutSeal();
  if (closed.code() == StatusCode::kFenced) return Status::OK();  // nothing to publish
  return closed;
}

Result<std::vector<RecordBatch>> StorageBase::Scan(const ScanRequest& request) const {
  lsm::LsmScanOptions options;
  options.columns = request.columns;
  options.filter = request.filter;
  options.offset = request.offset;
  options.limit = request.limit;
  return impl_->ReadConsistent<std::vector<RecordBatch>>(
      request.source, [&](const lsm::LsmView& view) { return lsm::LsmScan(view, options); });
}

Result<RecordBatch> StorageBase::GetMany(const std::vector<expr::Scalar>& keys,
                                         const std::vector<std::string>& columns,
                                         ListSource source) const {
  if (keys.size() > lsm::kMaxGetKeys) {
    return Status::InvalidArgument(
        fmt::format("{} keys requested; at most {} per call", keys.size(), lsm::kMaxGetKeys));
  }
  return impl_->ReadConsistent<RecordBatch>(
      source, [&](const lsm::LsmView& view) { return lsm::LsmGet(view, keys, columns); });
}

Result<int64_t> StorageBase::Count(ListSource source, std::string_view filter) const {
  std::string f(filter);
  return impl_->ReadConsistent<int64_t>(
      source, [&](const lsm::LsmView& view) { return lsm::LsmCount(view, f); });
}

StoreObservation StorageBase::Observe() const {
  StoreObservation out;
  std::shared_ptr<table::Table> base = impl_->Pinned();
  if (base == nullptr) {
    base = impl_->base;
    (void)base->Refresh();
  }
  if (Result<table::TableStats> stats = base->Stats(); stats.ok()) {
    out.base_rows = stats->num_rows;
    out.fragments = stats->num_fragments;
    out.version = stats->version;
  }
  // From the version's own manifest (ListVersions would read every kept manifest).
  if (Result<table::TableDescription> described = base->Describe(); described.ok()) {
    out.last_updated_micros = described->version.timestamp_micros;
  }
  if (impl_->Pinned() == nullptr) {
    Result<std::vector<Uuid>> shards = lsm::ListShards(*impl_->store, impl_->prefix);
    Result<Watermarks> watermarks = ReadWatermarks(base->metadata());
    if (shards.ok() && watermarks.ok()) {
      for (const Uuid& shard : *shards) {
        lsm::ShardManifestStore manifests(impl_->store, impl_->prefix, shard);
        Result<lsm::pb::ShardManifest> manifest = manifests.ReadLatest();
        if (!manifest.ok()) continue;
        uint64_t watermark = WatermarkOf(*watermarks, shard);
        out.pending_generations += manifest->generations_size();
        for (const lsm::pb::Generation& g : manifest->generations()) {
          if (g.generation() > watermark) out.generation_rows += g.rows() - g.tombstones();
        }
      }
    }
  }
  if (std::shared_ptr<lsm::ShardWriter> writer = impl_->CurrentWriter()) {
    out.unflushed_rows = writer->stats().unflushed_rows;
  }
  return out;
}

Result<int64_t> StorageBase::PendingGenerations() const {
  if (impl_->Pinned() != nullptr) return int64_t{0};
  STRATA_ASSIGN_OR_RETURN(std::vector<Uuid> shards, lsm::ListShards(*impl_->store, impl_->prefix));
  int64_t total = 0;
  for (const Uuid& shard : shards) {
    lsm::ShardManifestStore manifests(impl_->store, impl_->prefix, shard);
    Result<lsm::pb::ShardManifest> manifest = manifests.ReadLatest();
    if (!manifest.ok()) {
      if (manifest.status().IsNotFound()) continue;
      return manifest.status();
    }
    total += manifest->generations_size();
  }
  return total;
}

Result<MergeReport> StorageBase::Impl::RunMerge(int min_generations, bool seal_first) {
  STRATA_RETURN_IF_ERROR(CheckWritable());
  MutexLock merge_lock(merge_mutex);
  if (seal_first) {
    if (std::shared_ptr<lsm::ShardWriter> w = CurrentWriter()) {
      ScopedTimer timer(metrics.merge_duration["seal"]);
      Result<lsm::SealOutcome> sealed = w->Seal(/*wait=*/true);
      if (!sealed.ok()) {
        Increment(metrics.merge_errors["seal"]);
        return sealed.status();
      }
      if (*sealed == lsm::SealOutcome::kFenced) InvalidateWriter(w);
    }
  }
  STRATA_RETURN_IF_ERROR(EnsureLatestSchema());
  lsm::MergeOptions merge_options;
  merge_options.max_generations = options.merge_max_generations;
  merge_options.max_bytes = options.merge_max_bytes;
  merge_options.budget = options.merge_budget.get();
  merge_options.budget_wait_seconds = metrics.budget_wait;
  Status last;
  for (int attempt = 0; attempt < kMergeAttempts; ++attempt) {
    Result<std::optional<lsm::PreparedMerge>> prepared = [&] {
      ScopedTimer timer(metrics.merge_duration["read"]);
      return lsm::PrepareMerge(base, manifests, *generations, merge_options, min_generations);
    }();
    if (!prepared.ok()) {
      Increment(metrics.merge_errors["read"]);
      return prepared.status();
    }
    if (!prepared->has_value()) return MergeReport{};
    Result<lsm::MergeCommitResult> committed = [&] {
      ScopedTimer timer(metrics.merge_duration["commit"]);
      return lsm::CommitMerge(base, manifests, std::move(**prepared),
                              [this](const Uuid& shard_id, std::vector<std::string> paths) {
                                deleter->Enqueue(shard_id, std::move(paths));
                              });
    }();
    if (!committed.ok()) {
      Increment(metrics.merge_errors["commit"]);
      // A concurrent compaction or merge: prepare again from the new base.
      if (committed.status().code() == StatusCode::kBusy && attempt + 1 < kMergeAttempts) {
        last = committed.status();
        continue;
      }
      return committed.status();
    }
    if (metrics.generations_reclaimed != nullptr) {
      metrics.generations_reclaimed->Increment(committed->generations_reclaimed);
    }
    SweepMergedGenerations();
    MergeReport report;
    report.generations_reclaimed = committed->generations_reclaimed;
    report.rows_merged = committed->rows_merged;
    report.base_version = committed->base_version;
    return report;
  }
  return last;
}

Result<MergeReport> StorageBase::MaybeMerge() {
  if (impl_->options.merge_after_generations <= 0) return MergeReport{};
  return impl_->RunMerge(impl_->options.merge_after_generations, /*seal_first=*/false);
}

Result<MergeReport> StorageBase::Cleanup() { return impl_->RunMerge(1, /*seal_first=*/true); }

Result<bool> StorageBase::CountMergeDue() const {
  if (impl_->options.merge_after_generations <= 0 || impl_->Pinned() != nullptr) return false;
  Result<lsm::pb::ShardManifest> manifest = impl_->manifests.ReadLatest();
  if (!manifest.ok()) {
    if (manifest.status().IsNotFound()) return false;
    return manifest.status();
  }
  return manifest->generations_size() >= impl_->options.merge_after_generations;
}

Result<table::CompactionResult> StorageBase::Compact(const table::CompactionOptions& options) {
  STRATA_RETURN_IF_ERROR(impl_->CheckWritable());
  MutexLock lock(impl_->compact_mutex);
  STRATA_RETURN_IF_ERROR(impl_->base->Refresh());
  return impl_->base->Compact(options);
}

Result<table::RepairReport> StorageBase::Repair() {
  STRATA_RETURN_IF_ERROR(impl_->CheckWritable());
  MutexLock lock(impl_->compact_mutex);
  STRATA_RETURN_IF_ERROR(impl_->base->Refresh());
  return impl_->base->Repair();
}

uint64_t StorageBase::version() const {
  if (std::shared_ptr<table::Table> p = impl_->Pinned()) return p->version();
  return impl_->base->version();
}

Status StorageBase::Checkout(uint64_t version) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> at, impl_->base->Checkout(version));
  MutexLock lock(impl_->state_mutex);
  impl_->pinned = std::move(at);
  return Status::OK();
}

Status StorageBase::RefreshLatest() {
  {
    MutexLock lock(impl_->state_mutex);
    impl_->pinned.reset();
  }
  return impl_->base->Refresh();
}

bool StorageBase::pinned() const { return impl_->Pinned() != nullptr; }

SchemaPtr StorageBase::schema() const { return impl_->Schema(); }

const std::string& StorageBase::key_column() const { return impl_->options.key_column; }

std::string StorageBase::shard_id() const { return impl_->shard.ToString(); }

}  // namespace strata::store
