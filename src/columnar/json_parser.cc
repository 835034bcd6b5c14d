// String scanning of JsonParser: a copy-free path for strings without escapes, and UTF-8
// checking as strict as nlohmann's (RFC 3629; no lone surrogates from \u escapes either).
#include "columnar/json_parser.h"

namespace strata::json::internal {

bool JsonParser::ParseString(std::string_view* out) {
  const char* start = ++p_;
  while (p_ < end_) {
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      *out = std::string_view(start, static_cast<size_t>(p_ - start));
      ++p_;
      return true;
    }
    if (c == '\\') return ParseEscaped(start, out);
    if (c < 0x20) return false;
    if (c < 0x80) {
      ++p_;
      continue;
    }
    const size_t n = Utf8SequenceLength(p_, end_);
    if (n == 0) return false;
    p_ += n;
  }
  return false;
}

bool JsonParser::ParseHex4(uint32_t* code) {
  if (end_ - p_ < 4) return false;
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = *p_++;
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
    value = value * 16 + digit;
  }
  *code = value;
  return true;
}

// Continues ParseString from the first backslash, unescaping into scratch_.
bool JsonParser::ParseEscaped(const char* start, std::string_view* out) {
  scratch_.assign(start, p_);
  while (p_ < end_) {
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      ++p_;
      *out = scratch_;
      return true;
    }
    if (c < 0x20) return false;
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(p_, end_);
      if (n == 0) return false;
      scratch_.append(p_, n);
      p_ += n;
      continue;
    }
    if (c != '\\') {
      scratch_.push_back(static_cast<char>(c));
      ++p_;
      continue;
    }
    if (++p_ == end_) return false;
    switch (*p_++) {
      case '"':
        scratch_.push_back('"');
        break;
      case '\\':
        scratch_.push_back('\\');
        break;
      case '/':
        scratch_.push_back('/');
        break;
      case 'b':
        scratch_.push_back('\b');
        break;
      case 'f':
        scratch_.push_back('\f');
        break;
      case 'n':
        scratch_.push_back('\n');
        break;
      case 'r':
        scratch_.push_back('\r');
        break;
      case 't':
        scratch_.push_back('\t');
        break;
      case 'u': {
        uint32_t code = 0;
        if (!ParseHex4(&code)) return false;
        if (code >= 0xDC00 && code <= 0xDFFF) return false;  // a lone low surrogate
        if (code >= 0xD800 && code <= 0xDBFF) {
          uint32_t low = 0;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          p_ += 2;
          if (!ParseHex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        if (code < 0x80) {
          scratch_.push_back(static_cast<char>(code));
        } else if (code < 0x800) {
          scratch_.push_back(static_cast<char>(0xC0 | (code >> 6)));
          scratch_.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else if (code < 0x10000) {
          scratch_.push_back(static_cast<char>(0xE0 | (code >> 12)));
          scratch_.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
          scratch_.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else {
          scratch_.push_back(static_cast<char>(0xF0 | (code >> 18)));
          scratch_.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
          scratch_.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
          scratch_.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        }
        break;
      }
      default:
        return false;
    }
  }
  return false;
}

}  // namespace strata::json::internal
