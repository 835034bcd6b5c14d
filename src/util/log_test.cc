// Log lines go to stderr and honour the level, never to stdout, where a command's output is.
#include "util/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

using ::testing::HasSubstr;

TEST(LogTest, WarningsGoToStderrNotStdout) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  LogWarning("pending generations near the cap: {}", 42);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "");
  EXPECT_THAT(err, HasSubstr("pending generations near the cap: 42"));
}

TEST(LogTest, LinesBelowTheLevelAreDropped) {
  SetLogLevel(LogLevel::kError);
  ::testing::internal::CaptureStderr();
  LogWarning("dropped");
  LogError("kept");
  const std::string err = ::testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kInfo);
  EXPECT_THAT(err, ::testing::Not(HasSubstr("dropped")));
  EXPECT_THAT(err, HasSubstr("kept"));
}

}  // namespace
}  // namespace strata
