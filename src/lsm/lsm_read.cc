// Newest-wins reads over an LsmView: memtables and generations are read whole and their
// keys remembered, then the base table is scanned with the filter pushed down and every row
// of a remembered key dropped (see lsm_read.h).
#include "lsm/lsm_read.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <new>
#include <span>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "lsm/key.h"
#include "lsm/layout.h"
#include "strata/builder.h"
#include "util/checksum.h"
#include "util/mutex.h"

namespace strata::lsm {
namespace {

std::string ColumnList(const Schema& schema) {
  std::string out;
  for (const FieldPtr& f : schema.fields()) out += out.empty() ? f->name() : ", " + f->name();
  return out;
}

// What a read needs, resolved against the store schema before anything is read. Every
// source's rows are brought into `work_schema` (store fields of the key, projected and
// filter columns, in store order) so one bound filter evaluates them all.
struct ReadPlan {
  std::vector<std::string> work_names;
  SchemaPtr work_schema;
  int work_key = 0;                       // the key's position in work_schema
  std::vector<int> output;                // positions in work_schema, in output order
  SchemaPtr output_schema;                // store fields of the projection
  std::optional<expr::BoundExpr> filter;  // bound to work_schema
};

Result<ReadPlan> MakePlan(const LsmView& view, const std::vector<std::string>& columns,
                          std::string_view filter) {
  if (view.schema == nullptr) return Status::InvalidArgument("lsm read: the view has no schema");
  const Schema& store = *view.schema;
  if (view.key_column < 0 || view.key_column >= store.num_fields()) {
    return Status::InvalidArgument(fmt::format("lsm read: key column {} is outside the schema ({})",
                                               view.key_column, ColumnList(store)));
  }
  std::vector<int> projection;
  if (columns.empty()) {
    for (int i = 0; i < store.num_fields(); ++i) projection.push_back(i);
  } else {
    for (const std::string& name : columns) {
      const int index = store.GetFieldIndex(name);
      if (index < 0) {
        return Status::InvalidArgument(fmt::format(
            "lsm read: unknown column '{}' (the store has: {})", name, ColumnList(store)));
      }
      projection.push_back(index);
    }
  }
  std::vector<bool> needed(store.num_fields(), false);
  needed[view.key_column] = true;
  for (int p : projection) needed[p] = true;
  std::optional<expr::Expr> parsed;
  if (!filter.empty()) {
    Result<expr::Expr> e = expr::Parse(filter);
    if (!e.ok()) return e.status().WithContext("lsm read: filter");
    Result<expr::BoundExpr> full = expr::Bind(*e, view.schema);
    if (!full.ok()) return full.status().WithContext("lsm read: filter");
    for (int c : full->ReferencedColumns()) needed[c] = true;
    parsed = std::move(*e);
  }

  ReadPlan plan;
  std::vector<int> work_columns;
  std::vector<int> position(store.num_fields(), -1);
  for (int i = 0; i < store.num_fields(); ++i) {
    if (!needed[i]) continue;
    position[i] = static_cast<int>(work_columns.size());
    work_columns.push_back(i);
    plan.work_names.push_back(store.field(i)->name());
  }
  STRATA_ASSIGN_OR_RETURN(plan.work_schema, store.Project(work_columns));
  plan.work_key = position[view.key_column];
  for (int p : projection) plan.output.push_back(position[p]);
  STRATA_ASSIGN_OR_RETURN(plan.output_schema, store.Project(projection));
  if (parsed) {
    STRATA_ASSIGN_OR_RETURN(plan.filter, expr::Bind(*parsed, plan.work_schema));
  }
  return plan;
}

// `batch`'s columns named by `target`'s fields, as a batch of `target` (same data; the
// target's nullability). A nullable column the batch lacks reads as null: the store gained it
// after the rows were written (additive evolution, StorageBase::AddColumns), so memtables and
// generations of the older schema hold no value for it. Corruption naming `what` when a
// required column is missing, a column is of another type, or holds nulls the target does not
// allow.
Result<RecordBatch> Conform(const RecordBatch& batch, const SchemaPtr& target,
                            std::string_view what) {
  std::vector<Array> columns;
  columns.reserve(target->num_fields());
  for (const FieldPtr& f : target->fields()) {
    Array column = batch.GetColumnByName(f->name());
    if (!column.is_valid_handle() && f->nullable()) {
      columns.push_back(Array::MakeNull(f->type(), batch.num_rows()));
      continue;
    }
    if (!column.is_valid_handle()) {
      return Status::Corruption(fmt::format("{}: no column '{}'", what, f->name()));
    }
    if (!column.type()->Equals(*f->type())) {
      return Status::Corruption(fmt::format("{}: column '{}' is {}, the store has {}", what,
                                            f->name(), column.type()->ToString(),
                                            f->type()->ToString()));
    }
    columns.push_back(std::move(column));
  }
  Result<RecordBatch> out = RecordBatch::Make(target, batch.num_rows(), std::move(columns));
  if (!out.ok()) return Status::Corruption(fmt::format("{}: {}", what, out.status().message()));
  return out;
}

// The rows at `rows` (ascending or not) of `batch`; `batch` itself when that is every row.
Result<RecordBatch> TakeRows(const RecordBatch& batch, const std::vector<int64_t>& rows) {
  if (static_cast<int64_t>(rows.size()) == batch.num_rows()) {
    bool identity = true;
    for (size_t i = 0; i < rows.size() && identity; ++i) identity = rows[i] == int64_t(i);
    if (identity) return batch;
  }
  std::vector<Array> columns;
  columns.reserve(batch.num_columns());
  for (const Array& column : batch.columns()) {
    STRATA_ASSIGN_OR_RETURN(Array taken, Take(column, rows));
    columns.push_back(std::move(taken));
  }
  return RecordBatch::Make(batch.schema(), static_cast<int64_t>(rows.size()), std::move(columns));
}

// Applies offset and limit to the stream of output batches, which it keeps or, with a
// consumer, hands on one at a time.
class Sink {
 public:
  using Consumer = std::function<Status(RecordBatch)>;
  // `stop`: when set, the sink counts as full (a cancelled helper's sink, see
  // ParallelGenerationScan), so its source stops reading.
  Sink(int64_t offset, std::optional<int64_t> limit, Consumer consume = nullptr,
       const std::atomic<bool>* stop = nullptr)
      : skip_(offset), remaining_(limit), consume_(std::move(consume)), stop_(stop) {}
  bool full() const {
    return (remaining_ && *remaining_ == 0) ||
           (stop_ != nullptr && stop_->load(std::memory_order_relaxed));
  }
  Status Add(RecordBatch batch) {
    if (full() || batch.num_rows() == 0) return Status::OK();
    if (skip_ > 0) {
      const int64_t skipped = std::min(skip_, batch.num_rows());
      skip_ -= skipped;
      if (skipped == batch.num_rows()) return Status::OK();
      batch = batch.Slice(skipped, batch.num_rows() - skipped);
    }
    if (remaining_) {
      if (batch.num_rows() > *remaining_) batch = batch.Slice(0, *remaining_);
      *remaining_ -= batch.num_rows();
    }
    if (consume_) return consume_(std::move(batch));
    out_.push_back(std::move(batch));
    return Status::OK();
  }
  // Hands offset and limit to a source that applies them itself (the last one).
  std::pair<int64_t, std::optional<int64_t>> Delegate() {
    const int64_t skip = skip_;
    skip_ = 0;
    return {skip, remaining_};
  }
  std::vector<RecordBatch> Finish() { return std::move(out_); }

 private:
  int64_t skip_;
  std::optional<int64_t> remaining_;
  Consumer consume_;
  const std::atomic<bool>* stop_;
  std::vector<RecordBatch> out_;
};

// Candidate rows (newest of their key, live) in the work schema: the filter (unless the
// source already applied it), then the projection, then the sink.
Status Emit(const ReadPlan& plan, const RecordBatch& candidates, Sink& sink,
            bool filtered = false) {
  RecordBatch batch = candidates;
  if (plan.filter && !filtered) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> selected, expr::Select(*plan.filter, batch));
    if (selected.empty()) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(batch, TakeRows(batch, selected));
  }
  STRATA_ASSIGN_OR_RETURN(RecordBatch projected, batch.Project(plan.output));
  return sink.Add(std::move(projected));
}

using internal::KeyColumnView;
using internal::KeySet;

Status ScanMemTable(const MemTableSnapshot& snapshot, const ReadPlan& plan, KeySet& seen,
                    Sink& sink) {
  const auto& batches = snapshot.batches();
  // Newest row first: the first time a key is met (here or in a newer source) it wins.
  std::vector<std::vector<int64_t>> winners(batches.size());
  for (size_t b = batches.size(); b-- > 0;) {
    const MemTableBatch& mb = *batches[b];
    const int64_t rows = mb.batch.num_rows();
    if (static_cast<int64_t>(mb.keys.size()) != rows) {
      return Status::Internal(
          fmt::format("memtable batch {} has {} rows but {} keys", b, rows, mb.keys.size()));
    }
    for (int64_t r = rows; r-- > 0;) {
      if (seen.Insert(mb.keys[r]) && !mb.tombstone) winners[b].push_back(r);
    }
    std::reverse(winners[b].begin(), winners[b].end());
  }
  for (size_t b = 0; b < batches.size() && !sink.full(); ++b) {
    if (winners[b].empty()) continue;
    STRATA_ASSIGN_OR_RETURN(RecordBatch work,
                            Conform(batches[b]->batch, plan.work_schema, "memtable batch"));
    STRATA_ASSIGN_OR_RETURN(RecordBatch candidates, TakeRows(work, winners[b]));
    STRATA_RETURN_IF_ERROR(Emit(plan, candidates, sink));
  }
  return Status::OK();
}

std::vector<std::string> WithTombstone(const std::vector<std::string>& names) {
  std::vector<std::string> out = names;
  out.emplace_back(kTombstoneColumn);
  return out;
}

std::string GenerationName(const Generation& generation) {
  return fmt::format("generation {} ({})", generation.entry().generation(),
                     generation.entry().path());
}

// The live rows of a generation batch read with WithTombstone(work_names), in the work
// schema. `live` are the rows to keep.
Result<RecordBatch> GenerationRows(const RecordBatch& batch, const ReadPlan& plan,
                                   const std::vector<int64_t>& live, const std::string& what) {
  std::vector<int> data_columns;
  for (int i = 0; i + 1 < batch.num_columns(); ++i) data_columns.push_back(i);
  STRATA_ASSIGN_OR_RETURN(RecordBatch data, batch.Project(data_columns));
  STRATA_ASSIGN_OR_RETURN(RecordBatch taken, TakeRows(data, live));
  return Conform(taken, plan.work_schema, what);
}

// A generation's tombstone column. Generations linked from the WAL hold puts only and
// their data files lack the column, which then reads as null: null is not a tombstone.
Result<Array> TombstoneColumn(const RecordBatch& batch, const std::string& what) {
  const Array& tombstones = batch.column(batch.num_columns() - 1);
  if (tombstones.type_id() != TypeId::kBool) {
    return Status::Corruption(fmt::format("{}: bad tombstone column", what));
  }
  return tombstones;
}

bool IsTombstone(const Array& tombstones, int64_t row) {
  return tombstones.IsValid(row) && tombstones.BoolValue(row);
}

// Batches of `generation` scanned with `options`, each passed to `visit` until it returns
// an error or the sink is full (nothing older can reach the output then).
template <typename Visit>
Status ForEachGenerationBatch(const Generation& generation, const table::ScanOptions& options,
                              const std::string& what, const Sink& sink, Visit visit) {
  Result<std::unique_ptr<table::BatchIterator>> it = generation.table()->Scan(options);
  if (!it.ok()) return it.status().WithContext(what);
  while (!sink.full()) {
    Result<std::optional<RecordBatch>> next = (*it)->Next();
    if (!next.ok()) return next.status().WithContext(what);
    if (!*next) return Status::OK();
    STRATA_RETURN_IF_ERROR(visit(**next));
  }
  return Status::OK();
}

// The work columns `generation` holds, then its tombstone column; `complete` tells whether it
// holds all of them. A generation sealed before the store gained columns lacks those (they read
// as null, see Conform).
std::vector<std::string> GenerationColumns(const Generation& generation, const ReadPlan& plan,
                                           bool* complete) {
  const SchemaPtr schema = generation.table()->schema();
  std::vector<std::string> names;
  *complete = true;
  for (const std::string& name : plan.work_names) {
    if (schema->GetFieldIndex(name) >= 0) {
      names.push_back(name);
    } else {
      *complete = false;
    }
  }
  return WithTombstone(names);
}

// Drops from `live` the rows whose key a generation of `newer` holds (a row there, live or
// a tombstone, hides this one): each key is tried against a generation's bloom filter, and
// those that may be there against its key index, with no row read.
Status DropKeysInNewer(std::span<const std::shared_ptr<Generation>> newer, const Array& key_column,
                       const KeyColumnView& keys, std::vector<int64_t>* live) {
  std::vector<int64_t> maybe;
  std::vector<expr::Scalar> scalars;
  for (const std::shared_ptr<Generation>& generation : newer) {
    if (live->empty()) return Status::OK();
    if (generation == nullptr) continue;
    maybe.clear();
    for (int64_t r : *live) {
      if (generation->MayContain(keys[r])) maybe.push_back(r);
    }
    if (maybe.empty()) continue;
    scalars.clear();
    for (int64_t r : maybe) {
      STRATA_ASSIGN_OR_RETURN(expr::Scalar key, KeyScalar(key_column, r));
      scalars.push_back(std::move(key));
    }
    Result<std::vector<uint8_t>> present = generation->table()->KeysPresent(scalars);
    if (!present.ok()) return present.status().WithContext(GenerationName(*generation));
    std::vector<int64_t> hidden;
    for (size_t i = 0; i < maybe.size(); ++i) {
      if ((*present)[i]) hidden.push_back(maybe[i]);
    }
    if (hidden.empty()) continue;
    // Both are ascending: keep the rows of `live` not in `hidden`.
    std::vector<int64_t> kept;
    std::set_difference(live->begin(), live->end(), hidden.begin(), hidden.end(),
                        std::back_inserter(kept));
    *live = std::move(kept);
  }
  return Status::OK();
}

// A generation holds one row per key, so a key met for the first time in it is its row.
// With `newer` (the newer generations, when nothing older than this one is read), a row
// passing the filter is checked against them rather than against `seen`, and this
// generation's keys are not added to `seen` (see ScanInto).
Status ScanGeneration(const Generation& generation, const ReadPlan& plan, std::string_view filter,
                      KeySet& seen, Sink& sink,
                      std::optional<std::span<const std::shared_ptr<Generation>>> newer) {
  const std::string what = GenerationName(generation);
  const std::string& key_name = plan.work_names[plan.work_key];
  table::ScanOptions rows_options;
  bool complete = true;
  rows_options.columns = GenerationColumns(generation, plan, &complete);
  // A generation lacking a column the filter may name cannot apply the filter itself: the
  // one pass reads every row and Emit applies the filter once the missing columns are null.
  std::vector<uint8_t> met;  // per row of a batch, reused across batches
  if (!plan.filter || !complete) {
    // One pass: every row, its key remembered as it is met.
    return ForEachGenerationBatch(
        generation, rows_options, what, sink, [&](const RecordBatch& batch) -> Status {
          STRATA_ASSIGN_OR_RETURN(KeyColumnView keys,
                                  KeyColumnView::Make(batch.GetColumnByName(key_name), key_name));
          STRATA_ASSIGN_OR_RETURN(Array tombstones, TombstoneColumn(batch, what));
          std::vector<int64_t> live;
          if (newer.has_value()) {
            // `seen` holds the memtables' keys alone and is only read (generations may be
            // scanned on several threads); the newer generations are probed instead.
            seen.ContainsAll(keys, &met);  // 1: a memtable holds the key
            for (int64_t r = 0; r < batch.num_rows(); ++r) {
              if (!met[r] && !IsTombstone(tombstones, r)) live.push_back(r);
            }
            STRATA_RETURN_IF_ERROR(
                DropKeysInNewer(*newer, batch.GetColumnByName(key_name), keys, &live));
          } else {
            seen.InsertAll(keys, &met);  // 1: the key is new, so this row is its newest
            for (int64_t r = 0; r < batch.num_rows(); ++r) {
              if (met[r] && !IsTombstone(tombstones, r)) live.push_back(r);
            }
          }
          if (live.empty()) return Status::OK();
          STRATA_ASSIGN_OR_RETURN(RecordBatch candidates, GenerationRows(batch, plan, live, what));
          return Emit(plan, candidates, sink);
        });
  }
  // First the rows passing the filter, which the generation's table applies itself (batches
  // its statistics rule out are not read, a key filter uses its key index); `seen` holds only
  // newer sources' keys during this pass.
  rows_options.filter = std::string(filter);
  STRATA_RETURN_IF_ERROR(ForEachGenerationBatch(
      generation, rows_options, what, sink, [&](const RecordBatch& batch) -> Status {
        STRATA_ASSIGN_OR_RETURN(KeyColumnView keys,
                                KeyColumnView::Make(batch.GetColumnByName(key_name), key_name));
        STRATA_ASSIGN_OR_RETURN(Array tombstones, TombstoneColumn(batch, what));
        seen.ContainsAll(keys, &met);  // 1: a newer source holds the key
        std::vector<int64_t> live;
        for (int64_t r = 0; r < batch.num_rows(); ++r) {
          if (!IsTombstone(tombstones, r) && !met[r]) live.push_back(r);
        }
        if (newer.has_value()) {
          STRATA_RETURN_IF_ERROR(
              DropKeysInNewer(*newer, batch.GetColumnByName(key_name), keys, &live));
        }
        if (live.empty()) return Status::OK();
        STRATA_ASSIGN_OR_RETURN(RecordBatch candidates, GenerationRows(batch, plan, live, what));
        return Emit(plan, candidates, sink, /*filtered=*/true);
      }));
  if (newer.has_value()) return Status::OK();
  // Then every key, tombstones and rows failing the filter included: each hides older rows.
  table::ScanOptions keys_options;
  keys_options.columns = {key_name};
  return ForEachGenerationBatch(
      generation, keys_options, what, sink, [&](const RecordBatch& batch) -> Status {
        STRATA_ASSIGN_OR_RETURN(KeyColumnView keys, KeyColumnView::Make(batch.column(0), key_name));
        seen.InsertAll(keys, &met);
        return Status::OK();
      });
}

// Generations scanned on helper threads, their output handed to the reading thread's sink
// in the generations' order (newest first), as a scan on one thread would emit it. Each
// generation is scanned into its own queue. A helper waits before queueing a batch that would
// take the queues past `max_queued_bytes` together, unless its queue is the one being read
// and empty, so memory stays bounded whatever the filter selects. Destroying it cancels the
// helpers (they stop before their next batch) and joins them. The constructor throws
// std::system_error when no thread can be started, having joined those that did.
class ParallelGenerationScan {
 public:
  using ScanOne = std::function<Status(size_t generation, Sink& out)>;

  ParallelGenerationScan(size_t generations, int threads, int64_t max_queued_bytes, ScanOne scan)
      : scan_(std::move(scan)),
        max_queued_bytes_(max_queued_bytes),
        num_generations_(generations),
        queues_(generations) {
    threads_.reserve(static_cast<size_t>(threads));
    try {
      for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { Work(); });
    } catch (...) {  // a thread that cannot start: stop and join those that did
      Cancel();
      for (std::thread& thread : threads_) thread.join();
      throw;
    }
  }
  ~ParallelGenerationScan() {
    Cancel();
    for (std::thread& thread : threads_) thread.join();
  }
  ParallelGenerationScan(const ParallelGenerationScan&) = delete;
  ParallelGenerationScan& operator=(const ParallelGenerationScan&) = delete;

  // Hands every generation's batches to `sink` in order, until the sink is full or a
  // generation's scan fails (its error is returned; the helpers are cancelled).
  Status Drain(Sink& sink) {
    for (size_t g = 0; g < num_generations_; ++g) {
      {
        MutexLock lock(mu_);
        reading_ = g;
        cv_.SignalAll();  // a helper waiting to queue into `g` may go on
      }
      while (true) {
        std::optional<RecordBatch> batch;
        {
          MutexLock lock(mu_);
          Queue& queue = queues_[g];
          while (queue.batches.empty() && !queue.done) cv_.Wait(mu_);
          if (queue.batches.empty()) {
            if (queue.exception) std::rethrow_exception(queue.exception);
            if (!queue.status.ok()) return queue.status;
            break;
          }
          batch = std::move(queue.batches.front());
          queue.batches.pop_front();
          queued_bytes_ -= batch->BufferBytes();
          cv_.SignalAll();
        }
        STRATA_RETURN_IF_ERROR(sink.Add(std::move(*batch)));
        if (sink.full()) return Status::OK();
      }
    }
    return Status::OK();
  }

 private:
  struct Queue {
    std::deque<RecordBatch> batches;
    bool done = false;
    Status status;
    std::exception_ptr exception;  // rethrown on the reading thread, as it would be inline
  };

  void Cancel() {
    MutexLock lock(mu_);
    cancelled_ = true;
    stop_.store(true, std::memory_order_relaxed);
    cv_.SignalAll();
  }

  void Work() {
    while (true) {
      size_t g = 0;
      {
        MutexLock lock(mu_);
        if (cancelled_ || next_ >= num_generations_) return;
        g = next_++;
      }
      Sink out(
          0, std::nullopt, [this, g](RecordBatch batch) { return Push(g, std::move(batch)); },
          &stop_);
      Status status;
      std::exception_ptr exception;
      try {
        status = scan_(g, out);
      } catch (...) {
        exception = std::current_exception();
      }
      MutexLock lock(mu_);
      queues_[g].done = true;
      queues_[g].status = std::move(status);
      queues_[g].exception = exception;
      cv_.SignalAll();
    }
  }

  Status Push(size_t g, RecordBatch batch) {
    const int64_t bytes = batch.BufferBytes();
    MutexLock lock(mu_);
    // The queue being read takes a batch whenever it is empty: the reader waits for it.
    while (!cancelled_ && queued_bytes_ > 0 && queued_bytes_ + bytes > max_queued_bytes_ &&
           !(g == reading_ && queues_[g].batches.empty())) {
      cv_.Wait(mu_);
    }
    if (cancelled_) return Status::Aborted("lsm scan: cancelled");
    queues_[g].batches.push_back(std::move(batch));
    queued_bytes_ += bytes;
    cv_.SignalAll();
    return Status::OK();
  }

  const ScanOne scan_;
  const int64_t max_queued_bytes_;
  const size_t num_generations_;
  Mutex mu_;
  CondVar cv_;
  std::vector<Queue> queues_ STRATA_GUARDED_BY(mu_);
  size_t next_ STRATA_GUARDED_BY(mu_) = 0;
  size_t reading_ STRATA_GUARDED_BY(mu_) = 0;
  int64_t queued_bytes_ STRATA_GUARDED_BY(mu_) = 0;
  bool cancelled_ STRATA_GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_{false};     // cancelled_, read by the helpers' sinks without the lock
  std::vector<std::thread> threads_;  // last: started once the members above exist
};

// Threads for a probing scan of `generations` with `requested` (LsmScanOptions::threads), at
// most one per generation. By default, one when the generations hold too few rows for helper
// threads to pay for their start.
int ScanThreads(std::span<const std::shared_ptr<Generation>> generations, int requested) {
  constexpr int64_t kMinRowsForThreads = int64_t{64} << 10;
  int64_t rows = 0;
  size_t present = 0;
  for (const auto& generation : generations) {
    if (generation == nullptr) continue;
    ++present;
    rows += generation->entry().rows();
  }
  int threads = requested;
  if (threads <= 0) {
    if (rows < kMinRowsForThreads) return 1;
    threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxScanThreads);
  }
  return static_cast<int>(std::clamp<size_t>(present, 1, static_cast<size_t>(threads)));
}

Status ScanBase(const table::Table& base, const ReadPlan& plan, std::string_view filter,
                const KeySet& seen, Sink& sink) {
  if (sink.full()) return Status::OK();
  table::ScanOptions options;
  options.filter = std::string(filter);
  if (seen.empty()) {
    // Nothing to drop: the base applies projection, offset and limit itself.
    for (const FieldPtr& f : plan.output_schema->fields()) options.columns.push_back(f->name());
    std::tie(options.offset, options.limit) = sink.Delegate();
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, base.Scan(options));
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
      if (!batch) return Status::OK();
      STRATA_ASSIGN_OR_RETURN(RecordBatch out, Conform(*batch, plan.output_schema, "base table"));
      STRATA_RETURN_IF_ERROR(sink.Add(std::move(out)));
    }
  }
  options.columns = plan.work_names;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, base.Scan(options));
  const std::string& key_name = plan.work_names[plan.work_key];
  std::vector<uint8_t> newer;  // reused across batches
  while (!sink.full()) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
    if (!batch) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(KeyColumnView keys,
                            KeyColumnView::Make(batch->column(plan.work_key), key_name));
    seen.ContainsAll(keys, &newer);
    std::vector<int64_t> keep;
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      if (!newer[r]) keep.push_back(r);
    }
    if (keep.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(RecordBatch work, Conform(*batch, plan.work_schema, "base table"));
    STRATA_ASSIGN_OR_RETURN(RecordBatch kept, TakeRows(work, keep));
    STRATA_ASSIGN_OR_RETURN(RecordBatch projected, kept.Project(plan.output));
    STRATA_RETURN_IF_ERROR(sink.Add(std::move(projected)));
  }
  return Status::OK();
}

}  // namespace

namespace {

// `seen` collects the encoded key of every row of the newer sources (tombstones included);
// the base is read only with `include_base`.
Status ScanInto(const LsmView& view, const LsmScanOptions& options, Sink& sink, KeySet& seen,
                bool include_base = true) {
  if (options.offset < 0) {
    return Status::InvalidArgument(
        fmt::format("lsm scan: offset must be >= 0, got {}", options.offset));
  }
  if (options.limit && *options.limit < 0) {
    return Status::InvalidArgument(
        fmt::format("lsm scan: limit must be >= 0, got {}", *options.limit));
  }
  STRATA_ASSIGN_OR_RETURN(ReadPlan plan, MakePlan(view, options.columns, options.filter));
  // A generation's keys go into `seen` so that older sources can drop the rows they hide. When
  // only generations are older (no base rows follow, and the caller does not want the keys),
  // a filtered scan instead checks the rows passing the filter against the newer generations'
  // key indexes: a selective filter then reads and hashes the keys of those rows alone.
  // Each row passing the filter is tried against every newer generation's bloom filter, so
  // with many generations and an unselective filter that costs more than the key pass.
  constexpr size_t kMaxProbedGenerations = 16;
  bool probe_newer =
      plan.filter.has_value() && include_base && view.generations.size() <= kMaxProbedGenerations;
  if (probe_newer && view.base) {
    STRATA_ASSIGN_OR_RETURN(int64_t base_rows, view.base->CountRows());
    probe_newer = base_rows == 0;
  }
  if (!options.limit) {
    // Every key of the newer sources is remembered: size the set once for their rows instead
    // of rehashing it as it grows (at most KeySet::kMaxReserve keys).
    int64_t rows = 0;
    auto add = [&](int64_t n) {
      rows = std::min(rows + std::clamp<int64_t>(n, 0, KeySet::kMaxReserve), KeySet::kMaxReserve);
    };
    for (const auto& memtable : view.memtables) add(memtable ? memtable->rows() : 0);
    if (!probe_newer) {
      for (const auto& generation : view.generations)
        add(generation ? generation->entry().rows() : 0);
    }
    seen.Reserve(static_cast<size_t>(rows));
  }
  for (const auto& memtable : view.memtables) {
    if (sink.full()) return Status::OK();
    if (memtable) STRATA_RETURN_IF_ERROR(ScanMemTable(*memtable, plan, seen, sink));
  }
  const std::span<const std::shared_ptr<Generation>> generations(view.generations);
  // Probing, a generation reads nothing another one writes: `seen` (the memtables' keys) and
  // the newer generations are only read, so generations can be scanned at once.
  // With a limit the scan stops early, which a single thread does soonest.
  int threads = probe_newer && !options.limit ? ScanThreads(generations, options.threads) : 1;
  if (threads > 1 && !sink.full()) {
    std::optional<ParallelGenerationScan> scan;
    try {
      scan.emplace(generations.size(), threads, options.max_queued_bytes, [&](size_t g, Sink& out) {
        if (generations[g] == nullptr) return Status::OK();
        return ScanGeneration(*generations[g], plan, options.filter, seen, out,
                              generations.first(g));
      });
    } catch (const std::system_error&) {
      threads = 1;  // no thread could start: nothing was emitted, read them here
    }
    if (scan) STRATA_RETURN_IF_ERROR(scan->Drain(sink));
  }
  for (size_t g = 0; g < generations.size() && threads == 1; ++g) {
    if (sink.full()) return Status::OK();
    if (generations[g] == nullptr) continue;
    std::optional<std::span<const std::shared_ptr<Generation>>> newer;
    if (probe_newer) newer = generations.first(g);
    STRATA_RETURN_IF_ERROR(
        ScanGeneration(*generations[g], plan, options.filter, seen, sink, newer));
  }
  if (view.base && include_base) {
    STRATA_RETURN_IF_ERROR(ScanBase(*view.base, plan, options.filter, seen, sink));
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<RecordBatch>> LsmScan(const LsmView& view, const LsmScanOptions& options) {
  Sink sink(options.offset, options.limit);
  KeySet seen;
  STRATA_RETURN_IF_ERROR(ScanInto(view, options, sink, seen));
  return sink.Finish();
}

Status LsmScanEach(const LsmView& view, const LsmScanOptions& options,
                   const std::function<Status(RecordBatch)>& consume) {
  Sink sink(options.offset, options.limit, consume);
  KeySet seen;
  return ScanInto(view, options, sink, seen);
}

Result<std::vector<RecordBatch>> LsmScanPending(const LsmView& view, const LsmScanOptions& options,
                                                internal::KeySet* keys) {
  Sink sink(options.offset, options.limit);
  STRATA_RETURN_IF_ERROR(ScanInto(view, options, sink, *keys, /*include_base=*/false));
  return sink.Finish();
}

Result<int64_t> LsmCount(const LsmView& view, const std::string& filter) {
  if (view.schema == nullptr) return Status::InvalidArgument("lsm count: the view has no schema");
  if (view.key_column < 0 || view.key_column >= view.schema->num_fields()) {
    return Status::InvalidArgument(
        fmt::format("lsm count: key column {} is outside the schema", view.key_column));
  }
  LsmScanOptions options;
  options.columns = {view.schema->field(view.key_column)->name()};
  options.filter = filter;
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, LsmScan(view, options));
  int64_t rows = 0;
  for (const RecordBatch& b : batches) rows += b.num_rows();
  return rows;
}

namespace {

// Per distinct requested key: unresolved, resolved as missing (tombstone), or found at a row
// of one of the collected parts.
struct GetState {
  std::vector<std::string> encoded;   // distinct keys, in request order
  std::vector<expr::Scalar> scalars;  // the caller's scalar of each
  std::unordered_map<std::string, size_t> slot_of;
  enum class Kind : uint8_t { kUnresolved, kMissing, kFound };
  std::vector<Kind> kind;
  std::vector<std::pair<size_t, int64_t>> where;  // (part, row) when found
  std::vector<RecordBatch> parts;                 // in the work schema
  size_t unresolved = 0;
};

// Records a part whose row i is the newest live row of slots[i].
void AddPart(GetState& state, RecordBatch part, const std::vector<size_t>& slots) {
  const size_t index = state.parts.size();
  for (size_t i = 0; i < slots.size(); ++i) {
    state.kind[slots[i]] = GetState::Kind::kFound;
    state.where[slots[i]] = {index, static_cast<int64_t>(i)};
  }
  state.parts.push_back(std::move(part));
}

void Resolve(GetState& state, size_t slot) {
  state.kind[slot] = GetState::Kind::kMissing;
  --state.unresolved;
}

Status GetFromMemTable(const MemTableSnapshot& snapshot, const ReadPlan& plan, GetState& state) {
  std::unordered_map<uint32_t, std::vector<std::pair<int64_t, size_t>>> hits;  // batch -> rows
  const auto& batches = snapshot.batches();
  for (size_t slot = 0; slot < state.encoded.size(); ++slot) {
    if (state.kind[slot] != GetState::Kind::kUnresolved) continue;
    std::optional<MemRowRef> ref = snapshot.Lookup(state.encoded[slot]);
    if (!ref) continue;
    if (ref->batch >= batches.size() ||
        ref->row >= static_cast<uint64_t>(batches[ref->batch]->batch.num_rows())) {
      return Status::Internal(fmt::format("memtable lookup returned row {}:{} outside the snapshot",
                                          ref->batch, ref->row));
    }
    Resolve(state, slot);
    if (!batches[ref->batch]->tombstone) hits[ref->batch].emplace_back(ref->row, slot);
  }
  for (const auto& [b, rows] : hits) {
    std::vector<int64_t> indices;
    std::vector<size_t> slots;
    for (const auto& [row, slot] : rows) {
      indices.push_back(row);
      slots.push_back(slot);
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch work,
                            Conform(batches[b]->batch, plan.work_schema, "memtable batch"));
    STRATA_ASSIGN_OR_RETURN(RecordBatch part, TakeRows(work, indices));
    AddPart(state, std::move(part), slots);
  }
  return Status::OK();
}

Status GetFromGeneration(const Generation& generation, const ReadPlan& plan, GetState& state) {
  std::vector<expr::Scalar> candidates;
  for (size_t slot = 0; slot < state.encoded.size(); ++slot) {
    if (state.kind[slot] == GetState::Kind::kUnresolved &&
        generation.MayContain(state.encoded[slot])) {
      candidates.push_back(state.scalars[slot]);
    }
  }
  if (candidates.empty()) return Status::OK();
  const std::string what = GenerationName(generation);
  bool complete = true;
  Result<RecordBatch> found =
      generation.table()->LookupKeys(candidates, GenerationColumns(generation, plan, &complete));
  if (!found.ok()) return found.status().WithContext(what);
  const RecordBatch& batch = *found;
  if (batch.num_rows() == 0) return Status::OK();
  const std::string& key_name = plan.work_names[plan.work_key];
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys,
                          EncodeKeys(batch.GetColumnByName(key_name), key_name));
  STRATA_ASSIGN_OR_RETURN(Array tombstones, TombstoneColumn(batch, what));
  std::vector<int64_t> live;
  std::vector<size_t> slots;
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    auto it = state.slot_of.find(keys[r]);
    if (it == state.slot_of.end() || state.kind[it->second] != GetState::Kind::kUnresolved) {
      continue;
    }
    Resolve(state, it->second);
    if (!IsTombstone(tombstones, r)) {
      live.push_back(r);
      slots.push_back(it->second);
    }
  }
  if (live.empty()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(RecordBatch part, GenerationRows(batch, plan, live, what));
  AddPart(state, std::move(part), slots);
  return Status::OK();
}

Status GetFromBase(const table::Table& base, const ReadPlan& plan, GetState& state) {
  std::vector<expr::Scalar> remaining;
  for (size_t slot = 0; slot < state.encoded.size(); ++slot) {
    if (state.kind[slot] == GetState::Kind::kUnresolved) remaining.push_back(state.scalars[slot]);
  }
  if (remaining.empty()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, base.LookupKeys(remaining, plan.work_names));
  if (batch.num_rows() == 0) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> keys,
                          EncodeKeys(batch.column(plan.work_key), plan.work_names[plan.work_key]));
  std::vector<int64_t> rows;
  std::vector<size_t> slots;
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    auto it = state.slot_of.find(keys[r]);
    if (it == state.slot_of.end() || state.kind[it->second] != GetState::Kind::kUnresolved) {
      continue;
    }
    Resolve(state, it->second);
    rows.push_back(r);
    slots.push_back(it->second);
  }
  if (rows.empty()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(RecordBatch work, Conform(batch, plan.work_schema, "base table"));
  STRATA_ASSIGN_OR_RETURN(RecordBatch part, TakeRows(work, rows));
  AddPart(state, std::move(part), slots);
  return Status::OK();
}

}  // namespace

Result<RecordBatch> LsmGet(const LsmView& view, const std::vector<expr::Scalar>& keys,
                           const std::vector<std::string>& columns) {
  if (keys.size() > kMaxGetKeys) {
    return Status::InvalidArgument(
        fmt::format("lsm get: {} keys, at most {} per call", keys.size(), kMaxGetKeys));
  }
  STRATA_ASSIGN_OR_RETURN(ReadPlan plan, MakePlan(view, columns, {}));
  const Field& key_field = *view.schema->field(view.key_column);
  GetState state;
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<std::string> encoded = EncodeKeyScalar(keys[i], *key_field.type());
    if (!encoded.ok()) {
      return encoded.status().WithContext(fmt::format("lsm get: key {} ({}) for column '{}'", i,
                                                      keys[i].ToString(), key_field.name()));
    }
    if (state.slot_of.emplace(*encoded, state.encoded.size()).second) {
      state.encoded.push_back(std::move(*encoded));
      state.scalars.push_back(keys[i]);
    }
  }
  state.kind.assign(state.encoded.size(), GetState::Kind::kUnresolved);
  state.where.assign(state.encoded.size(), {0, 0});
  state.unresolved = state.encoded.size();

  for (const auto& memtable : view.memtables) {
    if (state.unresolved == 0) break;
    if (memtable) STRATA_RETURN_IF_ERROR(GetFromMemTable(*memtable, plan, state));
  }
  for (const auto& generation : view.generations) {
    if (state.unresolved == 0) break;
    if (generation) STRATA_RETURN_IF_ERROR(GetFromGeneration(*generation, plan, state));
  }
  if (view.base && state.unresolved > 0) {
    STRATA_RETURN_IF_ERROR(GetFromBase(*view.base, plan, state));
  }

  if (state.parts.empty()) return RecordBatch::MakeEmpty(plan.output_schema);
  std::vector<int64_t> first_row(state.parts.size(), 0);
  for (size_t p = 1; p < state.parts.size(); ++p) {
    first_row[p] = first_row[p - 1] + state.parts[p - 1].num_rows();
  }
  std::vector<int64_t> order;
  for (size_t slot = 0; slot < state.encoded.size(); ++slot) {
    if (state.kind[slot] != GetState::Kind::kFound) continue;
    order.push_back(first_row[state.where[slot].first] + state.where[slot].second);
  }
  STRATA_ASSIGN_OR_RETURN(RecordBatch all, ConcatenateBatches(state.parts));
  STRATA_ASSIGN_OR_RETURN(RecordBatch ordered, TakeRows(all, order));
  return ordered.Project(plan.output);
}

namespace internal {
namespace {

// Key bytes are copied into shared blocks of this size; a key longer than a quarter of it
// gets a block of its own, so at most a quarter of a block is wasted at its end.
constexpr size_t kKeyBlockBytes = 64 << 10;
constexpr size_t kInitialSlots = 64;
// A key of no bytes still needs a non-null address (nullptr marks an empty slot).
constexpr char kNoBytes[1] = {0};

}  // namespace

uint64_t KeySet::DefaultHash(std::string_view key) { return XxHash3_64(key); }

void KeySet::SlotsDeleter::operator()(Slot* slots) const {
  if (mapped_bytes > 0) {
    ::munmap(slots, mapped_bytes);
  } else {
    std::free(slots);
  }
}

KeySet::Slots KeySet::AllocateSlots(size_t count) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = count * sizeof(Slot);
  if (bytes >= kHugePage) {
    // Fresh anonymous pages read as zero (an all-zero Slot is empty), so nothing is cleared
    // here and untouched slots cost no memory.
    void* memory =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    ::madvise(memory, bytes, MADV_HUGEPAGE);  // advice only
    return Slots(static_cast<Slot*>(memory), SlotsDeleter{bytes});
  }
  void* memory = std::calloc(count, sizeof(Slot));
  if (memory == nullptr) throw std::bad_alloc();
  return Slots(static_cast<Slot*>(memory), SlotsDeleter{0});
}

size_t KeySet::FindSlot(std::string_view key, uint64_t hash) const {
  const size_t mask = num_slots_ - 1;
  for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.data == nullptr) return i;
    if (slot.hash == hash && std::string_view(slot.data, slot.size) == key) return i;
  }
}

void KeySet::Reserve(size_t keys) {
  size_t slots = num_slots_ == 0 ? kInitialSlots : num_slots_;
  while (slots / 2 < keys && slots < (size_t{1} << 60)) slots *= 2;
  if (slots > num_slots_) Rehash(slots);
}

void KeySet::Grow() { Rehash(num_slots_ == 0 ? kInitialSlots : num_slots_ * 2); }

void KeySet::Rehash(size_t slots) {
  Slots old = std::move(slots_);
  const size_t old_slots = num_slots_;
  slots_ = AllocateSlots(slots);
  num_slots_ = slots;
  const size_t mask = slots - 1;
  for (size_t k = 0; k < old_slots; ++k) {
    const Slot& slot = old[k];
    if (slot.data == nullptr) continue;
    size_t i = static_cast<size_t>(slot.hash) & mask;
    while (slots_[i].data != nullptr) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

const char* KeySet::CopyKey(std::string_view key) {
  if (key.empty()) return kNoBytes;
  if (key.size() > kKeyBlockBytes / 4) {
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(key.size()));
    std::memcpy(blocks_.back().get(), key.data(), key.size());
    return blocks_.back().get();  // free_ still points into the shared block
  }
  if (key.size() > free_size_) {
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(kKeyBlockBytes));
    free_ = blocks_.back().get();
    free_size_ = kKeyBlockBytes;
  }
  char* out = free_;
  std::memcpy(out, key.data(), key.size());
  free_ += key.size();
  free_size_ -= key.size();
  return out;
}

bool KeySet::Insert(std::string_view key) {
  if ((size_ + 1) * 2 > num_slots_) Grow();
  return InsertHashed(key, hash_(key));
}

bool KeySet::InsertHashed(std::string_view key, uint64_t hash) {
  Slot& slot = slots_[FindSlot(key, hash)];
  if (slot.data != nullptr) return false;
  slot.data = CopyKey(key);
  slot.hash = hash;
  slot.size = key.size();
  ++size_;
  return true;
}

bool KeySet::Contains(std::string_view key) const {
  if (size_ == 0) return false;
  return slots_[FindSlot(key, hash_(key))].data != nullptr;
}

namespace {

// Keys hashed ahead of the one probed: enough slot fetches in flight to cover a memory
// round trip. A power of two: the hashes wait in a ring of this many.
constexpr int64_t kProbeAhead = 16;

// Calls probe(row, hash) for every row of `keys` in order, each slot prefetched kProbeAhead
// rows before its probe.
template <typename Probe>
void ProbeAhead(const KeyColumnView& keys, KeySet::HashFunction hash, const void* slots,
                size_t slot_bytes, size_t mask, Probe probe) {
  const int64_t n = keys.size();
  uint64_t ring[kProbeAhead];
  auto fetch = [&](int64_t row) {
    const uint64_t h = hash(keys[row]);
    ring[row % kProbeAhead] = h;
    __builtin_prefetch(static_cast<const char*>(slots) + (h & mask) * slot_bytes);
  };
  for (int64_t r = 0; r < std::min(n, kProbeAhead); ++r) fetch(r);
  for (int64_t r = 0; r < n; ++r) {
    const uint64_t h = ring[r % kProbeAhead];
    if (r + kProbeAhead < n) fetch(r + kProbeAhead);
    probe(r, h);
  }
}

}  // namespace

void KeySet::InsertAll(const KeyColumnView& keys, std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(keys.size()));
  Reserve(size_ + static_cast<size_t>(keys.size()));  // no rehash below: slots stay put
  ProbeAhead(keys, hash_, slots_.get(), sizeof(Slot), num_slots_ - 1,
             [&](int64_t r, uint64_t h) { (*out)[r] = InsertHashed(keys[r], h) ? 1 : 0; });
}

void KeySet::ContainsAll(const KeyColumnView& keys, std::vector<uint8_t>* out) const {
  out->assign(static_cast<size_t>(keys.size()), 0);
  if (size_ == 0) return;
  ProbeAhead(keys, hash_, slots_.get(), sizeof(Slot), num_slots_ - 1, [&](int64_t r, uint64_t h) {
    (*out)[r] = slots_[FindSlot(keys[r], h)].data != nullptr ? 1 : 0;
  });
}

Result<KeyColumnView> KeyColumnView::Make(const Array& column, std::string_view column_name) {
  KeyColumnView out;
  out.size_ = column.length();
  const TypeId id = column.type_id();
  if ((id == TypeId::kUtf8 || id == TypeId::kLargeUtf8) && column.null_count() == 0) {
    // lsm/key.h: a utf8 key is encoded as its bytes.
    out.direct_ = true;
    out.strings_ = column;
    return out;
  }
  STRATA_ASSIGN_OR_RETURN(out.encoded_, EncodeKeys(column, column_name));
  return out;
}

}  // namespace internal
}  // namespace strata::lsm
