// store_worker: the child process of the store torture tests (store_process_test.cc). The
// first argument is the kind of store (torture_store.h: rollout or generic); then
//
//   store_worker <kind> write <root> <shard> <prefix> <adds> <batch> <flush-every> <ack-file>
//     Adds <adds> batches of <batch> rows with ids "<prefix>-<n>" to the store at
//     <root> as shard <shard>, flushing every <flush-every> adds; after each acknowledged add
//     appends "ack <first> <last>" to <ack-file>. Closes the store at the end.
//   store_worker <kind> merge <root> <shards,...> <seconds>
//     For <seconds>: merges every listed shard (Cleanup through a handle of that shard id,
//     which never writes) and compacts now and then.
//   store_worker <kind> read <root> <seconds>
//     For <seconds>: lists the store; exits 3 when a listing holds an id twice, 4 when a
//     listed row's values (or a sampled row's blob) differ from what its id derives.
//   store_worker <kind> crash <root> <seed> <first-op> <ops> <kill-at> <ack-file> <sync|nosync>
//     Runs ops <first-op>.. of a seeded workload (adds, flushes, merges) on shard "crash"
//     through a KillFileSystem that SIGKILLs the process at its <kill-at>-th mutating file
//     operation. Appends "begin <op> <first-id> <count>" and "ack <op> <fs-ops>" around each op.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "io/file_object_store.h"
#include "io/file_system.h"
#include "store/torture_store.h"
#include "table/kill_file_system.h"

namespace strata::store {
namespace {

using torture::StoreKind;
using torture::TortureStore;

using Clock = std::chrono::steady_clock;

int Fail(const std::string& what, const Status& status) {
  std::fprintf(stderr, "store_worker: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 2;
}

// Appends lines to a file with O_APPEND + fsync, so the parent reads every line written
// before a kill.
class AckFile {
 public:
  explicit AckFile(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644)) {}
  ~AckFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool Write(const std::string& line) {
    std::string text = line + "\n";
    return ::write(fd_, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
           ::fsync(fd_) == 0;
  }

 private:
  int fd_;
};

int Write(StoreKind kind, const std::string& root, const std::string& shard,
          const std::string& prefix, int adds, int batch, int flush_every,
          const std::string& ack_path) {
  AckFile ack(ack_path);
  if (!ack.ok()) return Fail("open " + ack_path, Status::IOError("open failed"));
  auto store = OpenLocalObjectStore(root);
  if (!store.ok()) return Fail("open store", store.status());
  auto writer = TortureStore::Open(kind, *store, shard);
  if (!writer.ok()) return Fail("open the store", writer.status());
  int n = 0;
  for (int a = 0; a < adds; ++a) {
    std::vector<std::string> ids;
    for (int i = 0; i < batch; ++i, ++n) ids.push_back(fmt::format("{}-{:06}", prefix, n));
    Status added = (*writer)->Add(ids);
    if (!added.ok()) return Fail("add", added);
    if (!ack.Write(fmt::format("ack {} {}", ids.front(), ids.back()))) {
      return Fail("ack", Status::IOError("write failed"));
    }
    if (flush_every > 0 && (a + 1) % flush_every == 0) {
      Result<FlushOutcome> flushed = (*writer)->Flush();
      if (!flushed.ok()) return Fail("flush", flushed.status());
    }
  }
  Status closed = (*writer)->Close();
  return closed.ok() ? 0 : Fail("close", closed);
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool Retryable(const Status& s) {
  return s.code() == StatusCode::kBusy || s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kFenced || s.code() == StatusCode::kAborted;
}

int Merge(StoreKind kind, const std::string& root, const std::string& shards, double seconds) {
  auto store = OpenLocalObjectStore(root);
  if (!store.ok()) return Fail("open store", store.status());
  std::vector<std::unique_ptr<TortureStore>> handles;
  for (const std::string& shard : Split(shards)) {
    auto h = TortureStore::Open(kind, *store, shard);
    if (!h.ok()) return Fail("open " + shard, h.status());
    handles.push_back(std::move(*h));
  }
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  int64_t merged = 0;
  int round = 0;
  while (Clock::now() < end) {
    for (auto& h : handles) {
      Result<MergeReport> report = h->Cleanup();
      if (!report.ok()) {
        if (Retryable(report.status())) continue;
        return Fail("merge", report.status());
      }
      merged += report->generations_reclaimed;
    }
    if (++round % 5 == 0) {
      Status compacted = handles.front()->Compact();
      if (!compacted.ok() && !Retryable(compacted)) return Fail("compact", compacted);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("merged %lld generations\n", static_cast<long long>(merged));
  return 0;
}

// Rows whose blobs each listing fetches by id and checks.
constexpr int kBlobSample = 16;

int Read(StoreKind kind, const std::string& root, double seconds) {
  auto store = OpenLocalObjectStore(root);
  if (!store.ok()) return Fail("open store", store.status());
  auto reader = TortureStore::Open(kind, *store, "reader");
  if (!reader.ok()) return Fail("open reader", reader.status());
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  int reads = 0;
  int retried = 0;
  while (Clock::now() < end) {
    Result<std::map<std::string, int>> listed = (*reader)->ListIds(true, kBlobSample);
    if (!listed.ok()) {
      if (Retryable(listed.status())) {
        ++retried;
        continue;
      }
      if (listed.status().code() == StatusCode::kCorruption) {
        std::fprintf(stderr, "store_worker: read %d: %s\n", reads,
                     listed.status().ToString().c_str());
        return 4;
      }
      return Fail("list", listed.status());
    }
    for (const auto& [id, times] : *listed) {
      if (times > 1) {
        std::fprintf(stderr, "store_worker: id %s listed %d times (read %d)\n", id.c_str(), times,
                     reads);
        return 3;
      }
    }
    ++reads;
  }
  std::printf("%d reads, %d retried\n", reads, retried);
  return 0;
}

// Op `op` of the crash workload: 0 add, 1 add, 2 add+flush, 3 cleanup (merge), by a seeded
// draw; adds write 1-8 rows with ids derived from the op number.
struct CrashOp {
  int kind = 0;  // 0 add, 1 add + flush, 2 cleanup
  int rows = 0;
};

CrashOp MakeCrashOp(uint64_t seed, int64_t op) {
  std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(op));
  CrashOp out;
  uint64_t draw = rng() % 10;
  out.kind = draw < 6 ? 0 : (draw < 8 ? 1 : 2);
  out.rows = 1 + static_cast<int>(rng() % 8);
  return out;
}

int Crash(StoreKind kind, const std::string& root, uint64_t seed, int64_t first_op, int64_t ops,
          int64_t kill_at, const std::string& ack_path, bool sync) {
  AckFile ack(ack_path);
  if (!ack.ok()) return Fail("open " + ack_path, Status::IOError("open failed"));
  auto fs = std::make_shared<table::torture::KillFileSystem>(io::PosixFileSystem(), kill_at);
  LocalObjectStoreOptions options;
  options.sync = sync;
  auto store = io::NewFileObjectStore(fs, root, options);
  if (!store.ok()) return Fail("open store", store.status());
  auto opened = TortureStore::Open(kind, *store, "crash");
  if (!opened.ok()) return Fail("open the store", opened.status());
  TortureStore& crashing = **opened;
  for (int64_t op = first_op; op < first_op + ops; ++op) {
    CrashOp c = MakeCrashOp(seed, op);
    if (!ack.Write(fmt::format("begin {} {}", op, c.kind == 2 ? 0 : c.rows))) {
      return Fail("ack", Status::IOError("write failed"));
    }
    if (c.kind == 2) {
      Result<MergeReport> merged = crashing.Cleanup();
      if (!merged.ok() && !Retryable(merged.status())) return Fail("cleanup", merged.status());
    } else {
      std::vector<std::string> ids;
      for (int i = 0; i < c.rows; ++i) ids.push_back(fmt::format("op{:06}-{}", op, i));
      Status added = crashing.Add(ids);
      if (!added.ok()) return Fail("add", added);
      if (c.kind == 1) {
        Result<FlushOutcome> flushed = crashing.Flush();
        if (!flushed.ok()) return Fail("flush", flushed.status());
      }
    }
    if (!ack.Write(fmt::format("ack {} {}", op, fs->operations()))) {
      return Fail("ack", Status::IOError("write failed"));
    }
  }
  Status closed = crashing.Close();
  if (!closed.ok()) return Fail("close", closed);
  ack.Write(fmt::format("done {}", fs->operations()));
  return 0;
}

}  // namespace
}  // namespace strata::store

int main(int argc, char** argv) {
  using namespace strata::store;
  std::vector<std::string> args(argv + 1, argv + argc);
  strata::Result<torture::StoreKind> kind = args.empty()
                                                ? strata::Status::InvalidArgument("no store kind")
                                                : torture::ParseStoreKind(args[0]);
  if (kind.ok()) args.erase(args.begin());
  if (kind.ok() && args.size() == 8 && args[0] == "write") {
    return Write(*kind, args[1], args[2], args[3], std::atoi(args[4].c_str()),
                 std::atoi(args[5].c_str()), std::atoi(args[6].c_str()), args[7]);
  }
  if (kind.ok() && args.size() == 4 && args[0] == "merge")
    return Merge(*kind, args[1], args[2], std::atof(args[3].c_str()));
  if (kind.ok() && args.size() == 3 && args[0] == "read")
    return Read(*kind, args[1], std::atof(args[2].c_str()));
  if (kind.ok() && args.size() == 8 && args[0] == "crash") {
    return Crash(*kind, args[1], std::strtoull(args[2].c_str(), nullptr, 10),
                 std::atoll(args[3].c_str()), std::atoll(args[4].c_str()),
                 std::atoll(args[5].c_str()), args[6], args[7] == "sync");
  }
  std::fprintf(stderr,
               "usage: %s <rollout|generic> write <root> <shard> <prefix> <adds> <batch> "
               "<flush-every> <ack-file>\n"
               "       %s <rollout|generic> merge <root> <shards,...> <seconds>\n"
               "       %s <rollout|generic> read <root> <seconds>\n"
               "       %s <rollout|generic> crash <root> <seed> <first-op> <ops> <kill-at> "
               "<ack-file> <sync|nosync>\n",
               argv[0], argv[0], argv[0], argv[0]);
  return 1;
}
