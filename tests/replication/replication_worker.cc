// replication_worker: the child process of the replication crash tests
// (replication_crash_test.cc).
//
//   replication_worker <root> <staging> <kill-at> <max-rows>
//     One follow round (FollowOnce) from the store at <root>/src/ to the replica at
//     <root>/rep/ through bundles under <root>/bundles/, all on one local object store whose
//     file system SIGKILLs the process at its <kill-at>-th mutating file operation (<= 0:
//     never). Exports stage in <staging>. Exit 0 when the round completed, 2 on an error.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "io/file_object_store.h"
#include "io/file_system.h"
#include "strata/replication.h"
#include "table/kill_file_system.h"

int main(int argc, char** argv) {
  using namespace strata;  // NOLINT(google-build-using-namespace): a test program
  if (argc != 5) {
    std::fprintf(stderr, "usage: replication_worker ROOT STAGING KILL_AT MAX_ROWS\n");
    return 2;
  }
  const std::string root = argv[1];
  auto fs =
      std::make_shared<table::torture::KillFileSystem>(io::PosixFileSystem(), std::atoll(argv[3]));
  Result<std::shared_ptr<ObjectStore>> store = io::NewFileObjectStore(fs, root, {});
  if (!store.ok()) {
    std::fprintf(stderr, "replication_worker: %s\n", store.status().ToString().c_str());
    return 2;
  }
  replication::FollowOptions options;
  options.consumer = "crash-replica";
  options.export_options.staging_dir = argv[2];
  options.export_options.max_rows = std::atoll(argv[4]);
  Result<replication::FollowReport> round = replication::FollowOnce(
      replication::StoreLocation{*store, "src/"}, replication::StoreLocation{*store, "rep/"},
      **store, "bundles/", options);
  if (!round.ok()) {
    std::fprintf(stderr, "replication_worker: %s\n", round.status().ToString().c_str());
    return 2;
  }
  std::printf("ops %lld\n", static_cast<long long>(fs->operations()));
  return 0;
}
