// JSON string escaping with UTF-8 checking, and exact decimal-to-integer parsing, so that
// int64 and uint64 values never lose precision through a double.
#include "columnar/json_text.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <system_error>

namespace strata::json::internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80; }

}  // namespace

bool AppendQuoted(std::string_view text, bool replace_invalid, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!NeedsEscape(c)) {
      ++i;
      continue;
    }
    out->append(text.data() + run_start, i - run_start);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(text.data() + i, text.data() + text.size());
      if (n == 0) {
        if (!replace_invalid) return false;
        out->append("\xEF\xBF\xBD");
        ++i;
      } else {
        out->append(text.data() + i, n);
        i += n;
      }
      run_start = i;
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default: {
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(escaped, sizeof(escaped));
      }
    }
    ++i;
    run_start = i;
  }
  out->append(text.data() + run_start, text.size() - run_start);
  out->push_back('"');
  return true;
}

std::string DescribeString(std::string_view text, size_t max_bytes) {
  bool cut = false;
  if (text.size() > max_bytes) {
    size_t end = max_bytes;
    // Do not split a UTF-8 sequence.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
    cut = true;
  }
  std::string out = "string ";
  AppendQuoted(text, /*replace_invalid=*/true, &out);
  if (cut) out += "...";
  return out;
}

namespace {

// The parts of a JSON number: sign, integer digits, fraction digits and the exponent (clamped
// to +-kExponentClamp, far beyond anything that could still be an integer of 20 digits or
// less, but never close to overflowing the arithmetic below).
struct NumberParts {
  bool negative = false;
  std::string_view int_digits;
  std::string_view frac_digits;
  int64_t exponent = 0;
};

constexpr int64_t kExponentClamp = 1'000'000;

bool SplitNumber(std::string_view s, NumberParts* parts) {
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && s[i] == '-') {
    parts->negative = true;
    ++i;
  }
  const size_t int_begin = i;
  if (i < n && s[i] == '0') {
    ++i;
  } else {
    while (i < n && IsDigit(s[i])) ++i;
  }
  if (i == int_begin) return false;
  parts->int_digits = s.substr(int_begin, i - int_begin);
  if (i < n && s[i] == '.') {
    const size_t begin = ++i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == begin) return false;
    parts->frac_digits = s.substr(begin, i - begin);
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative_exponent = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
      negative_exponent = s[i] == '-';
      ++i;
    }
    const size_t begin = i;
    int64_t exponent = 0;
    while (i < n && IsDigit(s[i])) {
      exponent = std::min(kExponentClamp, exponent * 10 + (s[i] - '0'));
      ++i;
    }
    if (i == begin) return false;
    parts->exponent = negative_exponent ? -exponent : exponent;
  }
  return i == n;
}

}  // namespace

bool IsJsonNumber(std::string_view text) {
  NumberParts parts;
  return SplitNumber(text, &parts);
}

bool ParseJsonDouble(std::string_view text, double* value) {
  const char* end = text.data() + text.size();
  const auto [parsed_end, ec] = std::from_chars(text.data(), end, *value);
  if (ec == std::errc() && parsed_end == end) return true;
  NumberParts parts;
  if (ec != std::errc::result_out_of_range || !SplitNumber(text, &parts)) return false;
  // Out of range: too large (false) or too small (zero)? Compare the decimal exponent of the
  // leading significant digit with 0; a non-zero value never gets here with that exponent
  // near 0.
  int64_t order = 0;
  const size_t int_lead = parts.int_digits.find_first_not_of('0');
  if (int_lead != std::string_view::npos) {
    order = static_cast<int64_t>(parts.int_digits.size() - 1 - int_lead);
  } else {
    order = -1 - static_cast<int64_t>(parts.frac_digits.find_first_not_of('0'));
  }
  if (order + parts.exponent >= 0) return false;
  *value = parts.negative ? -0.0 : 0.0;
  return true;
}

IntegerParse ParseExactInteger(std::string_view text, bool* negative, uint64_t* magnitude) {
  NumberParts parts;
  if (!SplitNumber(text, &parts)) return IntegerParse::kNotANumber;
  *negative = parts.negative;
  *magnitude = 0;
  // The value is digits(int_digits frac_digits) * 10^(exponent - |frac_digits|). Walk the
  // significant digits (leading zeros skipped, trailing zeros folded into the exponent).
  std::string digits;
  digits.reserve(parts.int_digits.size() + parts.frac_digits.size());
  digits.append(parts.int_digits).append(parts.frac_digits);
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return IntegerParse::kOk;  // zero, whatever the exponent
  const size_t last = digits.find_last_not_of('0');
  const int64_t scale = parts.exponent - static_cast<int64_t>(parts.frac_digits.size()) +
                        static_cast<int64_t>(digits.size() - 1 - last);
  if (scale < 0) return IntegerParse::kNotAnInteger;
  const auto significant = static_cast<int64_t>(last - first + 1);
  if (significant + scale > 20) return IntegerParse::kOutOfRange;  // 2^64 has 20 digits
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t value = 0;
  for (size_t k = first; k <= last; ++k) {
    const auto d = static_cast<uint64_t>(digits[k] - '0');
    if (value > (kMax - d) / 10) return IntegerParse::kOutOfRange;
    value = value * 10 + d;
  }
  for (int64_t k = 0; k < scale; ++k) {
    if (value > kMax / 10) return IntegerParse::kOutOfRange;
    value *= 10;
  }
  *magnitude = value;
  return IntegerParse::kOk;
}

}  // namespace strata::json::internal
