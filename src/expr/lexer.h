// Tokens of the predicate language. Keywords are identifiers recognised case-insensitively
// by the parser; the lexer decodes quoted strings and identifiers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata::expr::internal {

enum class TokenKind : uint8_t {
  kEnd,
  kIdentifier,        // bare: [A-Za-z_][A-Za-z0-9_]*
  kQuotedIdentifier,  // "...", "" inside stands for "
  kInteger,           // digits only (sign handled by the parser)
  kFloat,             // digits with a fraction and/or an exponent
  kString,            // '...', '' inside stands for '
  kLParen,
  kRParen,
  kComma,
  kDot,
  kMinus,
  kEq,  // =
  kNe,  // != or <>
  kLt,
  kLe,
  kGt,
  kGe,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;     // decoded value for strings and quoted identifiers, else the source
  size_t position = 0;  // 1-based byte offset of the token's first character
};

// The tokens of `text`, ending with one kEnd token. InvalidArgument naming the position for
// an unterminated string or identifier, a malformed number or an unexpected character.
Result<std::vector<Token>> Tokenize(std::string_view text);

// True for words that cannot be bare column names (AND, OR, NOT, IN, IS, NULL, LIKE, TRUE,
// FALSE, BETWEEN, TIMESTAMP), in any case.
bool IsReservedWord(std::string_view word);
// True when `word` is a bare identifier that reads back as itself.
bool IsBareIdentifier(std::string_view word);
// Case-insensitive comparison with an upper-case keyword.
bool IsKeyword(std::string_view word, std::string_view upper_keyword);
// `name` as SQL: bare when it reads back as itself, else "double-quoted" with "" for ".
std::string QuoteIdentifier(std::string_view name);
// Text for a token in messages: 'x', "x", end of input.
std::string DescribeToken(const Token& token);

}  // namespace strata::expr::internal
