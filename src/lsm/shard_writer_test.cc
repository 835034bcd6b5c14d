// Tests of the shard writer: open/replay/fence, durable puts, concurrent group commit,
// sealing and publication, tombstones, backpressure, torn WAL tails, crashes and flusher
// errors — over memory, local and fault-injecting stores.
#include "lsm/shard_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/file_object_store.h"
#include "io/memory_file_system.h"
#include "lsm/generation.h"
#include "lsm/layout.h"
#include "lsm/shard_manifest.h"
#include "lsm/wal.h"
#include "lsm/wal_test_util.h"
#include "strata/builder.h"
#include "support/forwarding_object_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/table_test_util.h"

namespace strata::lsm {
namespace {

using table::testing_util::KeyedRows;
using table::testing_util::KeyedSchema;

constexpr const char* kPrefix = "db/";
const Uuid kShard = DeriveShardId("writer-test");

// One row of a published generation.
struct GenRow {
  uint64_t generation = 0;
  bool tombstone = false;
};

// Every published generation of the shard's latest manifest with all its rows.
std::vector<std::pair<pb::Generation, RecordBatch>> PublishedGenerations(
    const std::shared_ptr<ObjectStore>& store, pb::ShardManifest* manifest_out = nullptr) {
  std::vector<std::pair<pb::Generation, RecordBatch>> out;
  ShardManifestStore manifests(store, kPrefix, kShard);
  Result<pb::ShardManifest> manifest = manifests.ReadLatest();
  EXPECT_TRUE(manifest.ok()) << manifest.status();
  if (!manifest.ok()) return out;
  if (manifest_out != nullptr) *manifest_out = *manifest;
  for (const pb::Generation& entry : manifest->generations()) {
    Result<std::shared_ptr<Generation>> gen = Generation::Open(store, kPrefix, kShard, entry, {});
    EXPECT_TRUE(gen.ok()) << gen.status();
    if (!gen.ok()) continue;
    Result<RecordBatch> all = table::testing_util::ReadAll(*(*gen)->table());
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) continue;
    EXPECT_EQ(all->num_rows(), entry.rows());
    out.emplace_back(entry, std::move(*all));
  }
  return out;
}

// Every row of every generation listed in the shard's latest manifest, by id.
std::multimap<int64_t, GenRow> ReadGenerations(const std::shared_ptr<ObjectStore>& store,
                                               pb::ShardManifest* manifest_out = nullptr) {
  std::multimap<int64_t, GenRow> rows;
  for (const auto& [entry, all] : PublishedGenerations(store, manifest_out)) {
    Array ids = all.GetColumnByName("id");
    Array tombstones = all.GetColumnByName(kTombstoneColumn);
    EXPECT_TRUE(ids.is_valid_handle() && tombstones.is_valid_handle());
    if (!ids.is_valid_handle() || !tombstones.is_valid_handle()) continue;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      // Generations linked from the WAL lack the column: null, not a tombstone.
      rows.emplace(ids.Value<int64_t>(r),
                   GenRow{entry.generation(), tombstones.IsValid(r) && tombstones.BoolValue(r)});
    }
  }
  return rows;
}

// The ids [first, first + n) each appear exactly once, as live rows.
void ExpectLiveOnce(const std::multimap<int64_t, GenRow>& rows, int64_t first, int64_t n) {
  for (int64_t id = first; id < first + n; ++id) {
    auto [begin, end] = rows.equal_range(id);
    ASSERT_EQ(std::distance(begin, end), 1) << "id " << id;
    EXPECT_FALSE(begin->second.tombstone) << "id " << id;
  }
}

Array Int64Keys(const std::vector<int64_t>& keys) {
  Int64Builder builder(int64());
  for (int64_t k : keys) builder.Append(k);
  return *builder.Finish();
}

// `threads` threads each put `puts` batches of `rows` rows: ids [0, threads * puts * rows)
// exactly once. Returns how many puts failed.
int PutConcurrently(ShardWriter& w, int threads, int puts, int64_t rows) {
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < puts; ++i) {
        if (!w.Put({KeyedRows((t * puts + i) * rows, rows)}).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return failures.load();
}

enum class StoreKind { kMemory, kLocal };

class ShardWriterTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override { store_ = MakeStore(); }

  // A store over the same data (a local one is a second handle on the same directory).
  std::shared_ptr<ObjectStore> MakeStore() {
    if (GetParam() == StoreKind::kMemory) {
      if (store_ == nullptr) return NewMemoryObjectStore();
      return store_;
    }
    Result<std::shared_ptr<ObjectStore>> store = OpenLocalObjectStore(dir_.str());
    EXPECT_TRUE(store.ok()) << store.status();
    return *store;
  }

  Result<std::shared_ptr<ShardWriter>> OpenWriter(std::shared_ptr<ObjectStore> store,
                                                  ShardWriterOptions options = {}) {
    return ShardWriter::Open(std::move(store), kPrefix, kShard, KeyedSchema(), 0, options);
  }
  Result<std::shared_ptr<ShardWriter>> OpenWriter(ShardWriterOptions options = {}) {
    return OpenWriter(store_, options);
  }

  strata::testing::TempDir dir_{"shard-writer"};
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(ShardWriterTest, ReopenReplaysAcknowledgedRowsOnceAndFencesTheOldWriter) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter());
  EXPECT_EQ(a->stats().replayed_records, 0);
  ASSERT_OK(a->Put({KeyedRows(0, 5)}));
  ASSERT_OK(a->Put({KeyedRows(5, 3), KeyedRows(8, 2)}));
  EXPECT_EQ(a->stats().active_rows, 10);

  // B takes over while A is alive and never closed: A's acknowledged rows are durable.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> b, OpenWriter(MakeStore()));
  EXPECT_GT(b->epoch(), a->epoch());
  EXPECT_EQ(b->stats().replayed_records, 2);
  EXPECT_EQ(b->stats().generations_published, 1);
  pb::ShardManifest manifest;
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_, &manifest);
  EXPECT_EQ(rows.size(), 10u);
  ExpectLiveOnce(rows, 0, 10);
  ASSERT_EQ(manifest.generations_size(), 1);
  EXPECT_EQ(manifest.generations(0).wal_end().epoch(), a->epoch());
  EXPECT_EQ(CompareWalPositions(manifest.replay_after(), MakeWalPosition(b->epoch(), 0, 0)), 0);
  EXPECT_EQ(manifest.writer_epoch(), b->epoch());

  // A is fenced: it acknowledges nothing more.
  Status fenced = a->Put({KeyedRows(100, 5)});
  EXPECT_TRUE(fenced.IsFenced()) << fenced;
  EXPECT_TRUE(a->fenced());
  EXPECT_TRUE(a->PutTombstones(Int64Keys({1})).IsFenced());
  ASSERT_OK_AND_ASSIGN(SealOutcome outcome, a->Seal(true));
  EXPECT_EQ(outcome, SealOutcome::kFenced);
  EXPECT_TRUE(a->Close().IsFenced());

  ASSERT_OK(b->Put({KeyedRows(20, 5)}));
  ASSERT_OK(b->Close());
  rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), 15u);
  ExpectLiveOnce(rows, 0, 10);
  ExpectLiveOnce(rows, 20, 5);
  EXPECT_EQ(rows.count(100), 0u);

  // A third owner replays nothing: everything is published.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> c, OpenWriter(MakeStore()));
  EXPECT_EQ(c->stats().replayed_records, 0);
  EXPECT_EQ(c->stats().generations_published, 0);
  ASSERT_OK(c->Close());
  EXPECT_EQ(ReadGenerations(store_).size(), 15u);
}

TEST_P(ShardWriterTest, DroppedWriterLeavesItsRowsForTheNextOwner) {
  ShardWriterOptions options;
  options.max_memtable_rows = 7;  // some rows published by A, the rest only in its WAL
  {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter(options));
    for (int i = 0; i < 6; ++i) ASSERT_OK(a->Put({KeyedRows(i * 3, 3)}));
    // "Kill" A: B takes over before A's destructor runs (which finds itself fenced).
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> b, OpenWriter(MakeStore(), options));
    EXPECT_GT(b->stats().replayed_records, 0);
    a.reset();
    ASSERT_OK(b->Close());
  }
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), 18u);
  ExpectLiveOnce(rows, 0, 18);
}

TEST_P(ShardWriterTest, ConcurrentPutsLandInGenerationsExactlyOnce) {
  auto counting = std::make_shared<lsm::testing::CountingStore>(store_);
  ShardWriterOptions options;
  options.max_memtable_rows = 64;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(counting, options));
  constexpr int kThreads = 8;
  constexpr int kPuts = 100;
  EXPECT_EQ(PutConcurrently(*w, kThreads, kPuts, 1), 0);
  ASSERT_OK(w->Close());
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), static_cast<size_t>(kThreads * kPuts));
  ExpectLiveOnce(rows, 0, kThreads * kPuts);
  // Group commit: concurrent puts share syncs.
  EXPECT_GT(counting->syncs.load(), 0);
  EXPECT_LT(counting->syncs.load(), kThreads * kPuts);
}

// Objects of the shard's generations that are WAL segments linked in.
int64_t LinkedDataFiles(ObjectStore& store) {
  Result<std::vector<ObjectMeta>> objects = store.List(ShardDir(kPrefix, kShard) + "gen/");
  EXPECT_TRUE(objects.ok()) << objects.status();
  int64_t n = 0;
  for (const ObjectMeta& o : objects.ValueOr({})) {
    n += o.key.find("/data/wal-") != std::string::npos ? 1 : 0;
  }
  return n;
}

// How many manifest versions the shard has.
int64_t ManifestVersions(ObjectStore& store) {
  const std::string dir = ShardManifestDir(kPrefix, kShard);
  Result<std::vector<ObjectMeta>> objects = store.List(dir);
  EXPECT_TRUE(objects.ok()) << objects.status();
  if (!objects.ok()) return -1;
  int64_t versions = 0;
  for (const ObjectMeta& object : *objects) {
    if (ParseShardManifestName(std::string_view(object.key).substr(dir.size()))) ++versions;
  }
  return versions;
}

int64_t WalSegments(ObjectStore& store) {
  Result<std::vector<WalSegment>> segments = ListWalSegments(store, kPrefix, kShard);
  EXPECT_TRUE(segments.ok()) << segments.status();
  return segments.ok() ? static_cast<int64_t>(segments->size()) : -1;
}

TEST_P(ShardWriterTest, ConcurrentPutsSealedByLinkingTheWalLandExactlyOnce) {
  ShardWriterOptions options;
  options.max_memtable_rows = 64;
  options.max_wal_segment_bytes = 2048;  // seals of 256 bytes and more link the WAL
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  constexpr int kThreads = 4;
  constexpr int kPuts = 60;
  EXPECT_EQ(PutConcurrently(*w, kThreads, kPuts, 3), 0);
  ASSERT_OK(w->Close());
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), static_cast<size_t>(kThreads * kPuts * 3));
  ExpectLiveOnce(rows, 0, kThreads * kPuts * 3);
  EXPECT_GT(LinkedDataFiles(*store_), 0);
  // Every WAL segment is covered by a published generation: none is left behind.
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, kShard));
  EXPECT_LE(segments.size(), 1u);
}

// id int64 (key) and role, a dictionary column.
SchemaPtr RoleSchema() {
  return schema({field("id", int64(), false), field("role", dictionary(int8(), utf8()))});
}

// Rows [first, first + n) with the roles role_of(id); each batch's dictionary lists its
// values in its own first-seen order.
RecordBatch RoleRows(int64_t first, int64_t n, const std::function<std::string(int64_t)>& role_of) {
  Int64Builder ids(int64());
  DictionaryBuilder roles(dictionary(int8(), utf8()));
  for (int64_t id = first; id < first + n; ++id) {
    ids.Append(id);
    EXPECT_TRUE(roles.Append(role_of(id)).ok());
  }
  Result<RecordBatch> batch = RecordBatch::Make(RoleSchema(), n, {*ids.Finish(), *roles.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// id -> role of every row of the shard's published generations.
std::map<int64_t, std::string> ReadRoles(const std::shared_ptr<ObjectStore>& store) {
  std::map<int64_t, std::string> out;
  for (const auto& [entry, all] : PublishedGenerations(store)) {
    const Array ids = all.GetColumnByName("id");
    const Array roles = all.GetColumnByName("role");
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      EXPECT_TRUE(out.emplace(ids.Value<int64_t>(r),
                              std::string(roles.dictionary().StringValue(roles.DictionaryIndex(r))))
                      .second)
          << "id " << ids.Value<int64_t>(r) << " twice";
    }
  }
  return out;
}

TEST_P(ShardWriterTest, DictionaryColumnsLinkUntilADictionaryOutgrowsItsIndexType) {
  ShardWriterOptions options;
  options.recode_linked_generations = true;
  options.max_memtable_rows = 40;
  options.max_wal_segment_bytes = 2048;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w,
                       ShardWriter::Open(store_, kPrefix, kShard, RoleSchema(), 0, options));
  const std::vector<std::string> kRoles = {"assistant", "tool", "grade", "artifact"};
  auto few = [&](int64_t id) { return kRoles[static_cast<size_t>((id * 7 / 3) % 4)]; };
  auto many = [](int64_t id) { return "role-" + std::to_string(id); };
  // Each put lists its roles in another order; concurrent writers interleave them.
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        Status st = w->Put({RoleRows((t * 10 + i) * 5, 5, few)});
        EXPECT_TRUE(st.ok()) << st;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_OK(w->Seal(true).status());
  const int64_t linked = LinkedDataFiles(*store_);
  EXPECT_GT(linked, 0);
  // 100 more roles still fit int8 indices (104 of 128)...
  ASSERT_OK(w->Put({RoleRows(150, 100, many)}));
  ASSERT_OK(w->Seal(true).status());
  const int64_t linked_before_overflow = LinkedDataFiles(*store_);
  EXPECT_GE(linked_before_overflow, linked);
  // ...30 more do not: from then on every seal rewrites its rows.
  ASSERT_OK(w->Put({RoleRows(250, 30, many)}));
  for (int i = 0; i < 8; ++i) ASSERT_OK(w->Put({RoleRows(280 + i * 5, 5, few)}));
  ASSERT_OK(w->Seal(true).status());
  w->WaitForRecodes();  // the roles read below come from recoded generations too
  EXPECT_GT(w->stats().generations_recoded, 0);
  ASSERT_OK(w->Close());
  EXPECT_EQ(LinkedDataFiles(*store_), linked_before_overflow);
  std::map<int64_t, std::string> roles = ReadRoles(store_);
  ASSERT_EQ(roles.size(), 320u);
  for (const auto& [id, role] : roles) {
    EXPECT_EQ(role, id >= 150 && id < 280 ? many(id) : few(id)) << "id " << id;
  }
}

TEST_P(ShardWriterTest, LinkingOffRewritesEverySeal) {
  ShardWriterOptions options;
  options.max_memtable_rows = 16;
  options.max_wal_segment_bytes = 2048;
  options.link_wal_segments = false;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  for (int i = 0; i < 12; ++i) ASSERT_OK(w->Put({KeyedRows(i * 4, 4)}));
  ASSERT_OK(w->Close());
  ExpectLiveOnce(ReadGenerations(store_), 0, 48);
  EXPECT_EQ(LinkedDataFiles(*store_), 0);
}

// The generation directories under the shard's gen/, e.g. "gen/00000000000000000003-9f1c22ab/".
std::set<std::string> GenerationDirs(ObjectStore& store) {
  const std::string dir = ShardDir(kPrefix, kShard);
  Result<std::vector<ObjectMeta>> objects = store.List(dir + "gen/");
  EXPECT_TRUE(objects.ok()) << objects.status();
  std::set<std::string> dirs;
  for (const ObjectMeta& o : objects.ValueOr({})) {
    std::string_view rest = std::string_view(o.key).substr(dir.size());
    dirs.insert(std::string(rest.substr(0, rest.find('/', 4) + 1)));
  }
  return dirs;
}

std::set<std::string> ListedPaths(const pb::ShardManifest& manifest) {
  std::set<std::string> paths;
  for (const pb::Generation& g : manifest.generations()) paths.insert(g.path());
  return paths;
}

TEST_P(ShardWriterTest, LinkedGenerationsAreRecodedInTheBackgroundAndTheirOldPathsRetired) {
  ShardWriterOptions options;
  options.max_memtable_rows = 64;
  options.max_wal_segment_bytes = 2048;
  options.recode_options.max_rows_per_batch = 32;
  options.recode_linked_generations = true;
  Mutex mu;
  std::vector<std::string> retired;
  options.retire_generations = [&](const Uuid& shard, std::vector<std::string> paths) {
    EXPECT_EQ(shard, kShard);
    MutexLock lock(mu);
    retired.insert(retired.end(), paths.begin(), paths.end());
  };
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  EXPECT_EQ(PutConcurrently(*w, 3, 40, 4), 0);
  ASSERT_OK(w->Seal(true).status());
  w->WaitForRecodes();
  pb::ShardManifest manifest;
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_, &manifest);
  ExpectLiveOnce(rows, 0, 3 * 40 * 4);
  EXPECT_EQ(rows.size(), 3u * 40 * 4);
  int64_t linked = 0;
  for (const pb::Generation& g : manifest.generations()) linked += g.linked() ? 1 : 0;
  EXPECT_EQ(linked, 0);
  const ShardWriterStats stats = w->stats();
  EXPECT_GT(stats.generations_recoded, 0);
  EXPECT_EQ(stats.recodes_queued, 0);
  {
    MutexLock lock(mu);
    EXPECT_EQ(static_cast<int64_t>(retired.size()), stats.generations_recoded);
    // The old directories are left to the caller (readers may still be on them)...
    std::set<std::string> dirs = GenerationDirs(*store_);
    for (const std::string& path : retired) {
      EXPECT_EQ(dirs.count(path), 1u) << path;
      EXPECT_EQ(ListedPaths(manifest).count(path), 0u) << path;
    }
    // ...and every other directory is a listed generation's.
    EXPECT_EQ(dirs.size(), retired.size() + ListedPaths(manifest).size());
  }
  ASSERT_OK(w->Close());
}

TEST_P(ShardWriterTest, RecodingOffKeepsLinkedGenerationsUntilAWriterWithItOpens) {
  ShardWriterOptions options;
  options.max_memtable_rows = 64;
  options.max_wal_segment_bytes = 2048;
  options.recode_linked_generations = false;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  for (int i = 0; i < 30; ++i) ASSERT_OK(w->Put({KeyedRows(i * 8, 8)}));
  ASSERT_OK(w->Close());
  pb::ShardManifest manifest;
  ExpectLiveOnce(ReadGenerations(store_, &manifest), 0, 240);
  int64_t linked = 0;
  for (const pb::Generation& g : manifest.generations()) linked += g.linked() ? 1 : 0;
  ASSERT_GT(linked, 0);
  EXPECT_EQ(w->stats().generations_recoded, 0);

  // The next owner recodes what its predecessor left linked.
  options.recode_linked_generations = true;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> next, OpenWriter(MakeStore(), options));
  next->WaitForRecodes();
  EXPECT_EQ(next->stats().generations_recoded, linked);
  ASSERT_OK(next->Close());
  ExpectLiveOnce(ReadGenerations(store_, &manifest), 0, 240);
  for (const pb::Generation& g : manifest.generations()) EXPECT_FALSE(g.linked()) << g.path();
}

TEST_P(ShardWriterTest, ARecodeOfAGenerationDrainedMeanwhileIsDiscarded) {
  ShardWriterOptions options;
  options.recode_linked_generations = true;
  options.max_memtable_rows = 1000;
  options.max_wal_segment_bytes = 2048;
  std::string drained_path;
  auto hooked = std::make_shared<strata::testing::CopyHookedStore>(store_, "/bloom.bin", [&] {
    // A merge drains the generation while the recoder writes its copy.
    ShardManifestStore manifests(store_, kPrefix, kShard);
    Result<pb::ShardManifest> latest = manifests.ReadLatest();
    ASSERT_TRUE(latest.ok()) << latest.status();
    ASSERT_EQ(latest->generations_size(), 1);
    drained_path = latest->generations(0).path();
    ASSERT_OK(
        manifests.Drain(latest->writer_epoch(), {latest->generations(0).generation()}).status());
  });
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(hooked, options));
  for (int i = 0; i < 20; ++i) ASSERT_OK(w->Put({KeyedRows(i * 8, 8)}));
  ASSERT_OK(w->Seal(true).status());
  w->WaitForRecodes();
  ASSERT_FALSE(drained_path.empty()) << "the seal linked the WAL and the recoder ran";
  EXPECT_EQ(w->stats().generations_recoded, 0);
  // The copy it wrote is gone (no retire_generations: the writer deleted it); the drained
  // directory is the merge's to delete.
  EXPECT_EQ(GenerationDirs(*store_), std::set<std::string>{drained_path});
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest,
                       ShardManifestStore(store_, kPrefix, kShard).ReadLatest());
  EXPECT_EQ(latest.generations_size(), 0);
  ASSERT_OK(w->Close());
}

TEST_P(ShardWriterTest, CloseDuringARecodeLeavesEveryDirectoryListedOrRetired) {
  ShardWriterOptions options;
  options.recode_linked_generations = true;
  options.max_memtable_rows = 1000;
  options.max_wal_segment_bytes = 2048;
  std::shared_ptr<ShardWriter> w;
  Status closed;
  std::thread closer;
  std::atomic<bool> hooked_ran{false};
  std::latch closer_made(1);
  // The recoder is about to publish when Close starts; it cancels or finishes the recode.
  auto hooked = std::make_shared<strata::testing::CopyHookedStore>(store_, "/bloom.bin", [&] {
    hooked_ran = true;
    closer = std::thread([&] { closed = w->Close(); });
    // Close may let WaitForRecodes return before this assignment is done: the test thread
    // joins `closer` only after this.
    closer_made.count_down();
    while (w->Seal(false).ok()) std::this_thread::yield();  // until Close refuses calls
  });
  ASSERT_OK_AND_ASSIGN(w, OpenWriter(hooked, options));
  for (int i = 0; i < 20; ++i) ASSERT_OK(w->Put({KeyedRows(i * 8, 8)}));
  ASSERT_OK(w->Seal(true).status());
  w->WaitForRecodes();
  ASSERT_TRUE(hooked_ran);
  closer_made.wait();
  closer.join();
  ASSERT_OK(closed);
  pb::ShardManifest manifest;
  ExpectLiveOnce(ReadGenerations(store_, &manifest), 0, 160);
  // Each directory is a listed generation's or the old one of a published recode (left for
  // the caller, retire_generations being unset): a cancelled recode deleted its copy.
  EXPECT_EQ(GenerationDirs(*store_).size(),
            ListedPaths(manifest).size() + static_cast<size_t>(w->stats().generations_recoded));
}

TEST_P(ShardWriterTest, RecodesWaitWhileWritesArriveUntilAQuietPeriodOrTheirMaximumDelay) {
  using std::chrono::milliseconds;
  ManualClock clock(0, ManualClock::SleepMode::kBlockUntilAdvanced);
  ShardWriterOptions options;
  options.recode_linked_generations = true;
  options.max_memtable_rows = 1000;
  options.max_wal_segment_bytes = 2048;
  options.recode_quiet_period = milliseconds(1000);
  options.recode_max_delay = milliseconds(4000);
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  // Should an assertion end the test early, the recoder's sleep ends before Close waits for it.
  struct WakeAtExit {
    ManualClock& clock;
    ~WakeAtExit() { clock.Advance(std::chrono::hours(1)); }
  } wake{clock};
  for (int i = 0; i < 20; ++i) ASSERT_OK(w->Put({KeyedRows(i * 8, 8)}));
  ASSERT_OK(w->Seal(true).status());
  // A put every 0.6 s keeps the recoder waiting, until the generation has waited 4 s.
  for (int i = 0; i <= 6; ++i) {
    clock.WaitForSleepers(1);
    ShardWriterStats stats = w->stats();
    EXPECT_TRUE(stats.recode_waiting_for_quiet) << "at " << i * 600 << " ms";
    EXPECT_EQ(stats.recodes_queued, 1);
    EXPECT_EQ(stats.generations_recoded, 0) << "at " << i * 600 << " ms";
    ASSERT_OK(w->Put({KeyedRows(1000 + i, 1)}));
    clock.Advance(milliseconds(600));
  }
  // 4.2 s: recoded, although the last put came in 0.6 s ago.
  w->WaitForRecodes();
  EXPECT_EQ(w->stats().generations_recoded, 1);
  EXPECT_FALSE(w->stats().recode_waiting_for_quiet);

  // Once writes pause for the quiet period, the next linked generation is recoded at once.
  for (int i = 0; i < 20; ++i) ASSERT_OK(w->Put({KeyedRows(3000 + i * 8, 8)}));
  ASSERT_OK(w->Seal(true).status());
  clock.WaitForSleepers(1);
  EXPECT_TRUE(w->stats().recode_waiting_for_quiet);
  EXPECT_EQ(w->stats().generations_recoded, 1);
  clock.Advance(milliseconds(1000));
  w->WaitForRecodes();
  EXPECT_EQ(w->stats().generations_recoded, 2);
  ASSERT_OK(w->Close());
  pb::ShardManifest manifest;
  const std::multimap<int64_t, GenRow> rows = ReadGenerations(store_, &manifest);
  ExpectLiveOnce(rows, 0, 160);
  ExpectLiveOnce(rows, 3000, 160);
  for (const pb::Generation& g : manifest.generations()) EXPECT_FALSE(g.linked()) << g.path();
}

TEST_P(ShardWriterTest, SealTriggersAtMaxMemtableRows) {
  ShardWriterOptions options;
  options.max_memtable_rows = 10;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  for (int i = 0; i < 7; ++i) ASSERT_OK(w->Put({KeyedRows(i * 5, 5)}));
  EXPECT_EQ(w->stats().active_rows, 5);  // sealed at 10, 20 and 30 rows
  ASSERT_OK_AND_ASSIGN(SealOutcome outcome, w->Seal(true));
  EXPECT_EQ(outcome, SealOutcome::kSealed);
  pb::ShardManifest manifest;
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_, &manifest);
  ASSERT_EQ(manifest.generations_size(), 4);
  EXPECT_EQ(manifest.generations(0).rows(), 10);
  EXPECT_EQ(manifest.generations(1).rows(), 10);
  EXPECT_EQ(manifest.generations(2).rows(), 10);
  EXPECT_EQ(manifest.generations(3).rows(), 5);
  ExpectLiveOnce(rows, 0, 35);
  EXPECT_EQ(w->stats().generations_published, 4);
  ASSERT_OK(w->Close());
}

TEST_P(ShardWriterTest, SealTimesIncreaseWithinAShardWhenTheClockStepsBack) {
  ManualClock clock(1'000'000'000);
  ShardWriterOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(w->Put({KeyedRows(i * 10, 2)}));
    ASSERT_OK(w->Seal(true).status());
    clock.Set(1'000'000'000 - (i + 1) * 1'000'000);  // the wall clock steps back
  }
  ShardManifestStore manifests(store_, kPrefix, kShard);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest m, manifests.ReadLatest());
  ASSERT_EQ(m.generations_size(), 3);
  for (int i = 1; i < 3; ++i) {
    EXPECT_GT(m.generations(i).sealed_at_micros(), m.generations(i - 1).sealed_at_micros())
        << "readers order generations by seal time";
  }
  ASSERT_OK(w->Close());
}

TEST_P(ShardWriterTest, SealWaitPublishesInOrderAndAdvancesReplayPosition) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter());
  ASSERT_OK_AND_ASSIGN(SealOutcome noop, w->Seal(true));
  EXPECT_EQ(noop, SealOutcome::kNoop);
  EXPECT_STREQ(SealOutcomeName(noop), "noop");
  ShardManifestStore manifests(store_, kPrefix, kShard);
  pb::WalPosition previous = MakeWalPosition(w->epoch(), 0, 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(w->Put({KeyedRows(i * 10, 4)}));
    ASSERT_OK(w->Put({KeyedRows(i * 10 + 4, 4)}));
    std::vector<std::shared_ptr<const MemTableSnapshot>> mem = w->MemTables();
    ASSERT_EQ(mem.size(), 1u);
    EXPECT_EQ(mem[0]->rows(), 8);
    EXPECT_EQ(w->stats().unflushed_rows, 8);
    EXPECT_GT(w->stats().unflushed_bytes, 0);
    ASSERT_OK_AND_ASSIGN(SealOutcome outcome, w->Seal(true));
    EXPECT_EQ(outcome, SealOutcome::kSealed);
    EXPECT_TRUE(w->MemTables().empty());
    EXPECT_EQ(w->stats().unflushed_rows, 0);
    ASSERT_OK_AND_ASSIGN(pb::ShardManifest m, manifests.ReadLatest());
    ASSERT_EQ(m.generations_size(), i + 1);
    const pb::Generation& gen = m.generations(i);
    if (i > 0) {
      EXPECT_GT(gen.generation(), m.generations(i - 1).generation());
    }
    EXPECT_EQ(m.current_generation(), gen.generation() + 1);
    EXPECT_EQ(gen.rows(), 8);
    EXPECT_GT(CompareWalPositions(m.replay_after(), previous), 0);
    EXPECT_EQ(CompareWalPositions(m.replay_after(), gen.wal_end()), 0);
    previous = m.replay_after();
  }
  // An asynchronous seal, then a waiting one publishes it.
  ASSERT_OK(w->Put({KeyedRows(100, 3)}));
  ASSERT_OK_AND_ASSIGN(SealOutcome async, w->Seal(false));
  EXPECT_EQ(async, SealOutcome::kSealed);
  ASSERT_OK(w->Seal(true).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest m, manifests.ReadLatest());
  EXPECT_EQ(m.generations_size(), 4);
  EXPECT_EQ(w->stats().generations_published, 4);
  ASSERT_OK(w->Close());
}

TEST_P(ShardWriterTest, TombstonesAreReplayedAndSealed) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter());
  ASSERT_OK(a->Put({KeyedRows(0, 10)}));
  ASSERT_OK(a->PutTombstones(Int64Keys({3, 5})));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> b, OpenWriter(MakeStore()));
  EXPECT_EQ(b->stats().replayed_records, 2);
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  ASSERT_EQ(rows.size(), 10u);  // newest per key: 3 and 5 are tombstones
  for (const auto& [id, row] : rows) EXPECT_EQ(row.tombstone, id == 3 || id == 5) << id;

  ASSERT_OK(b->PutTombstones(Int64Keys({7, 42})));
  ASSERT_OK(b->Close());
  rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), 12u);
  auto seven = rows.equal_range(7);
  ASSERT_EQ(std::distance(seven.first, seven.second), 2);
  uint64_t newest = 0;
  bool newest_tombstone = false;
  for (auto it = seven.first; it != seven.second; ++it) {
    if (it->second.generation > newest) {
      newest = it->second.generation;
      newest_tombstone = it->second.tombstone;
    }
  }
  EXPECT_TRUE(newest_tombstone);
  ASSERT_EQ(rows.count(42), 1u);
  EXPECT_TRUE(rows.find(42)->second.tombstone);
}

TEST_P(ShardWriterTest, BackpressureMakesPutsWaitButComplete) {
  ShardWriterOptions options;
  options.max_unflushed_bytes = 1;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(options));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (!w->Put({KeyedRows((t * 10 + i) * 3, 3)}).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_OK(w->Close());
  // Every put beyond the first found the limit exceeded, so the writer kept flushing (two
  // puts may share a memtable when group commit batches them; Close publishes the last).
  EXPECT_GE(w->stats().generations_published, 10);
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), 60u);
  ExpectLiveOnce(rows, 0, 60);
}

// The key invariant: a writer that is fenced never acknowledges a write the new owner
// cannot see. A puts in a loop (sealing now and then) while B takes over at a random point.
TEST_P(ShardWriterTest, FencedWriterNeverAcknowledgesALostWrite) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Local stores fsync every group, so they get fewer iterations.
  const int iterations = (GetParam() == StoreKind::kLocal ? 3 : 8) * strata::testing::StressScale();
  for (int iter = 0; iter < iterations; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    const int64_t base = int64_t{iter} * 100000;
    ShardWriterOptions options;
    options.max_memtable_rows = 2 + static_cast<int64_t>(rng() % 20);
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter(options));
    const int seal_every = 1 + static_cast<int>(rng() % 7);
    const uint64_t writer_seed = rng();
    std::atomic<int> acked{0};
    std::vector<int> acked_puts;
    Status a_end;
    std::thread writer([&] {
      std::mt19937_64 writer_rng(writer_seed);
      for (int i = 0; i < 5000; ++i) {
        Status st = a->Put({KeyedRows(base + i * 2, 2)});
        if (!st.ok()) {
          a_end = st;
          return;
        }
        acked_puts.push_back(i);
        acked.fetch_add(1);
        if (i % seal_every == 0) {
          Result<SealOutcome> sealed = a->Seal(writer_rng() % 2 == 0);
          if (!sealed.ok()) {
            a_end = sealed.status();
            return;
          }
        }
      }
      a_end = Status::Aborted("writer A was never fenced");
    });
    const int wait_for = 1 + static_cast<int>(rng() % 25);
    while (acked.load() < wait_for) std::this_thread::yield();
    Result<std::shared_ptr<ShardWriter>> b = OpenWriter(MakeStore(), options);
    writer.join();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(a_end.IsFenced()) << a_end;
    EXPECT_TRUE(a->fenced());
    ASSERT_OK((*b)->Put({KeyedRows(base + 90000, 3)}));
    ASSERT_OK((*b)->Close());
    a.reset();
    std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
    for (int i : acked_puts) {
      ASSERT_NO_FATAL_FAILURE(ExpectLiveOnce(rows, base + i * 2, 2)) << "put " << i;
    }
    ExpectLiveOnce(rows, base + 90000, 3);
    for (const auto& [id, row] : rows) {
      if (id >= base) {
        EXPECT_EQ(rows.count(id), 1u) << "id " << id;
      }
    }
  }
}

TEST_P(ShardWriterTest, TornWalTailOfACrashedWriterIsDropped) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter());
  ASSERT_OK(a->Put({KeyedRows(0, 4)}));
  ASSERT_OK(a->Put({KeyedRows(4, 4)}));
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, kShard));
  ASSERT_EQ(segments.size(), 1u);
  // The crashed writer got half of a third record out.
  ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get(segments[0].key));
  std::string torn = EncodeWalRecord(WalRecordKind::kRows, a->epoch(), 2, "payload bytes");
  std::string content(bytes.view());
  content += torn.substr(0, torn.size() / 2);
  ASSERT_OK(store_->Delete(segments[0].key));
  ASSERT_OK(store_->Put(segments[0].key, content));

  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> b, OpenWriter(MakeStore()));
  EXPECT_EQ(b->stats().replayed_records, 2);
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), 8u);
  ExpectLiveOnce(rows, 0, 8);
  ASSERT_OK(b->Close());
}

TEST_P(ShardWriterTest, AWalSegmentDeletedFromOutsideIsCorruptionNotSilentLoss) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter());
  ASSERT_OK(a->Put({KeyedRows(0, 4)}));
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, kShard));
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_OK(store_->Delete(segments[0].key));
  // The manifest's replay position names the segment's start: it was created, so rows may
  // have been acknowledged from it.
  Result<std::shared_ptr<ShardWriter>> b = OpenWriter(MakeStore());
  ASSERT_FALSE(b.ok()) << "a writer opened over a deleted segment and replayed "
                       << (*b)->stats().replayed_records << " records";
  EXPECT_TRUE(b.status().IsCorruption()) << b.status();
  EXPECT_NE(b.status().message().find(segments[0].key), std::string::npos) << b.status();
}

TEST_P(ShardWriterTest, AWalCutShortAfterACloseWithoutSealIsCorruptionNotATornTail) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter());
  ASSERT_OK(a->Put({KeyedRows(0, 4)}));
  ASSERT_OK(a->Put({KeyedRows(4, 4)}));
  ASSERT_OK(a->CloseWithoutSeal());
  ShardManifestStore manifests(store_, kPrefix, kShard);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest closed, manifests.ReadLatest());
  EXPECT_EQ(closed.operation(), "close");
  const pb::WalPosition acknowledged = closed.closed_wal_end();
  EXPECT_EQ(acknowledged.epoch(), a->epoch());
  ASSERT_GT(acknowledged.offset(), 10u);
  // Cut the segment inside its last record: a crash could leave the same bytes, but the
  // writer closed cleanly and recorded where its records end.
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, kShard));
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get(segments[0].key));
  ASSERT_OK(store_->Delete(segments[0].key));
  ASSERT_OK(store_->Put(segments[0].key, bytes.view().substr(0, acknowledged.offset() - 10)));
  Result<std::shared_ptr<ShardWriter>> b = OpenWriter(MakeStore());
  ASSERT_FALSE(b.ok()) << "a writer replayed " << (*b)->stats().replayed_records
                       << " records of a WAL cut short";
  EXPECT_TRUE(b.status().IsCorruption()) << b.status();
  EXPECT_NE(b.status().message().find(segments[0].key), std::string::npos) << b.status();
}

TEST_P(ShardWriterTest, AHoleInTheWalSegmentNumbersIsCorruptionNamingTheMissingSegment) {
  ShardWriterOptions options;
  options.max_wal_segment_bytes = 1;  // every put ends its segment
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a, OpenWriter(options));
  for (int i = 0; i < 3; ++i) ASSERT_OK(a->Put({KeyedRows(i * 2, 2)}));
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, kShard));
  ASSERT_GE(segments.size(), 3u);
  ASSERT_OK(store_->Delete(segments[1].key));
  Result<std::shared_ptr<ShardWriter>> b = OpenWriter(MakeStore(), options);
  ASSERT_FALSE(b.ok()) << "a writer replayed " << (*b)->stats().replayed_records
                       << " records around a missing segment";
  EXPECT_TRUE(b.status().IsCorruption()) << b.status();
  EXPECT_NE(b.status().message().find(segments[1].key), std::string::npos) << b.status();
}

// Forwards to another store (appendable objects too); runs `hook` once, just before the
// first List of `list_key` or Get of `get_key`.
class RaceStore final : public strata::testing::ForwardingObjectStore {
 public:
  RaceStore(std::shared_ptr<ObjectStore> base, std::string list_key, std::string get_key,
            std::function<void()> hook)
      : ForwardingObjectStore(std::move(base)),
        list_key_(std::move(list_key)),
        get_key_(std::move(get_key)),
        hook_(std::move(hook)) {}
  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    if (prefix == list_key_ && hook_) std::exchange(hook_, nullptr)();
    return ForwardingObjectStore::List(prefix);
  }
  Result<Buffer> Get(std::string_view key) override {
    if (key == get_key_ && hook_) std::exchange(hook_, nullptr)();
    return ForwardingObjectStore::Get(key);
  }
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base().CreateAppendable(key);
  }

 private:
  std::string list_key_;
  std::string get_key_;
  std::function<void()> hook_;
};

enum class ClaimRace { kBeforeTheListing, kBeforeTheRead };

// A writer (the loser, epoch 2) loses the claim race to a newer one (the winner, epoch 3),
// which replays the WAL and deletes the segments it covers, the loser's included, just
// before the loser lists the WAL or reads its first segment: the loser must report that it
// was fenced, not that acknowledged records were lost. `sealed_first`: the previous owner
// published a generation first, so the replay position lies inside its segment.
void ExpectTheClaimRaceLoserFenced(const std::function<std::shared_ptr<ObjectStore>()>& make_store,
                                   bool sealed_first, ClaimRace race) {
  auto open = [](std::shared_ptr<ObjectStore> store) {
    return ShardWriter::Open(std::move(store), kPrefix, kShard, KeyedSchema(), 0, {});
  };
  // The previous owner (epoch 1) leaves acknowledged rows in the WAL, and where they end in
  // closed_wal_end.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> first, open(make_store()));
  if (sealed_first) {
    ASSERT_OK(first->Put({KeyedRows(0, 4)}));
    ASSERT_OK(first->Seal(true).status());
  }
  ASSERT_OK(first->Put({KeyedRows(4, 4)}));
  ASSERT_OK(first->CloseWithoutSeal());
  std::shared_ptr<ShardWriter> winner;
  Status winner_status = Status::Aborted("the race never ran");
  auto loser_store = std::make_shared<RaceStore>(
      make_store(), race == ClaimRace::kBeforeTheListing ? ShardDir(kPrefix, kShard) + "wal/" : "",
      race == ClaimRace::kBeforeTheRead ? WalSegmentKey(kPrefix, kShard, first->epoch(), 0) : "",
      [&] {
        Result<std::shared_ptr<ShardWriter>> opened = open(make_store());
        winner_status = opened.status();
        if (opened.ok()) winner = *opened;
      });
  Result<std::shared_ptr<ShardWriter>> loser = open(loser_store);
  ASSERT_OK(winner_status);
  ASSERT_FALSE(loser.ok()) << "the loser opened";
  EXPECT_TRUE(loser.status().IsFenced()) << loser.status();
  ASSERT_OK(winner->Close());
  std::multimap<int64_t, GenRow> rows = ReadGenerations(make_store());
  ExpectLiveOnce(rows, sealed_first ? 0 : 4, sealed_first ? 8 : 4);
}

TEST_P(ShardWriterTest, ClaimRaceLoserIsFencedWhenItsListingMissesTheNamedSegment) {
  ExpectTheClaimRaceLoserFenced([this] { return MakeStore(); }, false,
                                ClaimRace::kBeforeTheListing);
}

TEST_P(ShardWriterTest, ClaimRaceLoserIsFencedWhenTheClosedWalEndLooksCutOff) {
  ExpectTheClaimRaceLoserFenced([this] { return MakeStore(); }, true, ClaimRace::kBeforeTheListing);
}

TEST_P(ShardWriterTest, ClaimRaceLoserIsFencedWhenASegmentVanishesBeforeItsRead) {
  ExpectTheClaimRaceLoserFenced([this] { return MakeStore(); }, false, ClaimRace::kBeforeTheRead);
}

TEST_P(ShardWriterTest, ManifestVersionsAndWalSegmentsStayBoundedAcrossSealsAndClaims) {
  ShardWriterOptions options;
  options.max_wal_segment_bytes = 4096;      // seals of big memtables roll (and free) segments
  options.recode_linked_generations = true;  // recodes publish versions too
  int64_t next_id = 0;
  for (int owner = 0; owner < 6; ++owner) {
    SCOPED_TRACE("owner " + std::to_string(owner));
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter(MakeStore(), options));
    for (int seal = 0; seal < 5; ++seal) {
      ASSERT_OK(w->Put({KeyedRows(next_id, 40)}));
      next_id += 40;
      ASSERT_OK(w->Seal(true).status());
      // A recode publishes beside the seals; its cleanup follows its write.
      w->WaitForRecodes();
      EXPECT_LE(ManifestVersions(*store_), static_cast<int64_t>(kRetainedShardManifestVersions));
      EXPECT_LE(WalSegments(*store_), 2);
    }
    // Rows only in the WAL, left for the next owner to replay.
    ASSERT_OK(w->Put({KeyedRows(next_id, 7)}));
    next_id += 7;
    ASSERT_OK(w->CloseWithoutSeal());
  }
  // 6 claims and about 36 seals later: only the newest versions and the live segments.
  EXPECT_LE(ManifestVersions(*store_), static_cast<int64_t>(kRetainedShardManifestVersions));
  EXPECT_LE(WalSegments(*store_), 2);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> last, OpenWriter(MakeStore(), options));
  EXPECT_EQ(last->stats().replayed_records, 1);
  ASSERT_OK(last->Close());
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), static_cast<size_t>(next_id));
  ExpectLiveOnce(rows, 0, next_id);
}

TEST_P(ShardWriterTest, CloseIsIdempotentAndLaterCallsFail) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w, OpenWriter());
  ASSERT_OK(w->Put({KeyedRows(0, 6)}));
  ASSERT_OK(w->Close());
  ASSERT_OK(w->Close());
  EXPECT_TRUE(w->Put({KeyedRows(10, 1)}).IsInvalidArgument());
  EXPECT_TRUE(w->PutTombstones(Int64Keys({1})).IsInvalidArgument());
  EXPECT_TRUE(w->Seal(true).status().IsInvalidArgument());
  ExpectLiveOnce(ReadGenerations(store_), 0, 6);
}

TEST_P(ShardWriterTest, InvalidInputWritesNothing) {
  // A schema whose key column admits nulls, so a batch can carry one.
  SchemaPtr s = schema({field("id", int64(), true), field("name", utf8())});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w,
                       ShardWriter::Open(store_, kPrefix, kShard, s, 0));
  Int64Builder ids(int64());
  ids.Append(1);
  ids.AppendNull();
  BinaryBuilder names(utf8());
  ASSERT_OK(names.Append("x"));
  ASSERT_OK(names.Append("y"));
  ASSERT_OK_AND_ASSIGN(RecordBatch null_key,
                       RecordBatch::Make(s, 2, {*ids.Finish(), *names.Finish()}));
  EXPECT_TRUE(w->Put({null_key}).IsInvalidArgument());
  EXPECT_TRUE(w->Put({KeyedRows(0, 2)}).IsInvalidArgument());  // another schema
  BinaryBuilder wrong_keys(utf8());
  ASSERT_OK(wrong_keys.Append("k"));
  EXPECT_TRUE(w->PutTombstones(*wrong_keys.Finish()).IsInvalidArgument());
  ASSERT_OK(w->Put({}));  // nothing to write
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, kShard));
  for (const WalSegment& segment : segments) EXPECT_EQ(segment.size, 0) << segment.key;
  EXPECT_EQ(w->stats().active_rows, 0);
  ASSERT_OK(w->Close());
  EXPECT_TRUE(ShardWriter::Open(store_, kPrefix, kShard, s, 5).status().IsInvalidArgument());
}

INSTANTIATE_TEST_SUITE_P(Stores, ShardWriterTest,
                         ::testing::Values(StoreKind::kMemory, StoreKind::kLocal),
                         [](const ::testing::TestParamInfo<StoreKind>& info) {
                           return info.param == StoreKind::kMemory ? "Memory" : "Local";
                         });

// --- Fault injection -------------------------------------------------------------------

class ShardWriterFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<io::FaultInjectionFileSystem>(std::make_shared<io::MemoryFileSystem>());
    store_ = Reopen();
  }
  std::shared_ptr<ObjectStore> Reopen() {
    Result<std::shared_ptr<ObjectStore>> store = io::NewFileObjectStore(fs_, "/db");
    EXPECT_TRUE(store.ok()) << store.status();
    return *store;
  }
  std::shared_ptr<io::FaultInjectionFileSystem> fs_;
  std::shared_ptr<ObjectStore> store_;
};

TEST_F(ShardWriterFaultTest, AcknowledgedPutsSurviveACrash) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a,
                       ShardWriter::Open(store_, kPrefix, kShard, KeyedSchema(), 0));
  for (int i = 0; i < 5; ++i) ASSERT_OK(a->Put({KeyedRows(i * 4, 4)}));
  ASSERT_OK(fs_->SimulateCrash());  // power loss: only synced bytes remain
  std::shared_ptr<ObjectStore> after = Reopen();
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> b,
                       ShardWriter::Open(after, kPrefix, kShard, KeyedSchema(), 0));
  EXPECT_EQ(b->stats().replayed_records, 5);
  ASSERT_OK(b->Close());
  ExpectLiveOnce(ReadGenerations(after), 0, 20);
  EXPECT_TRUE(a->Put({KeyedRows(100, 1)}).IsFenced());
}

TEST_F(ShardWriterFaultTest, LinkedGenerationsAndTheWalAfterThemSurviveACrash) {
  ShardWriterOptions options;
  options.max_memtable_rows = 20;
  options.max_wal_segment_bytes = 2048;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> a,
                       ShardWriter::Open(store_, kPrefix, kShard, KeyedSchema(), 0, options));
  for (int i = 0; i < 10; ++i) ASSERT_OK(a->Put({KeyedRows(i * 5, 5)}));
  ASSERT_OK(a->Seal(true).status());
  EXPECT_GT(LinkedDataFiles(*store_), 0);
  for (int i = 10; i < 13; ++i) ASSERT_OK(a->Put({KeyedRows(i * 5, 5)}));
  ASSERT_OK(fs_->SimulateCrash());  // power loss: only synced bytes remain
  std::shared_ptr<ObjectStore> after = Reopen();
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> b,
                       ShardWriter::Open(after, kPrefix, kShard, KeyedSchema(), 0, options));
  ASSERT_OK(b->Close());
  ExpectLiveOnce(ReadGenerations(after), 0, 65);
}

TEST_F(ShardWriterFaultTest, CrashRestartsWithCleanupStillReplayEveryAcknowledgedPut) {
  ShardWriterOptions options;
  options.max_memtable_rows = 30;
  options.max_wal_segment_bytes = 4096;
  int64_t acked = 0;
  // Crashed writers stay alive (a crash runs no destructor); the next owner fences them.
  std::vector<std::shared_ptr<ShardWriter>> crashed;
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w,
                         ShardWriter::Open(store_, kPrefix, kShard, KeyedSchema(), 0, options));
    for (int i = 0; i < 4; ++i) {
      ASSERT_OK(w->Put({KeyedRows(acked, 9)}));
      acked += 9;
    }
    if (round % 3 == 0) ASSERT_OK(w->Seal(true).status());
    crashed.push_back(w);
    ASSERT_OK(fs_->SimulateCrash());  // power loss: only synced bytes remain
    store_ = Reopen();
    // A deletion that was not yet durable may come back after the power loss; the next
    // owner's writes delete it again, so the count stays bounded.
    EXPECT_LE(ManifestVersions(*store_), static_cast<int64_t>(kRetainedShardManifestVersions) + 2);
    EXPECT_LE(WalSegments(*store_), 3);
  }
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> last,
                       ShardWriter::Open(store_, kPrefix, kShard, KeyedSchema(), 0, options));
  ASSERT_OK(last->Close());
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), static_cast<size_t>(acked));
  ExpectLiveOnce(rows, 0, acked);
}

TEST_F(ShardWriterFaultTest, FailedPublicationIsReportedAndRetriedByTheNextSeal) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> w,
                       ShardWriter::Open(store_, kPrefix, kShard, KeyedSchema(), 0));
  ASSERT_OK(w->Put({KeyedRows(0, 5)}));
  fs_->FailNth(io::FaultOp::kLink, 1);  // the first create-if-absent while publishing
  Result<SealOutcome> failed = w->Seal(true);
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(fs_->injected_faults(), 1);
  EXPECT_EQ(w->stats().unflushed_rows, 5);  // still queued
  ASSERT_OK(w->Put({KeyedRows(5, 5)}));
  ASSERT_OK_AND_ASSIGN(SealOutcome outcome, w->Seal(true));
  EXPECT_EQ(outcome, SealOutcome::kSealed);
  EXPECT_EQ(w->stats().unflushed_rows, 0);
  ASSERT_OK(w->Close());
  std::multimap<int64_t, GenRow> rows = ReadGenerations(store_);
  EXPECT_EQ(rows.size(), 10u);
  ExpectLiveOnce(rows, 0, 10);
}

}  // namespace
}  // namespace strata::lsm
