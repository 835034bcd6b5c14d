// Diagnostics for conditions an operator should see but that are not errors of the call
// at hand (a read close to the pending-generation cap, a seal that failed while a handle
// was being destroyed). Lines go to stderr (never stdout, which holds a command's output)
// through a spdlog logger of strata's own.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace strata {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void Log(LogLevel level, std::string_view message);
// Messages below this level are dropped (default kInfo; STRATA_LOG_LEVEL=debug|info|warning|
// error|off overrides it at startup).
void SetLogLevel(LogLevel level);

template <typename... Args>
void LogWarning(fmt::format_string<Args...> format, Args&&... args) {
  Log(LogLevel::kWarning, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void LogError(fmt::format_string<Args...> format, Args&&... args) {
  Log(LogLevel::kError, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void LogInfo(fmt::format_string<Args...> format, Args&&... args) {
  Log(LogLevel::kInfo, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace strata
