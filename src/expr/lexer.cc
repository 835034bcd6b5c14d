// Tokenizer for the predicate language: identifiers, numbers, quoted strings and operators.
#include "expr/lexer.h"

#include <fmt/format.h>

#include <array>

namespace strata::expr::internal {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

std::string CharText(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

Status Error(size_t position, std::string_view what) {
  return Status::InvalidArgument(fmt::format("syntax error at position {}: {}", position, what));
}

// Reads a quoted run starting at text[i] == quote; a doubled quote stands for one.
Result<std::string> ReadQuoted(std::string_view text, size_t* i, char quote,
                               std::string_view what) {
  const size_t start = *i;
  std::string value;
  size_t j = start + 1;
  while (true) {
    if (j >= text.size()) return Error(start + 1, fmt::format("unterminated {}", what));
    if (text[j] == quote) {
      if (j + 1 < text.size() && text[j + 1] == quote) {
        value += quote;
        j += 2;
        continue;
      }
      break;
    }
    value += text[j++];
  }
  *i = j + 1;
  return value;
}

}  // namespace

bool IsKeyword(std::string_view word, std::string_view upper_keyword) {
  if (word.size() != upper_keyword.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    char c = word[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != upper_keyword[i]) return false;
  }
  return true;
}

bool IsReservedWord(std::string_view word) {
  static constexpr std::array<std::string_view, 11> kWords = {
      "AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "TRUE", "FALSE", "BETWEEN", "TIMESTAMP"};
  for (std::string_view keyword : kWords) {
    if (IsKeyword(word, keyword)) return true;
  }
  return false;
}

bool IsBareIdentifier(std::string_view word) {
  if (word.empty() || !IsIdentStart(word[0])) return false;
  for (char c : word) {
    if (!IsIdentChar(c)) return false;
  }
  return !IsReservedWord(word);
}

std::string QuoteIdentifier(std::string_view name) {
  // Function names stay quoted so that a column never reads back as a call.
  if (IsBareIdentifier(name) && !IsKeyword(name, "ARRAY_HAS") &&
      !IsKeyword(name, "ARRAY_CONTAINS")) {
    return std::string(name);
  }
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string DescribeToken(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kString:
      return fmt::format("string '{}'", token.text);
    case TokenKind::kQuotedIdentifier:
      return fmt::format("\"{}\"", token.text);
    default:
      return fmt::format("'{}'", token.text);
  }
}

Result<std::vector<Token>> Tokenize(std::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (true) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                               text[i] == '\r' || text[i] == '\f' || text[i] == '\v')) {
      ++i;
    }
    Token token;
    token.position = i + 1;
    if (i >= text.size()) {
      tokens.push_back(std::move(token));
      return tokens;
    }
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    auto simple = [&](TokenKind kind, size_t length) {
      token.kind = kind;
      token.text = std::string(text.substr(i, length));
      i += length;
    };
    if (IsIdentStart(c)) {
      size_t j = i;
      while (j < text.size() && IsIdentChar(text[j])) ++j;
      simple(TokenKind::kIdentifier, j - i);
    } else if (IsDigit(c) || (c == '.' && IsDigit(next))) {
      size_t j = i;
      bool is_float = false;
      while (j < text.size() && IsDigit(text[j])) ++j;
      if (j < text.size() && text[j] == '.') {
        is_float = true;
        ++j;
        while (j < text.size() && IsDigit(text[j])) ++j;
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
        if (k >= text.size() || !IsDigit(text[k])) {
          return Error(i + 1, fmt::format("malformed number '{}'", text.substr(i, k - i)));
        }
        while (k < text.size() && IsDigit(text[k])) ++k;
        is_float = true;
        j = k;
      }
      if (j < text.size() && (IsIdentChar(text[j]) || text[j] == '.')) {
        size_t k = j;
        while (k < text.size() && (IsIdentChar(text[k]) || text[k] == '.')) ++k;
        return Error(i + 1, fmt::format("malformed number '{}'", text.substr(i, k - i)));
      }
      simple(is_float ? TokenKind::kFloat : TokenKind::kInteger, j - i);
    } else if (c == '\'') {
      STRATA_ASSIGN_OR_RETURN(token.text, ReadQuoted(text, &i, '\'', "string literal"));
      token.kind = TokenKind::kString;
    } else if (c == '"') {
      STRATA_ASSIGN_OR_RETURN(token.text, ReadQuoted(text, &i, '"', "quoted identifier"));
      if (token.text.empty()) return Error(token.position, "empty quoted identifier \"\"");
      token.kind = TokenKind::kQuotedIdentifier;
    } else if (c == '(') {
      simple(TokenKind::kLParen, 1);
    } else if (c == ')') {
      simple(TokenKind::kRParen, 1);
    } else if (c == ',') {
      simple(TokenKind::kComma, 1);
    } else if (c == '.') {
      simple(TokenKind::kDot, 1);
    } else if (c == '-') {
      simple(TokenKind::kMinus, 1);
    } else if (c == '=') {
      simple(TokenKind::kEq, 1);
    } else if (c == '!' && next == '=') {
      simple(TokenKind::kNe, 2);
    } else if (c == '<' && next == '>') {
      simple(TokenKind::kNe, 2);
    } else if (c == '<' && next == '=') {
      simple(TokenKind::kLe, 2);
    } else if (c == '<') {
      simple(TokenKind::kLt, 1);
    } else if (c == '>' && next == '=') {
      simple(TokenKind::kGe, 2);
    } else if (c == '>') {
      simple(TokenKind::kGt, 1);
    } else {
      return Error(i + 1, fmt::format("unexpected character {}", CharText(c)));
    }
    tokens.push_back(std::move(token));
  }
}

}  // namespace strata::expr::internal
