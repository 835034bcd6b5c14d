// The table of fuzz targets (see fuzz_targets.h); a new target gets a row here.
#include "fuzz_targets.h"

#include <array>

namespace strata::fuzz {
namespace {

constexpr std::array kTargets = {
    FuzzTarget{"ipc_stream_fuzz", FuzzIpcStream},   FuzzTarget{"ipc_file_fuzz", FuzzIpcFile},
    FuzzTarget{"expr_parse_fuzz", FuzzExprParse},   FuzzTarget{"bundle_fuzz", FuzzBundle},
    FuzzTarget{"server_body_fuzz", FuzzServerBody},
};

}  // namespace

std::span<const FuzzTarget> FuzzTargets() { return kTargets; }

const FuzzTarget* FindFuzzTarget(std::string_view name) {
  for (const FuzzTarget& target : kTargets) {
    if (target.name == name) return &target;
  }
  return nullptr;
}

}  // namespace strata::fuzz
