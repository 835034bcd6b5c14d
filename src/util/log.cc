// strata's log lines through spdlog (see log.h).
#include "util/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace strata {
namespace {

spdlog::level::level_enum ToSpd(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarning:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// strata's own logger, writing to stderr: spdlog's default logger writes to stdout, where
// a warning would end up inside a command's output (rows, JSON). Not registered with
// spdlog, so it never clashes with an embedding program's loggers. STRATA_LOG_LEVEL
// applies once, before the first line.
spdlog::logger& Logger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto made = std::make_shared<spdlog::logger>("strata",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_level(spdlog::level::info);
    if (const char* env = std::getenv("STRATA_LOG_LEVEL"); env != nullptr) {
      made->set_level(spdlog::level::from_str(env));
    }
    return made;
  }();
  return *logger;
}

}  // namespace

void Log(LogLevel level, std::string_view message) { Logger().log(ToSpd(level), "{}", message); }

void SetLogLevel(LogLevel level) { Logger().set_level(ToSpd(level)); }

}  // namespace strata
