// What one strata-compare run measured, and its presentation: the header (machine, floor,
// engines), one table per workload with engines as columns and the ratio to strata, the
// answer check across engines and against the data set, and the raw JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dataset.h"
#include "engine.h"
#include "floor.h"
#include "strata/status.h"

namespace strata::bench::compare {

struct MachineInfo {
  int nproc = 0;
  int64_t memory_bytes = 0;
  std::string cpu;     // /proc/cpuinfo model name
  std::string kernel;  // uname -srm
  std::string started_utc;
  std::string load_average;  // at the start
  std::string allocator;     // malloc of the in-process engines: "tcmalloc" or "glibc malloc"
  DiskFloor disk;
  int64_t disk_floor_bytes = 0;  // written for the sequential-write floor
  double memcpy_bps = 0;
};

// One workload run of the suite; W2 runs once per writer count.
struct Step {
  Workload workload = Workload::kIngest;
  int writers = 0;            // W2 only
  std::string key() const;    // "W1", "W2x8", ...
  std::string title() const;  // "W2 puts, 8 writers"
};

struct Outcome {
  enum class Kind { kNotRun, kOk, kUnsupported, kError };
  Kind kind = Kind::kNotRun;
  std::string text;         // why not run / unsupported reason / error message
  StepResult result;        // when kOk
  double wall_seconds = 0;  // the driver's clock around the call (includes IPC for Node peers)
};

struct EngineColumn {
  std::string label;  // as given to --engines; the column header
  std::string name, version, durability, settings;
  std::string open_error;  // empty when the engine opened
  std::string scope;       // non-empty when it runs only some workloads (why)
  std::string dir;
  int64_t bytes_after_ingest = -1;    // st_blocks * 512 over its directory, after W1
  int64_t bytes_before_compact = -1;  // before W7 (after W2-W6)
  int64_t bytes_after_compact = -1;   // after W7
  std::string close_error;
};

struct AnswerCheck {
  std::string step;  // key
  std::optional<Answer> expected;
  std::vector<std::string> problems;  // empty: every engine that answered agrees
  int engines_checked = 0;
};

struct RunReport {
  DatasetSizes sizes;
  int64_t logical_bytes = 0;  // of the ingested rows
  double generate_seconds = 0, files_seconds = 0;
  std::string dir, data_dir;
  bool quick = false;
  // --cold-scans: the page cache was dropped before each engine's W3 and W3m.
  bool cold_scans = false;
  std::string size_label;  // "full", "--quick", or "custom" when a size was overridden
  MachineInfo machine;
  std::vector<EngineColumn> engines;
  std::vector<Step> steps;
  std::map<std::string, std::vector<Outcome>> outcomes;  // step key -> per engine column
  std::map<std::string, Answer> expected;                // step key -> from the data set
  std::vector<AnswerCheck> checks;
  double total_seconds = 0;

  const Outcome* Find(const std::string& step, size_t engine) const;
  // Index of the "strata" column when it opened (the ratio reference).
  std::optional<size_t> Reference() const;
};

// Compares every engine's answers for W3-W6, W8 and W10 with each other and with the data set's,
// and checks W9's results (every query answered, every id within the query's filter)
// (and W6's total_rows with sizes.rows). Fills report->checks; true when all agree.
bool CheckAnswers(RunReport* report);

void PrintHeader(const RunReport& report);
void PrintTables(const RunReport& report);
// Answer check, missing peers and errors. Returns the number of lines that are failures.
void PrintSummary(const RunReport& report);

Status WriteJsonReport(const RunReport& report, const std::string& path);

}  // namespace strata::bench::compare
