// strata-compare's output: header, one table per workload (engines as columns, each cell the
// figure and its ratio to strata's), the answer check, the summary and the raw JSON.
#include "report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

namespace strata::bench::compare {

std::string Step::key() const {
  const std::string_view name = WorkloadName(workload);  // "W2 puts" -> "W2", "W10 sql" -> "W10"
  std::string k(name.substr(0, name.find(' ')));
  if (workload == Workload::kPuts) k += fmt::format("x{}", writers);
  return k;
}

std::string Step::title() const {
  if (workload == Workload::kPuts) {
    return fmt::format("{}, {} writer{}", WorkloadName(workload), writers, writers == 1 ? "" : "s");
  }
  return WorkloadName(workload);
}

const Outcome* RunReport::Find(const std::string& step, size_t engine) const {
  auto it = outcomes.find(step);
  if (it == outcomes.end() || engine >= it->second.size()) return nullptr;
  return &it->second[engine];
}

std::optional<size_t> RunReport::Reference() const {
  for (size_t e = 0; e < engines.size(); ++e) {
    if (engines[e].label == "strata" && engines[e].open_error.empty()) return e;
  }
  return std::nullopt;
}

namespace {

bool HasAnswer(Workload w) {
  return w == Workload::kScan || w == Workload::kLookup || w == Workload::kGetMany ||
         w == Workload::kOverwrite || w == Workload::kScanMerged || w == Workload::kVector ||
         w == Workload::kSql;
}

std::string Short(const std::string& digest) { return digest.substr(0, 12); }

std::string AnswerText(const Answer& a) {
  return fmt::format("count {} digest {}", a.count, Short(a.digest));
}

// W9 has no common answer (engine.h): every engine must answer every query with ids that all
// match the query's filter; recall is a figure of the table, not a check.
AnswerCheck CheckHybridStep(const RunReport& report, const Step& step) {
  AnswerCheck check;
  check.step = step.key();
  for (size_t e = 0; e < report.engines.size(); ++e) {
    const Outcome* o = report.Find(check.step, e);
    if (o == nullptr || o->kind != Outcome::Kind::kOk) continue;
    const std::string& label = report.engines[e].label;
    ++check.engines_checked;
    const std::optional<HybridQuality>& q = o->result.hybrid;
    if (!q) {
      check.problems.push_back(fmt::format("{} ran W9 but its results were not checked", label));
      continue;
    }
    if (q->queries != report.sizes.hybrid_queries) {
      check.problems.push_back(fmt::format("{}: results for {} queries, expected {}", label,
                                           q->queries, report.sizes.hybrid_queries));
    }
    if (q->outside_filter > 0) {
      check.problems.push_back(
          fmt::format("{}: {} of {} returned ids do not match the query's "
                      "topic filter (or are unknown)",
                      label, q->outside_filter, q->ids));
    }
  }
  return check;
}

}  // namespace

bool CheckAnswers(RunReport* report) {
  report->checks.clear();
  bool all_ok = true;
  for (const Step& step : report->steps) {
    if (step.workload == Workload::kHybrid) {
      AnswerCheck check = CheckHybridStep(*report, step);
      all_ok &= check.problems.empty();
      report->checks.push_back(std::move(check));
      continue;
    }
    if (!HasAnswer(step.workload)) continue;
    AnswerCheck check;
    check.step = step.key();
    auto exp = report->expected.find(check.step);
    if (exp != report->expected.end()) check.expected = exp->second;
    // Engines grouped by the answer they gave, to say which ones disagree.
    std::vector<std::pair<Answer, std::vector<std::string>>> groups;
    for (size_t e = 0; e < report->engines.size(); ++e) {
      const Outcome* o = report->Find(check.step, e);
      if (o == nullptr || o->kind != Outcome::Kind::kOk) continue;
      const std::string& label = report->engines[e].label;
      ++check.engines_checked;
      if (!o->result.answer) {
        check.problems.push_back(
            fmt::format("{} ran {} but returned no answer", label, WorkloadName(step.workload)));
        continue;
      }
      const Answer& a = *o->result.answer;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& group) { return group.first == a; });
      if (g == groups.end()) {
        groups.push_back({a, {label}});
      } else {
        g->second.push_back(label);
      }
      if (check.expected && !(a == *check.expected)) {
        check.problems.push_back(fmt::format("{}: {} but the data set gives {}", label,
                                             AnswerText(a), AnswerText(*check.expected)));
      }
      if (step.workload == Workload::kOverwrite && o->result.total_rows != report->sizes.rows) {
        check.problems.push_back(
            fmt::format("{}: {} rows after the overwrite (total_rows), expected {}: an overwrite "
                        "must not add rows",
                        label, o->result.total_rows, report->sizes.rows));
      }
    }
    if (groups.size() > 1) {
      std::string text = "engines disagree:";
      for (const auto& [answer, labels] : groups) {
        text += fmt::format(" [{}] {};", fmt::join(labels, ", "), AnswerText(answer));
      }
      check.problems.push_back(text);
    }
    all_ok &= check.problems.empty();
    report->checks.push_back(std::move(check));
  }
  return all_ok;
}

namespace {

// ---- Table cells -----------------------------------------------------------------------

enum class Better { kHigher, kLower, kNone };
enum class Format { kCount, kMicros, kMillis, kSeconds, kMiB, kPercent, kTimes };

std::string FormatValue(double v, Format f) {
  switch (f) {
    case Format::kCount:
      if (std::fabs(v) >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
      if (std::fabs(v) >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
      if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
      return fmt::format("{:.1f}", v);
    case Format::kMicros:
      return fmt::format("{:.0f}", v);
    case Format::kMillis:
      return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v);
    case Format::kSeconds:
      return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v);
    case Format::kMiB:
      return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v);
    case Format::kPercent:
      return fmt::format("{:.0f}%", v);
    case Format::kTimes:
      return fmt::format("{:.2f}", v);
  }
  return "?";
}

struct Ctx {
  const RunReport& report;
  const Step& step;
  size_t engine;
  const Outcome* outcome;  // kOk, or null for rows that do not need one
  const StepResult& r() const { return outcome->result; }
};

using NumberFn = std::function<std::optional<double>(const Ctx&)>;
using TextFn = std::function<std::string(const Ctx&)>;

struct Metric {
  std::string label;
  Better better = Better::kNone;
  Format format = Format::kCount;
  NumberFn number;
  TextFn text;                // instead of number: a text cell without a ratio
  bool needs_outcome = true;  // false: the value comes from the engine column (bytes)
};

std::optional<double> Per(double num, double seconds) {
  if (seconds <= 0) return std::nullopt;
  return num / seconds;
}

std::optional<double> P(const StepResult& r, bool p99, double scale) {
  if (r.latencies_us.empty()) return std::nullopt;
  const Latency l = Summarize(r.latencies_us);
  return (p99 ? l.p99_us : l.p50_us) * scale;
}

std::optional<double> Bytes(int64_t b) {
  if (b < 0) return std::nullopt;
  return MiB(static_cast<double>(b));
}

// W10: p50 or p99 of query q's runs (latencies_us holds each query's `runs` runs in a row,
// engine.h).
std::optional<double> QueryP(const StepResult& r, size_t q, int runs, bool p99, double scale) {
  const size_t n = static_cast<size_t>(std::max(1, runs));
  if (r.latencies_us.size() < (q + 1) * n) return std::nullopt;
  const auto first = r.latencies_us.begin() + static_cast<std::ptrdiff_t>(q * n);
  const Latency l = Summarize(std::vector<double>(first, first + static_cast<std::ptrdiff_t>(n)));
  return (p99 ? l.p99_us : l.p50_us) * scale;
}

double Ops(const StepResult& r, double fallback) {
  if (r.ops > 0) return static_cast<double>(r.ops);
  if (!r.latencies_us.empty()) return static_cast<double>(r.latencies_us.size());
  return fallback;
}

std::string AnswerCell(const Ctx& c) {
  const StepResult& r = c.r();
  if (!r.answer) return "NO ANSWER";
  auto exp = c.report.expected.find(c.step.key());
  if (exp != c.report.expected.end() && !(*r.answer == exp->second)) {
    return fmt::format("WRONG ({})", r.answer->count);
  }
  if (c.step.workload == Workload::kOverwrite && r.total_rows != c.report.sizes.rows) {
    return fmt::format("WRONG (rows {})", r.total_rows);
  }
  return fmt::format("ok ({})", r.answer->count);
}

std::vector<Metric> MetricsFor(const Step& step, const RunReport& report) {
  const auto& s = report.sizes;
  std::vector<Metric> m;
  auto answer = Metric{"answer (count)", Better::kNone, Format::kCount, nullptr, AnswerCell};
  switch (step.workload) {
    case Workload::kIngest:
      m.push_back({"rows/s", Better::kHigher, Format::kCount, [&](const Ctx& c) {
                     return Per(c.r().rows > 0 ? c.r().rows : s.rows, c.r().seconds);
                   }});
      m.push_back({"MB/s (logical row bytes)", Better::kHigher, Format::kCount,
                   [&](const Ctx& c) { return Per(report.logical_bytes / 1e6, c.r().seconds); }});
      m.push_back({"% of sequential write floor", Better::kHigher, Format::kPercent,
                   [&](const Ctx& c) -> std::optional<double> {
                     auto bps = Per(report.logical_bytes, c.r().seconds);
                     if (!bps || report.machine.disk.sync_write_bps <= 0) return std::nullopt;
                     return 100 * *bps / report.machine.disk.sync_write_bps;
                   }});
      m.push_back({"seconds", Better::kLower, Format::kSeconds,
                   [](const Ctx& c) { return std::optional<double>(c.r().seconds); }});
      m.push_back({"batch p50 (ms)", Better::kLower, Format::kMillis,
                   [](const Ctx& c) { return P(c.r(), false, 1e-3); }});
      m.push_back({"batch p99 (ms)", Better::kLower, Format::kMillis,
                   [](const Ctx& c) { return P(c.r(), true, 1e-3); }});
      m.push_back({"MiB on disk after ingest", Better::kLower, Format::kMiB,
                   [&](const Ctx& c) { return Bytes(report.engines[c.engine].bytes_after_ingest); },
                   nullptr, false});
      break;
    case Workload::kPuts: {
      const std::string w = fmt::format("{} wr: ", step.writers);
      m.push_back({w + "put p50 (us)", Better::kLower, Format::kMicros,
                   [](const Ctx& c) { return P(c.r(), false, 1); }});
      m.push_back({w + "put p99 (us)", Better::kLower, Format::kMicros,
                   [](const Ctx& c) { return P(c.r(), true, 1); }});
      m.push_back(
          {w + "puts/s (all writers)", Better::kHigher, Format::kCount, [&, step](const Ctx& c) {
             return Per(Ops(c.r(), static_cast<double>(s.puts_per_writer * step.writers)),
                        c.r().seconds);
           }});
      m.push_back({w + "p50 in fdatasync p50s", Better::kLower, Format::kTimes,
                   [&](const Ctx& c) -> std::optional<double> {
                     auto p = P(c.r(), false, 1);
                     if (!p || report.machine.disk.fdatasync_4k_p50_us <= 0) return std::nullopt;
                     return *p / report.machine.disk.fdatasync_4k_p50_us;
                   }});
      break;
    }
    case Workload::kScan:
    case Workload::kScanMerged:
      m.push_back({"rows scanned/s", Better::kHigher, Format::kCount,
                   [&](const Ctx& c) { return Per(static_cast<double>(s.rows), c.r().seconds); }});
      m.push_back({"seconds", Better::kLower, Format::kSeconds,
                   [](const Ctx& c) { return std::optional<double>(c.r().seconds); }});
      m.push_back(answer);
      break;
    case Workload::kLookup:
      m.push_back({"p50 (us)", Better::kLower, Format::kMicros,
                   [](const Ctx& c) { return P(c.r(), false, 1); }});
      m.push_back({"p99 (us)", Better::kLower, Format::kMicros,
                   [](const Ctx& c) { return P(c.r(), true, 1); }});
      m.push_back({"lookups/s", Better::kHigher, Format::kCount, [&](const Ctx& c) {
                     return Per(Ops(c.r(), static_cast<double>(s.lookups)), c.r().seconds);
                   }});
      m.push_back(answer);
      break;
    case Workload::kGetMany:
      m.push_back({"batch p50 (ms)", Better::kLower, Format::kMillis,
                   [](const Ctx& c) { return P(c.r(), false, 1e-3); }});
      m.push_back({"batch p99 (ms)", Better::kLower, Format::kMillis,
                   [](const Ctx& c) { return P(c.r(), true, 1e-3); }});
      m.push_back({"ids/s", Better::kHigher, Format::kCount, [&](const Ctx& c) {
                     const double ids = static_cast<double>(s.get_many_batches) *
                                        static_cast<double>(std::min(s.get_many_ids, s.rows));
                     return Per(ids, c.r().seconds);
                   }});
      m.push_back(answer);
      break;
    case Workload::kOverwrite:
      m.push_back({"seconds (write + read back)", Better::kLower, Format::kSeconds,
                   [](const Ctx& c) { return std::optional<double>(c.r().seconds); }});
      m.push_back(answer);
      break;
    case Workload::kCompact:
      m.push_back({"MiB after W1 ingest", Better::kLower, Format::kMiB,
                   [&](const Ctx& c) { return Bytes(report.engines[c.engine].bytes_after_ingest); },
                   nullptr, false});
      m.push_back(
          {"MiB before compaction", Better::kLower, Format::kMiB,
           [&](const Ctx& c) { return Bytes(report.engines[c.engine].bytes_before_compact); },
           nullptr, false});
      m.push_back(
          {"MiB after compaction", Better::kLower, Format::kMiB,
           [&](const Ctx& c) { return Bytes(report.engines[c.engine].bytes_after_compact); },
           nullptr, false});
      m.push_back({"compaction seconds", Better::kLower, Format::kSeconds,
                   [](const Ctx& c) { return std::optional<double>(c.r().seconds); }});
      break;
    case Workload::kHybrid:
      m.push_back({"query p50 (ms)", Better::kLower, Format::kMillis,
                   [](const Ctx& c) { return P(c.r(), false, 1e-3); }});
      m.push_back({"query p99 (ms)", Better::kLower, Format::kMillis,
                   [](const Ctx& c) { return P(c.r(), true, 1e-3); }});
      m.push_back({"queries/s", Better::kHigher, Format::kCount, [&](const Ctx& c) {
                     return Per(Ops(c.r(), static_cast<double>(s.hybrid_queries)), c.r().seconds);
                   }});
      m.push_back({fmt::format("recall@{} vs exact RRF reference", s.top_k), Better::kHigher,
                   Format::kTimes, [](const Ctx& c) -> std::optional<double> {
                     if (!c.r().hybrid) return std::nullopt;
                     return c.r().hybrid->recall;
                   }});
      m.push_back({"ids outside the filter", Better::kNone, Format::kCount, nullptr,
                   [](const Ctx& c) -> std::string {
                     if (!c.r().hybrid) return "NOT CHECKED";
                     const HybridQuality& q = *c.r().hybrid;
                     return q.outside_filter == 0
                                ? fmt::format("ok (0 of {})", q.ids)
                                : fmt::format("WRONG ({} of {})", q.outside_filter, q.ids);
                   }});
      break;
    case Workload::kVector:
      m.push_back({"ms per query", Better::kLower, Format::kMillis,
                   [&](const Ctx& c) -> std::optional<double> {
                     const double q = Ops(c.r(), static_cast<double>(s.vector_queries));
                     if (q <= 0) return std::nullopt;
                     return c.r().seconds * 1e3 / q;
                   }});
      m.push_back(answer);
      break;
    case Workload::kSql:
      for (size_t q = 0; q < SqlSpec().queries.size(); ++q) {
        for (const bool p99 : {false, true}) {
          m.push_back({fmt::format("Q{} {} (ms)", q + 1, p99 ? "p99" : "p50"), Better::kLower,
                       Format::kMillis, [&s, q, p99](const Ctx& c) {
                         return QueryP(c.r(), q, s.sql_runs, p99, 1e-3);
                       }});
        }
      }
      m.push_back({"seconds (all runs)", Better::kLower, Format::kSeconds,
                   [](const Ctx& c) { return std::optional<double>(c.r().seconds); }});
      m.push_back(answer);
      break;
  }
  return m;
}

// Footnotes of one table: the same text gets the same number.
class Footnotes {
 public:
  std::string Mark(const std::string& text) {
    for (size_t i = 0; i < notes_.size(); ++i) {
      if (notes_[i] == text) return fmt::format(" [{}]", i + 1);
    }
    notes_.push_back(text);
    return fmt::format(" [{}]", notes_.size());
  }
  void Print() const {
    for (size_t i = 0; i < notes_.size(); ++i) fmt::print("  [{}] {}\n", i + 1, notes_[i]);
  }

 private:
  std::vector<std::string> notes_;
};

struct CellValue {
  std::optional<double> number;
  std::string text;  // status or text metric
};

CellValue Evaluate(const Metric& metric, const RunReport& report, const Step& step, size_t e,
                   Footnotes* notes) {
  const Outcome* o = report.Find(step.key(), e);
  const std::string& label = report.engines[e].label;
  if (metric.needs_outcome) {
    if (o == nullptr || o->kind == Outcome::Kind::kNotRun) {
      return {std::nullopt, "-" + (notes ? notes->Mark(fmt::format("{}: not run: {}", label,
                                                                   o ? o->text : "not opened"))
                                         : "")};
    }
    if (o->kind == Outcome::Kind::kUnsupported) {
      return {std::nullopt, "n/a" + (notes ? notes->Mark(label + ": " + o->text) : "")};
    }
    if (o->kind == Outcome::Kind::kError) {
      return {std::nullopt, "ERROR" + (notes ? notes->Mark(label + ": " + o->text) : "")};
    }
  }
  Ctx c{report, step, e, o};
  if (metric.text) return {std::nullopt, metric.text(c)};
  std::optional<double> v = metric.number(c);
  if (!v || !std::isfinite(*v)) {
    // A figure kept outside the outcome (bytes on disk) is missing: say why when the step
    // did not run.
    if (!metric.needs_outcome && o != nullptr && o->kind != Outcome::Kind::kOk) {
      Metric status = metric;
      status.needs_outcome = true;
      return Evaluate(status, report, step, e, notes);
    }
    return {std::nullopt, "-"};
  }
  return {v, ""};
}

void PrintTable(const RunReport& report, Workload workload) {
  std::vector<const Step*> steps;
  for (const Step& s : report.steps) {
    if (s.workload == workload) steps.push_back(&s);
  }
  if (steps.empty()) return;
  const std::optional<size_t> ref = report.Reference();
  const size_t n = report.engines.size();
  Footnotes notes;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"metric", "better"});
  for (const auto& e : report.engines) rows.back().push_back(e.label);
  for (const Step* step : steps) {
    bool first_metric = true;
    for (const Metric& metric : MetricsFor(*step, report)) {
      std::vector<std::string> row = {metric.label, metric.better == Better::kHigher  ? "higher"
                                                    : metric.better == Better::kLower ? "lower"
                                                                                      : ""};
      std::optional<double> ref_value;
      if (ref) ref_value = Evaluate(metric, report, *step, *ref, nullptr).number;
      for (size_t e = 0; e < n; ++e) {
        CellValue v = Evaluate(metric, report, *step, e, &notes);
        std::string cell = v.number ? FormatValue(*v.number, metric.format) : v.text;
        if (v.number && ref && e != *ref && ref_value && *ref_value > 0 &&
            metric.better != Better::kNone) {
          cell += fmt::format("  {:.2f}x", *v.number / *ref_value);
        }
        // An engine's note is shown once per step, on its first row.
        const Outcome* o = report.Find(step->key(), e);
        if (first_metric && o && o->kind == Outcome::Kind::kOk && !o->result.note.empty()) {
          cell += notes.Mark(report.engines[e].label + ": " + o->result.note);
        }
        row.push_back(cell);
      }
      rows.push_back(std::move(row));
      first_metric = false;
    }
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string title = WorkloadName(workload);
  if (workload == Workload::kSql) {
    title += fmt::format(
        " (Q1 count(*) GROUP BY policy_version, role; Q2 count(*), max(rollout_id) WHERE "
        "reward > 0.5 GROUP BY role; {} run{} of each)",
        report.sizes.sql_runs, report.sizes.sql_runs == 1 ? "" : "s");
  }
  if (workload == Workload::kPuts) {
    title += fmt::format(" (fdatasync floor p50 {:.0f} us = {:.0f} puts/s for one writer)",
                         report.machine.disk.fdatasync_4k_p50_us,
                         report.machine.disk.fdatasync_4k_p50_us > 0
                             ? 1e6 / report.machine.disk.fdatasync_4k_p50_us
                             : 0.0);
  }
  fmt::print("\n-- {}\n", title);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      if (i < 2) {
        line += fmt::format("{:<{}}  ", rows[r][i], width[i]);
      } else {
        line += fmt::format("{:>{}}  ", rows[r][i], width[i]);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
  notes.Print();
}

}  // namespace

void PrintHeader(const RunReport& report) {
  const MachineInfo& m = report.machine;
  const DatasetSizes& s = report.sizes;
  fmt::print("\n== strata-compare, {}, sizes: {}\n", m.started_utc, report.size_label);
  fmt::print(
      "machine: {} cores ({}), {:.1f} GiB memory, {}, load average at start {}; allocator of "
      "the in-process engines: {}\n",
      m.nproc, m.cpu, m.memory_bytes / 1073741824.0, m.kernel, m.load_average, m.allocator);
  fmt::print(
      "floor (this run, in {}): sequential write + fdatasync {} ({:.0f} MiB), page-cache write "
      "{}, fdatasync of a 4 KiB append p50 {:.0f} us, memcpy {}\n",
      report.dir, FormatRate(m.disk.sync_write_bps), MiB(static_cast<double>(m.disk_floor_bytes)),
      FormatRate(m.disk.cached_write_bps), m.disk.fdatasync_4k_p50_us, FormatRate(m.memcpy_bps));
  const double row_bytes = s.rows > 0 ? static_cast<double>(report.logical_bytes) / s.rows : 0;
  fmt::print(
      "data: {} rows ({:.0f} MiB logical, {:.0f} B/row) in batches of {}; W2 {} puts per "
      "writer, at most {:.0f} s; W4 {} lookups (10% misses); W5 {} x {} ids; W6 {:.0f}% "
      "overwritten; W8 {} x {} "
      "float32 vectors, {} queries, top {}; W9 {} records (8-24 Zipf words, {} float32 dims, "
      "{} topics), {} hybrid queries (2-3 words + vector + topic filter), top {}; W10 {} SQL "
      "queries, {} runs each; seed {}\n",
      s.rows, MiB(static_cast<double>(report.logical_bytes)), row_bytes, s.batch_rows,
      s.puts_per_writer, s.puts_seconds, s.lookups, s.get_many_batches, s.get_many_ids,
      100 * s.overwrite_fraction, s.vectors, s.vector_dim, s.vector_queries, s.top_k,
      s.hybrid_records, s.hybrid_dim, s.hybrid_topics, s.hybrid_queries, s.top_k,
      SqlSpec().queries.size(), s.sql_runs, s.seed);
  if (report.cold_scans) {
    fmt::print(
        "scans: cold (dirty pages written back and the page cache dropped before each engine's "
        "W3 and W3m; pages a process maps and engines' own caches stay)\n");
  }
  fmt::print("engines:\n");
  for (const EngineColumn& e : report.engines) {
    if (!e.open_error.empty()) {
      fmt::print("  {:<14} NOT AVAILABLE: {}\n", e.label, e.open_error);
      continue;
    }
    fmt::print("  {:<14} {} | durability: {}\n", e.label, e.version, e.durability);
    fmt::print("  {:<14} settings: {}\n", "", e.settings);
    if (!e.scope.empty()) fmt::print("  {:<14} {}\n", "", e.scope);
  }
  if (report.Reference()) {
    fmt::print(
        "cells: the engine's figure, then \"N.NNx\" = its figure / strata's figure (x strata); "
        "the \"better\" column says whether a higher or a lower figure is better\n");
  } else {
    fmt::print(
        "cells: the engine's figure (no ratios: strata is not in this run or did not open)\n");
  }
}

void PrintTables(const RunReport& report) {
  for (Workload w : {Workload::kIngest, Workload::kPuts, Workload::kScan, Workload::kLookup,
                     Workload::kGetMany, Workload::kOverwrite, Workload::kCompact,
                     Workload::kScanMerged, Workload::kVector, Workload::kHybrid, Workload::kSql}) {
    PrintTable(report, w);
  }
}

void PrintSummary(const RunReport& report) {
  fmt::print(
      "\n== answers (W3-W6, W3m, W8, W10): every engine against the answer computed from the data "
      "set; W9: every engine answered every query, all ids within the query's filter\n");
  if (report.checks.empty()) fmt::print("  (no workload with answers was run)\n");
  for (const AnswerCheck& c : report.checks) {
    const std::string expected = c.expected ? AnswerText(*c.expected) : "not computed";
    if (c.problems.empty() && !c.expected) {  // W9: no common answer to compare
      fmt::print("  {:<5} ok: {} engine{} answered every query within its filter\n", c.step,
                 c.engines_checked, c.engines_checked == 1 ? "" : "s");
    } else if (c.problems.empty()) {
      fmt::print("  {:<5} ok: {} engine{} match{} the data set ({})\n", c.step, c.engines_checked,
                 c.engines_checked == 1 ? "" : "s", c.engines_checked == 1 ? "es" : "", expected);
    } else {
      fmt::print("  {:<5} MISMATCH ({} expected):\n", c.step, expected);
      for (const std::string& p : c.problems) fmt::print("        {}\n", p);
    }
  }
  std::vector<const EngineColumn*> missing;
  for (const EngineColumn& e : report.engines) {
    if (!e.open_error.empty()) missing.push_back(&e);
  }
  if (!missing.empty()) {
    fmt::print(
        "\n== missing engines ({} of {} could not be opened; the run went on without them)\n",
        missing.size(), report.engines.size());
    for (const EngineColumn* e : missing) fmt::print("  {}: {}\n", e->label, e->open_error);
    fmt::print(
        "  Node peers (lancedb, lancedb-lsm, duckdb) need Node.js and their npm packages: "
        "bench/compare/node/install\n");
  }
  std::vector<std::string> errors;
  for (const Step& step : report.steps) {
    for (size_t e = 0; e < report.engines.size(); ++e) {
      const Outcome* o = report.Find(step.key(), e);
      if (o && o->kind == Outcome::Kind::kError) {
        errors.push_back(fmt::format("{} {}: {}", report.engines[e].label, step.title(), o->text));
      }
    }
  }
  for (const EngineColumn& e : report.engines) {
    if (!e.close_error.empty())
      errors.push_back(fmt::format("{} close: {}", e.label, e.close_error));
  }
  if (!errors.empty()) {
    fmt::print("\n== errors ({})\n", errors.size());
    for (const std::string& line : errors) fmt::print("  {}\n", line);
  }
  fmt::print("\ntotal {:.1f} s\n", report.total_seconds);
}

Status WriteJsonReport(const RunReport& report, const std::string& path) {
  using nlohmann::json;
  const MachineInfo& m = report.machine;
  json j;
  j["started_utc"] = m.started_utc;
  j["quick"] = report.quick;
  j["cold_scans"] = report.cold_scans;
  j["dir"] = report.dir;
  j["total_seconds"] = report.total_seconds;
  j["machine"] = {
      {"nproc", m.nproc},   {"memory_bytes", m.memory_bytes}, {"cpu", m.cpu},
      {"kernel", m.kernel}, {"load_average", m.load_average}, {"allocator", m.allocator}};
  j["floor"] = {{"sync_write_bps", m.disk.sync_write_bps},
                {"cached_write_bps", m.disk.cached_write_bps},
                {"fdatasync_4k_p50_us", m.disk.fdatasync_4k_p50_us},
                {"disk_floor_bytes", m.disk_floor_bytes},
                {"memcpy_bps", m.memcpy_bps}};
  j["dataset"] = SizesJson(report.sizes);
  j["dataset"]["logical_bytes"] = report.logical_bytes;
  j["dataset"]["generate_seconds"] = report.generate_seconds;
  j["dataset"]["files_seconds"] = report.files_seconds;
  json engines = json::array();
  for (const EngineColumn& e : report.engines) {
    engines.push_back({{"label", e.label},
                       {"name", e.name},
                       {"version", e.version},
                       {"durability", e.durability},
                       {"settings", e.settings},
                       {"open_error", e.open_error},
                       {"scope", e.scope},
                       {"close_error", e.close_error},
                       {"bytes_after_ingest", e.bytes_after_ingest},
                       {"bytes_before_compact", e.bytes_before_compact},
                       {"bytes_after_compact", e.bytes_after_compact}});
  }
  j["engines"] = engines;
  json steps = json::array();
  for (const Step& step : report.steps) {
    json js = {{"key", step.key()}, {"workload", WorkloadName(step.workload)}};
    if (step.workload == Workload::kPuts) js["writers"] = step.writers;
    auto exp = report.expected.find(step.key());
    if (exp != report.expected.end()) {
      js["expected_answer"] = {{"count", exp->second.count}, {"digest", exp->second.digest}};
    }
    json results = json::object();
    for (size_t e = 0; e < report.engines.size(); ++e) {
      const Outcome* o = report.Find(step.key(), e);
      json r;
      if (o == nullptr || o->kind == Outcome::Kind::kNotRun) {
        r = {{"status", "not_run"}, {"reason", o ? o->text : "not opened"}};
      } else if (o->kind == Outcome::Kind::kUnsupported) {
        r = {{"status", "unsupported"}, {"reason", o->text}};
      } else if (o->kind == Outcome::Kind::kError) {
        r = {{"status", "error"}, {"error", o->text}, {"wall_seconds", o->wall_seconds}};
      } else {
        const StepResult& x = o->result;
        const Latency l = Summarize(x.latencies_us);
        r = {{"status", "ok"},
             {"seconds", x.seconds},
             {"wall_seconds", o->wall_seconds},
             {"ops", x.ops},
             {"rows", x.rows},
             {"bytes", x.bytes},
             {"total_rows", x.total_rows},
             {"note", x.note},
             {"latency_us", {{"p50", l.p50_us}, {"p99", l.p99_us}, {"max", l.max_us}}},
             {"latencies_us", x.latencies_us}};
        if (x.answer) r["answer"] = {{"count", x.answer->count}, {"digest", x.answer->digest}};
        if (x.hybrid) {
          r["hybrid"] = {{"queries", x.hybrid->queries},
                         {"ids", x.hybrid->ids},
                         {"outside_filter", x.hybrid->outside_filter},
                         {"recall", x.hybrid->recall}};
          r["result_ids"] = x.result_ids;
        }
      }
      results[report.engines[e].label] = r;
    }
    js["results"] = results;
    steps.push_back(js);
  }
  j["steps"] = steps;
  json checks = json::array();
  bool ok = true;
  for (const AnswerCheck& c : report.checks) {
    checks.push_back(
        {{"step", c.step}, {"engines_checked", c.engines_checked}, {"problems", c.problems}});
    ok &= c.problems.empty();
  }
  j["answer_checks"] = checks;
  j["answers_ok"] = ok;
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  out.close();
  if (!out) return Status::IOError(fmt::format("could not write the JSON report to {}", path));
  return Status::OK();
}

}  // namespace strata::bench::compare
