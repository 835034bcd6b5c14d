// Tests for Base64 and RFC 3339 timestamp codecs: RFC vectors, strictness, and round trips.
#include "util/text_codec.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "support/temp_dir.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// Matches an ok Result holding `expected`; on mismatch prints the status or the value.
MATCHER_P(IsOkAndHolds, expected, "") {
  if (!arg.ok()) {
    *result_listener << "error " << arg.status();
    return false;
  }
  *result_listener << "value " << ::testing::PrintToString(*arg);
  return *arg == expected;
}

TEST(Base64Test, EncodesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, DecodesRfc4648Vectors) {
  EXPECT_THAT(Base64Decode(""), IsOkAndHolds(""));
  EXPECT_THAT(Base64Decode("Zg=="), IsOkAndHolds("f"));
  EXPECT_THAT(Base64Decode("Zm8="), IsOkAndHolds("fo"));
  EXPECT_THAT(Base64Decode("Zm9v"), IsOkAndHolds("foo"));
  EXPECT_THAT(Base64Decode("Zm9vYg=="), IsOkAndHolds("foob"));
  EXPECT_THAT(Base64Decode("Zm9vYmE="), IsOkAndHolds("fooba"));
  EXPECT_THAT(Base64Decode("Zm9vYmFy"), IsOkAndHolds("foobar"));
}

TEST(Base64Test, UsesStandardAlphabetForHighBytes) {
  const std::string bytes = {'\xfb', '\xff', '\xbf'};
  EXPECT_EQ(Base64Encode(bytes), "+/+/");
  EXPECT_THAT(Base64Decode("+/+/"), IsOkAndHolds(bytes));
}

TEST(Base64Test, RoundTripsRandomBytesOfEveryLength) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (size_t length = 0; length < 300; ++length) {
    std::string bytes(length, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string encoded = Base64Encode(bytes);
    EXPECT_EQ(encoded.size(), (length + 2) / 3 * 4);
    Result<std::string> decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, bytes) << "length " << length;
  }
}

TEST(Base64Test, RejectsLengthNotMultipleOfFour) {
  Result<std::string> r = Base64Decode("Zm9");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_THAT(r.status().message(), HasSubstr("length 3"));
}

TEST(Base64Test, RejectsInvalidCharacterNamingPosition) {
  Result<std::string> r = Base64Decode("Zm9v#mFy");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_THAT(r.status().message(), HasSubstr("'#'"));
  EXPECT_THAT(r.status().message(), HasSubstr("position 4"));

  EXPECT_THAT(Base64Decode("Zm9\nYmFy").status().message(), HasSubstr("byte 0x0a at position 3"));
  EXPECT_FALSE(Base64Decode("Zm-_").ok());  // URL-safe alphabet is not accepted.
}

TEST(Base64Test, RejectsPaddingBeforeTheEnd) {
  EXPECT_THAT(Base64Decode("Zg==Zm9v").status().message(), HasSubstr("position 2"));
  EXPECT_THAT(Base64Decode("Z===").status().message(), HasSubstr("position 1"));
  EXPECT_THAT(Base64Decode("====").status().message(), HasSubstr("position 0"));
}

TEST(Base64Test, RejectsNonCanonicalPaddingBits) {
  // "Zg==" is the canonical encoding of "f"; "Zh==" differs only in the unused low bits.
  Result<std::string> r = Base64Decode("Zh==");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("position 1"));
  EXPECT_FALSE(Base64Decode("Zm9=").ok());
  EXPECT_TRUE(Base64Decode("Zm8=").ok());
}

TEST(TimestampTest, FormatsKnownInstants) {
  EXPECT_EQ(FormatTimestampMicros(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestampMicros(1714566896123456), "2024-05-01T12:34:56.123456Z");
  EXPECT_EQ(FormatTimestampMicros(951782400000000), "2000-02-29T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestampMicros(253402300799999999), "9999-12-31T23:59:59.999999Z");
}

TEST(TimestampTest, FormatsPre1970WithFloorSemantics) {
  EXPECT_EQ(FormatTimestampMicros(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatTimestampMicros(-1000000), "1969-12-31T23:59:59.000000Z");
  EXPECT_EQ(FormatTimestampMicros(-14182940000000), "1969-07-20T20:17:40.000000Z");
  EXPECT_EQ(FormatTimestampMicros(-2203891200000000), "1900-03-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestampMicros(-62135596800000000), "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestampMicros(-62167219200000000), "0000-01-01T00:00:00.000000Z");
}

TEST(TimestampTest, FormatsYearsOutsideRfc3339WithExpandedForm) {
  EXPECT_EQ(FormatTimestampMicros(-62167219200000000 - 1), "-0001-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatTimestampMicros(253402300800000000), "+10000-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestampMicros(std::numeric_limits<int64_t>::max()),
            "+294247-01-10T04:00:54.775807Z");
  EXPECT_EQ(FormatTimestampMicros(std::numeric_limits<int64_t>::min()),
            "-290308-12-21T19:59:05.224192Z");
}

TEST(TimestampTest, ParsesKnownInstants) {
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T12:34:56.123456Z"), IsOkAndHolds(1714566896123456));
  EXPECT_THAT(ParseTimestampMicros("1970-01-01T00:00:00Z"), IsOkAndHolds(0));
  EXPECT_THAT(ParseTimestampMicros("1969-12-31T23:59:59.999999Z"), IsOkAndHolds(-1));
  EXPECT_THAT(ParseTimestampMicros("0001-01-01T00:00:00Z"), IsOkAndHolds(-62135596800000000));
  EXPECT_THAT(ParseTimestampMicros("+294247-01-10T04:00:54.775807Z"),
              IsOkAndHolds(std::numeric_limits<int64_t>::max()));
  EXPECT_THAT(ParseTimestampMicros("-290308-12-21T19:59:05.224192Z"),
              IsOkAndHolds(std::numeric_limits<int64_t>::min()));
}

TEST(TimestampTest, ParsesBareDateAsMidnightUtc) {
  EXPECT_THAT(ParseTimestampMicros("2024-05-01"), IsOkAndHolds(1714521600000000));
  EXPECT_THAT(ParseTimestampMicros("1969-12-31"), IsOkAndHolds(-86400000000));
}

TEST(TimestampTest, AcceptsSpaceAndLowerCaseSeparators) {
  const int64_t expected = 1714566896000000;
  EXPECT_THAT(ParseTimestampMicros("2024-05-01 12:34:56Z"), IsOkAndHolds(expected));
  EXPECT_THAT(ParseTimestampMicros("2024-05-01t12:34:56z"), IsOkAndHolds(expected));
}

TEST(TimestampTest, ScalesShortFractionsAndTruncatesLongOnes) {
  const int64_t second = 1714566896000000;
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T12:34:56.1Z"), IsOkAndHolds(second + 100000));
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T12:34:56.000001Z"), IsOkAndHolds(second + 1));
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T12:34:56.1234567Z"), IsOkAndHolds(second + 123456));
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T12:34:56.999999999Z"),
              IsOkAndHolds(second + 999999));
  EXPECT_THAT(ParseTimestampMicros("1969-12-31T23:59:59.9999999Z"), IsOkAndHolds(-1));
}

TEST(TimestampTest, AppliesPositiveAndNegativeOffsets) {
  const int64_t expected = 1714566896123456;  // 12:34:56.123456 UTC
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T14:34:56.123456+02:00"), IsOkAndHolds(expected));
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T07:04:56.123456-05:30"), IsOkAndHolds(expected));
  EXPECT_THAT(ParseTimestampMicros("2024-05-01T12:34:56.123456+00:00"), IsOkAndHolds(expected));
  EXPECT_THAT(ParseTimestampMicros("2024-05-02T00:34:56.123456+12:00"), IsOkAndHolds(expected));
}

TEST(TimestampTest, AcceptsLeapDaysOnlyInLeapYears) {
  EXPECT_TRUE(ParseTimestampMicros("2000-02-29").ok());
  EXPECT_TRUE(ParseTimestampMicros("2024-02-29").ok());
  EXPECT_FALSE(ParseTimestampMicros("2023-02-29").ok());
  EXPECT_FALSE(ParseTimestampMicros("1900-02-29").ok());
  EXPECT_FALSE(ParseTimestampMicros("2024-02-30").ok());
}

TEST(TimestampTest, RejectsOutOfRangeFieldsNamingThem) {
  struct Case {
    const char* text;
    const char* message_part;
  };
  const Case cases[] = {
      {"2024-13-01", "month 13"},
      {"2024-00-01", "month 0"},
      {"2024-04-31", "day 31"},
      {"2024-05-00", "day 0"},
      {"2024-05-01T24:00:00Z", "hour 24"},
      {"2024-05-01T12:60:00Z", "minute 60"},
      {"2024-05-01T12:00:61Z", "second 61"},
      {"2024-05-01T12:00:60Z", "leap second"},
      {"2024-05-01T12:00:00+24:00", "offset hour 24"},
      {"2024-05-01T12:00:00+05:60", "offset minute 60"},
  };
  for (const Case& c : cases) {
    Result<int64_t> r = ParseTimestampMicros(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message_part)) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.text));
  }
}

TEST(TimestampTest, RejectsMalformedSyntax) {
  const char* const cases[] = {
      "",
      "2024",
      "2024-5-01",
      "2024-05-1",
      "24-05-01",
      "2024/05/01",
      "2024-05-01T",
      "2024-05-01T12:34Z",
      "2024-05-01T12:34:56",              // missing zone
      "2024-05-01T12:34:56.Z",            // empty fraction
      "2024-05-01T12:34:56.1234567890Z",  // 10 fraction digits
      "2024-05-01T12:34:56ZZ",
      "2024-05-01T12:34:56+0200",
      "2024-05-01T12:34:56+02",
      "2024-05-01X12:34:56Z",
      " 2024-05-01",
      "2024-05-01 ",
      "+123-01-01",  // signed years need 4..6 digits
      "+1234567-01-01",
  };
  for (const char* text : cases) {
    Result<int64_t> r = ParseTimestampMicros(text);
    EXPECT_FALSE(r.ok()) << "accepted \"" << text << "\"";
    EXPECT_TRUE(r.status().IsInvalidArgument()) << text;
  }
  EXPECT_THAT(ParseTimestampMicros("2024-05-01X12:34:56Z").status().message(),
              HasSubstr("position 10, found 'X'"));
}

TEST(TimestampTest, RejectsInstantsBeyondInt64) {
  Result<int64_t> r = ParseTimestampMicros("+294247-01-10T04:00:54.775808Z");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("does not fit"));
  EXPECT_FALSE(ParseTimestampMicros("-290308-12-21T19:59:05.224191Z").ok());
  EXPECT_FALSE(ParseTimestampMicros("+999999-01-01").ok());
}

TEST(TimestampTest, QuotesLongInputTruncated) {
  const std::string text = "2024-05-01T12:34:56Z" + std::string(200, 'x');
  Result<int64_t> r = ParseTimestampMicros(text);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 200u);
  EXPECT_THAT(r.status().message(), HasSubstr("..."));
}

TEST(TimestampTest, RoundTripsRandomInstantsOverWholeInt64Range) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    const auto micros = static_cast<int64_t>(rng());
    const std::string text = FormatTimestampMicros(micros);
    Result<int64_t> parsed = ParseTimestampMicros(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(*parsed, micros) << text;
  }
}

TEST(TimestampTest, RoundTripsRandomInstantsWrittenWithOffsets) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> instants(-62135596800000000 + 86400000000LL,
                                                  253402300799999999 - 86400000000LL);
  std::uniform_int_distribution<int> offset_minutes(-(23 * 60 + 59), 23 * 60 + 59);
  for (int i = 0; i < 5000; ++i) {
    const int64_t utc = instants(rng);
    const int offset = offset_minutes(rng);
    std::string local = FormatTimestampMicros(utc + int64_t{offset} * 60'000'000);
    local.pop_back();  // 'Z'
    const int magnitude = offset < 0 ? -offset : offset;
    local += offset < 0 ? '-' : '+';
    local += std::to_string(magnitude / 60 / 10) + std::to_string(magnitude / 60 % 10) + ':' +
             std::to_string(magnitude % 60 / 10) + std::to_string(magnitude % 60 % 10);
    Result<int64_t> parsed = ParseTimestampMicros(local);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(*parsed, utc) << local;
  }
}

// Oracle: walk the calendar one day at a time with the textbook month-length rules, from
// 1599-01-01 to 2401-12-31 (every century rule appears), and compare both directions.
TEST(TimestampTest, MatchesDayByDayCalendarWalk) {
  const auto is_leap = [](int y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); };
  const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t micros = *ParseTimestampMicros("1599-01-01");
  int year = 1599;
  int month = 1;
  int day = 1;
  while (year <= 2401) {
    const std::string expected =
        fmt::format("{:04d}-{:02d}-{:02d}T00:00:00.000000Z", year, month, day);
    ASSERT_EQ(FormatTimestampMicros(micros), expected);
    ASSERT_EQ(*ParseTimestampMicros(expected.substr(0, 10)), micros) << expected;
    micros += 86400000000LL;
    const int days_this_month = month == 2 && is_leap(year) ? 29 : month_days[month - 1];
    if (++day > days_this_month) {
      day = 1;
      if (++month > 12) {
        month = 1;
        ++year;
      }
    }
  }
  EXPECT_EQ(micros, *ParseTimestampMicros("2402-01-01"));
}

}  // namespace
}  // namespace strata
