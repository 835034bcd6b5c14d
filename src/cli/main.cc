// The `strata` command line tool.
#include <CLI/CLI.hpp>

#include "arrow_commands.h"
#include "cli_common.h"
#include "context_commands.h"
#include "datagen_commands.h"
#include "generic_commands.h"
#include "replicate_commands.h"
#include "rollout_commands.h"
#include "serve_command.h"
#include "sql_commands.h"
#include "table_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"strata: storage engine for agent memory, rollouts and event logs"};
  app.set_version_flag("--version", std::string("strata ") + STRATA_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  strata::cli::AddArrowCommands(app, &exit_code);
  strata::cli::AddTableCommands(app, &exit_code);
  strata::cli::AddRolloutCommands(app, &exit_code);
  strata::cli::AddGenericCommands(app, &exit_code);
  strata::cli::AddDatagenCommands(app, &exit_code);
  strata::cli::AddContextCommands(app, &exit_code);
  strata::cli::AddReplicateCommands(app, &exit_code);
  strata::cli::AddSqlCommands(app, &exit_code);
  strata::cli::AddServeCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; usage errors exit 2, as is customary for CLIs.
    return strata::cli::FinishOutput(app.exit(e) == 0 ? 0 : 2);
  }
  // Every command's output is checked here: a command whose output was lost fails.
  return strata::cli::FinishOutput(exit_code);
}
