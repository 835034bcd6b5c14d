// VerifyStore: a clean store verifies; damage to each kind of LSM object (a shard manifest,
// the manifest chain's head, a WAL segment deleted or cut short, a generation's data file or
// bloom filter) is one problem line naming the object.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "lsm/wal.h"
#include "store/store_test_util.h"
#include "strata/builder.h"
#include "strata/storage_base.h"

namespace strata::store {
namespace {

class VerifyStoreTest : public testing::StoreFixture {
 protected:
  static SchemaPtr ItemSchema() {
    return std::make_shared<Schema>(
        std::vector<FieldPtr>{field("id", utf8(), false), field("n", int64(), true)});
  }

  Result<std::unique_ptr<StorageBase>> OpenBase(StorageBaseOptions options = {}) {
    options.schema = ItemSchema();
    options.key_column = "id";
    options.shard_id = "items";
    return StorageBase::Open(store_, prefix_, std::move(options));
  }

  static RecordBatch Items(int first, int count) {
    auto builder = RecordBatchBuilder::Make(ItemSchema());
    EXPECT_TRUE(builder.ok());
    for (int i = first; i < first + count; ++i) {
      EXPECT_TRUE((*builder)->GetAs<BinaryBuilder>(0)->Append("k" + std::to_string(i)).ok());
      (*builder)->GetAs<Int64Builder>(1)->Append(i);
    }
    return *(*builder)->Finish();
  }

  // One merged batch, one pending generation and rows in the WAL only (the writer closed
  // without sealing them).
  void MakeStore() {
    {
      ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
      ASSERT_OK(base->Put({Items(0, 10)}));
      ASSERT_OK(base->Cleanup().status());
      ASSERT_OK(base->Put({Items(10, 10)}));
      ASSERT_OK(base->Flush().status());
      ASSERT_OK(base->Close());
    }
    ASSERT_OK_AND_ASSIGN(auto base, OpenBase({.seal_on_close = false}));
    ASSERT_OK(base->Put({Items(20, 10)}));
    ASSERT_OK(base->Close());
  }

  Uuid Shard() const { return lsm::DeriveShardId("items"); }
  std::filesystem::path PathOf(const std::string& key) const { return dir_.path() / key; }

  void FlipByte(const std::string& key, int64_t at) {
    std::fstream file(PathOf(key), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good()) << key;
    file.seekg(at);
    const char c = static_cast<char>(file.get());
    file.seekp(at);
    file.put(static_cast<char>(c ^ 0x5A));
  }

  std::vector<lsm::WalSegment> Segments() {
    auto segments = lsm::ListWalSegments(*store_, prefix_, Shard());
    EXPECT_TRUE(segments.ok()) << segments.status();
    return segments.ok() ? *segments : std::vector<lsm::WalSegment>{};
  }

  // The report's problems; expects exactly one, naming `object` (a key relative to the
  // store prefix).
  void ExpectOneProblemNaming(const std::string& object) {
    ASSERT_OK_AND_ASSIGN(table::VerifyReport report, VerifyStore(store_, prefix_));
    ASSERT_EQ(report.problems.size(), 1u) << ::testing::PrintToString(report.problems);
    EXPECT_NE(report.problems[0].find(object), std::string::npos) << report.problems[0];
    EXPECT_NE(report.problems[0].find("shard " + Shard().ToString()), std::string::npos)
        << report.problems[0];
  }

  std::string Relative(const std::string& key) const { return key.substr(prefix_.size()); }
};

TEST_F(VerifyStoreTest, ACleanStoreVerifiesEveryKindOfObject) {
  MakeStore();
  ASSERT_OK_AND_ASSIGN(table::VerifyReport report, VerifyStore(store_, prefix_));
  EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
  // Base manifest + shard manifests + generation manifest; base data file, WAL segment,
  // generation data file and bloom filter at least.
  EXPECT_GE(report.manifests_checked, 3);
  EXPECT_GE(report.files_checked, 4);
}

TEST_F(VerifyStoreTest, ADamagedShardManifestIsAProblemNamingIt) {
  MakeStore();
  const lsm::pb::ShardManifest head = Manifest("items");
  const std::string key = lsm::ShardManifestKey(prefix_, Shard(), head.version() - 1);
  FlipByte(key, 20);
  ExpectOneProblemNaming(Relative(key));
}

TEST_F(VerifyStoreTest, AMissingNewestShardManifestIsAProblemWhenTheHintNamesIt) {
  MakeStore();
  const lsm::pb::ShardManifest head = Manifest("items");
  const std::string key = lsm::ShardManifestKey(prefix_, Shard(), head.version());
  std::filesystem::remove(PathOf(key));
  ExpectOneProblemNaming(Relative(key));
}

TEST_F(VerifyStoreTest, ADeletedWalSegmentIsAProblemNamingIt) {
  MakeStore();
  std::vector<lsm::WalSegment> segments = Segments();
  ASSERT_EQ(segments.size(), 1u);
  std::filesystem::remove(PathOf(segments[0].key));
  ExpectOneProblemNaming(Relative(segments[0].key));
}

TEST_F(VerifyStoreTest, AWalSegmentCutShortIsAProblemNamingIt) {
  MakeStore();
  std::vector<lsm::WalSegment> segments = Segments();
  ASSERT_EQ(segments.size(), 1u);
  std::filesystem::resize_file(PathOf(segments[0].key), segments[0].size / 2);
  ExpectOneProblemNaming(Relative(segments[0].key));
}

TEST_F(VerifyStoreTest, AFlippedByteInAWalRecordIsAProblemNamingTheSegment) {
  MakeStore();
  std::vector<lsm::WalSegment> segments = Segments();
  ASSERT_EQ(segments.size(), 1u);
  FlipByte(segments[0].key, segments[0].size / 3);
  ExpectOneProblemNaming(Relative(segments[0].key));
}

TEST_F(VerifyStoreTest, AFlippedByteInAGenerationFileOrBloomFilterIsAProblemNamingIt) {
  MakeStore();
  const lsm::pb::ShardManifest head = Manifest("items");
  ASSERT_EQ(head.generations_size(), 1);
  const std::string dir = lsm::ShardDir(prefix_, Shard()) + head.generations(0).path();
  const std::string bloom = dir + std::string(lsm::kBloomObject);
  FlipByte(bloom, 30);
  ExpectOneProblemNaming(Relative(bloom));
  FlipByte(bloom, 30);  // restored
  std::string data_file;
  for (const auto& entry : std::filesystem::directory_iterator(PathOf(dir + "data"))) {
    data_file = entry.path().filename().string();
  }
  ASSERT_FALSE(data_file.empty());
  FlipByte(dir + "data/" + data_file, 200);
  ExpectOneProblemNaming("data/" + data_file);
  ASSERT_OK_AND_ASSIGN(table::VerifyReport report, VerifyStore(store_, prefix_));
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(
      report.problems[0].find("generation " + std::to_string(head.generations(0).generation())),
      std::string::npos)
      << report.problems[0];
}

}  // namespace
}  // namespace strata::store
