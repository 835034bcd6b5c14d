// Table over a fault-injecting file system: when the n-th write, sync, rename or link of an
// append, delete, compaction or schema change fails, the call fails (or succeeds once n is
// past its operations), and a fresh Open reads exactly the version before or after it.
// A full disk during an append is an error saying so and leaves the table unchanged.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/file_object_store.h"
#include "io/memory_file_system.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "support/temp_dir.h"
#include "table/torture_util.h"

namespace strata::table::torture {
namespace {

constexpr const char* kRoot = "/store";

enum class Change { kAppend, kAppendMany, kDelete, kDeleteKeys, kCompact, kAddColumns };

struct FaultParam {
  std::string name;
  Change change;
};
void PrintTo(const FaultParam& param, std::ostream* os) { *os << param.name; }

// A table with a few appends and deletes on a fresh memory file system under a fault
// injector, and the change under test with its oracle.
struct Fixture {
  std::shared_ptr<io::FaultInjectionFileSystem> fs;
  std::shared_ptr<Table> table;
  Rows before;
  Rows after;
  uint64_t version = 0;
};

Result<std::shared_ptr<Table>> OpenFresh(const std::shared_ptr<io::FileSystem>& fs) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, io::NewFileObjectStore(fs, kRoot));
  return Table::Open(store, "", SmallOptions());
}

Status Build(uint64_t seed, Fixture* f) {
  f->fs = std::make_shared<io::FaultInjectionFileSystem>(std::make_shared<io::MemoryFileSystem>());
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, io::NewFileObjectStore(f->fs, kRoot));
  STRATA_ASSIGN_OR_RETURN(f->table, Table::Create(store, "", BaseSchema(false), SmallOptions()));
  std::mt19937_64 rng(seed);
  Rows rows;
  for (int a = 0; a < 2; ++a) {
    Op op;
    op.kind = Op::Kind::kAppend;
    for (int i = 0; i < 40; ++i) {
      op.rows.push_back(RandomRow(rng, fmt::format("b{}-{:02}", a, i), {}));
    }
    ApplyOp(op, &rows);
    STRATA_RETURN_IF_ERROR(RunOp(*f->table, op));
  }
  Op thin;
  thin.kind = Op::Kind::kDelete;
  thin.predicate.clauses = {Clause{"v", "<", {int64_t{15}}}};
  thin.predicate.text = "v < 15";
  STRATA_RETURN_IF_ERROR(RunOp(*f->table, thin, ApplyOp(thin, &rows)));
  f->before = rows;
  f->version = f->table->version();
  f->after = rows;
  return Status::OK();
}

// Runs the change on f->table; with apply_oracle, also applies it to f->after.
Status RunChange(Change change, Fixture* f, bool apply_oracle) {
  std::mt19937_64 rng(7);
  Op op;
  switch (change) {
    case Change::kAppend:
    case Change::kAppendMany: {
      op.kind = Op::Kind::kAppend;
      const int n = change == Change::kAppend ? 20 : 100;
      for (int i = 0; i < n; ++i) op.rows.push_back(RandomRow(rng, fmt::format("n-{:03}", i), {}));
      break;
    }
    case Change::kDelete:
      op.kind = Op::Kind::kDelete;
      op.predicate.clauses = {Clause{"v", ">=", {int64_t{50}}},
                              Clause{"tag", "!=", {std::string("a")}}};
      op.predicate.text = "v >= 50 AND tag != 'a'";
      break;
    case Change::kDeleteKeys:
      op.kind = Op::Kind::kDeleteKeys;
      for (const auto& [key, row] : f->before) {
        if (op.keys.size() < 3 || rng() % 10 == 0) op.keys.push_back(row["id"]);
      }
      break;
    case Change::kCompact:
      op.kind = Op::Kind::kCompact;
      op.compaction.target_rows_per_fragment = 200;
      op.compaction.max_source_fragments = 0;
      break;
    case Change::kAddColumns: {
      if (apply_oracle) {
        for (auto& [key, row] : f->after) row["x1"] = nullptr;
      }
      return f->table->AddColumns({field("x1", int64())}).status();
    }
  }
  if (apply_oracle) ApplyOp(op, &f->after);
  return RunOp(*f->table, op);
}

class TableFaultTest : public ::testing::TestWithParam<FaultParam> {};

TEST_P(TableFaultTest, FailedFileOperationLeavesBeforeOrAfterState) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED={})", seed, seed));
  const Change change = GetParam().change;
  int errors = 0;
  int errors_after_commit = 0;
  for (io::FaultOp op :
       {io::FaultOp::kWrite, io::FaultOp::kSync, io::FaultOp::kRename, io::FaultOp::kLink}) {
    bool passed_the_end = false;
    for (int n = 1; n <= 300 && !passed_the_end; ++n) {
      SCOPED_TRACE(fmt::format("fault op {}, n = {}", static_cast<int>(op), n));
      Fixture f;
      Status built = Build(seed, &f);
      ASSERT_TRUE(built.ok()) << built;
      f.fs->FailNth(op, n);
      Status status = RunChange(change, &f, /*apply_oracle=*/true);
      const int64_t injected = f.fs->injected_faults();
      f.fs->ClearFaults();
      if (injected == 0) {
        ASSERT_TRUE(status.ok()) << "no fault was injected, yet: " << status;
        passed_the_end = true;
      }
      if (!status.ok()) ++errors;
      auto reopened = OpenFresh(f.fs);
      ASSERT_TRUE(reopened.ok()) << "open after the failure (" << status
                                 << "): " << reopened.status();
      const uint64_t version = (*reopened)->version();
      ASSERT_TRUE(version == f.version || version == f.version + 1)
          << "version " << version << " after a change on version " << f.version;
      const bool committed = version == f.version + 1;
      if (status.ok()) {
        ASSERT_TRUE(committed || f.before == f.after) << "an acknowledged change is missing";
      } else if (committed) {
        ++errors_after_commit;
      }
      auto rows = ScanRows(**reopened);
      ASSERT_TRUE(rows.ok()) << rows.status();
      std::string diff = DiffRows(committed ? f.after : f.before, *rows);
      ASSERT_TRUE(diff.empty()) << (committed ? "after" : "before") << " the change (" << status
                                << "): " << diff;
      auto report = (*reopened)->Verify();
      ASSERT_TRUE(report.ok()) << report.status();
      ASSERT_TRUE(report->ok()) << fmt::format("{}", fmt::join(report->problems, "\n"));
      if (!status.ok() && !committed) {
        // The failed handle is still usable: the same change now succeeds, once.
        Status retried = RunChange(change, &f, /*apply_oracle=*/false);
        ASSERT_TRUE(retried.ok()) << "retry after " << status << ": " << retried;
        auto again = OpenFresh(f.fs);
        ASSERT_TRUE(again.ok()) << again.status();
        auto retried_rows = ScanRows(**again);
        ASSERT_TRUE(retried_rows.ok()) << retried_rows.status();
        diff = DiffRows(f.after, *retried_rows);
        ASSERT_TRUE(diff.empty()) << "after the retry: " << diff;
      }
    }
    EXPECT_TRUE(passed_the_end) << "the change kept hitting faults past 300 operations";
  }
  std::cout << fmt::format("{}: {} failed calls, {} of them after the commit\n", GetParam().name,
                           errors, errors_after_commit);
  EXPECT_GT(errors, 0) << "no injected fault made the change fail";
}

INSTANTIATE_TEST_SUITE_P(Changes, TableFaultTest,
                         ::testing::Values(FaultParam{"append", Change::kAppend},
                                           FaultParam{"append_fragments", Change::kAppendMany},
                                           FaultParam{"delete", Change::kDelete},
                                           FaultParam{"delete_keys", Change::kDeleteKeys},
                                           FaultParam{"compact", Change::kCompact},
                                           FaultParam{"add_columns", Change::kAddColumns}),
                         [](const auto& info) { return info.param.name; });

TEST(TableFaultTest, NoSpaceDuringAppendIsAnErrorAndLeavesTheTableUnchanged) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED={})", seed, seed));
  Fixture f;
  Status built = Build(seed, &f);
  ASSERT_TRUE(built.ok()) << built;
  f.fs->SetNoSpace(true);
  Status status = RunChange(Change::kAppend, &f, /*apply_oracle=*/true);
  f.fs->SetNoSpace(false);
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(io::IsNoSpace(status)) << status;
  EXPECT_THAT(status.message(), ::testing::HasSubstr("no space")) << status;
  EXPECT_EQ(f.table->version(), f.version);
  auto reopened = OpenFresh(f.fs);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->version(), f.version);
  auto rows = ScanRows(**reopened);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::string diff = DiffRows(f.before, *rows);
  EXPECT_TRUE(diff.empty()) << diff;
  // With space again, the same handle appends.
  Status retried = RunChange(Change::kAppend, &f, /*apply_oracle=*/false);
  ASSERT_TRUE(retried.ok()) << retried;
  EXPECT_EQ(f.table->version(), f.version + 1);
}

}  // namespace
}  // namespace strata::table::torture
