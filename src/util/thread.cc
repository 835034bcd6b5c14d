// Thread scheduling settings (see thread.h).
#include "util/thread.h"

#include <pthread.h>
#include <sched.h>

namespace strata {

bool RunThreadAtIdlePriority() {
  sched_param param{};
  param.sched_priority = 0;
  return pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0;
}

bool ThreadRunsAtIdlePriority() {
  int policy = 0;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) != 0) return false;
  return policy == SCHED_IDLE;
}

}  // namespace strata
