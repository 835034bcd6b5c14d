// strata-compare: generates the deterministic data set, runs every workload on every engine
// (rotating which engine goes first), checks the answers and prints one table per workload
// with the ratio to strata. Usually started through bench/compare/run (README.md).
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "answers.h"
#include "dataset.h"
#include "engine.h"
#include "floor.h"
#include "report.h"

namespace strata::bench::compare {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = ".strata-compare";  // in --dir: the suite owns it
const std::vector<std::string> kAllEngines = {"strata",
                                              "strata-generic",
                                              "strata-generic-json",
                                              "strata-nosync",
                                              "strata-replicated",
                                              "strata-linked",
                                              "sqlite",
                                              "rocksdb",
                                              "lancedb",
                                              "lancedb-lsm",
                                              "duckdb"};

struct Options {
  bool quick = false;
  // -1: the default of the chosen size (full or --quick).
  int64_t rows = -1, batch_rows = -1, lookups = -1, get_many_batches = -1, get_many_ids = -1,
          puts_per_writer = -1, vectors = -1, vector_dim = -1, vector_queries = -1, top_k = -1,
          hybrid_records = -1, hybrid_dim = -1, hybrid_queries = -1, hybrid_topics = -1,
          sql_runs = -1, floor_mib = -1;
  std::vector<int> put_writers;
  double overwrite_fraction = -1;
  double puts_seconds = -1;
  uint64_t seed = 20261130;
  std::string engines = fmt::format("{}", fmt::join(kAllEngines, ","));
  std::string workloads = "all";
  std::string dir = "/tmp/strata-compare";
  std::string json;
  std::string node = "node";
  std::string node_script = "bench/compare/node/peer.mjs";
  bool strict = false;
  bool keep = false;
  bool cold_scans = false;
};

Clock::time_point g_start;

// "[  12.3 s] ..." progress lines, flushed at once.
template <typename... Args>
void Progress(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print("[{:7.1f} s] {}\n", Seconds(g_start),
             fmt::format(format, std::forward<Args>(args)...));
  std::fflush(stdout);
}

DatasetSizes SizesFrom(const Options& o) {
  DatasetSizes s;
  if (o.quick) {
    s.rows = 100'000;
    s.lookups = 2'000;
    s.get_many_batches = 20;
    s.puts_per_writer = 100;
    s.vectors = 10'000;
    s.vector_queries = 5;
    s.hybrid_records = 20'000;
    s.hybrid_queries = 20;
  }
  auto set = [](int64_t v, auto& field) {
    if (v >= 0) field = static_cast<std::remove_reference_t<decltype(field)>>(v);
  };
  set(o.rows, s.rows);
  set(o.batch_rows, s.batch_rows);
  set(o.lookups, s.lookups);
  set(o.get_many_batches, s.get_many_batches);
  set(o.get_many_ids, s.get_many_ids);
  set(o.puts_per_writer, s.puts_per_writer);
  set(o.vectors, s.vectors);
  set(o.vector_dim, s.vector_dim);
  set(o.vector_queries, s.vector_queries);
  set(o.top_k, s.top_k);
  set(o.hybrid_records, s.hybrid_records);
  set(o.hybrid_dim, s.hybrid_dim);
  set(o.hybrid_queries, s.hybrid_queries);
  set(o.hybrid_topics, s.hybrid_topics);
  set(o.sql_runs, s.sql_runs);
  if (!o.put_writers.empty()) {
    s.put_writers.clear();
    for (int w : o.put_writers) {  // each count once: a step per count
      if (w > 0 &&
          std::find(s.put_writers.begin(), s.put_writers.end(), w) == s.put_writers.end()) {
        s.put_writers.push_back(w);
      }
    }
  }
  if (o.overwrite_fraction >= 0) s.overwrite_fraction = o.overwrite_fraction;
  if (o.puts_seconds > 0) s.puts_seconds = o.puts_seconds;
  s.seed = o.seed;
  return s;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text + ",") {
    if (c == ',' || c == ' ') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

Result<std::vector<std::string>> ParseEngines(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& e : SplitList(text)) {
    if (std::find(kAllEngines.begin(), kAllEngines.end(), e) == kAllEngines.end()) {
      return Status::InvalidArgument(fmt::format("unknown engine '{}' in --engines (known: {})", e,
                                                 fmt::join(kAllEngines, ", ")));
    }
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
  if (out.empty()) return Status::InvalidArgument("--engines names no engine");
  return out;
}

// "all", or W1..W10 / names (ingest, puts, scan, lookup, get_many, overwrite, compact,
// vector, retrieve, sql), comma-separated. W3-W7 and W10 read what W1 wrote, so they bring W1
// along.
Result<std::set<Workload>> ParseWorkloads(const std::string& text) {
  static const std::vector<std::pair<Workload, std::vector<std::string>>> kNames = {
      {Workload::kIngest, {"w1", "ingest"}},
      {Workload::kPuts, {"w2", "puts"}},
      {Workload::kScan, {"w3", "scan"}},
      {Workload::kLookup, {"w4", "lookup"}},
      {Workload::kGetMany, {"w5", "get_many", "getmany"}},
      {Workload::kOverwrite, {"w6", "overwrite"}},
      {Workload::kCompact, {"w7", "compact"}},
      {Workload::kScanMerged, {"w3m", "scan_merged"}},
      {Workload::kVector, {"w8", "vector"}},
      {Workload::kHybrid, {"w9", "retrieve", "hybrid"}},
      {Workload::kSql, {"w10", "sql"}}};
  std::set<Workload> out;
  for (const std::string& w : SplitList(text)) {
    if (w == "all") {
      for (const auto& [workload, names] : kNames) out.insert(workload);
      continue;
    }
    bool found = false;
    for (const auto& [workload, names] : kNames) {
      if (std::find(names.begin(), names.end(), w) != names.end()) {
        out.insert(workload);
        found = true;
      }
    }
    if (!found) {
      return Status::InvalidArgument(
          fmt::format("unknown workload '{}' in --workloads (W1..W10, ingest, puts, scan, lookup, "
                      "get_many, overwrite, compact, vector, retrieve, sql, all)",
                      w));
    }
  }
  if (out.empty()) return Status::InvalidArgument("--workloads names no workload");
  return out;
}

// Wipes and recreates `dir`, refusing a non-empty directory the suite did not create.
Status PrepareDir(const std::string& dir) {
  std::error_code ec;
  const fs::path path = fs::absolute(dir, ec);
  if (dir.empty() || path == path.root_path()) {
    return Status::InvalidArgument(fmt::format("--dir '{}' is not a usable directory", dir));
  }
  if (fs::exists(path, ec)) {
    if (!fs::is_directory(path, ec)) {
      return Status::InvalidArgument(fmt::format("--dir {} exists and is not a directory", dir));
    }
    const bool empty = fs::is_empty(path, ec);
    if (!empty && !fs::exists(path / kMarker, ec)) {
      return Status::InvalidArgument(
          fmt::format("--dir {} is not empty and has no {} marker: refusing to wipe a directory "
                      "strata-compare did not create (pass an empty or new directory)",
                      dir, kMarker));
    }
    fs::remove_all(path, ec);
    if (ec) return Status::IOError(fmt::format("wipe {}: {}", dir, ec.message()));
  }
  fs::create_directories(path / "engines", ec);
  if (ec) return Status::IOError(fmt::format("create {}: {}", dir, ec.message()));
  std::ofstream marker(path / kMarker);
  marker << "created by strata-compare; wiped by its next run\n";
  if (!marker) return Status::IOError(fmt::format("write {}/{}", dir, kMarker));
  return Status::OK();
}

// Bytes the files under `dir` occupy on disk (st_blocks * 512, hard links counted once).
int64_t DiskBytes(const std::string& dir) {
  int64_t total = 0;
  std::set<std::pair<dev_t, ino_t>> seen;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
    total += static_cast<int64_t>(st.st_blocks) * 512;
  }
  return total;
}

// Best of a few copies of a buffer of `bytes` (both buffers touched first).
double MemcpyBandwidth(size_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    src[static_cast<size_t>(i)] = static_cast<char>(i);
    const auto start = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    const double s = Seconds(start);
    if (dst[static_cast<size_t>(i)] != static_cast<char>(i)) return 0;  // keeps the copy
    if (s > 0) best = std::max(best, static_cast<double>(bytes) / s);
  }
  return best;
}

std::string ReadCpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown cpu";
}

MachineInfo DescribeMachine() {
  MachineInfo m;
  m.nproc = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  m.memory_bytes = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  m.cpu = ReadCpuModel();
  utsname u{};
  if (::uname(&u) == 0) m.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3) {
    m.load_average = fmt::format("{:.2f} {:.2f} {:.2f}", load[0], load[1], load[2]);
  }
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
  m.started_utc = text;
  // tcmalloc when linked in (strata_use_tcmalloc) or preloaded; its C API names it.
  m.allocator = ::dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty") != nullptr
                    ? "tcmalloc"
                    : "glibc malloc";
  return m;
}

std::unique_ptr<Engine> MakeEngine(const std::string& label, const Options& o,
                                   const std::string& data_dir) {
  if (label == "strata") return MakeStrataEngine(true);
  if (label == "strata-nosync") return MakeStrataEngine(false);
  if (label == "strata-replicated") return MakeStrataReplicatedEngine();
  if (label == "strata-linked") return MakeStrataLinkedEngine();
  if (label == "strata-generic") return MakeStrataGenericEngine(/*json=*/false);
  if (label == "strata-generic-json") return MakeStrataGenericEngine(/*json=*/true);
  if (label == "sqlite") return MakeSqliteEngine();
  if (label == "rocksdb") return MakeRocksDbEngine();
  return MakeNodeEngine(label,
                        NodePeerOptions{o.node, fs::absolute(o.node_script).string(), data_dir});
}

// Writes dirty pages back, then drops the clean page cache (--cold-scans): the next read of
// a file comes from the disk unless a live process maps its pages (those stay), and caches
// inside the engines stay. Needs root (CAP_SYS_ADMIN) and a writable /proc/sys.
Status DropPageCache() {
  ::sync();
  const char* path = "/proc/sys/vm/drop_caches";
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::write(fd, "1\n", 2) != 2) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return Status::IOError(
        fmt::format("could not write {} ({}); --cold-scans needs root and a writable /proc/sys",
                    path, std::strerror(err)));
  }
  ::close(fd);
  return Status::OK();
}

// What each step's run is called on.
Result<StepResult> RunStep(Engine& engine, const Step& step, const Dataset& data) {
  switch (step.workload) {
    case Workload::kIngest:
      return engine.Ingest(data);
    case Workload::kPuts: {
      Result<StepResult> r = engine.Puts(data, step.writers);
      const int64_t planned = data.sizes.puts_per_writer * step.writers;
      if (r.ok() && r->supported && r->ops < planned) {
        r->note +=
            fmt::format("{}stopped by the {:.0f} s budget after {} of {} puts",
                        r->note.empty() ? "" : "; ", data.sizes.puts_seconds, r->ops, planned);
      }
      return r;
    }
    case Workload::kScan:
    case Workload::kScanMerged:
      return engine.Scan(data);
    case Workload::kLookup:
      return engine.Lookup(data);
    case Workload::kGetMany:
      return engine.GetMany(data);
    case Workload::kOverwrite:
      return engine.Overwrite(data);
    case Workload::kCompact:
      return engine.Compact();
    case Workload::kVector:
      return engine.VectorSearch(data);
    case Workload::kHybrid:
      return engine.HybridRetrieve(data);
    case Workload::kSql:
      return engine.Sql(data);
  }
  return Status::Internal("unknown workload");
}

// A one-line figure for the progress log.
std::string Brief(const Step& step, const StepResult& r, const Dataset& data) {
  std::string out = fmt::format("{:.2f} s", r.seconds);
  if (step.workload == Workload::kIngest && r.seconds > 0) {
    out += fmt::format(", {:.0f} rows/s, {}", static_cast<double>(data.rows.size()) / r.seconds,
                       FormatRate(static_cast<double>(data.LogicalBytes()) / r.seconds));
  }
  const size_t runs = static_cast<size_t>(std::max(1, data.sizes.sql_runs));
  if (step.workload == Workload::kSql && r.latencies_us.size() == data.sql.queries.size() * runs) {
    for (size_t q = 0; q < data.sql.queries.size(); ++q) {  // each query's runs in a row
      const auto first = r.latencies_us.begin() + static_cast<std::ptrdiff_t>(q * runs);
      const Latency l =
          Summarize(std::vector<double>(first, first + static_cast<std::ptrdiff_t>(runs)));
      out += fmt::format(", Q{} p50 {:.1f} ms", q + 1, l.p50_us / 1e3);
    }
  } else if (!r.latencies_us.empty()) {
    const Latency l = Summarize(r.latencies_us);
    out += fmt::format(", p50 {:.0f} us, p99 {:.0f} us", l.p50_us, l.p99_us);
  }
  if (r.answer) out += fmt::format(", answer count {}", r.answer->count);
  if (r.hybrid) {
    out += fmt::format(", recall@{} {:.3f} vs the exact reference, {} of {} ids outside the filter",
                       data.sizes.top_k, r.hybrid->recall, r.hybrid->outside_filter, r.hybrid->ids);
  }
  return out;
}

bool NeedsIngest(Workload w) {
  return w == Workload::kScan || w == Workload::kLookup || w == Workload::kGetMany ||
         w == Workload::kOverwrite || w == Workload::kCompact || w == Workload::kScanMerged ||
         w == Workload::kSql;
}

int Run(const Options& o) {
  g_start = Clock::now();
  ::signal(SIGPIPE, SIG_IGN);  // a dead Node peer gives EPIPE, reported with its stderr
  RunReport report;
  report.quick = o.quick;
  report.cold_scans = o.cold_scans;
  const bool custom = o.rows >= 0 || o.batch_rows >= 0 || o.lookups >= 0 ||
                      o.get_many_batches >= 0 || o.get_many_ids >= 0 || o.puts_per_writer >= 0 ||
                      o.vectors >= 0 || o.vector_dim >= 0 || o.vector_queries >= 0 ||
                      o.top_k >= 0 || o.hybrid_records >= 0 || o.hybrid_dim >= 0 ||
                      o.hybrid_queries >= 0 || o.hybrid_topics >= 0 || o.sql_runs >= 0 ||
                      !o.put_writers.empty() || o.overwrite_fraction >= 0 || o.puts_seconds > 0;
  report.size_label =
      custom ? (o.quick ? "--quick with overrides" : "custom") : (o.quick ? "--quick" : "full");
  report.sizes = SizesFrom(o);
  auto engines = ParseEngines(o.engines);
  auto workloads = ParseWorkloads(o.workloads);
  for (const Status& st : {engines.status(), workloads.status()}) {
    if (!st.ok()) {
      fmt::print(stderr, "strata-compare: {}\n", st.message());
      return 2;
    }
  }
  std::set<Workload> selected = *workloads;
  if (!selected.count(Workload::kIngest) &&
      std::any_of(selected.begin(), selected.end(), NeedsIngest)) {
    fmt::print("note: W3-W7, W3m and W10 read the rows W1 ingests: adding W1\n");
    selected.insert(Workload::kIngest);
  }
  if (selected.count(Workload::kScanMerged) && !selected.count(Workload::kCompact)) {
    fmt::print("note: W3m scans what W7 merged and compacted: adding W7\n");
    selected.insert(Workload::kCompact);
  }
  for (Workload w : selected) {
    if (w == Workload::kPuts) {
      for (int writers : report.sizes.put_writers) report.steps.push_back({w, writers});
    } else {
      report.steps.push_back({w, 0});
    }
  }

  if (o.cold_scans) {
    if (Status st = DropPageCache(); !st.ok()) {
      fmt::print(stderr, "strata-compare: {}\n", st.message());
      return 2;
    }
  }
  if (Status st = PrepareDir(o.dir); !st.ok()) {
    fmt::print(stderr, "strata-compare: {}\n", st.message());
    return 2;
  }
  report.dir = fs::absolute(o.dir).string();
  report.data_dir = report.dir + "/data";
  report.machine = DescribeMachine();

  // The physical floor, measured where the engines write.
  // 1 GiB even with --quick: smaller writes are partly absorbed by a VM's host-side cache
  // and measure faster than the disk sustains.
  const int64_t floor_mib = o.floor_mib >= 0 ? o.floor_mib : 1024;
  report.machine.disk_floor_bytes = floor_mib << 20;
  Progress("floor: {} MiB sequential write + fdatasync, 4 KiB fdatasync latency, memcpy",
           floor_mib);
  auto disk = MeasureDiskFloor(report.machine.disk_floor_bytes, report.dir, o.quick ? 50 : 200);
  if (!disk.ok()) {
    fmt::print(stderr, "strata-compare: measuring the disk floor in {}: {}\n", report.dir,
               disk.status().ToString());
    return 1;
  }
  report.machine.disk = *disk;
  report.machine.memcpy_bps = MemcpyBandwidth(size_t{o.quick ? 64u : 256u} << 20);
  Progress("floor: write+fdatasync {}, fdatasync 4 KiB p50 {:.0f} us, memcpy {}",
           FormatRate(disk->sync_write_bps), disk->fdatasync_4k_p50_us,
           FormatRate(report.machine.memcpy_bps));

  // The data set and the files the Node peers read.
  auto start = Clock::now();
  Dataset data = GenerateDataset(report.sizes);
  report.generate_seconds = Seconds(start);
  report.logical_bytes = data.LogicalBytes();
  Progress(
      "data: {} rows ({:.0f} MiB logical), {} vectors x {}, {} hybrid records x {} generated in "
      "{:.1f} s",
      data.rows.size(), MiB(static_cast<double>(report.logical_bytes)), data.vector_ids.size(),
      report.sizes.vector_dim, data.hybrid.ids.size(), report.sizes.hybrid_dim,
      report.generate_seconds);
  start = Clock::now();
  if (Status st = WriteDatasetFiles(data, report.data_dir); !st.ok()) {
    fmt::print(stderr, "strata-compare: writing the data files: {}\n", st.ToString());
    return 1;
  }
  report.files_seconds = Seconds(start);
  Progress("data files for the Node peers written to {} in {:.1f} s", report.data_dir,
           report.files_seconds);

  // Expected answers, computed from the data set.
  std::vector<std::vector<std::string>> hybrid_reference;  // W9
  for (const Step& step : report.steps) {
    switch (step.workload) {
      case Workload::kScan:
        report.expected[step.key()] = ExpectedScan(data);
        break;
      case Workload::kScanMerged:
        report.expected[step.key()] =
            ExpectedScan(data, /*overwritten=*/selected.count(Workload::kOverwrite) > 0);
        break;
      case Workload::kLookup:
        report.expected[step.key()] = ExpectedLookup(data);
        break;
      case Workload::kGetMany:
        report.expected[step.key()] = ExpectedGetMany(data);
        break;
      case Workload::kOverwrite:
        report.expected[step.key()] = ExpectedOverwrite(data);
        break;
      case Workload::kVector:
        report.expected[step.key()] = ExpectedVector(data);
        break;
      case Workload::kHybrid:
        hybrid_reference = ExpectedHybrid(data);
        break;
      case Workload::kSql:
        report.expected[step.key()] = ExpectedSql(data);
        break;
      default:
        break;
    }
  }
  Progress("expected answers computed");

  // Open every engine; one that cannot open becomes a column saying why.
  std::vector<std::unique_ptr<Engine>> handles;
  for (const std::string& label : *engines) {
    EngineColumn column;
    column.label = label;
    column.dir = report.dir + "/engines/" + label;
    std::error_code ec;
    fs::create_directories(column.dir, ec);
    std::unique_ptr<Engine> engine = MakeEngine(label, o, report.data_dir);
    start = Clock::now();
    Status st = ec ? Status::IOError(fmt::format("create {}: {}", column.dir, ec.message()))
                   : engine->Open(column.dir, data);
    column.name = engine->name();
    column.version = engine->version();
    column.durability = engine->durability();
    column.settings = engine->settings();
    if (label == "strata-nosync") {
      column.scope =
          "runs W1 and W2 only: strata with process-crash durability (no fsync), the level "
          "Lance runs at on a local filesystem";
    }
    if (label == "strata-replicated") {
      column.scope =
          "runs W1 and W2 only: strata marked for replication with a follower exporting, "
          "publishing and applying every second beside the writes";
    }
    if (st.ok()) {
      Progress("open {}: ok in {:.1f} s ({})", label, Seconds(start), column.version);
    } else {
      column.open_error = st.ToString();
      Progress("open {}: FAILED: {}", label, column.open_error);
      engine.reset();
    }
    report.engines.push_back(std::move(column));
    handles.push_back(std::move(engine));
  }

  // Workloads, rotating which engine goes first so drift hits every engine alike.
  const size_t n = handles.size();
  std::vector<bool> ingest_failed(n, false);
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const Step& step = report.steps[i];
    std::vector<Outcome>& outcomes = report.outcomes[step.key()];
    outcomes.resize(n);
    std::vector<size_t> order;
    for (size_t k = 0; k < n; ++k) order.push_back((i + k) % n);
    std::vector<std::string> names;
    for (size_t e : order) names.push_back(report.engines[e].label);
    Progress("== {} (order: {})", step.title(), fmt::join(names, ", "));
    if (step.workload == Workload::kCompact) {
      for (size_t e = 0; e < n; ++e) {
        if (handles[e]) report.engines[e].bytes_before_compact = DiskBytes(report.engines[e].dir);
      }
    }
    for (size_t e : order) {
      Outcome& out = outcomes[e];
      EngineColumn& column = report.engines[e];
      if (!handles[e]) {
        out.text = "could not be opened: " + column.open_error;
        continue;
      }
      if (!column.scope.empty() && step.workload != Workload::kIngest &&
          step.workload != Workload::kPuts) {
        out.text = column.label + " runs W1 and W2 only";
        continue;
      }
      if (ingest_failed[e] && NeedsIngest(step.workload)) {
        out.text = "W1 ingest failed, so there is nothing to read";
        continue;
      }
      if (o.cold_scans &&
          (step.workload == Workload::kScan || step.workload == Workload::kScanMerged)) {
        if (Status st = DropPageCache(); !st.ok()) {
          fmt::print(stderr, "strata-compare: {}\n", st.message());
          return 1;
        }
      }
      Progress("{} {} ...", step.title(), column.label);
      start = Clock::now();
      Result<StepResult> r = RunStep(*handles[e], step, data);
      out.wall_seconds = Seconds(start);
      if (!r.ok()) {
        out.kind = Outcome::Kind::kError;
        out.text = r.status().ToString();
        if (step.workload == Workload::kIngest) ingest_failed[e] = true;
        Progress("{} {}: ERROR after {:.1f} s: {}", step.title(), column.label, out.wall_seconds,
                 out.text);
      } else if (!r->supported) {
        out.kind = Outcome::Kind::kUnsupported;
        out.text = r->unsupported_reason;
        Progress("{} {}: not supported: {}", step.title(), column.label, out.text);
      } else {
        out.kind = Outcome::Kind::kOk;
        out.result = std::move(*r);
        if (step.workload == Workload::kHybrid) {
          out.result.hybrid = CheckHybrid(data, hybrid_reference, out.result.result_ids);
        }
        Progress("{} {}: {}", step.title(), column.label, Brief(step, out.result, data));
      }
      if (step.workload == Workload::kIngest) column.bytes_after_ingest = DiskBytes(column.dir);
      if (step.workload == Workload::kCompact) column.bytes_after_compact = DiskBytes(column.dir);
    }
  }

  for (size_t e = 0; e < n; ++e) {
    if (!handles[e]) continue;
    if (Status st = handles[e]->Close(); !st.ok()) report.engines[e].close_error = st.ToString();
    handles[e].reset();
  }
  report.total_seconds = Seconds(g_start);

  const bool answers_ok = CheckAnswers(&report);
  PrintHeader(report);
  PrintTables(report);
  PrintSummary(report);
  if (!o.json.empty()) {
    if (Status st = WriteJsonReport(report, o.json); !st.ok()) {
      fmt::print(stderr, "strata-compare: {}\n", st.message());
      return 1;
    }
    fmt::print("JSON written to {}\n", o.json);
  }
  if (!o.keep) {
    std::error_code ec;
    fs::remove_all(report.dir, ec);
  }

  int failures = answers_ok ? 0 : 1;
  if (!answers_ok) fmt::print("FAILED: engines gave different answers (see above)\n");
  if (o.strict) {
    bool other = false;
    for (const EngineColumn& e : report.engines) other |= !e.open_error.empty();
    for (const auto& [key, outs] : report.outcomes) {
      for (const Outcome& out : outs) other |= out.kind == Outcome::Kind::kError;
    }
    if (other) {
      fmt::print("FAILED (--strict): an engine could not be opened or a workload failed\n");
      failures = 1;
    }
  }
  return failures;
}

}  // namespace
}  // namespace strata::bench::compare

int main(int argc, char** argv) {
  using strata::bench::compare::Options;
  Options o;
  CLI::App app{
      "strata-compare: strata beside SQLite, RocksDB, LanceDB and DuckDB on the same data and "
      "workloads (bench/compare/README.md). Usually run through bench/compare/run."};
  app.add_flag("--quick", o.quick,
               "small sizes (100k rows, 2k lookups, 20 get-many batches, 100 puts per writer, "
               "10k vectors, 5 queries, 20k hybrid records, 20 hybrid queries): under 5 "
               "minutes");
  app.add_option("--rows", o.rows, "rows ingested by W1 (default 1,000,000)");
  app.add_option("--batch-rows", o.batch_rows, "rows per W1 batch (default 256)");
  app.add_option("--lookups", o.lookups, "W4 point lookups, 10% misses (default 10,000)");
  app.add_option("--get-many-batches", o.get_many_batches, "W5 batches (default 100)");
  app.add_option("--get-many-ids", o.get_many_ids, "W5 ids per batch (default 512)");
  app.add_option("--puts", o.puts_per_writer, "W2 puts per writer (default 500)");
  app.add_option("--puts-seconds", o.puts_seconds,
                 "W2 time budget: a writer still putting after this many seconds stops, and the "
                 "puts it made count (default 20)");
  app.add_option("--put-writers", o.put_writers, "W2 writer counts (default 1 8)")->delimiter(',');
  app.add_option("--overwrite-fraction", o.overwrite_fraction, "W6 share of keys (default 0.1)");
  app.add_option("--vectors", o.vectors, "W8 vectors (default 100,000)");
  app.add_option("--vector-dim", o.vector_dim, "W8 dimensions (default 1536)");
  app.add_option("--queries", o.vector_queries, "W8 queries (default 10)");
  app.add_option("--top-k", o.top_k, "W8 neighbours and W9 results per query (default 10)");
  app.add_option("--hybrid-records", o.hybrid_records,
                 "W9 records (text + embedding + topic; default 100,000)");
  app.add_option("--hybrid-dim", o.hybrid_dim, "W9 embedding dimensions (default 384)");
  app.add_option("--hybrid-queries", o.hybrid_queries, "W9 hybrid queries (default 100)");
  app.add_option("--hybrid-topics", o.hybrid_topics, "W9 topics, the filter's values (default 10)");
  app.add_option("--sql-runs", o.sql_runs, "W10 runs of each SQL query, each timed (default 3)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--seed", o.seed, "data set seed")->capture_default_str();
  app.add_option("--engines", o.engines, "comma-separated engines")->capture_default_str();
  app.add_option("--workloads", o.workloads,
                 "comma-separated: W1..W10 or ingest, puts, scan, lookup, get_many, overwrite, "
                 "compact, vector, retrieve, sql; all")
      ->capture_default_str();
  app.add_option("--dir", o.dir,
                 "scratch directory, wiped and recreated (a non-empty one must carry the "
                 "suite's .strata-compare marker)")
      ->capture_default_str();
  app.add_option("--json", o.json, "also write every figure, raw, to this JSON file");
  app.add_option("--node", o.node, "Node.js executable")->capture_default_str();
  app.add_option("--node-script", o.node_script, "the Node peers' entry point")
      ->capture_default_str();
  app.add_option("--floor-mib", o.floor_mib,
                 "MiB written for the sequential-write floor (default 1024)");
  app.add_flag("--strict", o.strict,
               "also fail when an engine cannot be opened or a workload returns an error");
  app.add_flag("--keep", o.keep, "keep --dir (engines' files and data) after the run");
  app.add_flag("--cold-scans", o.cold_scans,
               "write dirty pages back and drop the page cache before each engine's W3 and W3m, "
               "so every engine scans from the disk (needs root)");
  CLI11_PARSE(app, argc, argv);
  return strata::bench::compare::Run(o);
}
