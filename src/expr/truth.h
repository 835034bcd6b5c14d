// Truth: the per-row result of a predicate as two bitmaps of 64-bit words, `is_true` and
// `is_false`; a row in neither is NULL. Kleene logic is then word-wise: AND is
// (t1 & t2, f1 | f2), OR is (t1 | t2, f1 & f2), NOT swaps the two. Bits past `length` are zero.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "strata/array.h"

namespace strata::expr::internal {

static_assert(std::endian::native == std::endian::little,
              "bitmap words are read as little-endian (Arrow's LSB bit order)");

inline int64_t WordCount(int64_t bits) { return (bits + 63) / 64; }

// Ones for the valid bit positions of the last word of a `bits`-long bitmap.
inline uint64_t TailMask(int64_t bits) {
  const int64_t used = bits % 64;
  return used == 0 ? ~uint64_t{0} : (uint64_t{1} << used) - 1;
}

// `count` (1..64) bits of `bits` starting at bit `start`, in the low bits of a word. Reads no
// byte past the one holding bit start + count - 1.
inline uint64_t LoadBits(const uint8_t* bits, int64_t start, int64_t count) {
  const uint8_t* p = bits + (start >> 3);
  const int shift = static_cast<int>(start & 7);
  const int64_t bytes = (shift + count + 7) >> 3;  // 1..9
  uint64_t word = 0;
  std::memcpy(&word, p, static_cast<size_t>(bytes < 8 ? bytes : 8));
  word >>= shift;
  if (bytes > 8) word |= static_cast<uint64_t>(p[8]) << (64 - shift);
  if (count < 64) word &= (uint64_t{1} << count) - 1;
  return word;
}

// Sets out[w] from pred(i) for rows i of word w, for n rows; the tail of the last word is 0.
template <typename Pred>
void FillWords(int64_t n, uint64_t* out, Pred&& pred) {
  const int64_t full = n / 64;
  for (int64_t w = 0; w < full; ++w) {
    const int64_t base = w * 64;
    uint64_t word = 0;
    for (int j = 0; j < 64; ++j) word |= static_cast<uint64_t>(pred(base + j)) << j;
    out[w] = word;
  }
  if (n % 64 != 0) {
    const int64_t base = full * 64;
    uint64_t word = 0;
    for (int64_t j = 0; base + j < n; ++j) word |= static_cast<uint64_t>(pred(base + j)) << j;
    out[full] = word;
  }
}

struct Truth {
  int64_t length = 0;
  std::vector<uint64_t> is_true;
  std::vector<uint64_t> is_false;

  Truth() = default;
  explicit Truth(int64_t n) : length(n), is_true(WordCount(n)), is_false(WordCount(n)) {}

  // Every row TRUE (value true), FALSE (false) or NULL (std::nullopt).
  static Truth Constant(int64_t n, std::optional<bool> value) {
    Truth t(n);
    if (value.has_value()) {
      std::vector<uint64_t>& words = *value ? t.is_true : t.is_false;
      std::fill(words.begin(), words.end(), ~uint64_t{0});
      if (!words.empty()) words.back() &= TailMask(n);
    }
    return t;
  }

  // TRUE where cond is set, FALSE where not, NULL where `valid` is clear (empty: all valid).
  static Truth FromCondition(int64_t n, const std::vector<uint64_t>& cond,
                             const std::vector<uint64_t>& valid) {
    Truth t(n);
    const int64_t words = WordCount(n);
    for (int64_t w = 0; w < words; ++w) {
      const uint64_t v =
          (valid.empty() ? ~uint64_t{0} : valid[w]) & (w + 1 == words ? TailMask(n) : ~uint64_t{0});
      t.is_true[w] = cond[w] & v;
      t.is_false[w] = ~cond[w] & v;
    }
    return t;
  }

  bool GetTrue(int64_t i) const { return (is_true[i >> 6] >> (i & 63)) & 1; }
  bool GetFalse(int64_t i) const { return (is_false[i >> 6] >> (i & 63)) & 1; }
};

// The validity of `array`'s rows as words (bit set = valid), or an empty vector when it has
// no nulls. Dictionary arrays: the validity of the indices only.
std::vector<uint64_t> ValidityWords(const Array& array);

}  // namespace strata::expr::internal
