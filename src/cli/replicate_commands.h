// `strata replicate ...`: mark a store as the base of a replication chain, export its changes
// as bundles into a directory, apply them to a replica, follow continuously, and inspect,
// verify, trim, unmark or promote (include/strata/replication.h).
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `replicate` command group on `app`; the chosen command's exit status is stored
// in *exit_code when it runs.
void AddReplicateCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
