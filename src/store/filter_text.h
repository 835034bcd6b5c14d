// Filter-expression text the typed stores build for StorageBase scans.
#pragma once

#include <string>
#include <string_view>

namespace strata::store::internal {

// `value` as a string literal of the expression language (docs/expressions.md): in single
// quotes, a quote inside doubled.
inline std::string QuoteLiteral(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

}  // namespace strata::store::internal
