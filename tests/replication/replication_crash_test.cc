// Replication survives SIGKILL anywhere in a follow round (export, publish, apply): a child
// process (replication_worker) runs one round and is killed at a random mutating file
// operation; after every kill no partial bundle is visible, the replica sits at a bundle
// boundary (its rows sum to the content its chain state records), and a re-run converges to
// the source. Iterations: 200, times STRATA_STRESS_SCALE under --stress.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "replication/replication_test_util.h"
#include "strata/bundle.h"
#include "strata/json.h"
#include "strata/replication.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "support/process.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::replication {
namespace {

using strata::testing::DescribeWaitStatus;
using strata::testing::SpawnProcess;
using strata::testing::StressScale;
using strata::testing::TempDir;
using strata::testing::TestSeed;

using testing::Listing;
using testing::TestSchema;

TEST(ReplicationCrashTest, KilledFollowRoundsLeaveNoPartialBundleAndTheReplicaAtABoundary) {
  const unsigned long long seed = TestSeed();
  SCOPED_TRACE(fmt::format("STRATA_TEST_SEED={}", seed));
  std::mt19937_64 rng(seed);
  TempDir dir("replication-crash");
  const std::string root = (dir / "root").string();
  const std::string staging = (dir / "staging").string();
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(root));
  const StoreLocation source{objects, "src/"};
  const StoreLocation replica{objects, "rep/"};
  store::StorageBaseOptions options;
  options.schema = TestSchema();
  options.key_column = "id";
  options.seal_on_put = true;
  options.merge_max_generations = 0;  // Cleanup merges everything pending: reads stay quick
  ASSERT_OK_AND_ASSIGN(auto writer, store::StorageBase::Open(objects, source.prefix, options));
  ASSERT_OK(MarkBase(source, "crash").status());

  FollowOptions follow;
  follow.consumer = "crash-replica";
  follow.export_options.staging_dir = staging;
  follow.export_options.max_rows = 4;

  const int iterations = 200 * StressScale();
  int killed = 0;
  int completed = 0;
  for (int i = 0; i < iterations; ++i) {
    // Some changes on the source: puts, deletes, now and then a merge or a compaction.
    const int changes = 1 + static_cast<int>(rng() % 6);
    for (int c = 0; c < changes; ++c) {
      const std::string key = fmt::format("k{:02}", rng() % 30);
      if (rng() % 4 == 0) {
        ASSERT_OK(writer->DeleteKeys({expr::Scalar::String(key)}));
      } else {
        ASSERT_OK_AND_ASSIGN(
            RecordBatch batch,
            json::RowsToBatch(TestSchema(), fmt::format(R"({{"id":"{}","n":{},"text":"i{}"}})", key,
                                                        rng() % 100, i)));
        ASSERT_OK(writer->Put({batch}));
      }
    }
    if (rng() % 4 != 0) ASSERT_OK(writer->Cleanup().status());
    if (rng() % 20 == 0) ASSERT_OK(writer->Compact().status());

    const int64_t kill_at = 1 + static_cast<int64_t>(rng() % 120);
    SCOPED_TRACE(fmt::format("iteration {}, kill at file operation {}", i, kill_at));
    const pid_t pid = SpawnProcess(
        STRATA_REPLICATION_WORKER,
        {root, staging, std::to_string(kill_at), std::to_string(follow.export_options.max_rows)});
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const bool was_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ASSERT_TRUE(was_killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "worker " << DescribeWaitStatus(status) << " (its error is on stderr above)";
    (was_killed ? killed : completed)++;

    // No partial bundle: every published name decodes and verifies.
    ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> published, objects->List("bundles/"));
    for (const ObjectMeta& meta : published) {
      ASSERT_OK_AND_ASSIGN(Buffer bytes, objects->Get(meta.key));
      Status decoded = DecodeBundle(bytes.view()).status();
      ASSERT_TRUE(decoded.ok()) << meta.key << ": " << decoded;
    }
    // The replica is at a bundle boundary: its content is what its state records (or it has
    // no state yet and no rows).
    ASSERT_OK_AND_ASSIGN(bool exists, table::Table::Exists(*objects, replica.prefix));
    if (exists) {
      ASSERT_OK_AND_ASSIGN(VerifyResult verify, Verify(replica));
      if (verify.state) {
        ASSERT_TRUE(verify.matches()) << verify.computed.ToString();
      } else {
        ASSERT_EQ(verify.rows, 0);
      }
    }
    // Half the time a re-run here (in this process, without kills) must converge; otherwise
    // the next killed round resumes from wherever this one stopped.
    if (rng() % 2 == 0) {
      ASSERT_OK(FollowOnce(source, replica, *objects, "bundles/", follow).status());
      ASSERT_EQ(Listing(replica), Listing(source));
    }
  }
  ASSERT_OK(FollowOnce(source, replica, *objects, "bundles/", follow).status());
  EXPECT_EQ(Listing(replica), Listing(source));
  ASSERT_OK_AND_ASSIGN(VerifyResult verify, Verify(replica));
  EXPECT_TRUE(verify.matches());
  // Both outcomes happened, and killed exports left no staging behind once swept.
  EXPECT_GT(killed, iterations / 10);
  EXPECT_GT(completed, iterations / 10);
  std::error_code ec;
  int leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(staging, ec)) {
    (void)entry;
    ++leftovers;
  }
  EXPECT_EQ(leftovers, 0);
  RecordProperty("killed", killed);
  RecordProperty("completed", completed);
}

}  // namespace
}  // namespace strata::replication
