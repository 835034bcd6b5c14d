// Tests for the idle scheduling class of background threads.
#include "util/thread.h"

#include <gtest/gtest.h>

#include <thread>

namespace strata {
namespace {

TEST(ThreadPriorityTest, AThreadMovedToIdleStaysThereAndItsChildrenInheritIt) {
  const bool parent_idle = ThreadRunsAtIdlePriority();  // a runner may itself run idle
  bool moved = false;
  bool idle = false;
  bool child_idle = false;
  std::thread worker([&] {
    moved = RunThreadAtIdlePriority();
    idle = ThreadRunsAtIdlePriority();
    std::thread child([&] { child_idle = ThreadRunsAtIdlePriority(); });
    child.join();
  });
  worker.join();
  ASSERT_TRUE(moved) << "SCHED_IDLE needs no privilege on Linux";
  EXPECT_TRUE(idle);
  EXPECT_TRUE(child_idle);
  // The thread that started the worker keeps its own class.
  EXPECT_EQ(ThreadRunsAtIdlePriority(), parent_idle);
}

}  // namespace
}  // namespace strata
