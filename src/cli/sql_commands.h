// `strata sql DIR "SELECT ..."`: one read-only SQL statement over a store of any kind in a
// local directory (include/strata/sql.h, docs/sql.md).
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

// Registers the `sql` command on `app`; its exit status is stored in *exit_code when it runs.
void AddSqlCommands(CLI::App& app, int* exit_code);

}  // namespace strata::cli
