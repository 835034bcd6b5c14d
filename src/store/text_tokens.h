// The context store's text tokenizer (TextTokens in include/strata/context_store.h): runs of
// Unicode letters and numbers (utf8proc categories L* and N*) with the combining marks that
// follow them, lowercased and put in Unicode normalization form C by utf8proc. Shared
// by retrieve's exact text channel and the per-fragment text index (text_index.h), which must
// count the same tokens.
#pragma once

#include <utf8proc.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace strata::store::internal {

inline bool IsWordCodepoint(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// A combining mark (Mn, Mc, Me): part of the token of the letter before it.
inline bool IsCombiningMark(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return true;
    default:
      return false;
  }
}

// `token` (valid UTF-8) in normalization form C, into `out`.
inline void ComposeNfc(const std::string& token, std::string* out) {
  utf8proc_uint8_t* composed =
      utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(token.c_str()));
  if (composed == nullptr) {  // out of memory: the token as it is
    *out = token;
    return;
  }
  out->assign(reinterpret_cast<const char*>(composed));
  std::free(composed);
}

inline void AppendCodepoint(utf8proc_int32_t c, std::string* out) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(c, buffer);
  out->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

// Calls on_token(std::string_view) for each token of `text` (TextTokens' definition), the
// view valid during the call. ASCII bytes take a shortcut around utf8proc: the only ASCII word
// codepoints are letters (Lu, Ll) and digits (Nd), utf8proc lowercases ASCII as tolower, and
// ASCII text is its own NFC. A token of lowercase ASCII letters and digits is passed as a view
// of `text`; others are built in a buffer, and composed (NFC) when they hold non-ASCII.
template <typename OnToken>
void ForEachToken(std::string_view text, OnToken&& on_token) {
  std::string built;
  std::string composed;
  bool in_token = false;
  bool building = false;   // the token is in `built`, not text[start, at)
  bool non_ascii = false;  // `built` holds a non-ASCII codepoint
  size_t start = 0;
  // Switches the token to the buffer (lowercasing or decoding needs its own bytes).
  auto build = [&](size_t at) {
    if (building) return;
    if (in_token) built.assign(text.substr(start, at - start));
    in_token = true;
    building = true;
  };
  auto end_token = [&](size_t at) {
    if (!in_token) return;
    if (non_ascii) {
      ComposeNfc(built, &composed);
      on_token(std::string_view(composed));
    } else {
      on_token(building ? std::string_view(built) : text.substr(start, at - start));
    }
    in_token = false;
    building = false;
    non_ascii = false;
    built.clear();
  };
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t at = 0;
  while (at < size) {
    const auto here = static_cast<size_t>(at);
    const utf8proc_uint8_t byte = bytes[at];
    if (byte < 0x80) {
      ++at;
      if ((byte >= 'a' && byte <= 'z') || (byte >= '0' && byte <= '9')) {
        if (!in_token) {
          in_token = true;
          start = here;
        } else if (building) {
          built += static_cast<char>(byte);
        }
      } else if (byte >= 'A' && byte <= 'Z') {
        build(here);
        built += static_cast<char>(byte - 'A' + 'a');
      } else {
        end_token(here);
      }
      continue;
    }
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t n = utf8proc_iterate(bytes + at, size - at, &c);
    if (n <= 0) {  // an invalid byte ends a token, like any separator
      n = 1;
      c = -1;
    }
    at += n;
    if (c >= 0 && (IsWordCodepoint(c) || (in_token && IsCombiningMark(c)))) {
      build(here);
      AppendCodepoint(utf8proc_tolower(c), &built);
      non_ascii = true;
    } else {
      end_token(here);
    }
  }
  end_token(text.size());
}

}  // namespace strata::store::internal
