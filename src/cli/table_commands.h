// `strata table ...`: create, load, query, change and maintain a versioned table in a local
// directory.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `table` command group on `app`; the chosen command's exit status is stored in
// *exit_code when it runs.
void AddTableCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
