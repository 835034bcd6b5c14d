// JsonParser: a strict RFC 8259 parser turning one JSON text into SAX events, without building
// values; the JSON decoder's fast path. nlohmann describes what it rejects, so both must accept
// exactly the same texts (json_parser_test.cc checks this on random inputs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "columnar/json_text.h"

namespace strata::json::internal {

enum class ParseOutcome { kOk, kStopped, kMalformed };

// Handler interface (each returns false to stop parsing):
//   null() boolean(bool) number_integer(int64_t) number_unsigned(uint64_t)
//   number_float(std::string_view text) string(std::string_view)
//   start_object() key(std::string_view) end_object() start_array() end_array()
// Integers that fit int64 (negative) or uint64 (otherwise) without fraction or exponent come
// as integers, like nlohmann; everything else as its text, which is guaranteed to be a JSON
// number whose double value is finite. String views are valid only during the call.
// Malformed text yields kMalformed with no description. Not thread safe; reusable.
class JsonParser {
 public:
  // Parses `text`, which must hold exactly one JSON value (surrounded by whitespace and
  // preceded by an optional UTF-8 byte order mark).
  template <typename Handler>
  ParseOutcome Parse(std::string_view text, Handler* handler);

 private:
  enum class Next { kValue, kKey, kAfterValue };

  static bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  void SkipSpace() {
    while (p_ < end_ && IsSpace(*p_)) ++p_;
  }
  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }
  // At the opening quote. The result points into the text or into scratch_.
  bool ParseString(std::string_view* out);
  bool ParseEscaped(const char* start, std::string_view* out);
  bool ParseHex4(uint32_t* code);
  template <typename Handler>
  ParseOutcome ParseNumber(Handler* handler);

  const char* p_ = nullptr;
  const char* end_ = nullptr;
  std::vector<char> stack_;  // '{' or '[' per open container
  std::string scratch_;      // unescaped strings
};

template <typename Handler>
ParseOutcome JsonParser::Parse(std::string_view text, Handler* handler) {
  p_ = text.data();
  end_ = text.data() + text.size();
  if (text.starts_with("\xEF\xBB\xBF")) p_ += 3;
  stack_.clear();
  Next next = Next::kValue;
  std::string_view str;
  while (true) {
    SkipSpace();
    if (next == Next::kAfterValue && stack_.empty()) {
      return p_ == end_ ? ParseOutcome::kOk : ParseOutcome::kMalformed;
    }
    if (p_ == end_) return ParseOutcome::kMalformed;
    switch (next) {
      case Next::kValue:
        switch (*p_) {
          case '{':
            ++p_;
            if (!handler->start_object()) return ParseOutcome::kStopped;
            SkipSpace();
            if (p_ < end_ && *p_ == '}') {
              ++p_;
              if (!handler->end_object()) return ParseOutcome::kStopped;
              next = Next::kAfterValue;
            } else {
              stack_.push_back('{');
              next = Next::kKey;
            }
            continue;
          case '[':
            ++p_;
            if (!handler->start_array()) return ParseOutcome::kStopped;
            SkipSpace();
            if (p_ < end_ && *p_ == ']') {
              ++p_;
              if (!handler->end_array()) return ParseOutcome::kStopped;
              next = Next::kAfterValue;
            } else {
              stack_.push_back('[');
            }
            continue;
          case '"':
            if (!ParseString(&str)) return ParseOutcome::kMalformed;
            if (!handler->string(str)) return ParseOutcome::kStopped;
            break;
          case 't':
            if (!Literal("true")) return ParseOutcome::kMalformed;
            if (!handler->boolean(true)) return ParseOutcome::kStopped;
            break;
          case 'f':
            if (!Literal("false")) return ParseOutcome::kMalformed;
            if (!handler->boolean(false)) return ParseOutcome::kStopped;
            break;
          case 'n':
            if (!Literal("null")) return ParseOutcome::kMalformed;
            if (!handler->null()) return ParseOutcome::kStopped;
            break;
          default:
            if (const ParseOutcome outcome = ParseNumber(handler); outcome != ParseOutcome::kOk) {
              return outcome;
            }
        }
        next = Next::kAfterValue;
        continue;
      case Next::kKey:
        if (*p_ != '"' || !ParseString(&str)) return ParseOutcome::kMalformed;
        if (!handler->key(str)) return ParseOutcome::kStopped;
        SkipSpace();
        if (p_ == end_ || *p_ != ':') return ParseOutcome::kMalformed;
        ++p_;
        next = Next::kValue;
        continue;
      case Next::kAfterValue:
        break;
    }
    // After a value: a separator or the end of its container.
    const char c = *p_++;
    if (stack_.back() == '{') {
      if (c == ',') {
        next = Next::kKey;
      } else if (c == '}') {
        stack_.pop_back();
        if (!handler->end_object()) return ParseOutcome::kStopped;
      } else {
        return ParseOutcome::kMalformed;
      }
    } else {
      if (c == ',') {
        next = Next::kValue;
      } else if (c == ']') {
        stack_.pop_back();
        if (!handler->end_array()) return ParseOutcome::kStopped;
      } else {
        return ParseOutcome::kMalformed;
      }
    }
  }
}

template <typename Handler>
ParseOutcome JsonParser::ParseNumber(Handler* handler) {
  const char* start = p_;
  const bool negative = *p_ == '-';
  if (negative) ++p_;
  if (p_ == end_ || *p_ < '0' || *p_ > '9') return ParseOutcome::kMalformed;
  uint64_t magnitude = 0;
  bool overflow = false;
  if (*p_ == '0') {
    ++p_;  // a leading zero stands alone; a digit after it fails as trailing garbage
  } else {
    for (; p_ < end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
      const auto digit = static_cast<uint64_t>(*p_ - '0');
      overflow |= magnitude > (UINT64_MAX - digit) / 10;
      magnitude = magnitude * 10 + digit;
    }
  }
  const auto int_digits = static_cast<int64_t>(p_ - start) - (negative ? 1 : 0);
  bool is_float = false;
  if (p_ < end_ && *p_ == '.') {
    is_float = true;
    const char* digits = ++p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ == digits) return ParseOutcome::kMalformed;
  }
  int64_t exponent = 0;  // clamped, only to rule out overflow cheaply
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    is_float = true;
    ++p_;
    bool negative_exponent = false;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) negative_exponent = *p_++ == '-';
    const char* digits = p_;
    for (; p_ < end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
      exponent = std::min<int64_t>(exponent * 10 + (*p_ - '0'), 1'000'000);
    }
    if (p_ == digits) return ParseOutcome::kMalformed;
    if (negative_exponent) exponent = -exponent;
  }
  if (!is_float && !overflow) {
    bool ok = true;
    if (!negative) {
      ok = handler->number_unsigned(magnitude);
    } else if (magnitude <= uint64_t{1} << 63) {
      ok = handler->number_integer(static_cast<int64_t>(uint64_t{0} - magnitude));
    } else {
      is_float = true;
    }
    if (!is_float) return ok ? ParseOutcome::kOk : ParseOutcome::kStopped;
  }
  const std::string_view text(start, static_cast<size_t>(p_ - start));
  // Below 10^300 a number cannot overflow a double; only near that is it worth parsing here
  // (a number that would be infinite is malformed, as for nlohmann).
  if (int_digits + exponent > 300) {
    double value = 0;
    if (!ParseJsonDouble(text, &value)) return ParseOutcome::kMalformed;
  }
  return handler->number_float(text) ? ParseOutcome::kOk : ParseOutcome::kStopped;
}

}  // namespace strata::json::internal
