// Thread settings for background work that should only use CPU nothing else wants.
#pragma once

namespace strata {

// Moves the calling thread to the idle scheduling class (Linux SCHED_IDLE): it runs only
// when no ordinary thread wants the CPU, so background work such as recoding generations
// never slows the puts and reads beside it. Threads it starts afterwards inherit the class.
// Returns false (the thread keeps its class) where the system refuses.
bool RunThreadAtIdlePriority();

// Whether the calling thread runs in the idle scheduling class.
bool ThreadRunsAtIdlePriority();

}  // namespace strata
