// Text-level helpers of the JSON codec: string quoting and exact parsing of JSON numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::json::internal {

// Appends `text` to *out as a quoted JSON string (quotes, backslashes and control characters
// escaped; other UTF-8 copied as is). Invalid UTF-8: with replace_invalid each bad byte is
// written as U+FFFD; otherwise returns false, leaving a partial string in *out.
bool AppendQuoted(std::string_view text, bool replace_invalid, std::string* out);

// `string "abc"` for error messages: quoted, and cut after max_bytes with "..." added.
std::string DescribeString(std::string_view text, size_t max_bytes = 40);

// Length of the well-formed UTF-8 sequence at p (whose lead byte is >= 0x80) before `end`,
// or 0 when it is ill-formed: overlong, a surrogate, past U+10FFFF or truncated (RFC 3629).
inline size_t Utf8SequenceLength(const char* p, const char* end) {
  const auto in = [&](size_t k, unsigned lo, unsigned hi) {
    if (end - p <= static_cast<ptrdiff_t>(k)) return false;
    const auto b = static_cast<unsigned char>(p[k]);
    return b >= lo && b <= hi;
  };
  const auto lead = static_cast<unsigned char>(p[0]);
  if (lead >= 0xC2 && lead <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned lo = lead == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = lead == 0xED ? 0x9F : 0xBF;
    return in(1, lo, hi) && in(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned lo = lead == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = lead == 0xF4 ? 0x8F : 0xBF;
    return in(1, lo, hi) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

// True when `text` is exactly one number in JSON syntax (no sign '+', no spaces).
bool IsJsonNumber(std::string_view text);

// The nearest double to JSON number text (correctly rounded). Values too small for a double
// become a signed zero. False when the text is not a JSON number or the value is too large
// (it would be infinite).
bool ParseJsonDouble(std::string_view text, double* value);

enum class IntegerParse { kOk, kNotANumber, kNotAnInteger, kOutOfRange };

// Parses JSON number text ("12", "-3", "1.0", "2.5e3") exactly, without a double, into a sign
// and a magnitude up to 2^64 - 1. kNotAnInteger when the value has a non-zero fraction.
IntegerParse ParseExactInteger(std::string_view text, bool* negative, uint64_t* magnitude);

}  // namespace strata::json::internal
