// Child process for the table torture tests (table_process_test.cc) and the generator of the
// golden table in tests/data/table-v1.
//
//   table_worker concurrent <root> <worker> <commits> <out-file> <sync|nosync>
//     Waits for end of file on stdin (the starting gun), then makes <commits> commits on the
//     table at <root>: appends of 1-4 rows with ids "w<worker>-<i>" and now and then a
//     DeleteKeys of one of its own live rows. Writes one line per commit to <out-file>:
//     "append <version> <id>...", "delete <version> <id>", and "busy <i> <what>: <error>" each
//     time a commit gave up with Busy (nothing was committed; the worker tries it again).
//   table_worker crash <root> <seed> <first-op> <op-count> <kill-at> <ack-file> <sync|nosync>
//     Runs workload ops MakeOp(seed, first-op ...) on the table at <root> through a
//     KillFileSystem that SIGKILLs the process at its <kill-at>-th mutating operation
//     (0 = never); with nosync the store makes no fsyncs (a killed process loses nothing
//     the page cache holds, so only the kill points differ). Appends "begin <op>" before and "ack
//     <op> <fs-ops>" after each op to <ack-file> (O_APPEND, fsync), and "done <fs-ops>" at the end.
//   table_worker describe <seed> <first-op> <end-op>
//     Prints the crash-test ops MakeOp(seed, first-op .. end-op - 1), to replay a failure.
//   table_worker inspect <root> <key>
//     Prints, per version, whether a filtered scan and LookupKeys find <key> (debugging).
//   table_worker make-golden <dir>
//     Writes the small golden table the golden test reads (see GoldenTableTest).
// Exit status: 0 on success, 2 on any error (printed to stderr), 1 for bad usage.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/file_object_store.h"
#include "io/file_system.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "table/kill_file_system.h"
#include "table/torture_util.h"

namespace strata::table::torture {
namespace {

int Fail(const std::string& what, const Status& status) {
  std::fprintf(stderr, "table_worker: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 2;
}

// Times a commit that gave up with Busy is tried again before the worker fails.
constexpr int kBusyRetries = 10;

int Concurrent(const std::string& root, int worker, int commits, const std::string& out_path,
               bool sync) {
  LocalObjectStoreOptions options;
  options.sync = sync;
  auto store = OpenLocalObjectStore(root, options);
  if (!store.ok()) return Fail("open store", store.status());
  auto table = Table::Open(*store, "", SmallOptions());
  if (!table.ok()) return Fail("open table", table.status());
  std::ofstream out(out_path);
  char byte;
  while (::read(STDIN_FILENO, &byte, 1) > 0) {
  }
  std::mt19937_64 rng(static_cast<uint64_t>(worker) * 7919 + 17);
  std::vector<std::string> live;
  int next_row = 0;
  for (int i = 0; i < commits; ++i) {
    if (!live.empty() && rng() % 6 == 0) {
      const size_t pick = rng() % live.size();
      const std::string key = live[pick];
      // Busy (the commit ran out of retries under contention) is retryable: nothing was
      // committed, so the worker retries like any client, and reports each retry.
      auto result = (*table)->DeleteKeys({expr::Scalar::String(key)});
      for (int retry = 0; !result.ok() && result.status().IsBusy() && retry < kBusyRetries;
           ++retry) {
        out << "busy " << i << " delete " << key << ": " << result.status() << std::endl;
        result = (*table)->DeleteKeys({expr::Scalar::String(key)});
      }
      if (!result.ok()) return Fail(fmt::format("commit {}: delete {}", i, key), result.status());
      if (result->rows_deleted != 1) {
        return Fail(fmt::format("commit {}: delete {}", i, key),
                    Status::Corruption(fmt::format("deleted {} rows", result->rows_deleted)));
      }
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
      out << "delete " << result->version << ' ' << key << std::endl;
      continue;
    }
    std::vector<Row> rows;
    std::string ids;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < n; ++j) {
      Row row = Row::object();
      row["id"] = fmt::format("w{}-{}", worker, next_row++);
      row["v"] = i;
      row["f"] = Row();
      row["tag"] = fmt::format("w{}", worker);
      ids += ' ' + row["id"].get<std::string>();
      rows.push_back(std::move(row));
    }
    auto batch = MakeBatch((*table)->schema(), rows);
    if (!batch.ok()) return Fail("make batch", batch.status());
    auto result = (*table)->Append({*batch});
    for (int retry = 0; !result.ok() && result.status().IsBusy() && retry < kBusyRetries; ++retry) {
      out << "busy " << i << " append" << ids << ": " << result.status() << std::endl;
      result = (*table)->Append({*batch});
    }
    if (!result.ok()) return Fail(fmt::format("commit {}: append{}", i, ids), result.status());
    for (const Row& row : rows) live.push_back(row["id"].get<std::string>());
    out << "append " << result->version << ids << std::endl;
  }
  out.close();
  return out ? 0 : Fail("write " + out_path, Status::IOError("write failed"));
}

class AckFile {
 public:
  explicit AckFile(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) {}
  ~AckFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool Write(const std::string& line) {
    const std::string text = line + "\n";
    return ::write(fd_, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
           ::fsync(fd_) == 0;
  }

 private:
  int fd_;
};

int Crash(const std::string& root, uint64_t seed, int64_t first_op, int64_t op_count,
          int64_t kill_at, const std::string& ack_path, bool sync) {
  AckFile ack(ack_path);
  if (!ack.ok()) return Fail("open " + ack_path, Status::IOError("open failed"));
  auto fs = std::make_shared<KillFileSystem>(io::PosixFileSystem(), kill_at);
  LocalObjectStoreOptions options;
  options.sync = sync;
  auto store = io::NewFileObjectStore(fs, root, options);
  if (!store.ok()) return Fail("open store", store.status());
  auto table = Table::Open(*store, "", SmallOptions());
  if (!table.ok()) return Fail("open table", table.status());
  for (int64_t id = first_op; id < first_op + op_count; ++id) {
    const Op op = MakeOp(seed, id);
    if (!ack.Write(fmt::format("begin {}", id))) {
      return Fail("write " + ack_path, Status::IOError("write failed"));
    }
    Status status = RunOp(**table, op);
    if (!status.ok()) return Fail(op.Describe(), status);
    if (!ack.Write(fmt::format("ack {} {}", id, fs->operations()))) {
      return Fail("write " + ack_path, Status::IOError("write failed"));
    }
  }
  ack.Write(fmt::format("done {}", fs->operations()));
  return 0;
}

// The golden table: keep in sync with tests/table/table_golden_test.cc.
int MakeGolden(const std::string& dir) {
  auto store = OpenLocalObjectStore(dir);
  if (!store.ok()) return Fail("open store", store.status());
  KeyValueMetadata pk({{std::string(kPrimaryKeyMetadata), "true"}});
  SchemaPtr s =
      schema({field("id", utf8(), false, pk), field("n", int64()), field("x", float64()),
              field("s", utf8()), field("ts", timestamp_us("UTC")), field("tags", list(utf8()))});
  TableOptions options;
  options.max_rows_per_batch = 4;
  auto table = Table::Create(*store, "", s, options);
  if (!table.ok()) return Fail("create", table.status());
  const char* first = R"(
{"id":"g01","n":1,"x":0.5,"s":"alpha","ts":"2024-01-01T00:00:00Z","tags":["a","b"]}
{"id":"g02","n":2,"x":-1.25,"s":"beta","ts":"2024-01-02T03:04:05.123456Z","tags":[]}
{"id":"g03","n":3,"x":null,"s":"gamma \u00fcn\u00efc\u00f6d\u00e9","ts":null,"tags":null}
{"id":"g04","n":null,"x":1e10,"s":"","ts":"1969-12-31T23:59:59Z","tags":["x"]}
{"id":"g05","n":-5,"x":3.0,"s":null,"ts":"2024-06-30T12:00:00Z","tags":["","q"]}
{"id":"g06","n":9007199254740993,"x":0.1,"s":"it's","ts":"2000-02-29T00:00:00Z","tags":["a"]}
)";
  const char* second = R"(
{"id":"g09","n":9,"x":9.75,"s":"nine","ts":"2030-09-09T09:09:09Z","tags":["n","i","n","e"]}
{"id":"g07","n":7,"x":7.5,"s":"seven","ts":"2027-07-07T07:07:07Z","tags":["s"]}
{"id":"g10","n":10,"x":-0.5,"s":"ten","ts":"2010-10-10T10:10:10.5Z","tags":null}
{"id":"g08","n":8,"x":8.0,"s":"eight","ts":"2028-08-08T08:08:08Z","tags":["e"]}
)";
  const char* third = R"(
{"id":"g11","n":11,"x":11.0,"s":"eleven","ts":"2011-11-11T11:11:11Z","tags":[],"note":"new"}
{"id":"g12","n":12,"x":null,"s":"twelve","ts":null,"tags":["t"],"note":null}
)";
  for (const char* rows : {first, second}) {
    auto batch = json::RowsToBatch((*table)->schema(), rows);
    if (!batch.ok()) return Fail("batch", batch.status());
    auto appended = (*table)->Append({*batch});
    if (!appended.ok()) return Fail("append", appended.status());
  }
  auto deleted = (*table)->Delete("n = 3 OR id = 'g08'");
  if (!deleted.ok()) return Fail("delete", deleted.status());
  auto added = (*table)->AddColumns({field("note", utf8())});
  if (!added.ok()) return Fail("add columns", added.status());
  auto batch = json::RowsToBatch((*table)->schema(), third);
  if (!batch.ok()) return Fail("batch", batch.status());
  auto appended = (*table)->Append({*batch});
  if (!appended.ok()) return Fail("append", appended.status());
  std::printf("golden table at version %llu\n",
              static_cast<unsigned long long>((*table)->version()));
  return 0;
}

// For each version: whether a filtered scan and LookupKeys find `key`, and the stats.
int Inspect(const std::string& root, const std::string& key) {
  auto store = OpenLocalObjectStore(root);
  if (!store.ok()) return Fail("open store", store.status());
  auto table = Table::Open(*store, "", SmallOptions());
  if (!table.ok()) return Fail("open table", table.status());
  auto versions = (*table)->ListVersions();
  if (!versions.ok()) return Fail("list versions", versions.status());
  for (const VersionInfo& info : *versions) {
    auto old = (*table)->Checkout(info.version);
    if (!old.ok()) return Fail("checkout", old.status());
    auto count = (*old)->CountRows(fmt::format("id = '{}'", key));
    auto found = (*old)->LookupKeys({expr::Scalar::String(key)}, {}, true);
    auto stats = (*old)->Stats();
    std::string scanned = "-";
    ScanOptions scan_options;
    scan_options.with_row_address = true;
    scan_options.columns = {"id"};
    if (auto it = (*old)->Scan(scan_options); it.ok()) {
      if (auto batches = (*it)->ToBatches(); batches.ok()) {
        for (const RecordBatch& batch : *batches) {
          for (int64_t r = 0; r < batch.num_rows(); ++r) {
            if (batch.column(0).StringValue(r) == key) {
              const uint64_t address = batch.column(1).Value<uint64_t>(r);
              scanned =
                  fmt::format("{}:{}", RowAddressFragment(address), RowAddressOffset(address));
            }
          }
        }
      }
    }
    std::printf(
        "v%llu %-8s rows %lld fragments %lld index segments %lld unindexed %lld | "
        "scan finds it at %s, filter finds %s, lookup finds %s\n",
        static_cast<unsigned long long>(info.version), info.operation.c_str(),
        static_cast<long long>(info.num_rows), static_cast<long long>(info.num_fragments),
        stats.ok() ? static_cast<long long>(stats->num_index_segments) : -1LL,
        stats.ok() ? static_cast<long long>(stats->unindexed_fragments) : -1LL, scanned.c_str(),
        count.ok() ? std::to_string(*count).c_str() : count.status().ToString().c_str(),
        found.ok() ? json::BatchToJsonLines(*found).c_str() : found.status().ToString().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace strata::table::torture

int main(int argc, char** argv) {
  using namespace strata::table::torture;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 6 && args[0] == "concurrent") {
    return Concurrent(args[1], std::atoi(args[2].c_str()), std::atoi(args[3].c_str()), args[4],
                      args[5] == "sync");
  }
  if (args.size() == 8 && args[0] == "crash") {
    return Crash(args[1], std::strtoull(args[2].c_str(), nullptr, 10),
                 std::strtoll(args[3].c_str(), nullptr, 10),
                 std::strtoll(args[4].c_str(), nullptr, 10),
                 std::strtoll(args[5].c_str(), nullptr, 10), args[6], args[7] == "sync");
  }
  if (args.size() == 2 && args[0] == "make-golden") return MakeGolden(args[1]);
  if (args.size() == 3 && args[0] == "inspect") return Inspect(args[1], args[2]);
  if (args.size() == 4 && args[0] == "describe") {
    const uint64_t seed = std::strtoull(args[1].c_str(), nullptr, 10);
    for (int64_t id = std::atoll(args[2].c_str()); id < std::atoll(args[3].c_str()); ++id) {
      std::printf("%s\n", MakeOp(seed, id).Describe().c_str());
    }
    return 0;
  }
  std::fprintf(stderr,
               "usage: %s concurrent <root> <worker> <commits> <out-file> <sync|nosync>\n"
               "       %s crash <root> <seed> <first-op> <op-count> <kill-at> <ack-file> "
               "<sync|nosync>\n"
               "       %s make-golden <dir>\n",
               argv[0], argv[0], argv[0]);
  return 1;
}
