// BatchStream: batches arrive in order with the scan's end status, restarts pass through, the
// queue bounds how far the scan runs ahead, and dropping the stream stops an endless scan.
#include "sql/batch_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "strata/builder.h"
#include "strata/record_batch.h"

namespace strata::sql {
namespace {

RecordBatch Numbers(int64_t first, int64_t count) {
  NumericBuilder<int64_t> builder(int64());
  for (int64_t i = 0; i < count; ++i) builder.Append(first + i);
  Result<Array> array = builder.Finish();
  EXPECT_TRUE(array.ok()) << array.status();
  Result<RecordBatch> batch = RecordBatch::Make(schema({field("n", int64())}), count, {*array});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

int64_t First(const RecordBatch& batch) { return batch.column(0).Value<int64_t>(0); }

TEST(BatchStreamTest, DeliversBatchesRestartsAndTheEndInOrder) {
  BatchStream stream([](const BatchStream::Consume& consume, const BatchStream::Restart& restart) {
    STRATA_RETURN_IF_ERROR(consume(Numbers(0, 2)));
    STRATA_RETURN_IF_ERROR(restart());
    STRATA_RETURN_IF_ERROR(consume(Numbers(0, 2)));
    STRATA_RETURN_IF_ERROR(consume(Numbers(2, 1)));
    return Status::Corruption("bad block");
  });
  using Kind = BatchStream::Item::Kind;
  BatchStream::Item item = stream.Next();
  ASSERT_EQ(item.kind, Kind::kBatch);
  EXPECT_EQ(First(item.batch), 0);
  EXPECT_EQ(stream.Next().kind, Kind::kRestart);
  EXPECT_EQ(First(stream.Next().batch), 0);
  item = stream.Next();
  ASSERT_EQ(item.kind, Kind::kBatch);
  EXPECT_EQ(First(item.batch), 2);
  item = stream.Next();
  EXPECT_EQ(item.kind, Kind::kEnd);
  EXPECT_EQ(item.status, Status::Corruption("bad block"));
  // And again after the end.
  item = stream.Next();
  EXPECT_EQ(item.kind, Kind::kEnd);
  EXPECT_EQ(item.status, Status::Corruption("bad block"));
}

TEST(BatchStreamTest, TheScanRunsAtMostTheQueueAheadAndStopsWhenDropped) {
  std::atomic<int64_t> produced{0};
  Status ended;
  std::atomic<bool> finished{false};
  {
    BatchStream stream([&](const BatchStream::Consume& consume, const BatchStream::Restart&) {
      // Endless: only the consumer going away stops it.
      for (int64_t i = 0;; ++i) {
        Status status = consume(Numbers(i, 1));
        produced.fetch_add(1);
        if (!status.ok()) {
          ended = status;
          finished.store(true);
          return status;
        }
      }
    });
    for (int64_t i = 0; i < 5; ++i) {
      BatchStream::Item item = stream.Next();
      ASSERT_EQ(item.kind, BatchStream::Item::Kind::kBatch);
      EXPECT_EQ(First(item.batch), i);
      // Consumed i + 1; the scan may hold the queue full plus one batch it is handing over.
      EXPECT_LE(produced.load(), i + 1 + static_cast<int64_t>(BatchStream::kQueueBatches) + 1);
    }
  }
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(ended.code(), StatusCode::kAborted);
  EXPECT_LE(produced.load(), 5 + static_cast<int64_t>(BatchStream::kQueueBatches) + 1);
}

TEST(BatchStreamTest, DroppingAnUnreadStreamStopsAWaitingScan) {
  std::atomic<int> calls{0};
  {
    BatchStream stream([&](const BatchStream::Consume& consume, const BatchStream::Restart&) {
      while (true) {
        calls.fetch_add(1);
        STRATA_RETURN_IF_ERROR(consume(Numbers(0, 1)));
      }
    });
  }
  EXPECT_LE(calls.load(), static_cast<int>(BatchStream::kQueueBatches) + 1);
}

}  // namespace
}  // namespace strata::sql
