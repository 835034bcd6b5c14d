// Deletion vectors (set operations, serialization) and deletion files (round trip, checks
// against the manifest entry, corruption).
#include "table/deletion_file.h"

#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/format.h"

namespace strata::table::internal {
namespace {

constexpr const char* kPrefix = "tables/t/";

DeletionVector Of(std::initializer_list<uint32_t> offsets) {
  DeletionVector out;
  for (uint32_t offset : offsets) out.Add(offset);
  return out;
}

TEST(DeletionVectorTest, AddContainsAndCount) {
  DeletionVector v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.Cardinality(), 0);
  v.Add(7);
  v.Add(3);
  v.Add(7);
  v.AddRange(100, 105);
  v.AddRange(50, 50);  // empty
  v.Add(4000000000u);
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(v.Cardinality(), 8);
  EXPECT_TRUE(v.Contains(3));
  EXPECT_TRUE(v.Contains(104));
  EXPECT_FALSE(v.Contains(105));
  EXPECT_FALSE(v.Contains(50));
  EXPECT_EQ(v.ToVector(), (std::vector<uint32_t>{3, 7, 100, 101, 102, 103, 104, 4000000000u}));
  EXPECT_EQ(v.Maximum(), 4000000000u);
  EXPECT_EQ(v.CountBelow(0), 0);
  EXPECT_EQ(v.CountBelow(3), 0);
  EXPECT_EQ(v.CountBelow(4), 1);
  EXPECT_EQ(v.CountBelow(102), 4);
  EXPECT_EQ(v.CountBelow(4000000000u), 7);
  EXPECT_EQ(v.CountBelow(UINT32_MAX), 8);
  v.AddRange(UINT32_MAX - 1, UINT32_MAX);
  EXPECT_TRUE(v.Contains(UINT32_MAX - 1));
  EXPECT_FALSE(v.Contains(UINT32_MAX));
}

TEST(DeletionVectorTest, UnionCopyMoveAndEquals) {
  DeletionVector a = Of({1, 2, 3});
  DeletionVector b = Of({3, 4});
  DeletionVector c = a;  // deep copy
  c.UnionWith(b);
  EXPECT_EQ(c.ToVector(), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(a.ToVector(), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_FALSE(a.Equals(c));
  a.UnionWith(a);
  EXPECT_EQ(a.Cardinality(), 3);
  DeletionVector moved = std::move(c);
  EXPECT_TRUE(moved.Equals(Of({4, 3, 2, 1})));
  EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  c.Add(9);
  EXPECT_EQ(c.Cardinality(), 1);
  a = moved;
  EXPECT_TRUE(a.Equals(moved));
  a = std::move(c);
  EXPECT_TRUE(a.Equals(Of({9})));
}

TEST(DeletionVectorTest, SerializeRoundTrips) {
  DeletionVector v;
  v.AddRange(0, 10000);                                  // a run / bitmap container
  for (uint32_t i = 70000; i < 80000; i += 3) v.Add(i);  // array / bitmap container
  v.Add(1u << 31);
  const std::string bytes = v.Serialize();
  ASSERT_OK_AND_ASSIGN(DeletionVector back, DeletionVector::Deserialize(bytes, "test"));
  EXPECT_TRUE(back.Equals(v));
  ASSERT_OK_AND_ASSIGN(DeletionVector empty,
                       DeletionVector::Deserialize(DeletionVector().Serialize(), "empty"));
  EXPECT_TRUE(empty.empty());
}

TEST(DeletionVectorTest, DeserializeRejectsGarbage) {
  const std::string bytes = Of({1, 5, 9, 100000}).Serialize();
  for (const std::string& bad : {std::string(), std::string("nonsense"),
                                 bytes.substr(0, bytes.size() - 1), bytes + std::string("x")}) {
    Result<DeletionVector> v = DeletionVector::Deserialize(bad, "object k");
    ASSERT_TRUE(v.status().IsCorruption()) << bad.size() << " bytes: " << v.status();
    EXPECT_NE(v.status().message().find("object k"), std::string::npos) << v.status();
  }
}

TEST(DeletionVectorTest, MatchesStdSetUnderRandomOperations) {
  const unsigned long long seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 random(seed);
  DeletionVector v;
  std::set<uint32_t> model;
  // Mostly small offsets so containers fill up and change kind; some far away.
  auto offset = [&]() -> uint32_t {
    return random() % 8 == 0 ? static_cast<uint32_t>(random()) : random() % 200000;
  };
  for (int step = 0; step < 2000; ++step) {
    switch (random() % 4) {
      case 0:
      case 1: {
        const uint32_t x = offset();
        v.Add(x);
        model.insert(x);
        break;
      }
      case 2: {
        const uint32_t begin = offset();
        const uint32_t length = random() % 600;
        const uint32_t end = begin + std::min<uint32_t>(length, UINT32_MAX - begin);
        v.AddRange(begin, end);
        for (uint32_t x = begin; x < end; ++x) model.insert(x);
        break;
      }
      case 3: {
        DeletionVector other;
        std::set<uint32_t> other_model;
        for (int i = 0; i < 20; ++i) {
          const uint32_t x = offset();
          other.Add(x);
          other_model.insert(x);
        }
        v.UnionWith(other);
        model.insert(other_model.begin(), other_model.end());
        break;
      }
    }
    if (step % 250 == 0 || step == 1999) {
      ASSERT_EQ(v.Cardinality(), static_cast<int64_t>(model.size())) << "step " << step;
      const uint32_t probe = offset();
      EXPECT_EQ(v.Contains(probe), model.count(probe) == 1) << probe;
      EXPECT_EQ(v.CountBelow(probe), std::distance(model.begin(), model.lower_bound(probe)))
          << probe;
      ASSERT_EQ(v.ToVector(), std::vector<uint32_t>(model.begin(), model.end()));
      ASSERT_OK_AND_ASSIGN(DeletionVector back, DeletionVector::Deserialize(v.Serialize(), "v"));
      ASSERT_TRUE(back.Equals(v));
    }
  }
}

class DeletionFileTest : public ::testing::Test {
 protected:
  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
};

TEST_F(DeletionFileTest, RoundTrips) {
  DeletionVector deleted = Of({0, 17, 99});
  deleted.AddRange(40, 60);
  ASSERT_OK_AND_ASSIGN(pb::DeletionFile entry,
                       WriteDeletionFile(*store_, kPrefix, 12, 7, 100, deleted));
  EXPECT_EQ(entry.num_deleted(), 23);
  EXPECT_EQ(entry.path().rfind("_deletions/12-7-", 0), 0u) << entry.path();
  ASSERT_OK_AND_ASSIGN(ObjectMeta meta, store_->Head(kPrefix + entry.path()));
  EXPECT_EQ(meta.size, entry.size());
  ASSERT_OK_AND_ASSIGN(DeletionVector back, ReadDeletionFile(*store_, kPrefix, entry, 100));
  EXPECT_TRUE(back.Equals(deleted));
}

TEST_F(DeletionFileTest, RoundTripsOnLocalStore) {
  testing::TempDir dir("deletion-file");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(dir.str()));
  DeletionVector deleted;
  deleted.AddRange(0, 70000);
  ASSERT_OK_AND_ASSIGN(pb::DeletionFile entry,
                       WriteDeletionFile(*store, kPrefix, 1, 1, 70000, deleted));
  ASSERT_OK_AND_ASSIGN(DeletionVector back, ReadDeletionFile(*store, kPrefix, entry, 70000));
  EXPECT_EQ(back.Cardinality(), 70000);
}

TEST_F(DeletionFileTest, WriteRejectsEmptyOrOutOfRangeVectors) {
  EXPECT_TRUE(
      WriteDeletionFile(*store_, kPrefix, 1, 1, 10, DeletionVector()).status().IsInvalidArgument());
  Status st = WriteDeletionFile(*store_, kPrefix, 1, 1, 10, Of({3, 10})).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_NE(st.message().find("10"), std::string::npos) << st;
  ASSERT_OK(WriteDeletionFile(*store_, kPrefix, 1, 1, 11, Of({3, 10})).status());
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store_->List(""));
  EXPECT_EQ(objects.size(), 1u);
}

TEST_F(DeletionFileTest, ReadChecksTheEntry) {
  ASSERT_OK_AND_ASSIGN(pb::DeletionFile entry,
                       WriteDeletionFile(*store_, kPrefix, 3, 9, 50, Of({1, 2, 49})));
  pb::DeletionFile wrong_count = entry;
  wrong_count.set_num_deleted(2);
  Status st = ReadDeletionFile(*store_, kPrefix, wrong_count, 50).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  pb::DeletionFile wrong_size = entry;
  wrong_size.set_size(entry.size() + 1);
  st = ReadDeletionFile(*store_, kPrefix, wrong_size, 50).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  // An offset at or past the fragment's row count.
  st = ReadDeletionFile(*store_, kPrefix, entry, 49).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  EXPECT_NE(st.message().find("49"), std::string::npos) << st;
  pb::DeletionFile missing = entry;
  missing.set_path("_deletions/3-9-0000.bin");
  st = ReadDeletionFile(*store_, kPrefix, missing, 50).status();
  EXPECT_TRUE(st.IsNotFound()) << st;
  EXPECT_NE(st.message().find("_deletions/3-9-0000.bin"), std::string::npos) << st;
}

TEST_F(DeletionFileTest, CorruptBytesAreCorruption) {
  DeletionVector deleted = Of({5, 6, 7, 1000});
  ASSERT_OK_AND_ASSIGN(pb::DeletionFile entry,
                       WriteDeletionFile(*store_, kPrefix, 2, 4, 2000, deleted));
  const std::string key = kPrefix + entry.path();
  ASSERT_OK_AND_ASSIGN(Buffer clean, store_->Get(key));
  const std::string original(clean.view());
  for (size_t offset = 0; offset < original.size(); ++offset) {
    std::string data = original;
    data[offset] = static_cast<char>(data[offset] ^ 0x20);
    ASSERT_OK(store_->Put(key, data));
    Status st = ReadDeletionFile(*store_, kPrefix, entry, 2000).status();
    EXPECT_TRUE(st.IsCorruption() || st.IsNotSupported()) << "offset " << offset << ": " << st;
  }
  // A well-enveloped payload that is not a bitmap.
  const std::string not_a_bitmap = EncodeEnvelope(kDeletionKind, "not a bitmap");
  ASSERT_OK(store_->Put(key, not_a_bitmap));
  pb::DeletionFile resized = entry;
  resized.set_size(static_cast<int64_t>(not_a_bitmap.size()));
  Status st = ReadDeletionFile(*store_, kPrefix, resized, 2000).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  EXPECT_NE(st.message().find(key), std::string::npos) << st;
}

}  // namespace
}  // namespace strata::table::internal
