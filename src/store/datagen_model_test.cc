// DatagenStore against a model: random streams of writer actions (opens, steps with fields,
// failures, terminals, retried and duplicated checkpoints, resumes, bad writes) with random
// flushes, merges, cleanups and compactions in between. The model tracks each item's
// expected state directly from the actions (it never folds events), so every item the
// store folds, and the overview, must equal it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "strata/datagen_store.h"
#include "strata/object_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "util/clock.h"

namespace strata::store {
namespace {

// Every field name has one kind and one mode, so random writes never break a fold rule.
struct FieldSpec {
  std::string name;
  DatagenValue::Kind kind;
  bool append;
};
const std::vector<FieldSpec>& Catalog() {
  static const std::vector<FieldSpec> catalog = {
      {"score", DatagenValue::Kind::kFloat, false}, {"count", DatagenValue::Kind::kInt, false},
      {"ok", DatagenValue::Kind::kBool, true},      {"tags", DatagenValue::Kind::kStr, true},
      {"meta", DatagenValue::Kind::kJson, false},   {"image", DatagenValue::Kind::kBlob, false},
      {"frames", DatagenValue::Kind::kBlob, true},
  };
  return catalog;
}

struct ModelItem {
  DatagenItemId id;
  std::optional<DatagenStreamWriter> writer;
  // What the model expects the fold to be (blob values with their bytes).
  std::optional<DatagenFoldedItem> folded;
  // The writer's position as the model derives it.
  int32_t attempt = 0;
  int64_t next_seq = 1;
  uint64_t ordinal = 0;
  std::string run_id;
};

class DatagenModel {
 public:
  DatagenModel(uint64_t seed, DatagenStore* store) : random_(seed), store_(store) {}

  uint64_t Pick(uint64_t n) { return random_.Uniform(n); }
  bool Chance(int percent) { return static_cast<int>(Pick(100)) < percent; }

  DatagenValue RandomValue(DatagenValue::Kind kind) {
    switch (kind) {
      case DatagenValue::Kind::kInt:
        return DatagenValue::Int(static_cast<int64_t>(random_.Next()));
      case DatagenValue::Kind::kFloat:
        return DatagenValue::Float(static_cast<double>(Pick(1000)) / 8);
      case DatagenValue::Kind::kBool:
        return DatagenValue::Bool(Chance(50));
      case DatagenValue::Kind::kStr:
        return DatagenValue::Str(fmt::format("s'{}", Pick(100)));
      case DatagenValue::Kind::kJson:
        return DatagenValue::Json(fmt::format(R"({{"k":[{},"v"]}})", Pick(100)));
      case DatagenValue::Kind::kBlob: {
        std::string bytes(Pick(48), '\0');
        for (char& c : bytes) c = static_cast<char>(Pick(256));
        std::optional<std::string> checksum;
        if (Chance(50)) checksum = fmt::format("crc-{}", bytes.size());
        return DatagenValue::Blob(std::move(bytes), std::move(checksum));
      }
    }
    return DatagenValue::Int(0);
  }

  DatagenStepPosition RandomPosition() {
    static const std::vector<std::pair<std::string, DatagenStepKind>> steps = {
        {"gen", DatagenStepKind::kLeaf},
        {"judge", DatagenStepKind::kLeaf},
        {"refine", DatagenStepKind::kLoop},
        {"pipeline", DatagenStepKind::kSequence}};
    const auto& [name, kind] = steps[Pick(steps.size())];
    DatagenStepPosition p{name, kind, static_cast<int64_t>(Pick(3)), std::nullopt, std::nullopt};
    if (Chance(30)) p.enclosing_step = "pipeline";
    if (Chance(10)) p.selector_step = "router";
    return p;
  }

  std::string StepCheckpoint(const ModelItem& m, const DatagenStepPosition& p) const {
    std::string id = m.id.str();
    for (const std::string& part : {std::to_string(m.attempt), p.step_name,
                                    std::to_string(p.step_index), std::to_string(m.ordinal)}) {
      id += '\0';
      id += part;
    }
    return id;
  }

  // One event was written by the model's writer at its next item_seq.
  void Wrote(ModelItem& m) {
    m.folded->last_item_seq = m.next_seq++;
    m.folded->last_attempt = std::max(m.folded->last_attempt, m.attempt);
  }

  // A write through `writer`, done once or, as a retry whose first try was stored, twice
  // (first through a copy of the writer as it was).
  template <typename F>
  Status Write(ModelItem& m, F write) {
    if (Chance(15)) {
      ++retries_;
      DatagenStreamWriter copy = *m.writer;
      STRATA_RETURN_IF_ERROR(write(copy));
    }
    return write(*m.writer);
  }

  void Open(ModelItem& m) {
    std::optional<std::string> tags;
    if (Chance(50)) tags = fmt::format(R"({{"q":{}}})", Pick(10));
    m.run_id = fmt::format("run-{}", Pick(3));
    DatagenWriteContext context{m.run_id, "epoch-0"};
    if (Chance(15)) {  // an open whose acknowledgement was lost, retried
      ++retries_;
      ASSERT_OK(store_->OpenStream(m.id, context, std::nullopt, tags).status());
    }
    ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer,
                         store_->OpenStream(m.id, context, std::nullopt, tags));
    m.writer.emplace(std::move(writer));
    DatagenFoldedItem f;
    f.item_id = m.id.str();
    f.root_item_id = m.id.Root().str();
    if (auto parent = m.id.Parent()) f.parent_item_id = parent->str();
    f.query_tags_json = tags;
    m.folded = std::move(f);
    m.attempt = 0;
    m.next_seq = 1;
    m.ordinal = 0;
    Wrote(m);
  }

  void StepStarted(ModelItem& m) {
    DatagenStepPosition p = RandomPosition();
    ASSERT_OK(Write(m, [&](DatagenStreamWriter& w) { return w.StepStarted(p); }));
    m.folded->started.insert(p);
    Wrote(m);
    ++m.ordinal;
  }

  void StepCompleted(ModelItem& m) {
    DatagenStepPosition p = RandomPosition();
    std::vector<DatagenFieldWrite> fields;
    for (const FieldSpec& spec : Catalog()) {
      if (Chance(35)) fields.push_back({spec.name, RandomValue(spec.kind), spec.append});
    }
    ASSERT_OK(Write(m, [&](DatagenStreamWriter& w) { return w.StepCompleted(p, fields); }));
    const std::string checkpoint = StepCheckpoint(m, p);
    for (size_t i = 0; i < fields.size(); ++i) {
      const DatagenFieldWrite& f = fields[i];
      DatagenFieldState& state = m.folded->fields[f.name];
      state.appended = f.append;
      if (!f.append) state.values.clear();
      state.values.push_back(f.value);
      if (f.value.kind() == DatagenValue::Kind::kBlob) {
        m.folded->blob_event_ids[f.name] = DatagenEventId(m.id.str(), checkpoint, i + 1);
      }
      Wrote(m);
    }
    m.folded->completed.insert(p);
    m.folded->trajectory.push_back(DatagenCursor{p, m.next_seq});
    Wrote(m);
    ++m.ordinal;
    ++completed_steps_[p.step_name];
  }

  void Failed(ModelItem& m) {
    DatagenStepPosition p = RandomPosition();
    static const std::vector<std::string> types = {"Timeout", "ValueError", "OOM"};
    std::string type = types[Pick(types.size())];
    std::optional<std::string> dump;
    if (Chance(50)) dump = "dump";
    ASSERT_OK(Write(m, [&](DatagenStreamWriter& w) { return w.ItemFailed(p, type, dump); }));
    Wrote(m);
    ++m.ordinal;
    ++failures_;
    ++failures_by_type_[type];
    DatagenRunFailures& run = failures_by_run_[m.run_id];
    ++run.failures;
    ++run.failures_by_error_type[type];
    failed_roots_[m.run_id].insert(m.folded->root_item_id);
  }

  void Terminal(ModelItem& m) {
    DatagenItemStatus status =
        Chance(50) ? DatagenItemStatus::kCompleted : DatagenItemStatus::kFiltered;
    ASSERT_OK(Write(m, [&](DatagenStreamWriter& w) { return w.ItemTerminal(status); }));
    m.folded->status = status;
    Wrote(m);
  }

  void Resume(ModelItem& m) {
    m.run_id = fmt::format("run-{}", Pick(3));
    ASSERT_OK_AND_ASSIGN(
        std::optional<DatagenStreamWriter> writer,
        store_->ResumeStream(m.id, {m.run_id, fmt::format("epoch-{}", ++epochs_)}));
    ASSERT_TRUE(writer.has_value());
    m.writer = std::move(writer);
    m.attempt = m.folded->last_attempt + 1;
    m.next_seq = m.folded->last_item_seq + 1;
    m.ordinal = 0;
    EXPECT_EQ(m.writer->attempt(), m.attempt);
    EXPECT_EQ(m.writer->next_seq(), m.next_seq);
  }

  // Bad input of two kinds; neither may write anything or move the writer.
  void BadWrite(ModelItem& m) {
    ASSERT_OK_AND_ASSIGN(std::vector<DatagenEvent> before, store_->EventsForItem(m.id.str()));
    if (Chance(50)) {
      Status s = m.writer->StepCompleted(
          RandomPosition(),
          {{"score", DatagenValue::Float(1)}, {"meta", DatagenValue::Json("{\"unterminated")}});
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
    } else {
      DatagenEvent e;
      e.event_id = "bad";
      e.item_id = m.id.str();
      e.root_item_id = m.folded->root_item_id;
      e.item_seq = m.next_seq;
      e.checkpoint_id = "bad";
      e.event_type = DatagenEventType::kStepStarted;  // not allowed in a checkpoint
      e.run_id = "run";
      e.writer_epoch = "epoch";
      e.set_position(RandomPosition());
      EXPECT_EQ(store_->AppendCheckpoint({e}).status().code(), StatusCode::kInvalidArgument);
    }
    EXPECT_EQ(m.writer->next_seq(), m.next_seq);
    ASSERT_OK_AND_ASSIGN(std::vector<DatagenEvent> after, store_->EventsForItem(m.id.str()));
    EXPECT_EQ(after, before);
  }

  void Maintain() {
    switch (Pick(4)) {
      case 0:
        ASSERT_OK(store_->Flush().status());
        break;
      case 1:
        ASSERT_OK(store_->MaybeMerge().status());
        break;
      case 2:
        ASSERT_OK(store_->Cleanup().status());
        break;
      case 3:
        ASSERT_OK(store_->Compact().status());
        break;
    }
  }

  void Step(std::vector<ModelItem>& items) {
    if (Chance(10)) return Maintain();
    ModelItem& m = items[Pick(items.size())];
    if (!m.folded) return Open(m);
    if (!m.writer) return Resume(m);  // a new process picks the item up
    const uint64_t action = Pick(100);
    if (action < 20) return StepStarted(m);
    if (action < 60) return StepCompleted(m);
    if (action < 70) return Failed(m);
    if (action < 78) return Terminal(m);
    if (action < 88) {
      m.writer.reset();  // the writer's process dies
      return;
    }
    return BadWrite(m);
  }

  DatagenOverview ExpectedOverview(const std::vector<ModelItem>& items) const {
    DatagenOverview o;
    for (const ModelItem& m : items) {
      if (!m.folded || !m.id.IsRoot()) continue;
      ++o.items;
      if (m.folded->status == DatagenItemStatus::kCompleted) ++o.completed;
      if (m.folded->status == DatagenItemStatus::kFiltered) ++o.filtered;
      if (m.folded->status == DatagenItemStatus::kRunning) ++o.running;
    }
    o.failures = failures_;
    o.failures_by_error_type = failures_by_type_;
    o.failures_by_run = failures_by_run_;
    for (const auto& [run, roots] : failed_roots_) {
      auto& sample = o.failures_by_run[run].sample_root_item_ids;
      for (const std::string& root : roots) {
        if (sample.size() < kDatagenFailureSampleLimit) sample.push_back(root);
      }
    }
    o.completed_steps = completed_steps_;
    return o;
  }

  int retries() const { return retries_; }

 private:
  SeededRandom random_;
  DatagenStore* store_;
  int epochs_ = 0;
  int retries_ = 0;
  int64_t failures_ = 0;
  std::map<std::string, int64_t> failures_by_type_;
  std::map<std::string, DatagenRunFailures> failures_by_run_;
  std::map<std::string, std::set<std::string>> failed_roots_;
  std::map<std::string, int64_t> completed_steps_;
};

// The folded item as a lazy fold returns it: blob values without their bytes.
DatagenFoldedItem Lazy(DatagenFoldedItem item) {
  for (auto& [name, state] : item.fields) {
    for (DatagenValue& v : state.values) {
      if (v.kind() == DatagenValue::Kind::kBlob) v.mutable_blob().bytes.reset();
    }
  }
  return item;
}

void CheckAgainstModel(const DatagenStore& store, const DatagenModel& model,
                       const std::vector<ModelItem>& items) {
  for (const ModelItem& m : items) {
    SCOPED_TRACE(m.id.str());
    ASSERT_OK_AND_ASSIGN(std::optional<DatagenFoldedItem> lazy, store.FoldItem(m.id.str()));
    if (!m.folded) {
      EXPECT_FALSE(lazy.has_value());
      continue;
    }
    ASSERT_TRUE(lazy.has_value());
    EXPECT_EQ(*lazy, Lazy(*m.folded));
    ASSERT_OK_AND_ASSIGN(std::optional<DatagenFoldedItem> eager,
                         store.FoldItem(m.id.str(), DatagenFoldMode::kEager));
    ASSERT_TRUE(eager.has_value());
    EXPECT_EQ(*eager, *m.folded);
    // One stored event per item_seq: retried and duplicated checkpoints collapsed.
    ASSERT_OK_AND_ASSIGN(std::vector<DatagenEvent> events, store.EventsForItem(m.id.str()));
    EXPECT_EQ(static_cast<int64_t>(events.size()), m.folded->last_item_seq);
  }
  ASSERT_OK_AND_ASSIGN(DatagenOverview overview, store.Overview());
  EXPECT_EQ(overview, model.ExpectedOverview(items));
}

class DatagenModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(DatagenModelTest, StoreFoldsEqualTheModel) {
  const uint64_t seed = GetParam();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  strata::testing::TempDir dir("datagen_model");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ObjectStore> objects,
                       OpenLocalObjectStore(dir.str(), {.sync = false}));
  DatagenStoreOptions options;
  options.base.shard_id = "model";
  options.base.generation_delete_delay_seconds = 0;
  // The count trigger keeps reads from opening hundreds of generations.
  options.base.merge_after_generations = 8;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DatagenStore> store,
                       DatagenStore::Open(objects, "", options));
  DatagenModel model(seed, store.get());

  // Three roots with children and grandchildren (including more than five failing roots
  // over the run: six roots).
  std::vector<ModelItem> items;
  for (int r = 0; r < 6; ++r) {
    DatagenItemId root = DatagenItemId::FromSourceKey(fmt::format("src-{}", r)).value();
    items.push_back(ModelItem{root});
    DatagenItemId child = root.Child("split", r % 2).value();
    items.push_back(ModelItem{child});
    if (r < 2) items.push_back(ModelItem{child.Child("map", 7).value()});
  }
  for (int i = 0; i < 250; ++i) {
    ASSERT_NO_FATAL_FAILURE(model.Step(items)) << "action " << i;
  }
  EXPECT_GT(model.retries(), 0);
  ASSERT_NO_FATAL_FAILURE(CheckAgainstModel(*store, model, items));
  // A new handle reads the same.
  ASSERT_OK(store->Close());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DatagenStore> reopened,
                       DatagenStore::Open(objects, "", options));
  ASSERT_NO_FATAL_FAILURE(CheckAgainstModel(*reopened, model, items));
}

INSTANTIATE_TEST_SUITE_P(Seeds, DatagenModelTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace strata::store
