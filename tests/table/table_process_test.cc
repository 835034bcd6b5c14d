// Table under several processes (table_worker children): concurrent committers on one local
// table must lose no acknowledged commit and leave contiguous versions; a writer killed with
// SIGKILL at any file operation must leave the table at exactly its acknowledged operations,
// plus at most the one in flight, applied whole.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "strata/object_store.h"
#include "strata/table.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "table/torture_util.h"

namespace strata::table::torture {
namespace {

using Clock = std::chrono::steady_clock;

using strata::testing::DescribeWaitStatus;
using strata::testing::ReadLines;

// Starts table_worker with `args`; its stdin is `stdin_fd` when >= 0.
pid_t SpawnWorker(const std::vector<std::string>& args, int stdin_fd = -1) {
  return strata::testing::SpawnProcess(STRATA_TABLE_WORKER, args, stdin_fd);
}

Result<std::shared_ptr<Table>> OpenTable(const std::string& root) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(root));
  return Table::Open(store, "", SmallOptions());
}

// Versions 1..n, each listed once.
void ExpectContiguousVersions(const Table& table) {
  auto versions = table.ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), table.version());
  for (size_t i = 0; i < versions->size(); ++i) {
    ASSERT_EQ((*versions)[i].version, i + 1) << "versions are not contiguous";
  }
}

TEST(TableProcessTest, ConcurrentWritersLoseNoAcknowledgedCommit) {
  const int kWorkers = 4;
  const int kCommits = 200 * strata::testing::StressScale();
  // Stress runs take the full durable path (fsync of every file and directory); the default
  // run skips fsync, which changes nothing about which process wins a commit.
  const bool sync = strata::testing::StressScale() > 1 || std::getenv("STRATA_TABLE_SYNC");
  strata::testing::TempDir dir("table-concurrent");
  const std::string root = (dir / "table").string();
  {
    auto store = OpenLocalObjectStore(root);
    ASSERT_TRUE(store.ok()) << store.status();
    auto created = Table::Create(*store, "", BaseSchema(false), SmallOptions());
    ASSERT_TRUE(created.ok()) << created.status();
  }
  const auto start = Clock::now();
  int gun[2];
  ASSERT_EQ(::pipe2(gun, O_CLOEXEC), 0);
  std::vector<pid_t> pids;
  for (int w = 0; w < kWorkers; ++w) {
    pid_t pid = SpawnWorker({"concurrent", root, std::to_string(w), std::to_string(kCommits),
                             (dir / fmt::format("w{}.out", w)).string(), sync ? "sync" : "nosync"},
                            gun[0]);
    ASSERT_GT(pid, 0) << "cannot start " << STRATA_TABLE_WORKER;
    pids.push_back(pid);
  }
  ::close(gun[0]);
  ::close(gun[1]);  // all workers start at once
  for (int w = 0; w < kWorkers; ++w) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[w], &status, 0), pids[w]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << w << ": " << DescribeWaitStatus(status)
        << " (a commit failed; its error is on stderr above)";
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("{} workers x {} commits ({}) took {:.1f} s\n", kWorkers, kCommits,
                           sync ? "sync" : "nosync", seconds);
  RecordProperty("seconds", static_cast<int>(seconds));

  // What the workers were told.
  std::map<std::string, int> appended;  // id -> worker
  std::set<std::string> deleted;
  std::vector<uint64_t> versions;
  std::vector<std::string> busy;
  for (int w = 0; w < kWorkers; ++w) {
    std::vector<std::string> lines = ReadLines((dir / fmt::format("w{}.out", w)).string());
    size_t acknowledged = 0;
    for (const std::string& line : lines) acknowledged += line.rfind("busy ", 0) != 0;
    EXPECT_EQ(acknowledged, static_cast<size_t>(kCommits)) << "worker " << w << " commits";
    for (const std::string& line : lines) {
      if (line.rfind("busy ", 0) == 0) {
        busy.push_back(fmt::format("worker {}: {}", w, line));
        continue;
      }
      std::istringstream in(line);
      std::string kind;
      uint64_t version = 0;
      in >> kind >> version;
      versions.push_back(version);
      for (std::string id; in >> id;) {
        if (kind == "append") {
          EXPECT_TRUE(appended.emplace(id, w).second) << "id " << id << " appended twice";
        } else {
          EXPECT_TRUE(appended.count(id)) << "worker " << w << " deleted unknown id " << id;
          EXPECT_TRUE(deleted.insert(id).second) << "id " << id << " deleted twice";
        }
      }
    }
  }
  // Appends never conflict and deletes of disjoint rows merge, but a commit that keeps losing
  // the race for the next version runs out of retries (Busy, retryable: nothing committed) now
  // and then under this much contention. The worker retries those; report how often.
  std::cout << fmt::format("{} attempts of {} commits gave up with Busy and were retried{}\n",
                           busy.size(), kWorkers * kCommits,
                           busy.empty() ? "" : "; the first: " + busy.front());
  RecordProperty("busy", static_cast<int>(busy.size()));
  // Every acknowledged commit has its own version, and they are 2..N.
  std::sort(versions.begin(), versions.end());
  const uint64_t n = 1 + versions.size();
  for (size_t i = 0; i < versions.size(); ++i) {
    ASSERT_EQ(versions[i], i + 2) << "acknowledged versions are not 2.." << n
                                  << " (duplicate or gap)";
  }

  auto table = OpenTable(root);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ((*table)->version(), n);
  ExpectContiguousVersions(**table);
  auto rows = ScanRows(**table);
  ASSERT_TRUE(rows.ok()) << rows.status();  // also fails on an id present twice
  Rows expected;
  for (const auto& [id, worker] : appended) {
    if (deleted.count(id)) continue;
    Row row = Row::object();
    row["id"] = id;
    expected[IdKey(row["id"])] = row;
  }
  // Compare ids only (values are checked by the other tests).
  Rows found;
  for (const auto& [key, row] : *rows) found[key] = Row{{"id", row["id"]}};
  for (auto& [key, row] : expected) row = Row{{"id", row["id"]}};
  std::string diff = DiffRows(expected, found);
  EXPECT_TRUE(diff.empty()) << diff;
  auto report = (*table)->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << fmt::format("{}", fmt::join(report->problems, "\n"));
}

// One crash-test chain: a table that successive workers modify, each killed at a random
// file operation; the parent follows with its oracle.
class CrashChain {
 public:
  CrashChain(uint64_t seed, const std::string& dir, bool sync)
      : seed_(seed), dir_(dir), sync_(sync), rng_(seed) {}

  void Run(int runs, int ops_per_run) {
    const std::string root = dir_ + "/table";
    {
      auto store = OpenLocalObjectStore(root);
      ASSERT_TRUE(store.ok()) << store.status();
      auto created = Table::Create(*store, "", BaseSchema(false), SmallOptions());
      ASSERT_TRUE(created.ok()) << created.status();
    }
    for (int run = 0; run < runs; ++run) {
      const double per_op = acked_ops_ > 0 ? double(fs_ops_) / double(acked_ops_) : 30.0;
      const int64_t range = std::max<int64_t>(2, int64_t(per_op * ops_per_run * 1.15));
      const int64_t kill_at = 1 + static_cast<int64_t>(rng_() % range);
      SCOPED_TRACE(
          fmt::format("run {} (ops from {}), kill at file operation {}", run, next_op_, kill_at));
      RunOnce(root, run, ops_per_run, kill_at);
      if (::testing::Test::HasFailure()) return;
    }
  }

  int killed() const { return killed_; }
  int completed() const { return completed_; }

 private:
  void RunOnce(const std::string& root, int run, int ops_per_run, int64_t kill_at) {
    const std::string ack_path = fmt::format("{}/ack-{}", dir_, run);
    pid_t pid = SpawnWorker({"crash", root, std::to_string(seed_), std::to_string(next_op_),
                             std::to_string(ops_per_run), std::to_string(kill_at), ack_path,
                             sync_ ? "sync" : "nosync"});
    ASSERT_GT(pid, 0) << "cannot start " << STRATA_TABLE_WORKER;
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const bool was_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ASSERT_TRUE(was_killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "worker " << DescribeWaitStatus(status) << " (its error is on stderr above)";
    (was_killed ? killed_ : completed_)++;

    // Acknowledged ops, and the one in flight.
    Rows acked = rows_;
    std::optional<Op> in_flight;
    int64_t last_count = 0;
    int acks = 0;
    for (const std::string& line : ReadLines(ack_path)) {
      std::istringstream in(line);
      std::string word;
      int64_t id = 0;
      in >> word >> id;
      if (word == "begin") {
        ASSERT_FALSE(in_flight) << "two ops begun without ack";
        ASSERT_EQ(id, next_op_) << "ops out of order in the ack file";
        in_flight = MakeOp(seed_, id);
      } else if (word == "ack") {
        ASSERT_TRUE(in_flight && in_flight->id == id) << "ack without begin: " << line;
        in >> last_count;
        ApplyOp(*in_flight, &acked);
        in_flight.reset();
        ++next_op_;
        ++acks;
      }
    }
    if (acks > 0) {
      fs_ops_ += last_count;
      acked_ops_ += acks;
    }
    if (!was_killed) {
      ASSERT_FALSE(in_flight) << "worker exited with an op in flight";
    }

    auto table = OpenTable(root);
    ASSERT_TRUE(table.ok()) << "open after the crash: " << table.status();
    ASSERT_GE((*table)->version(), version_) << "an acknowledged version disappeared";
    version_ = (*table)->version();
    ExpectContiguousVersions(**table);
    auto report = (*table)->Verify();
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_TRUE(report->ok()) << fmt::format("{}", fmt::join(report->problems, "\n"));
    auto found = ScanRows(**table);
    ASSERT_TRUE(found.ok()) << found.status();
    std::string without = DiffRows(acked, *found);
    if (without.empty()) {
      rows_ = std::move(acked);
      if (in_flight) ++next_op_;  // lost with the process: never acknowledged, not applied
      return;
    }
    ASSERT_TRUE(in_flight) << "the table is not its acknowledged state: " << without;
    Rows with = acked;
    ApplyOp(*in_flight, &with);
    std::string with_diff = DiffRows(with, *found);
    ASSERT_TRUE(with_diff.empty()) << "the table is neither the acknowledged state nor that "
                                   << "plus the op in flight (" << in_flight->Describe()
                                   << ").\nwithout it: " << without << "\nwith it: " << with_diff;
    rows_ = std::move(with);
    ++next_op_;
  }

  const uint64_t seed_;
  const std::string dir_;
  const bool sync_;
  std::mt19937_64 rng_;
  Rows rows_;
  int64_t next_op_ = 0;
  uint64_t version_ = 1;
  int64_t fs_ops_ = 0;
  int64_t acked_ops_ = 0;
  int killed_ = 0;
  int completed_ = 0;
};

TEST(TableProcessTest, SigkillAtAnyFileOperationKeepsExactlyTheAcknowledgedOps) {
  const int kChains = 20 * strata::testing::StressScale();
  // Stress runs also make longer chains, to reach bigger tables with more history.
  const int kRunsPerChain = strata::testing::StressScale() > 1 ? 25 : 10;
  const int kOpsPerRun = 6;
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED={})", seed, seed));
  const auto start = Clock::now();
  int killed = 0;
  int completed = 0;
  for (int chain = 0; chain < kChains; ++chain) {
    // Every fourth chain syncs, so fsyncs are kill points too; the others skip them to run
    // faster (fsync changes nothing for a killed process).
    const bool sync = chain % 4 == 0;
    SCOPED_TRACE(fmt::format("chain {} (worker seed {}, {})", chain, seed + chain,
                             sync ? "sync" : "nosync"));
    strata::testing::TempDir dir("table-crash");
    CrashChain runner(seed + static_cast<uint64_t>(chain), dir.str(), sync);
    runner.Run(kRunsPerChain, kOpsPerRun);
    killed += runner.killed();
    completed += runner.completed();
    if (HasFailure()) return;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("{} runs: {} killed, {} completed; {:.1f} s\n", killed + completed,
                           killed, completed, seconds);
  EXPECT_GT(killed, (killed + completed) / 2) << "kill points fall after the work too often";
}

}  // namespace
}  // namespace strata::table::torture
