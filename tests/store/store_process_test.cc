// Stores under several processes (store_worker children): writers on distinct shards, a
// merging process and readers at once must lose no acknowledged row and never list a row
// twice; a writer-and-merger killed with SIGKILL at any file operation must leave a store
// that opens cleanly and holds every acknowledged row exactly once. Each test runs on a
// RolloutStore and on a GenericStore with a user schema (torture_store.h: vector, list and
// blob columns), where every listed row's values and a sample of blobs are checked too.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "store/torture_store.h"
#include "support/process.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::store {
namespace torture {
// Names the parameter in gtest's messages.
void PrintTo(StoreKind kind, std::ostream* out) { *out << StoreKindName(kind); }
}  // namespace torture
namespace {

using Clock = std::chrono::steady_clock;

using strata::testing::DescribeWaitStatus;
using strata::testing::ReadLines;
using torture::StoreKind;
using torture::TortureStore;

// Blobs fetched by id and checked at each check of the generic kind.
constexpr int kCheckBlobSample = 64;

pid_t SpawnWorker(StoreKind kind, std::vector<std::string> args) {
  args.insert(args.begin(), std::string(torture::StoreKindName(kind)));
  return strata::testing::SpawnProcess(STRATA_STORE_WORKER, args);
}

// id -> times listed; the generic kind's values are checked too.
std::map<std::string, int> ListAll(TortureStore& store) {
  auto listed = store.ListIds(true, kCheckBlobSample);
  EXPECT_TRUE(listed.ok()) << listed.status();
  return listed.ok() ? *listed : std::map<std::string, int>{};
}

class StoreProcessTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  StoreKind kind() const { return GetParam(); }
  Result<std::unique_ptr<TortureStore>> OpenChecker(const std::string& root,
                                                    const std::string& shard) {
    STRATA_ASSIGN_OR_RETURN(auto objects, OpenLocalObjectStore(root));
    return TortureStore::Open(kind(), objects, shard);
  }
};

TEST_P(StoreProcessTest, WritersMergerAndReadersLoseNothingAndNeverDuplicate) {
  strata::testing::TempDir dir("store-procs");
  const std::string root = (dir / "store").string();
  const int scale = strata::testing::StressScale();
  // Bounded by default (CI); STRATA_STRESS=1 runs the 60 s-and-longer form. The generic
  // kind's rows carry blobs of a few KiB: fewer of them, for less time, by default.
  const bool generic = kind() == StoreKind::kGeneric;
  const double seconds = scale > 1 ? 60.0 * scale / 20.0 + 60.0 : (generic ? 6.0 : 12.0);
  const int adds = scale > 1 ? 400 * scale / 20 + 400 : (generic ? 30 : 60);
  ASSERT_OK(OpenChecker(root, "setup").status());
  std::vector<std::string> shards = {"w0", "w1", "w2", "w3"};
  std::vector<pid_t> writers;
  for (const std::string& shard : shards) {
    writers.push_back(SpawnWorker(kind(), {"write", root, shard, shard, std::to_string(adds), "8",
                                           "5", (dir / ("ack-" + shard)).string()}));
    ASSERT_GT(writers.back(), 0);
  }
  pid_t merger = SpawnWorker(kind(), {"merge", root, "w0,w1,w2,w3", fmt::format("{}", seconds)});
  pid_t reader1 = SpawnWorker(kind(), {"read", root, fmt::format("{}", seconds)});
  pid_t reader2 = SpawnWorker(kind(), {"read", root, fmt::format("{}", seconds)});
  ASSERT_GT(merger, 0);
  ASSERT_GT(reader1, 0);
  ASSERT_GT(reader2, 0);
  for (pid_t pid : writers) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "writer " << DescribeWaitStatus(status);
  }
  for (pid_t pid : {merger, reader1, reader2}) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "merger/reader " << DescribeWaitStatus(status)
        << " (exit 3 = a duplicate listing, 4 = a row's values differ)";
  }
  // Every acknowledged row, exactly once; then a final merge leaves base rows == logical rows.
  std::set<std::string> acked;
  for (const std::string& shard : shards) {
    for (const std::string& line : ReadLines((dir / ("ack-" + shard)).string())) {
      std::istringstream in(line);
      std::string word, first, last;
      in >> word >> first >> last;
      // ids are "<shard>-<n:06>"; the batch is first..last.
      int a = std::stoi(first.substr(first.size() - 6));
      int b = std::stoi(last.substr(last.size() - 6));
      for (int n = a; n <= b; ++n) acked.insert(fmt::format("{}-{:06}", shard, n));
    }
  }
  EXPECT_EQ(acked.size(), shards.size() * static_cast<size_t>(adds) * 8);
  ASSERT_OK_AND_ASSIGN(auto checker, OpenChecker(root, "checker"));
  std::map<std::string, int> listed = ListAll(*checker);
  for (const std::string& id : acked) {
    ASSERT_EQ(listed[id], 1) << id << " listed " << listed[id] << " times";
  }
  EXPECT_EQ(listed.size(), acked.size());
  for (const std::string& shard : shards) {
    ASSERT_OK_AND_ASSIGN(auto h, OpenChecker(root, shard));
    for (int pass = 0; pass < 100; ++pass) {
      ASSERT_OK_AND_ASSIGN(MergeReport r, h->Cleanup());
      if (r.generations_reclaimed == 0) break;
    }
  }
  ASSERT_OK_AND_ASSIGN(StoreObservation o, checker->base().Observe());
  EXPECT_EQ(o.pending_generations, 0);
  EXPECT_EQ(o.base_rows + o.generation_rows, static_cast<int64_t>(acked.size()))
      << "base rows must equal the logical row count after the final merge";
  // Values survive the merges (the generic kind checks every row and a sample of blobs).
  EXPECT_EQ(ListAll(*checker).size(), acked.size());
}

// A chain of crash runs on one store: each child adds, flushes and merges until it is
// killed at a random file operation; the parent then reopens the shard (replaying its WAL)
// and checks that every acknowledged row is there exactly once.
class StoreCrashChain {
 public:
  StoreCrashChain(StoreKind kind, uint64_t seed, std::string dir, bool sync)
      : kind_(kind), seed_(seed), dir_(std::move(dir)), sync_(sync), rng_(seed) {}

  void Run(int runs, int ops_per_run) {
    const std::string root = dir_ + "/store";
    for (int run = 0; run < runs; ++run) {
      const double per_op = acked_ops_ > 0 ? double(fs_ops_) / double(acked_ops_) : 40.0;
      const int64_t range = std::max<int64_t>(2, int64_t(per_op * ops_per_run * 1.2));
      const int64_t kill_at = 1 + static_cast<int64_t>(rng_() % range);
      SCOPED_TRACE(
          fmt::format("run {} (ops from {}), kill at file operation {}", run, next_op_, kill_at));
      RunOnce(root, run, ops_per_run, kill_at);
      if (::testing::Test::HasFailure()) return;
    }
  }

  int killed() const { return killed_; }
  int completed() const { return completed_; }
  size_t acked_rows() const { return acked_.size(); }

 private:
  void RunOnce(const std::string& root, int run, int ops_per_run, int64_t kill_at) {
    const std::string ack_path = fmt::format("{}/ack-{}", dir_, run);
    pid_t pid = SpawnWorker(kind_, {"crash", root, std::to_string(seed_), std::to_string(next_op_),
                                    std::to_string(ops_per_run), std::to_string(kill_at), ack_path,
                                    sync_ ? "sync" : "nosync"});
    ASSERT_GT(pid, 0) << "cannot start " << STRATA_STORE_WORKER;
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const bool was_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ASSERT_TRUE(was_killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "worker " << DescribeWaitStatus(status) << " (its error is on stderr above)";
    (was_killed ? killed_ : completed_)++;

    std::set<std::string> in_flight;
    int64_t last_count = 0;
    int acks = 0;
    for (const std::string& line : ReadLines(ack_path)) {
      std::istringstream in(line);
      std::string word;
      int64_t op = 0;
      in >> word >> op;
      if (word == "begin") {
        int rows = 0;
        in >> rows;
        in_flight.clear();
        for (int i = 0; i < rows; ++i) in_flight.insert(fmt::format("op{:06}-{}", op, i));
        next_op_ = op + 1;
      } else if (word == "ack") {
        in >> last_count;
        for (const std::string& id : in_flight) acked_.insert(id);
        maybe_.insert(in_flight.begin(), in_flight.end());
        in_flight.clear();
        ++acks;
      }
    }
    maybe_.insert(in_flight.begin(), in_flight.end());  // may or may not have survived
    if (acks > 0) {
      fs_ops_ += last_count;
      acked_ops_ += acks;
    }

    auto objects = OpenLocalObjectStore(root);
    ASSERT_TRUE(objects.ok()) << objects.status();
    auto opened = TortureStore::Open(kind_, *objects, "crash");
    ASSERT_TRUE(opened.ok()) << "open after the crash: " << opened.status();
    TortureStore& store = **opened;
    ASSERT_OK(store.base().OpenWriter());  // replays what the killed writer acknowledged
    std::map<std::string, int> listed = ListAll(store);
    for (const auto& [id, times] : listed) {
      ASSERT_EQ(times, 1) << id << " listed " << times << " times";
      ASSERT_TRUE(maybe_.count(id)) << id << " was never written";
    }
    for (const std::string& id : acked_) {
      ASSERT_EQ(listed.count(id), 1u) << "acknowledged row " << id << " is lost";
    }
    ASSERT_OK(store.Close());
  }

  const StoreKind kind_;
  const uint64_t seed_;
  const std::string dir_;
  const bool sync_;
  std::mt19937_64 rng_;
  std::set<std::string> acked_;
  std::set<std::string> maybe_;  // every id an op began writing
  int64_t next_op_ = 0;
  int64_t fs_ops_ = 0;
  int64_t acked_ops_ = 0;
  int killed_ = 0;
  int completed_ = 0;
};

TEST_P(StoreProcessTest, SigkillAnywhereLosesNoAcknowledgedRowAndNeverDuplicates) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED={})", seed, seed));
  // 300 runs in the default (CI) form for the rollout kind, 80 for the generic kind (whose
  // kill points are the same code paths with other column types), more under
  // STRATA_STRESS=1.
  const int base_runs = kind() == StoreKind::kGeneric ? 80 : 300;
  const int runs = base_runs + 50 * (strata::testing::StressScale() - 1);
  const int chains = 4;
  auto start = Clock::now();
  int killed = 0;
  int completed = 0;
  size_t rows = 0;
  for (int chain = 0; chain < chains; ++chain) {
    strata::testing::TempDir dir(fmt::format("store-crash-{}", chain));
    // Every fourth chain syncs, so fsyncs are kill points too.
    StoreCrashChain runner(kind(), seed + chain, dir.str(), chain % 4 == 3);
    runner.Run(runs / chains, 6);
    killed += runner.killed();
    completed += runner.completed();
    rows += runner.acked_rows();
    if (HasFailure()) return;
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("{} runs: {} killed, {} completed, {} acknowledged rows; {:.1f} s\n",
                           killed + completed, killed, completed, rows, seconds);
  EXPECT_GE(killed + completed, base_runs);
  EXPECT_GT(killed, (killed + completed) / 2) << "kill points fall after the work too often";
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreProcessTest,
                         ::testing::Values(StoreKind::kRollout, StoreKind::kGeneric),
                         [](const ::testing::TestParamInfo<StoreKind>& info) {
                           return std::string(torture::StoreKindName(info.param));
                         });

}  // namespace
}  // namespace strata::store
