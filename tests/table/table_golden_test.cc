// The golden table in tests/data/table-v1 (written once by `table_worker make-golden`): every
// later build must read format version 1 tables exactly as they were written. The test
// reads a copy, so nothing ever writes into the source tree.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "strata/object_store.h"
#include "strata/table.h"
#include "support/temp_dir.h"
#include "table/torture_util.h"

namespace strata::table::torture {
namespace {

// Version 6 of the golden table: two appends (v2, v3), a delete of g03 and g08 (v4), a new
// column `note` (v5) and a third append (v6).
constexpr const char* kLatestRows = R"(
{"id":"g01","n":1,"x":0.5,"s":"alpha","ts":"2024-01-01T00:00:00.000000Z","tags":["a","b"],"note":null}
{"id":"g02","n":2,"x":-1.25,"s":"beta","ts":"2024-01-02T03:04:05.123456Z","tags":[],"note":null}
{"id":"g04","n":null,"x":1e10,"s":"","ts":"1969-12-31T23:59:59.000000Z","tags":["x"],"note":null}
{"id":"g05","n":-5,"x":3.0,"s":null,"ts":"2024-06-30T12:00:00.000000Z","tags":["","q"],"note":null}
{"id":"g06","n":9007199254740993,"x":0.1,"s":"it's","ts":"2000-02-29T00:00:00.000000Z","tags":["a"],"note":null}
{"id":"g07","n":7,"x":7.5,"s":"seven","ts":"2027-07-07T07:07:07.000000Z","tags":["s"],"note":null}
{"id":"g09","n":9,"x":9.75,"s":"nine","ts":"2030-09-09T09:09:09.000000Z","tags":["n","i","n","e"],"note":null}
{"id":"g10","n":10,"x":-0.5,"s":"ten","ts":"2010-10-10T10:10:10.500000Z","tags":null,"note":null}
{"id":"g11","n":11,"x":11.0,"s":"eleven","ts":"2011-11-11T11:11:11.000000Z","tags":[],"note":"new"}
{"id":"g12","n":12,"x":null,"s":"twelve","ts":null,"tags":["t"],"note":null}
)";

constexpr const char* kVersion2Rows = R"(
{"id":"g01","n":1,"x":0.5,"s":"alpha","ts":"2024-01-01T00:00:00.000000Z","tags":["a","b"]}
{"id":"g02","n":2,"x":-1.25,"s":"beta","ts":"2024-01-02T03:04:05.123456Z","tags":[]}
{"id":"g03","n":3,"x":null,"s":"gamma \u00fcn\u00efc\u00f6d\u00e9","ts":null,"tags":null}
{"id":"g04","n":null,"x":1e10,"s":"","ts":"1969-12-31T23:59:59.000000Z","tags":["x"]}
{"id":"g05","n":-5,"x":3.0,"s":null,"ts":"2024-06-30T12:00:00.000000Z","tags":["","q"]}
{"id":"g06","n":9007199254740993,"x":0.1,"s":"it's","ts":"2000-02-29T00:00:00.000000Z","tags":["a"]}
)";

Rows ParseRows(const char* lines) {
  std::vector<Row> rows;
  std::string text(lines);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (!line.empty()) rows.push_back(Row::parse(line));
    pos = end + 1;
  }
  return *IndexRows(rows);
}

class GoldenTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path source = STRATA_TABLE_GOLDEN_DIR;
    ASSERT_TRUE(std::filesystem::is_directory(source / "_versions"))
        << source << " is missing; write it with `table_worker make-golden " << source << "`";
    std::filesystem::copy(source, dir_.path() / "golden", std::filesystem::copy_options::recursive);
    auto store = OpenLocalObjectStore((dir_.path() / "golden").string());
    ASSERT_TRUE(store.ok()) << store.status();
    auto table = Table::Open(*store, "");
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *table;
  }

  strata::testing::TempDir dir_{"table-golden"};
  std::shared_ptr<Table> table_;
};

TEST_F(GoldenTableTest, HasSixVersionsAndTheWrittenSchema) {
  EXPECT_EQ(table_->version(), 6u);
  auto versions = table_->ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 6u);
  const std::vector<int64_t> rows = {0, 6, 10, 8, 8, 10};
  for (size_t i = 0; i < versions->size(); ++i) {
    EXPECT_EQ((*versions)[i].version, i + 1);
    EXPECT_EQ((*versions)[i].num_rows, rows[i]) << "version " << i + 1;
  }
  EXPECT_EQ((*versions)[0].operation, "create");
  EXPECT_EQ((*versions)[1].operation, "append");
  EXPECT_EQ((*versions)[3].operation, "delete");
  EXPECT_EQ((*versions)[5].operation, "append");

  SchemaPtr schema = table_->schema();
  ASSERT_EQ(schema->num_fields(), 7);
  const std::vector<std::string> names = {"id", "n", "x", "s", "ts", "tags", "note"};
  const std::vector<TypeId> types = {TypeId::kUtf8, TypeId::kInt64,     TypeId::kFloat64,
                                     TypeId::kUtf8, TypeId::kTimestamp, TypeId::kList,
                                     TypeId::kUtf8};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(schema->field(i)->name(), names[i]);
    EXPECT_EQ(schema->field(i)->type()->id(), types[i]) << names[i];
  }
  EXPECT_EQ(schema->field(4)->type()->timezone(), "UTC");
  EXPECT_FALSE(schema->field(0)->nullable());
  EXPECT_EQ(table_->primary_key_column(), std::optional<int>(0));

  auto stats = table_->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->num_rows, 10);
  EXPECT_EQ(stats->num_deleted_rows, 2);
  EXPECT_EQ(stats->num_deletion_files, 2);  // one per fragment the delete touched
  EXPECT_GE(stats->num_index_segments, 1);
  EXPECT_EQ(stats->unindexed_fragments, 0);
}

TEST_F(GoldenTableTest, ScanReadsExactlyTheWrittenRows) {
  auto rows = ScanRows(*table_);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::string diff = DiffRows(ParseRows(kLatestRows), *rows);
  EXPECT_TRUE(diff.empty()) << diff;
  auto count = table_->CountRows("n > 5");
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 6);
}

TEST_F(GoldenTableTest, LookupKeysFindsLiveRowsOnly) {
  auto batch = table_->LookupKeys({expr::Scalar::String("g11"), expr::Scalar::String("g08"),
                                   expr::Scalar::String("g02"), expr::Scalar::String("g99")},
                                  {"id", "n", "note"});
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto rows = BatchesToRows({*batch});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  // Row-address order: g02 was written before g11.
  EXPECT_EQ((*rows)[0], Row::parse(R"({"id":"g02","n":2,"note":null})"));
  EXPECT_EQ((*rows)[1], Row::parse(R"({"id":"g11","n":11,"note":"new"})"));
}

TEST_F(GoldenTableTest, EveryVersionVerifies) {
  VerifyOptions options;
  options.all_versions = true;
  auto report = table_->Verify(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << fmt::format("{}", fmt::join(report->problems, "\n"));
  EXPECT_EQ(report->manifests_checked, 6);
}

TEST_F(GoldenTableTest, CheckoutOfVersionTwoReadsTheFirstAppend) {
  auto old = table_->Checkout(2);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE((*old)->read_only());
  EXPECT_EQ((*old)->schema()->num_fields(), 6);
  auto rows = ScanRows(**old);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::string diff = DiffRows(ParseRows(kVersion2Rows), *rows);
  EXPECT_TRUE(diff.empty()) << diff;
}

}  // namespace
}  // namespace strata::table::torture
