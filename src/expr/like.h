// LIKE patterns: % matches any run of characters, _ exactly one character (a UTF-8 code point;
// a byte that does not start a well-formed sequence counts as one character), and a backslash
// makes the next character literal. Matching is bytewise otherwise (case-sensitive).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata::expr::internal {

// Length of the character starting at text[i]: 1 plus the continuation bytes (10xxxxxx) that
// follow, at most 4 in all. REQUIRES: i < text.size().
inline size_t CharLength(std::string_view text, size_t i) {
  size_t n = 1;
  while (n < 4 && i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) {
    ++n;
  }
  return n;
}

class LikePattern {
 public:
  // InvalidArgument when the pattern ends with a lone backslash.
  static Result<LikePattern> Compile(std::string_view pattern);

  bool Matches(std::string_view text) const;

  // The literal bytes every match starts with (everything before the first wildcard).
  const std::string& prefix() const { return prefix_; }
  // No wildcards: matches exactly prefix().
  bool is_exact() const { return shape_ == Shape::kExact; }
  // prefix() followed by one or more %: matches exactly the strings starting with prefix().
  bool is_prefix() const { return shape_ == Shape::kPrefix; }

 private:
  enum class Shape : uint8_t { kExact, kPrefix, kSuffix, kContains, kGeneral };
  enum class ElementKind : uint8_t { kLiteral, kAnyOne, kAnyMany };
  struct Element {
    ElementKind kind;
    std::string literal;
  };
  bool MatchGeneral(std::string_view text) const;

  std::vector<Element> elements_;
  Shape shape_ = Shape::kGeneral;
  std::string prefix_;
  std::string needle_;  // kSuffix / kContains literal
};

}  // namespace strata::expr::internal
