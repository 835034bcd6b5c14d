// strata's log lines through spdlog (see log.h).
#include "util/log.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
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

// Applies STRATA_LOG_LEVEL once, before the first line.
bool InitFromEnvironment() {
  const char* env = std::getenv("STRATA_LOG_LEVEL");
  if (env != nullptr) {
    spdlog::set_level(spdlog::level::from_str(env));
  }
  return true;
}

}  // namespace

void Log(LogLevel level, std::string_view message) {
  static const bool initialized = InitFromEnvironment();
  (void)initialized;
  spdlog::log(ToSpd(level), "{}", message);
}

void SetLogLevel(LogLevel level) { spdlog::set_level(ToSpd(level)); }

}  // namespace strata
