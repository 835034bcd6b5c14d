// The `strata` command line tool.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"strata: storage engine for agent memory, rollouts and event logs"};
  app.set_version_flag("--version", std::string("strata ") + STRATA_VERSION);
  app.require_subcommand(0, 1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
