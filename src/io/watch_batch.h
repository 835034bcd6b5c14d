// Polls of several change watches that answer as of one moment (see ChangeWatchBatch).
#pragma once

#include <cstdint>

namespace strata::io {

// While one lives on a thread, that thread's polls of a local store's ChangeWatch may answer
// as of the moment it was made rather than the moment each poll begins: a change that
// completed before the batch was made has moved the count, a later one may not have yet
// (another thread's poll may still bring it in). A reader that checks several prefixes for
// one view of a store drains the inotify queue once instead of once per prefix.
//
// Only for code that rechecks afterwards, outside any batch, whatever must be current: a
// poll inside a batch cannot tell that something changed since the batch began. Nested
// batches keep the outermost one's moment. Not movable; confined to its thread.
class ChangeWatchBatch {
 public:
  ChangeWatchBatch();
  ~ChangeWatchBatch();
  ChangeWatchBatch(const ChangeWatchBatch&) = delete;
  ChangeWatchBatch& operator=(const ChangeWatchBatch&) = delete;

  // The calling thread's batch, unique in the process, or 0 when the thread has none (and
  // every poll must look afresh).
  static uint64_t Current();

 private:
  bool outermost_;
};

}  // namespace strata::io
