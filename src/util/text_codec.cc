// Base64 and RFC 3339 timestamp codecs. Calendar math is Howard Hinnant's days_from_civil /
// civil_from_days (proleptic Gregorian, exact over any int64 day count), so no libc time calls.
#include "util/text_codec.h"

#include <fmt/format.h>

#include <array>
#include <cstdlib>

namespace strata {
namespace {

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Maps a character to its 6-bit value, or -1 when it is not in the alphabet.
constexpr std::array<int8_t, 256> MakeBase64DecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (size_t i = 0; i < kBase64Alphabet.size(); ++i) {
    table[static_cast<unsigned char>(kBase64Alphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}
constexpr std::array<int8_t, 256> kBase64DecodeTable = MakeBase64DecodeTable();

std::string DescribeChar(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) return fmt::format("'{}' (0x{:02x})", c, byte);
  return fmt::format("byte 0x{:02x}", byte);
}

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int64_t kSecondsPerDay = 86'400;

// Days since 1970-01-01 of a proleptic Gregorian date. month in [1, 12], day in [1, 31].
constexpr int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto year_of_era = static_cast<unsigned>(year - era * 400);  // [0, 399]
  const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;  // [0, 146096]
  return era * 146097 + static_cast<int64_t>(day_of_era) - 719468;
}

struct CivilDate {
  int64_t year;
  unsigned month;  // [1, 12]
  unsigned day;    // [1, 31]
};

constexpr CivilDate CivilFromDays(int64_t days) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto day_of_era = static_cast<unsigned>(days - era * 146097);  // [0, 146096]
  const unsigned year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const unsigned day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);  // [0, 365]
  const unsigned shifted_month = (5 * day_of_year + 2) / 153;                  // [0, 11], March = 0
  const unsigned day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
  const unsigned month = shifted_month < 10 ? shifted_month + 3 : shifted_month - 9;
  const int64_t year = static_cast<int64_t>(year_of_era) + era * 400 + (month <= 2 ? 1 : 0);
  return {year, month, day};
}

static_assert(DaysFromCivil(1970, 1, 1) == 0);
static_assert(DaysFromCivil(2000, 3, 1) == 11017);
static_assert(CivilFromDays(-1).year == 1969 && CivilFromDays(-1).day == 31);

constexpr bool IsLeapYear(int64_t year) {
  return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

constexpr unsigned DaysInMonth(int64_t year, unsigned month) {
  constexpr std::array<unsigned, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

// Reads an RFC 3339 string left to right; every failure names the text and the position.
class TimestampParser {
 public:
  explicit TimestampParser(std::string_view text) : text_(text) {}

  Result<int64_t> Parse() {
    int64_t year = 0;
    STRATA_RETURN_IF_ERROR(ParseYear(year));
    int64_t month = 0;
    int64_t day = 0;
    STRATA_RETURN_IF_ERROR(Expect('-', "'-' after the year"));
    STRATA_RETURN_IF_ERROR(ParseDigits(2, "month", month));
    STRATA_RETURN_IF_ERROR(Expect('-', "'-' after the month"));
    STRATA_RETURN_IF_ERROR(ParseDigits(2, "day", day));
    if (month < 1 || month > 12) return RangeError("month", month, "01..12");
    const unsigned days_in_month = DaysInMonth(year, static_cast<unsigned>(month));
    if (day < 1 || day > days_in_month) {
      return RangeError("day", day, fmt::format("01..{} for that month", days_in_month));
    }
    const int64_t days =
        DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    if (AtEnd()) return ToMicros(days * kSecondsPerDay, 0);  // Bare date: midnight UTC.

    if (Peek() != 'T' && Peek() != 't' && Peek() != ' ') {
      return SyntaxError("'T' or ' ' between date and time");
    }
    ++pos_;
    int64_t hour = 0;
    int64_t minute = 0;
    int64_t second = 0;
    STRATA_RETURN_IF_ERROR(ParseDigits(2, "hour", hour));
    STRATA_RETURN_IF_ERROR(Expect(':', "':' after the hour"));
    STRATA_RETURN_IF_ERROR(ParseDigits(2, "minute", minute));
    STRATA_RETURN_IF_ERROR(Expect(':', "':' after the minute"));
    STRATA_RETURN_IF_ERROR(ParseDigits(2, "second", second));
    if (hour > 23) return RangeError("hour", hour, "00..23");
    if (minute > 59) return RangeError("minute", minute, "00..59");
    if (second == 60) return Error("leap second :60 is not supported");
    if (second > 59) return RangeError("second", second, "00..59");

    int64_t fraction_micros = 0;
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      STRATA_RETURN_IF_ERROR(ParseFraction(fraction_micros));
    }

    int64_t offset_seconds = 0;
    if (AtEnd()) return SyntaxError("'Z' or a +HH:MM/-HH:MM offset");
    if (Peek() == 'Z' || Peek() == 'z') {
      ++pos_;
    } else if (Peek() == '+' || Peek() == '-') {
      const bool negative = Peek() == '-';
      ++pos_;
      int64_t offset_hour = 0;
      int64_t offset_minute = 0;
      STRATA_RETURN_IF_ERROR(ParseDigits(2, "offset hour", offset_hour));
      STRATA_RETURN_IF_ERROR(Expect(':', "':' in the offset"));
      STRATA_RETURN_IF_ERROR(ParseDigits(2, "offset minute", offset_minute));
      if (offset_hour > 23) return RangeError("offset hour", offset_hour, "00..23");
      if (offset_minute > 59) return RangeError("offset minute", offset_minute, "00..59");
      offset_seconds = (offset_hour * 3600 + offset_minute * 60) * (negative ? -1 : 1);
    } else {
      return SyntaxError("'Z' or a +HH:MM/-HH:MM offset");
    }
    if (!AtEnd()) return SyntaxError("end of text");

    return ToMicros(days * kSecondsPerDay + hour * 3600 + minute * 60 + second - offset_seconds,
                    fraction_micros);
  }

 private:
  // |year| <= 999999 keeps every value in seconds below ~3.2e13; only the scaling to
  // microseconds can overflow. A negative second with a fraction is scaled as
  // (seconds + 1) * 1e6 - (1e6 - fraction) so that values near INT64_MIN stay representable.
  Result<int64_t> ToMicros(int64_t utc_seconds, int64_t fraction_micros) const {
    int64_t micros = 0;
    if (utc_seconds < 0 && fraction_micros > 0) {
      utc_seconds += 1;
      fraction_micros -= kMicrosPerSecond;
    }
    if (__builtin_mul_overflow(utc_seconds, kMicrosPerSecond, &micros) ||
        __builtin_add_overflow(micros, fraction_micros, &micros)) {
      return Error("instant does not fit in int64 microseconds since 1970");
    }
    return micros;
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  Status Error(std::string_view what) const {
    constexpr size_t kMaxQuoted = 64;
    std::string quoted(text_.substr(0, kMaxQuoted));
    if (text_.size() > kMaxQuoted) quoted += "...";
    return Status::InvalidArgument(fmt::format("invalid timestamp \"{}\": {}", quoted, what));
  }
  Status SyntaxError(std::string_view expected) const {
    if (AtEnd()) return Error(fmt::format("expected {} at position {}, found end", expected, pos_));
    return Error(
        fmt::format("expected {} at position {}, found {}", expected, pos_, DescribeChar(Peek())));
  }
  Status RangeError(std::string_view field, int64_t value, std::string_view range) const {
    return Error(fmt::format("{} {} is out of range {}", field, value, range));
  }

  Status Expect(char c, std::string_view what) {
    if (AtEnd() || Peek() != c) return SyntaxError(what);
    ++pos_;
    return Status::OK();
  }

  // Exactly `count` decimal digits.
  Status ParseDigits(int count, std::string_view field, int64_t& out) {
    out = 0;
    for (int i = 0; i < count; ++i) {
      if (AtEnd() || !IsDigit(Peek())) return SyntaxError(fmt::format("{}-digit {}", count, field));
      out = out * 10 + (Peek() - '0');
      ++pos_;
    }
    return Status::OK();
  }

  // Four digits, or a sign and 4..6 digits (ISO 8601 expanded years).
  Status ParseYear(int64_t& year) {
    if (AtEnd() || (Peek() != '+' && Peek() != '-')) return ParseDigits(4, "year", year);
    const bool negative = Peek() == '-';
    ++pos_;
    const size_t start = pos_;
    year = 0;
    while (!AtEnd() && IsDigit(Peek()) && pos_ - start < 7) {
      year = year * 10 + (Peek() - '0');
      ++pos_;
    }
    const size_t digits = pos_ - start;
    if (digits < 4 || digits > 6) {
      return Error(fmt::format("signed year at position {} must have 4 to 6 digits", start - 1));
    }
    if (negative) year = -year;
    return Status::OK();
  }

  // 1..9 digits after '.'; digits past the sixth are dropped.
  Status ParseFraction(int64_t& micros) {
    const size_t start = pos_;
    micros = 0;
    while (!AtEnd() && IsDigit(Peek())) {
      if (pos_ - start < 6) micros = micros * 10 + (Peek() - '0');
      ++pos_;
    }
    const size_t digits = pos_ - start;
    if (digits == 0) return SyntaxError("fraction digits after '.'");
    if (digits > 9) {
      return Error(fmt::format("fraction at position {} has {} digits, at most 9 are allowed",
                               start, digits));
    }
    for (size_t i = digits; i < 6; ++i) micros *= 10;
    return Status::OK();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto byte_at = [&](size_t index) -> uint32_t {
    return static_cast<unsigned char>(bytes[index]);
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t group = byte_at(i) << 16 | byte_at(i + 1) << 8 | byte_at(i + 2);
    out += kBase64Alphabet[(group >> 18) & 63];
    out += kBase64Alphabet[(group >> 12) & 63];
    out += kBase64Alphabet[(group >> 6) & 63];
    out += kBase64Alphabet[group & 63];
  }
  const size_t remaining = bytes.size() - i;
  if (remaining == 1) {
    const uint32_t group = byte_at(i) << 16;
    out += kBase64Alphabet[(group >> 18) & 63];
    out += kBase64Alphabet[(group >> 12) & 63];
    out += "==";
  } else if (remaining == 2) {
    const uint32_t group = byte_at(i) << 16 | byte_at(i + 1) << 8;
    out += kBase64Alphabet[(group >> 18) & 63];
    out += kBase64Alphabet[(group >> 12) & 63];
    out += kBase64Alphabet[(group >> 6) & 63];
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Status::InvalidArgument(
        fmt::format("invalid base64: length {} is not a multiple of 4", text.size()));
  }
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  const size_t data_chars = text.size() - padding;

  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t accumulator = 0;
  int bits = 0;
  for (size_t pos = 0; pos < data_chars; ++pos) {
    const int8_t value = kBase64DecodeTable[static_cast<unsigned char>(text[pos])];
    if (value < 0) {
      const std::string_view reason =
          text[pos] == '=' ? "padding '=' before the end" : "invalid character";
      return Status::InvalidArgument(fmt::format("invalid base64: {} {} at position {}", reason,
                                                 DescribeChar(text[pos]), pos));
    }
    accumulator = ((accumulator << 6) | static_cast<uint32_t>(value)) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((accumulator >> bits) & 0xff);
    }
  }
  // Padding leaves 2 (one '=') or 4 (two '=') bits that a canonical encoder sets to zero.
  if (bits > 0 && (accumulator & ((1u << bits) - 1)) != 0) {
    return Status::InvalidArgument(fmt::format(
        "invalid base64: non-zero unused bits in character {} at position {} before padding",
        DescribeChar(text[data_chars - 1]), data_chars - 1));
  }
  return out;
}

std::string FormatTimestampMicros(int64_t micros_since_epoch) {
  // Floor division, so pre-1970 instants get a non-negative sub-second part.
  int64_t seconds = micros_since_epoch / kMicrosPerSecond;
  int64_t micros = micros_since_epoch % kMicrosPerSecond;
  if (micros < 0) {
    micros += kMicrosPerSecond;
    seconds -= 1;
  }
  int64_t days = seconds / kSecondsPerDay;
  int64_t second_of_day = seconds % kSecondsPerDay;
  if (second_of_day < 0) {
    second_of_day += kSecondsPerDay;
    days -= 1;
  }
  const CivilDate date = CivilFromDays(days);
  std::string year;
  if (date.year < 0) {
    year = fmt::format("-{:04d}", -date.year);
  } else if (date.year > 9999) {
    year = fmt::format("+{}", date.year);
  } else {
    year = fmt::format("{:04d}", date.year);
  }
  return fmt::format("{}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:06d}Z", year, date.month, date.day,
                     second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60, micros);
}

Result<int64_t> ParseTimestampMicros(std::string_view text) {
  return TimestampParser(text).Parse();
}

}  // namespace strata
