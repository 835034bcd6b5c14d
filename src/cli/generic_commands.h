// `strata generic ...`: create, fill, read and maintain a generic store
// (include/strata/generic_store.h) in a local directory.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `generic` command group on `app`; the chosen command's exit status is stored
// in *exit_code when it runs.
void AddGenericCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
