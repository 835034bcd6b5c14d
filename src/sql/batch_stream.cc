// BatchStream: a scan on its own thread, handed over batch by batch (batch_stream.h).
#include "sql/batch_stream.h"

#include <utility>

namespace strata::sql {

BatchStream::BatchStream(Scan scan) {
  thread_ = std::thread([this, scan = std::move(scan)] { Run(scan); });
}

BatchStream::~BatchStream() {
  stopped_.store(true, std::memory_order_release);
  // Enough permits for every acquire the producer may still make before it sees `stopped_`.
  free_.release(kQueueBatches + 1);
  thread_.join();
}

bool BatchStream::Put(Item item) {
  free_.acquire();
  if (stopped_.load(std::memory_order_acquire)) return false;
  slots_[put_index_ % kQueueBatches] = std::move(item);
  ++put_index_;
  filled_.release();
  return true;
}

void BatchStream::Run(const Scan& scan) {
  auto stopped = [] { return Status::Aborted("the SQL statement stopped reading"); };
  Status status = scan(
      [&](RecordBatch batch) -> Status {
        if (!Put(Item{.kind = Item::Kind::kBatch, .batch = std::move(batch)})) return stopped();
        return Status::OK();
      },
      [&]() -> Status {
        if (!Put(Item{.kind = Item::Kind::kRestart})) return stopped();
        return Status::OK();
      });
  if (stopped_.load(std::memory_order_acquire)) return;
  // The consumer waits for this one (or stops, which releases the slot it needs).
  Put(Item{.kind = Item::Kind::kEnd, .status = std::move(status)});
}

BatchStream::Item BatchStream::Next() {
  if (ended_) return Item{.kind = Item::Kind::kEnd, .status = end_status_};
  filled_.acquire();
  Item item = std::move(slots_[next_index_ % kQueueBatches]);
  ++next_index_;
  free_.release();
  if (item.kind == Item::Kind::kEnd) {
    ended_ = true;
    end_status_ = item.status;
  }
  return item;
}

}  // namespace strata::sql
