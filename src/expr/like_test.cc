// LIKE pattern tests: wildcards, escapes, UTF-8 characters, the fast-path shapes and a
// comparison of the matcher with a brute-force one on random patterns.
#include "expr/like.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace strata::expr::internal {
namespace {

bool Like(std::string_view text, std::string_view pattern) {
  Result<LikePattern> p = LikePattern::Compile(pattern);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() && p->Matches(text);
}

TEST(LikeTest, Wildcards) {
  EXPECT_TRUE(Like("", ""));
  EXPECT_FALSE(Like("a", ""));
  EXPECT_TRUE(Like("", "%"));
  EXPECT_TRUE(Like("anything", "%"));
  EXPECT_TRUE(Like("", "%%%"));
  EXPECT_FALSE(Like("", "_"));
  EXPECT_TRUE(Like("a", "_"));
  EXPECT_FALSE(Like("ab", "_"));
  EXPECT_TRUE(Like("abc", "a%"));
  EXPECT_TRUE(Like("a", "a%"));
  EXPECT_FALSE(Like("ba", "a%"));
  EXPECT_TRUE(Like("xyzabc", "%abc"));
  EXPECT_FALSE(Like("abcx", "%abc"));
  EXPECT_TRUE(Like("xxabcxx", "%abc%"));
  EXPECT_FALSE(Like("xxabxcxx", "%abc%"));
  EXPECT_TRUE(Like("abc", "a_c"));
  EXPECT_FALSE(Like("abbc", "a_c"));
  EXPECT_TRUE(Like("abbc", "a%c"));
  EXPECT_TRUE(Like("ac", "a%c"));
  EXPECT_TRUE(Like("aXbXc", "a%b%c"));
  EXPECT_FALSE(Like("aXcXb", "a%b%c"));
  EXPECT_TRUE(Like("mississippi", "%iss%ppi"));
  EXPECT_TRUE(Like("mississippi", "m%i%s%i_p%"));
  EXPECT_FALSE(Like("mississippi", "m%iss%issx%"));
  EXPECT_TRUE(Like("aaa", "%a%a%a%"));
  EXPECT_FALSE(Like("aa", "%a%a%a%"));
  EXPECT_TRUE(Like("abab", "%ab"));
  EXPECT_TRUE(Like("ab", "__%"));
  EXPECT_FALSE(Like("a", "__%"));
  EXPECT_TRUE(Like("Abc", "Abc"));
  EXPECT_FALSE(Like("abc", "ABC"));  // case-sensitive
}

TEST(LikeTest, BackslashEscapes) {
  EXPECT_TRUE(Like("100%", "100\\%"));
  EXPECT_FALSE(Like("1000", "100\\%"));
  EXPECT_TRUE(Like("a_b", "a\\_b"));
  EXPECT_FALSE(Like("axb", "a\\_b"));
  EXPECT_TRUE(Like("a\\b", "a\\\\b"));
  EXPECT_TRUE(Like("50% off", "%\\%%"));
  EXPECT_FALSE(Like("50 off", "%\\%%"));
  EXPECT_TRUE(Like("ab", "a\\b"));  // escaping an ordinary character keeps it
  Result<LikePattern> trailing = LikePattern::Compile("abc\\");
  ASSERT_FALSE(trailing.ok());
  EXPECT_EQ(trailing.status().message(),
            "LIKE pattern 'abc\\' ends with a lone escape character (\\)");
}

TEST(LikeTest, UnderscoreMatchesOneUtf8Character) {
  EXPECT_TRUE(Like("é", "_"));      // 2 bytes
  EXPECT_TRUE(Like("日本", "__"));  // 3 bytes each
  EXPECT_FALSE(Like("日本", "_"));
  EXPECT_TRUE(Like("😀x", "_x"));  // 4 bytes
  EXPECT_TRUE(Like("a😀b", "a%b"));
  EXPECT_TRUE(Like("naïve", "na_ve"));
  EXPECT_TRUE(Like("\xff\xfe", "__"));  // stray bytes count one each
  EXPECT_TRUE(Like("ééé", "%_é"));
}

TEST(LikeTest, ShapesAndPrefixes) {
  auto compile = [](std::string_view p) { return *LikePattern::Compile(p); };
  EXPECT_TRUE(compile("abc").is_exact());
  EXPECT_EQ(compile("abc").prefix(), "abc");
  EXPECT_TRUE(compile("a\\%").is_exact());
  EXPECT_EQ(compile("a\\%").prefix(), "a%");
  EXPECT_TRUE(compile("").is_exact());
  EXPECT_TRUE(compile("abc%").is_prefix());
  EXPECT_TRUE(compile("abc%%").is_prefix());
  EXPECT_TRUE(compile("%").is_prefix());
  EXPECT_EQ(compile("%").prefix(), "");
  EXPECT_FALSE(compile("abc_").is_prefix());
  EXPECT_EQ(compile("abc_%").prefix(), "abc");
  EXPECT_FALSE(compile("%abc").is_prefix());
  EXPECT_EQ(compile("%abc").prefix(), "");
  EXPECT_FALSE(compile("a%c").is_prefix());
  EXPECT_EQ(compile("a%c").prefix(), "a");
}

// Brute force: tries every split, by characters as CharLength defines them.
bool Reference(std::string_view text, std::string_view pattern) {
  if (pattern.empty()) return text.empty();
  const char c = pattern[0];
  if (c == '%') {
    for (size_t i = 0;; i += CharLength(text, i)) {
      if (Reference(text.substr(i), pattern.substr(1))) return true;
      if (i >= text.size()) return false;
    }
  }
  if (c == '_') {
    return !text.empty() && Reference(text.substr(CharLength(text, 0)), pattern.substr(1));
  }
  size_t skip = 1;
  char literal = c;
  if (c == '\\') {
    literal = pattern[1];
    skip = 2;
  }
  return !text.empty() && text[0] == literal && Reference(text.substr(1), pattern.substr(skip));
}

TEST(LikeTest, MatchesBruteForceOnRandomPatterns) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<std::string> pieces = {"a", "b", "ab", "é", "%", "_", "\\%", "\\_", "\\\\"};
  const std::vector<std::string> text_pieces = {"a", "b", "é", "%", "_", "\\", "ab"};
  for (int round = 0; round < 4000; ++round) {
    std::string pattern;
    const int pattern_length = static_cast<int>(rng() % 6);
    for (int i = 0; i < pattern_length; ++i) pattern += pieces[rng() % pieces.size()];
    std::string text;
    const int text_length = static_cast<int>(rng() % 7);
    for (int i = 0; i < text_length; ++i) text += text_pieces[rng() % text_pieces.size()];
    EXPECT_EQ(Like(text, pattern), Reference(text, pattern))
        << "text '" << text << "' pattern '" << pattern << "'";
  }
}

}  // namespace
}  // namespace strata::expr::internal
