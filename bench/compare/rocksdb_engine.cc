// RocksDB as a peer in bench/compare: key = id, value = the rest of the row in row_codec's
// binary form, options as RocksDB's tuning guide recommends for point lookups and bulk
// writes, every write synced. settings() prints the options the DB was opened with.
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/version.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../floor.h"
#include "engine.h"
#include "row_codec.h"

namespace strata::bench::compare {
namespace {

constexpr size_t kBlockCacheBytes = size_t{256} << 20;
constexpr size_t kBlockBytes = 16 << 10;
constexpr int kBloomBitsPerKey = 10;
constexpr size_t kVectorLoadRows = 256;  // vectors per WriteBatch of the untimed W8 load

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  std::string message = std::string(what) + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(std::move(message));
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) return Status::Busy(std::move(message));
  if (s.IsCorruption()) return Status::Corruption(std::move(message));
  if (s.IsIOError()) return Status::IOError(std::move(message));
  if (s.IsNotSupported()) return Status::NotSupported(std::move(message));
  if (s.IsInvalidArgument()) return Status::InvalidArgument(std::move(message));
  return Status::Internal(std::move(message));
}

std::string CompressionName(rocksdb::CompressionType type) {
  std::string name;
  if (!rocksdb::GetStringFromCompressionType(&name, type).ok()) {
    name = "compression#" + std::to_string(static_cast<int>(type));
  }
  return name;
}

bool Supported(rocksdb::CompressionType type) {
  const auto all = rocksdb::GetSupportedCompressions();
  return std::find(all.begin(), all.end(), type) != all.end();
}

template <typename F>
auto Guarded(std::string_view what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + ": " + e.what());
  }
}

// The tuning guide's recipe ("Setup Options and Basic Tuning" on the RocksDB wiki) on top of
// OptimizeLevelStyleCompaction's memtable/level sizing.
rocksdb::Options TunedOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.error_if_exists = true;
  o.IncreaseParallelism(2);          // one flush + compaction pool sized to the 2 cores
  o.OptimizeLevelStyleCompaction();  // 512 MiB memtable budget
  // It also sets min_write_buffer_number_to_merge = 2; with that, librocksdb 7.8's manual
  // Flush(wait) of the W8 load hung forever on a last lone immutable memtable (all background
  // threads idle, seen in a full run). One memtable per flush is RocksDB's own default.
  o.min_write_buffer_number_to_merge = 1;
  o.compression_per_level.clear();  // it leaves L0/L1 uncompressed; use the guide's scheme
  o.compression =
      Supported(rocksdb::kLZ4Compression) ? rocksdb::kLZ4Compression : rocksdb::kSnappyCompression;
  o.bottommost_compression =
      Supported(rocksdb::kZSTD) ? rocksdb::kZSTD : rocksdb::kDisableCompressionOption;
  o.level_compaction_dynamic_level_bytes = true;
  o.bytes_per_sync = 1 << 20;
  // What OptimizeForPointLookup adds for the memtable: a whole-key bloom filter, so a
  // lookup of a missing id skips the memtables.
  o.memtable_whole_key_filtering = true;
  o.memtable_prefix_bloom_size_ratio = 0.02;

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(kBlockCacheBytes);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(kBloomBitsPerKey, false));
  table.block_size = kBlockBytes;
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.format_version = 5;
  table.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return o;
}

class RocksDbEngine final : public Engine {
 public:
  RocksDbEngine() : options_(TunedOptions()) {
    write_options_.sync = true;
    scan_options_.fill_cache = false;  // the guide's advice for bulk scans
  }
  ~RocksDbEngine() override { Close().IgnoreError(); }

  std::string name() const override { return "rocksdb"; }
  std::string durability() const override { return "fsync per write batch (sync=true)"; }
  std::string settings() const override {
    const rocksdb::Options& o = options_;
    std::string supported;
    for (rocksdb::CompressionType type : rocksdb::GetSupportedCompressions()) {
      supported += (supported.empty() ? "" : ",") + CompressionName(type);
    }
    auto mib = [](uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
    return "IncreaseParallelism(2) -> max_background_jobs=" +
           std::to_string(o.max_background_jobs) +
           "; OptimizeLevelStyleCompaction(512 MiB) -> write_buffer_size=" +
           mib(o.write_buffer_size) +
           ", max_write_buffer_number=" + std::to_string(o.max_write_buffer_number) +
           ", min_write_buffer_number_to_merge=" +
           std::to_string(o.min_write_buffer_number_to_merge) +
           ", level0_file_num_compaction_trigger=" +
           std::to_string(o.level0_file_num_compaction_trigger) +
           ", target_file_size_base=" + mib(o.target_file_size_base) +
           ", max_bytes_for_level_base=" + mib(o.max_bytes_for_level_base) +
           "; level_compaction_dynamic_level_bytes=true, bytes_per_sync=1 MiB, "
           "memtable_whole_key_filtering=true, memtable_prefix_bloom_size_ratio=0.02; "
           "compression=" +
           CompressionName(o.compression) +
           ", bottommost_compression=" + CompressionName(o.bottommost_compression) +
           " (this build supports " + supported + "); block-based table: bloom filter " +
           std::to_string(kBloomBitsPerKey) +
           " bits/key (full filter, format_version=5), block_size=16 KiB, LRU block cache " +
           mib(kBlockCacheBytes) +
           " shared by all column families, cache_index_and_filter_blocks=true, "
           "pin_l0_filter_and_index_blocks_in_cache=true, data_block_index_type="
           "kDataBlockBinaryAndHash; WriteOptions.sync=true (use_fsync=" +
           std::string(o.use_fsync ? "true: the WAL is fsynced" : "false: the WAL is fdatasynced") +
           "); key = id, value = binary row "
           "(fixed fields first, varint-prefixed strings and int32 token arrays); full scans "
           "with ReadOptions.fill_cache=false except W8's repeated scans; W1/W6 one WriteBatch per "
           "256 rows; W2 one "
           "column family per call, one Put per row; W5/W6 batched MultiGet; W7 Flush then "
           "CompactRange(bottommost_level_compaction=kForceOptimized) on every column family; "
           "W8 column family 'vectors', brute-force L2 over an iteration";
  }
  std::string version() const override {
    return "RocksDB " + std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
           std::to_string(ROCKSDB_PATCH) + " (library " + rocksdb::GetRocksVersionAsString() + ")";
  }

  Status Open(const std::string& dir, const Dataset&) override {
    return Guarded("rocksdb open", [&]() -> Status {
      path_ = dir + "/db";
      rocksdb::DB* raw = nullptr;
      STRATA_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(options_, path_, &raw), "open " + path_));
      db_.reset(raw);
      return Status::OK();
    });
  }

  Result<StepResult> Ingest(const Dataset& data) override {
    return Guarded("rocksdb W1 ingest", [&]() -> Result<StepResult> {
      StepResult r;
      const size_t batch = static_cast<size_t>(data.sizes.batch_rows);
      const auto start = Clock::now();
      for (size_t b = 0; b < data.rows.size(); b += batch) {
        const auto t0 = Clock::now();
        STRATA_RETURN_IF_ERROR(
            WriteRows(data.rows, b, std::min(b + batch, data.rows.size()), "W1 ingest"));
        r.latencies_us.push_back(row_codec::MicrosSince(t0));
        ++r.ops;
      }
      r.seconds = Seconds(start);
      r.rows = static_cast<int64_t>(data.rows.size());
      r.bytes = row_codec::LogicalBytes(data.rows, 0, data.rows.size());
      // The live WAL is preallocated (fallocate) to ~1.1 x write_buffer_size, which the
      // bytes on disk after W1 include until a flush retires it.
      r.note = "one synced WriteBatch of " + std::to_string(batch) +
               " Puts per batch; the live WAL file is preallocated to ~1.1 x "
               "write_buffer_size, counted on disk until a flush retires it";
      return r;
    });
  }

  Result<StepResult> Puts(const Dataset& data, int writers) override {
    return Guarded("rocksdb W2 puts",
                   [&]() -> Result<StepResult> { return DoPuts(data, writers); });
  }

  Result<StepResult> Scan(const Dataset& data) override {
    return Guarded("rocksdb W3 scan", [&]() -> Result<StepResult> {
      std::vector<row_codec::ScanHit> hits;
      const std::string_view policy = data.scan.policy_version;
      const float reward_gt = data.scan.reward_gt;
      const auto start = Clock::now();
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(scan_options_, rows()));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const rocksdb::Slice value = it->value();
        int32_t sequence_order = 0;
        float reward = 0;
        std::string_view row_policy;
        STRATA_RETURN_IF_ERROR(row_codec::RowReader(std::string_view(value.data(), value.size()))
                                   .ReadHead(&sequence_order, &reward, &row_policy));
        if (row_policy == policy && reward > reward_gt) {
          hits.push_back({it->key().ToString(), sequence_order, reward});
        }
      }
      STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "W3 iteration"));
      StepResult r;
      r.seconds = Seconds(start);
      r.ops = 1;
      r.rows = static_cast<int64_t>(hits.size());
      r.answer = row_codec::ScanAnswer(hits);
      r.note = "iterate every row, decode the fixed-field prefix, filter, project";
      return r;
    });
  }

  Result<StepResult> Lookup(const Dataset& data) override {
    return Guarded("rocksdb W4 lookup", [&]() -> Result<StepResult> {
      rocksdb::PinnableSlice value;
      BenchRow row;
      return row_codec::TimedLookups(
          data.lookup_ids,
          [&](const std::string& id) -> Result<std::optional<int64_t>> {
            value.Reset();
            const rocksdb::Status s = db_->Get(read_options_, rows(), id, &value);
            if (s.IsNotFound()) return std::optional<int64_t>();
            if (!s.ok()) return FromRocks(s, "W4 Get " + id);
            STRATA_RETURN_IF_ERROR(
                row_codec::RowReader(std::string_view(value.data(), value.size()))
                    .ReadRow(id, &row));
            return std::optional<int64_t>(row.sequence_order);
          },
          "Get + decode of the whole row");
    });
  }

  Result<StepResult> GetMany(const Dataset& data) override {
    return Guarded("rocksdb W5 get_many", [&]() -> Result<StepResult> {
      return row_codec::TimedGetMany(
          data.get_many_ids,
          [&](const std::vector<std::string>& ids) { return MultiGet(ids.begin(), ids.end()); },
          "one batched MultiGet per batch, each row decoded");
    });
  }

  Result<StepResult> Overwrite(const Dataset& data) override {
    return Guarded("rocksdb W6 overwrite", [&]() -> Result<StepResult> {
      const std::vector<BenchRow>& rows_in = data.overwrite_rows;
      const size_t batch = static_cast<size_t>(data.sizes.batch_rows);
      STRATA_ASSIGN_OR_RETURN(StepResult r,
                              row_codec::TimedOverwrite(
                                  rows_in, batch,
                                  [&](size_t begin, size_t end) {
                                    return WriteRows(rows_in, begin, end, "W6 overwrite");
                                  },
                                  [&](auto first, auto last) { return MultiGet(first, last); },
                                  "synced WriteBatch per " + std::to_string(batch) + " rows",
                                  "MultiGet back per " + std::to_string(batch) + " ids"));
      STRATA_ASSIGN_OR_RETURN(r.total_rows, CountRows());
      return r;
    });
  }

  Result<StepResult> Compact() override {
    return Guarded("rocksdb W7 compact", [&]() -> Result<StepResult> {
      std::vector<rocksdb::ColumnFamilyHandle*> all = {rows()};
      all.insert(all.end(), families_.begin(), families_.end());
      StepResult r;
      const auto start = Clock::now();
      STRATA_RETURN_IF_ERROR(CompactFamilies(all));
      r.seconds = Seconds(start);
      r.ops = static_cast<int64_t>(all.size());
      r.note = "Flush(wait) then CompactRange(kForceOptimized) over " + std::to_string(all.size()) +
               " column families";
      return r;
    });
  }

  Result<StepResult> VectorSearch(const Dataset& data) override {
    return Guarded("rocksdb W8 vector", [&]() -> Result<StepResult> { return DoVector(data); });
  }

  Result<StepResult> HybridRetrieve(const Dataset&) override {
    return StepResult::Unsupported(
        "a key-value store: no full-text or vector index to fuse (hybrid retrieval)");
  }

  Result<StepResult> Sql(const Dataset&) override {
    return StepResult::Unsupported(
        "a key-value store: no SQL (a GROUP BY would be hand-written C++ over a full "
        "iteration)");
  }

  Status Close() override {
    return Guarded("rocksdb close", [&]() -> Status {
      if (!db_) return Status::OK();
      Status status;
      for (rocksdb::ColumnFamilyHandle* handle : families_) {
        Status s = FromRocks(db_->DestroyColumnFamilyHandle(handle), "destroy handle");
        if (status.ok()) status = s;
      }
      families_.clear();
      vectors_ = nullptr;
      Status s = FromRocks(db_->Close(), "close " + path_);
      if (status.ok()) status = s;
      db_.reset();
      return status;
    });
  }

 private:
  rocksdb::ColumnFamilyHandle* rows() const { return db_->DefaultColumnFamily(); }

  // rows[begin, end) in one synced WriteBatch into the default column family.
  Status WriteRows(const std::vector<BenchRow>& rows_in, size_t begin, size_t end,
                   std::string_view what) {
    rocksdb::WriteBatch batch;
    for (size_t i = begin; i < end; ++i) {
      value_.clear();
      row_codec::EncodeRow(rows_in[i], &value_);
      STRATA_RETURN_IF_ERROR(FromRocks(batch.Put(rows_in[i].id, value_), what));
    }
    return FromRocks(db_->Write(write_options_, &batch), what);
  }

  // Per id in [first, last), the sequence_order read (whole row decoded), or nullopt.
  template <typename It>
  Result<std::vector<std::optional<int64_t>>> MultiGet(It first, It last) {
    const size_t n = static_cast<size_t>(last - first);
    std::vector<rocksdb::Slice> keys;
    keys.reserve(n);
    for (It it = first; it != last; ++it) keys.emplace_back(*it);
    std::vector<rocksdb::PinnableSlice> values(n);
    std::vector<rocksdb::Status> statuses(n);
    db_->MultiGet(read_options_, rows(), n, keys.data(), values.data(), statuses.data());
    std::vector<std::optional<int64_t>> found(n);
    BenchRow row;
    for (size_t i = 0; i < n; ++i) {
      if (statuses[i].ok()) {
        STRATA_RETURN_IF_ERROR(
            row_codec::RowReader(std::string_view(values[i].data(), values[i].size()))
                .ReadRow(std::string_view(keys[i].data(), keys[i].size()), &row));
        found[i] = row.sequence_order;
      } else if (!statuses[i].IsNotFound()) {
        return FromRocks(statuses[i], "MultiGet " + keys[i].ToString());
      }
    }
    return found;
  }

  Result<int64_t> CountRows() {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(scan_options_, rows()));
    int64_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "count rows"));
    return n;
  }

  Status CompactFamilies(const std::vector<rocksdb::ColumnFamilyHandle*>& families) {
    rocksdb::FlushOptions flush;
    flush.wait = true;
    STRATA_RETURN_IF_ERROR(FromRocks(db_->Flush(flush, families), "flush memtables"));
    rocksdb::CompactRangeOptions compact;
    compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
    for (rocksdb::ColumnFamilyHandle* family : families) {
      STRATA_RETURN_IF_ERROR(FromRocks(db_->CompactRange(compact, family, nullptr, nullptr),
                                       "CompactRange of " + family->GetName()));
    }
    return Status::OK();
  }

  Result<rocksdb::ColumnFamilyHandle*> CreateFamily(const std::string& name) {
    rocksdb::ColumnFamilyHandle* handle = nullptr;
    STRATA_RETURN_IF_ERROR(
        FromRocks(db_->CreateColumnFamily(rocksdb::ColumnFamilyOptions(options_), name, &handle),
                  "create column family " + name));
    families_.push_back(handle);
    return handle;
  }

  Result<StepResult> DoPuts(const Dataset& data, int writers) {
    const size_t per_writer = static_cast<size_t>(data.sizes.puts_per_writer);
    if (writers < 1 || data.put_rows.size() < per_writer * static_cast<size_t>(writers)) {
      return Status::InvalidArgument("W2 with " + std::to_string(writers) + " writers needs " +
                                     std::to_string(per_writer * std::max(writers, 0)) +
                                     " put rows, the data set has " +
                                     std::to_string(data.put_rows.size()));
    }
    const std::string family_name =
        "puts-" + std::to_string(++puts_calls_) + "-w" + std::to_string(writers);
    STRATA_ASSIGN_OR_RETURN(rocksdb::ColumnFamilyHandle * family, CreateFamily(family_name));

    std::vector<Status> statuses(static_cast<size_t>(writers));
    std::vector<std::vector<double>> latencies(static_cast<size_t>(writers));
    std::latch go(1);
    std::vector<std::thread> threads;
    Status spawn;
    for (int w = 0; w < writers && spawn.ok(); ++w) {
      spawn = Guarded("rocksdb W2 start writer", [&]() -> Status {
        threads.emplace_back([&, w] {
          go.wait();
          statuses[static_cast<size_t>(w)] = Guarded("rocksdb W2 writer", [&]() -> Status {
            std::vector<double>& lat = latencies[static_cast<size_t>(w)];
            lat.reserve(per_writer);
            std::string value;
            const size_t first = static_cast<size_t>(w) * per_writer;
            const auto until = row_codec::PutsDeadline(data.sizes.puts_seconds);
            for (size_t i = first; i < first + per_writer && Clock::now() < until; ++i) {
              const auto t0 = Clock::now();
              const BenchRow& row = data.put_rows[i];
              value.clear();
              row_codec::EncodeRow(row, &value);
              STRATA_RETURN_IF_ERROR(
                  FromRocks(db_->Put(write_options_, family, row.id, value), "W2 Put " + row.id));
              lat.push_back(row_codec::MicrosSince(t0));
            }
            return Status::OK();
          });
        });
        return Status::OK();
      });
    }
    const auto start = Clock::now();
    go.count_down();
    for (std::thread& t : threads) t.join();
    StepResult r;
    r.seconds = Seconds(start);
    STRATA_RETURN_IF_ERROR(spawn);
    for (Status& status : statuses) STRATA_RETURN_IF_ERROR(status);
    for (const auto& lat : latencies) {
      r.latencies_us.insert(r.latencies_us.end(), lat.begin(), lat.end());
    }
    r.ops = static_cast<int64_t>(r.latencies_us.size());
    r.rows = r.ops;
    r.bytes = row_codec::PutBytes(data.put_rows, per_writer, latencies);
    r.note = std::to_string(writers) + " thread(s), one synced Put per row into column family " +
             family_name + (writers > 1 ? "; concurrent syncs share WAL group commits" : "");
    return r;
  }

  Result<StepResult> DoVector(const Dataset& data) {
    const int dim = data.sizes.vector_dim;
    const size_t n = data.vector_ids.size();
    const size_t queries = data.queries.size() / static_cast<size_t>(std::max(dim, 1));
    if (dim < 1 || data.vectors.size() != n * static_cast<size_t>(dim) ||
        data.queries.size() != queries * static_cast<size_t>(dim)) {
      return Status::InvalidArgument("W8: " + std::to_string(data.vectors.size()) +
                                     " vector floats and " + std::to_string(data.queries.size()) +
                                     " query floats do not fit " + std::to_string(n) +
                                     " ids of dimension " + std::to_string(dim));
    }
    const size_t value_bytes = static_cast<size_t>(dim) * sizeof(float);
    // The load is untimed: unsynced batches, then flushed and compacted so the queries read
    // settled table files, as a store loaded earlier would be.
    if (vectors_ == nullptr) {
      STRATA_ASSIGN_OR_RETURN(vectors_, CreateFamily("vectors"));
      rocksdb::WriteOptions load;
      for (size_t b = 0; b < n; b += kVectorLoadRows) {
        rocksdb::WriteBatch batch;
        for (size_t i = b; i < std::min(b + kVectorLoadRows, n); ++i) {
          const char* v = reinterpret_cast<const char*>(data.vectors.data() + i * dim);
          STRATA_RETURN_IF_ERROR(FromRocks(
              batch.Put(vectors_, data.vector_ids[i], rocksdb::Slice(v, value_bytes)), "W8 load"));
        }
        STRATA_RETURN_IF_ERROR(FromRocks(db_->Write(load, &batch), "W8 load"));
      }
      STRATA_RETURN_IF_ERROR(CompactFamilies({vectors_}));
    }

    StepResult r;
    std::vector<std::vector<std::string>> results(queries);
    const auto start = Clock::now();
    for (size_t q = 0; q < queries; ++q) {
      const auto t0 = Clock::now();
      const float* query = data.queries.data() + q * static_cast<size_t>(dim);
      row_codec::TopK top(data.sizes.top_k);
      row_codec::L2Scorer scorer(dim);
      // Default ReadOptions (fill_cache=true): the queries rescan the same data, which the
      // block cache may keep, as SQLite's page cache may.
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options_, vectors_));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const rocksdb::Slice value = it->value();
        if (value.size() != value_bytes) {
          return Status::Corruption("W8: vector " + it->key().ToString() + " has " +
                                    std::to_string(value.size()) + " bytes, not " +
                                    std::to_string(value_bytes));
        }
        const rocksdb::Slice key = it->key();
        top.Offer(scorer.Distance(query, value.data()), std::string_view(key.data(), key.size()));
      }
      STRATA_RETURN_IF_ERROR(FromRocks(it->status(), "W8 iteration"));
      results[q] = top.Take();
      r.latencies_us.push_back(row_codec::MicrosSince(t0));
    }
    r.seconds = Seconds(start);
    r.ops = static_cast<int64_t>(queries);
    r.rows = static_cast<int64_t>(queries) * data.sizes.top_k;
    r.answer = row_codec::VectorAnswer(results);
    r.note =
        "no vector index: each query iterates the 'vectors' column family (float32 "
        "values, default ReadOptions so the block cache fills) with L2 in C++ (load, flush "
        "and compaction untimed)";
    return r;
  }

  rocksdb::Options options_;
  rocksdb::WriteOptions write_options_;
  rocksdb::ReadOptions read_options_;
  rocksdb::ReadOptions scan_options_;
  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> families_;  // created here; destroyed in Close
  rocksdb::ColumnFamilyHandle* vectors_ = nullptr;      // one of families_
  std::string value_;                                   // encode buffer of WriteRows
  int puts_calls_ = 0;
};

}  // namespace

std::unique_ptr<Engine> MakeRocksDbEngine() { return std::make_unique<RocksDbEngine>(); }

}  // namespace strata::bench::compare
