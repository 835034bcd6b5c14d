// BatchStream: turns a callback-driven scan (StorageBase::ScanEach pushes batches) into the
// pull-driven iteration SQLite's xNext needs, by running the scan on a thread of its own and
// handing its batches over through a queue of kQueueBatches.
//
// Invariants: at most kQueueBatches batches wait in the queue, so the memory held is that
// plus the batch the scan is producing and the one the consumer reads. One producer (the scan
// thread) and one consumer (the caller of Next) use the queue; two semaphores count its free
// and filled slots, so a slot is written by the producer only after it was released by the
// consumer and read by the consumer only after the producer released it (the semaphores'
// release/acquire order the slot accesses; no lock is needed). The destructor stops the scan
// at its next batch (the callback returns Aborted) and joins the thread; a scan that is busy
// reading or filtering returns at its next delivery or when it ends.
//
// Why semaphores and not util/mutex.h: this layer sees only the public API (include/strata),
// and a single-producer single-consumer handoff needs nothing more.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <semaphore>
#include <thread>

#include "strata/record_batch.h"
#include "strata/status.h"

namespace strata::sql {

class BatchStream {
 public:
  static constexpr size_t kQueueBatches = 2;

  // What the scan handed over.
  struct Item {
    enum class Kind {
      kBatch,    // `batch`: the next batch
      kRestart,  // the scan starts over: every batch comes again from the first
      kEnd,      // the scan ended with `status` (OK at the end of its rows)
    };
    Kind kind = Kind::kEnd;
    RecordBatch batch;
    Status status;
  };

  using Consume = std::function<Status(RecordBatch)>;
  using Restart = std::function<Status()>;
  // The scan: calls `consume` per batch and `restart` before delivering again, returns how it
  // ended. Any error of either callback must stop it and be returned (ScanEach does).
  using Scan = std::function<Status(const Consume& consume, const Restart& restart)>;

  // Starts `scan` on a new thread.
  explicit BatchStream(Scan scan);
  // Stops the scan and waits for its thread (see the top of the file).
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  // The next item, waiting for the scan as needed; after kEnd, kEnd again with the same status.
  Item Next();

 private:
  // Producer side: waits for a free slot and fills it; false once the consumer stopped.
  bool Put(Item item);
  void Run(const Scan& scan);

  std::array<Item, kQueueBatches> slots_;
  // Free slots; the destructor adds kQueueBatches + 1 more so that a waiting producer wakes.
  std::counting_semaphore<2 * kQueueBatches + 2> free_{kQueueBatches};
  std::counting_semaphore<kQueueBatches> filled_{0};
  std::atomic<bool> stopped_{false};
  size_t put_index_ = 0;   // producer only
  size_t next_index_ = 0;  // consumer only
  bool ended_ = false;     // consumer only
  Status end_status_;      // consumer only
  std::thread thread_;
};

}  // namespace strata::sql
