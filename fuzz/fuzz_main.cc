// libFuzzer entry point for the target named by STRATA_FUZZ_TARGET (set per binary by CMake).
#include <cstdio>
#include <cstdlib>

#include "fuzz_targets.h"

namespace {

strata::fuzz::FuzzFunction Target() {
  static const strata::fuzz::FuzzFunction run = [] {
    const strata::fuzz::FuzzTarget* target = strata::fuzz::FindFuzzTarget(STRATA_FUZZ_TARGET);
    if (target == nullptr) {
      std::fprintf(stderr, "no fuzz target named %s\n", STRATA_FUZZ_TARGET);
      std::abort();
    }
    return target->run;
  }();
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Target()({data, size}).IgnoreError();
  return 0;
}
