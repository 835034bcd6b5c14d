// `strata context ...`: create, write, read and search a context store
// (include/strata/context_store.h) in a local directory.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `context` command group on `app`; the chosen command's exit status is stored
// in *exit_code when it runs.
void AddContextCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
