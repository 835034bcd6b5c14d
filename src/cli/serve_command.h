// `strata serve`: runs the HTTP server (include/strata/server.h) until SIGTERM or SIGINT, then
// drains and exits 0.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

void AddServeCommand(CLI::App& app, int* exit_code);

}  // namespace strata::cli
