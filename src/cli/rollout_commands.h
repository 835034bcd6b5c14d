// `strata rollout ...`: add, read and maintain a reinforcement-learning rollout store
// (include/strata/rollout_store.h) in a local directory.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `rollout` command group on `app`; the chosen command's exit status is stored
// in *exit_code when it runs.
void AddRolloutCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
