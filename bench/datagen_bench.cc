// DatagenStore on a local directory: checkpoint appends (one durable put each) beside the
// fdatasync floor measured in the same run, then FoldItem and Overview latency over a log of
// N events on M items (merged into the base table, and with the newest events pending).
//
//   build/release/bench/datagen_bench [--dir DIR] [--events N] [--items M]
//                                     [--checkpoints K] [--quick]
// Defaults: 1,000,000 events over 10,000 items, 500 checkpoints; --quick: 20,000 / 200 / 30.
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "floor.h"
#include "strata/datagen_store.h"
#include "strata/object_store.h"

namespace strata::bench {
namespace {

using store::DatagenEvent;
using store::DatagenEventType;
using store::DatagenStepPosition;
using store::DatagenStore;
using store::DatagenValue;

struct Config {
  std::string parent_dir = "/tmp";
  int64_t events = 1'000'000;
  int64_t items = 10'000;
  int checkpoints = 500;  // durable checkpoint appends timed one by one
  int fields_per_checkpoint = 4;
  int fdatasync_samples = 200;
  int fold_samples = 100;
  int overview_samples = 3;
  int64_t events_per_append = 20'000;  // loading the log
};

std::vector<std::string> g_problems;
void Expect(bool ok, std::string what) {
  if (!ok) {
    fmt::print("  PROBLEM: {}\n", what);
    g_problems.push_back(std::move(what));
  }
}

Result<std::unique_ptr<DatagenStore>> OpenDatagen(const std::string& root, bool sync,
                                                  int merge_after_generations) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects,
                          OpenLocalObjectStore(root, LocalObjectStoreOptions{.sync = sync}));
  store::DatagenStoreOptions options;
  options.base.shard_id = "bench";
  options.base.merge_after_generations = merge_after_generations;
  return DatagenStore::Open(std::move(objects), "", std::move(options));
}

DatagenStepPosition Step(int64_t index) {
  static const char* kSteps[] = {"gen", "judge", "refine", "score"};
  return DatagenStepPosition{kSteps[index % 4], store::DatagenStepKind::kLeaf, index / 4,
                             std::nullopt, std::nullopt};
}

DatagenEvent NewEvent(const std::string& item, int64_t seq, DatagenEventType type,
                      const std::string& checkpoint, int64_t ordinal) {
  DatagenEvent e;
  e.event_id = store::DatagenEventId(item, checkpoint, static_cast<uint64_t>(ordinal));
  e.item_id = item;
  e.root_item_id = item;
  e.item_seq = seq;
  e.checkpoint_id = checkpoint;
  e.event_type = type;
  e.run_id = "run-1";
  e.writer_epoch = "epoch-1";
  e.event_ts_micros = 1'767'000'000'000'000 + seq;
  return e;
}

// One checkpoint of `fields` FIELD_SETs and a STEP_COMPLETED for `item` from `seq` on.
std::vector<DatagenEvent> Checkpoint(const std::string& item, int64_t seq, int64_t step,
                                     int fields) {
  const std::string checkpoint = fmt::format("{}/0/{}", item, step);
  const DatagenStepPosition position = Step(step);
  std::vector<DatagenEvent> out;
  for (int f = 0; f < fields; ++f) {
    DatagenEvent e = NewEvent(item, seq + f, DatagenEventType::kFieldSet, checkpoint, f + 1);
    e.set_position(position);
    e.field_name = fmt::format("field_{}", f);
    e.field_type = "str";
    e.codec_version = 1;
    e.value = DatagenValue::Str(std::string(64, static_cast<char>('a' + f)));
    out.push_back(std::move(e));
  }
  DatagenEvent done = NewEvent(item, seq + fields, DatagenEventType::kStepCompleted, checkpoint, 0);
  done.set_position(position);
  out.push_back(std::move(done));
  return out;
}

// ---- 1. Checkpoint appends beside fdatasync ----------------------------------------------

Status BenchCheckpoints(const Config& config, const std::string& dir, double fdatasync_us) {
  fmt::print(
      "\n1. AppendCheckpoint: {} checkpoints of {} fields + STEP_COMPLETED, each one "
      "durable put (sync, count-triggered merge every 8 generations)\n",
      config.checkpoints, config.fields_per_checkpoint);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen,
                          OpenDatagen(dir + "/checkpoints", /*sync=*/true, 8));
  DatagenEvent created = NewEvent("item-0", 1, DatagenEventType::kItemCreated, "created", 0);
  created.status = store::DatagenItemStatus::kRunning;
  STRATA_RETURN_IF_ERROR(datagen->Append({created}).status());
  std::vector<double> us;
  int64_t seq = 2;
  int64_t events = 0;
  const auto start = Clock::now();
  for (int c = 0; c < config.checkpoints; ++c) {
    std::vector<DatagenEvent> batch = Checkpoint("item-0", seq, c, config.fields_per_checkpoint);
    const auto t0 = Clock::now();
    STRATA_RETURN_IF_ERROR(datagen->AppendCheckpoint(batch).status());
    us.push_back(Seconds(t0) * 1e6);
    seq += static_cast<int64_t>(batch.size());
    events += static_cast<int64_t>(batch.size());
  }
  const double seconds = Seconds(start);
  const Latency l = Summarize(us);
  fmt::print(
      "  {:.0f} checkpoints/s, {:.0f} events/s; per checkpoint p50 {:.0f} us, p99 {:.0f} "
      "us, max {:.0f} us\n",
      config.checkpoints / seconds, events / seconds, l.p50_us, l.p99_us, l.max_us);
  fmt::print(
      "  floor: 4 KiB append + fdatasync p50 {:.0f} us -> a checkpoint costs {:.1f} "
      "fdatasyncs at p50\n",
      fdatasync_us, fdatasync_us > 0 ? l.p50_us / fdatasync_us : 0.0);
  STRATA_ASSIGN_OR_RETURN(std::optional<store::DatagenFoldedItem> folded,
                          datagen->FoldItem("item-0"));
  Expect(folded.has_value() && folded->trajectory.size() == static_cast<size_t>(config.checkpoints),
         "the checkpointed item folds to one trajectory entry per checkpoint");
  return datagen->Close();
}

// ---- 2. Fold and overview over a large log -------------------------------------------------

// Events of item `i` (about `per_item`): ITEM_CREATED, checkpoints, a FAILED on every 10th
// item, TERMINAL on every other.
std::vector<DatagenEvent> ItemEvents(int64_t i, int64_t per_item, int fields) {
  const std::string item = fmt::format("item-{:06}", i);
  std::vector<DatagenEvent> out;
  DatagenEvent created = NewEvent(item, 1, DatagenEventType::kItemCreated, "created", 0);
  created.status = store::DatagenItemStatus::kRunning;
  out.push_back(std::move(created));
  int64_t seq = 2;
  int64_t step = 0;
  while (static_cast<int64_t>(out.size()) + fields + 1 + 2 <= per_item) {
    for (DatagenEvent& e : Checkpoint(item, seq, step++, fields)) out.push_back(std::move(e));
    seq += fields + 1;
  }
  if (i % 10 == 0) {
    DatagenEvent failed = NewEvent(item, seq++, DatagenEventType::kFailed, "failed", 0);
    failed.set_position(Step(0));
    failed.error_type = i % 20 == 0 ? "Timeout" : "ValueError";
    out.push_back(std::move(failed));
  }
  if (i % 2 == 0) {
    DatagenEvent terminal = NewEvent(item, seq++, DatagenEventType::kTerminal, "terminal", 0);
    terminal.status = store::DatagenItemStatus::kCompleted;
    out.push_back(std::move(terminal));
  }
  return out;
}

Status BenchReads(const Config& config, const std::string& dir) {
  const int64_t per_item = std::max<int64_t>(config.events / config.items, 4);
  fmt::print("\n2. Reads over {} items x ~{} events (loaded without fsync, merged into the base)\n",
             config.items, per_item);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen,
                          OpenDatagen(dir + "/log", /*sync=*/false, 8));
  std::vector<DatagenEvent> batch;
  int64_t total = 0;
  const auto load_start = Clock::now();
  for (int64_t i = 0; i < config.items; ++i) {
    for (DatagenEvent& e : ItemEvents(i, per_item, 3)) batch.push_back(std::move(e));
    if (static_cast<int64_t>(batch.size()) >= config.events_per_append || i + 1 == config.items) {
      STRATA_RETURN_IF_ERROR(datagen->Append(batch).status());
      total += static_cast<int64_t>(batch.size());
      batch.clear();
    }
  }
  const double load_seconds = Seconds(load_start);
  while (true) {
    STRATA_ASSIGN_OR_RETURN(store::MergeReport report, datagen->Cleanup());
    if (report.generations_reclaimed == 0) break;
  }
  fmt::print("  loaded {} events in {:.1f} s ({:.0f} events/s in puts of {})\n", total,
             load_seconds, total / load_seconds, config.events_per_append);

  std::mt19937_64 random(42);
  auto measure_folds = [&](const char* label) -> Status {
    std::vector<double> us;
    for (int s = 0; s < config.fold_samples; ++s) {
      const int64_t i = static_cast<int64_t>(random() % static_cast<uint64_t>(config.items));
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(std::optional<store::DatagenFoldedItem> folded,
                              datagen->FoldItem(fmt::format("item-{:06}", i)));
      us.push_back(Seconds(t0) * 1e6);
      Expect(folded.has_value(), fmt::format("item {} folds", i));
    }
    const Latency l = Summarize(us);
    fmt::print("  FoldItem ({}): p50 {:.0f} us, p99 {:.0f} us, max {:.0f} us over {} items\n",
               label, l.p50_us, l.p99_us, l.max_us, l.samples);
    return Status::OK();
  };
  auto measure_overview = [&](const char* label) -> Status {
    std::vector<double> us;
    for (int s = 0; s < config.overview_samples; ++s) {
      const auto t0 = Clock::now();
      STRATA_ASSIGN_OR_RETURN(store::DatagenOverview overview, datagen->Overview());
      us.push_back(Seconds(t0) * 1e6);
      Expect(overview.items == config.items,
             fmt::format("overview counts {} items, want {}", overview.items, config.items));
    }
    const Latency l = Summarize(us);
    fmt::print("  Overview ({}): p50 {:.1f} ms, max {:.1f} ms over {} runs ({:.0f} events/s)\n",
               label, l.p50_us / 1e3, l.max_us / 1e3, l.samples,
               l.p50_us > 0 ? total / (l.p50_us / 1e6) : 0.0);
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(measure_folds("all merged"));
  STRATA_RETURN_IF_ERROR(measure_overview("all merged"));
  // The newest checkpoints still pending: 7 generations, below the count trigger.
  for (int g = 0; g < 7; ++g) {
    std::vector<DatagenEvent> more;
    for (int64_t i = g; i < config.items; i += 7) {
      const int64_t seq = 1'000'000 + g * 10;  // past every loaded item_seq
      for (DatagenEvent& e : Checkpoint(fmt::format("item-{:06}", i), seq, 1000 + g, 3)) {
        more.push_back(std::move(e));
      }
    }
    STRATA_RETURN_IF_ERROR(datagen->Append(more).status());
  }
  STRATA_ASSIGN_OR_RETURN(int64_t pending, datagen->PendingGenerations());
  fmt::print("  + one more checkpoint per item in {} pending generations\n", pending);
  STRATA_RETURN_IF_ERROR(measure_folds("7 generations pending"));
  STRATA_RETURN_IF_ERROR(measure_overview("7 generations pending"));
  return datagen->Close();
}

Status Run(const Config& config, const std::string& dir) {
  fmt::print("datagen_bench: {} events over {} items, {} checkpoints; dir {}\n", config.events,
             config.items, config.checkpoints, dir);
  STRATA_ASSIGN_OR_RETURN(double fdatasync_us,
                          Fdatasync4kP50Micros(dir + "/fdatasync.tmp", config.fdatasync_samples));
  STRATA_RETURN_IF_ERROR(BenchCheckpoints(config, dir, fdatasync_us));
  return BenchReads(config, dir);
}

bool ParseCount(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out > 0;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  strata::bench::Config config;
  bool quick = false;
  int64_t events = -1;
  int64_t items = -1;
  int64_t checkpoints = -1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool ok = true;
    if (arg == "--dir" && i + 1 < argc) {
      config.parent_dir = argv[++i];
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--events" && i + 1 < argc) {
      ok = strata::bench::ParseCount(argv[++i], &events);
    } else if (arg == "--items" && i + 1 < argc) {
      ok = strata::bench::ParseCount(argv[++i], &items);
    } else if (arg == "--checkpoints" && i + 1 < argc) {
      ok = strata::bench::ParseCount(argv[++i], &checkpoints);
    } else {
      ok = false;
    }
    if (!ok) {
      fmt::print(stderr,
                 "usage: {} [--dir DIR] [--events N] [--items M] [--checkpoints K] [--quick]\n",
                 argv[0]);
      return 2;
    }
  }
  if (quick) {
    config.events = 20'000;
    config.items = 200;
    config.checkpoints = 30;
    config.fdatasync_samples = 30;
    config.fold_samples = 20;
  }
  if (events > 0) config.events = events;
  if (items > 0) config.items = items;
  if (checkpoints > 0) config.checkpoints = static_cast<int>(checkpoints);
  if (config.items > config.events) config.items = config.events;
  std::string pattern = config.parent_dir + "/datagen_bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    fmt::print(stderr, "mkdtemp {}: {}\n", pattern, std::strerror(errno));
    return 1;
  }
  strata::Status st = strata::bench::Run(config, pattern);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!st.ok()) {
    fmt::print(stderr, "datagen_bench failed: {}\n", st.ToString());
    return 1;
  }
  if (!strata::bench::g_problems.empty()) {
    fmt::print("\n{} PROBLEMS (wrong results):\n", strata::bench::g_problems.size());
    for (const auto& p : strata::bench::g_problems) fmt::print("  {}\n", p);
    return 1;
  }
  return 0;
}
