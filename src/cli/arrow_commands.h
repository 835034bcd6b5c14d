// `strata arrow ...`: cat, from-json and inspect for Arrow IPC files and streams.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `arrow` command group on `app`; the chosen command's exit status is stored in
// *exit_code when it runs.
void AddArrowCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
