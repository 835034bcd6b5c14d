// `strata datagen ...`: append, fold and inspect a data-generation event log
// (include/strata/datagen_store.h) in a local directory.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `datagen` command group on `app`; the chosen command's exit status is stored
// in *exit_code when it runs.
void AddDatagenCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
