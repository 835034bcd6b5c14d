#include "strata/status.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive: " + std::to_string(v));
  return v;
}

Result<int> Twice(int v) {
  STRATA_ASSIGN_OR_RETURN(int x, ParsePositive(v));
  return 2 * x;
}

Status Check(int v) {
  STRATA_RETURN_IF_ERROR(ParsePositive(v).status());
  return Status::OK();
}

TEST(StatusTest, OkIsDefaultAndHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(s.message().empty());
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = Status::Corruption("bad footer in x.arrow");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.ToString(), "Corruption: bad footer in x.arrow");
  Status copy = s;
  EXPECT_EQ(copy, s);
  EXPECT_EQ(s.WithContext("reading t").message(), "reading t: bad footer in x.arrow");
}

TEST(StatusTest, OnlyBusyAndUnavailableAreRetryable) {
  EXPECT_TRUE(Status::Busy("x").IsRetryable());
  EXPECT_TRUE(Status::Unavailable("x").IsRetryable());
  EXPECT_FALSE(Status::Fenced("x").IsRetryable());
  EXPECT_FALSE(Status::IOError("x").IsRetryable());
}

TEST(StatusTest, MacrosPropagateErrors) {
  EXPECT_EQ(*Twice(4), 8);
  Result<int> r = Twice(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "not positive: -1");
  EXPECT_TRUE(Check(1).ok());
  EXPECT_TRUE(Check(0).IsInvalidArgument());
}

TEST(StatusTest, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    EXPECT_NE(StatusCodeName(static_cast<StatusCode>(c)), "Unknown");
  }
}

}  // namespace
}  // namespace strata
