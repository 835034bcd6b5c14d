// LIKE pattern compilation and matching: fast paths for exact, prefix, suffix and contains
// patterns; otherwise a linear scan that backtracks only to the most recent %.
#include "expr/like.h"

#include <fmt/format.h>

namespace strata::expr::internal {

Result<LikePattern> LikePattern::Compile(std::string_view pattern) {
  LikePattern p;
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) p.elements_.push_back({ElementKind::kLiteral, std::move(literal)});
    literal.clear();
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 == pattern.size()) {
        return Status::InvalidArgument(
            fmt::format("LIKE pattern '{}' ends with a lone escape character (\\)", pattern));
      }
      literal += pattern[++i];
    } else if (c == '%') {
      flush();
      if (p.elements_.empty() || p.elements_.back().kind != ElementKind::kAnyMany) {
        p.elements_.push_back({ElementKind::kAnyMany, {}});
      }
    } else if (c == '_') {
      flush();
      p.elements_.push_back({ElementKind::kAnyOne, {}});
    } else {
      literal += c;
    }
  }
  flush();

  const auto& e = p.elements_;
  if (!e.empty() && e[0].kind == ElementKind::kLiteral) p.prefix_ = e[0].literal;
  auto is = [&](size_t i, ElementKind kind) { return i < e.size() && e[i].kind == kind; };
  if (e.empty() || (e.size() == 1 && is(0, ElementKind::kLiteral))) {
    p.shape_ = Shape::kExact;
  } else if ((e.size() == 1 && is(0, ElementKind::kAnyMany)) ||
             (e.size() == 2 && is(0, ElementKind::kLiteral) && is(1, ElementKind::kAnyMany))) {
    p.shape_ = Shape::kPrefix;
  } else if (e.size() == 2 && is(0, ElementKind::kAnyMany) && is(1, ElementKind::kLiteral)) {
    p.shape_ = Shape::kSuffix;
    p.needle_ = e[1].literal;
  } else if (e.size() == 3 && is(0, ElementKind::kAnyMany) && is(1, ElementKind::kLiteral) &&
             is(2, ElementKind::kAnyMany)) {
    p.shape_ = Shape::kContains;
    p.needle_ = e[1].literal;
  }
  return p;
}

bool LikePattern::Matches(std::string_view text) const {
  switch (shape_) {
    case Shape::kExact:
      return text == prefix_;
    case Shape::kPrefix:
      return text.starts_with(prefix_);
    case Shape::kSuffix:
      return text.ends_with(needle_);
    case Shape::kContains:
      return text.find(needle_) != std::string_view::npos;
    case Shape::kGeneral:
      return MatchGeneral(text);
  }
  return false;
}

// Greedy matching that, on a mismatch, lets the most recent % swallow one more character.
// Backtracking further is never needed: any match the earlier % could enable, the later one
// can too. O(text * pattern) in the worst case.
bool LikePattern::MatchGeneral(std::string_view text) const {
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t t = 0;
  size_t e = 0;
  size_t star_element = kNone;
  size_t star_text = 0;
  while (true) {
    if (e < elements_.size()) {
      const Element& element = elements_[e];
      if (element.kind == ElementKind::kAnyMany) {
        star_element = e++;
        star_text = t;
        continue;
      }
      if (element.kind == ElementKind::kAnyOne) {
        if (t < text.size()) {
          t += CharLength(text, t);
          ++e;
          continue;
        }
      } else if (text.substr(t).starts_with(element.literal)) {
        t += element.literal.size();
        ++e;
        continue;
      }
    } else if (t == text.size()) {
      return true;
    }
    if (star_element == kNone || star_text >= text.size()) return false;
    star_text += CharLength(text, star_text);
    t = star_text;
    e = star_element + 1;
  }
}

}  // namespace strata::expr::internal
