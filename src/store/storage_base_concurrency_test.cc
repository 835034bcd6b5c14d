// StorageBase under concurrent use (meant for the TSan build): puts from several threads,
// reads, flushes and merges with immediate background deletion all at once.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "store/store_test_util.h"
#include "strata/builder.h"
#include "strata/storage_base.h"

namespace strata::store {
namespace {

class StorageBaseConcurrencyTest : public testing::StoreFixture {
 protected:
  static SchemaPtr ItemSchema() {
    return std::make_shared<Schema>(
        std::vector<FieldPtr>{field("id", utf8(), false), field("n", int64(), true)});
  }

  static RecordBatch Item(const std::string& id, int64_t n) {
    auto builder = RecordBatchBuilder::Make(ItemSchema());
    EXPECT_TRUE(builder.ok());
    EXPECT_TRUE((*builder)->GetAs<BinaryBuilder>(0)->Append(id).ok());
    (*builder)->GetAs<Int64Builder>(1)->Append(n);
    auto batch = (*builder)->Finish();
    EXPECT_TRUE(batch.ok()) << batch.status();
    return *batch;
  }
};

TEST_F(StorageBaseConcurrencyTest, PutsReadsFlushesAndMergesRunTogether) {
  StorageBaseOptions options;
  options.schema = ItemSchema();
  options.key_column = "id";
  options.shard_id = "items";
  options.read_own_writes = true;
  options.max_memtable_rows = 8;
  options.merge_after_generations = 1;
  options.generation_delete_delay_seconds = 0;
  auto opened = StorageBase::Open(store_, prefix_, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<StorageBase> base = std::move(*opened);

  constexpr int kWriters = 2;
  constexpr int kPuts = 30;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> failures{0};
  std::atomic<int> reads{0};
  std::atomic<int> reclaimed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPuts; ++i) {
        Status st = base->Put({Item("w" + std::to_string(w) + "-" + std::to_string(i), i)});
        if (!st.ok()) {
          ADD_FAILURE() << "put: " << st;
          failures.fetch_add(1);
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  threads.emplace_back([&] {  // reader: the distinct-key count never goes down
    int64_t last = 0;
    while (writers_left.load() > 0) {
      Result<int64_t> n = base->Count();
      if (!n.ok()) {
        if (!n.status().IsBusy()) ADD_FAILURE() << "count: " << n.status();
        continue;
      }
      EXPECT_GE(*n, last);
      last = *n;
      reads.fetch_add(1);
    }
  });
  threads.emplace_back([&] {  // flusher + merger
    while (writers_left.load() > 0) {
      Result<FlushOutcome> flushed = base->Flush();
      if (!flushed.ok()) ADD_FAILURE() << "flush: " << flushed.status();
      Result<MergeReport> merged = base->MaybeMerge();
      if (merged.ok()) reclaimed.fetch_add(merged->generations_reclaimed);
      if (!merged.ok() && !merged.status().IsBusy()) ADD_FAILURE() << "merge: " << merged.status();
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_GT(reclaimed.load(), 0);  // merges (and background deletions) ran meanwhile
  ASSERT_TRUE(base->Flush().ok());
  Result<int64_t> total = base->Count();
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(*total, kWriters * kPuts);
  ASSERT_TRUE(base->Close().ok());
}

}  // namespace
}  // namespace strata::store
