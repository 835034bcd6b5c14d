// The full-text index of a context store: one inverted index per base-table fragment over its
// rows' text_payload, stored as an immutable index file of the base table (table.h
// "Secondary indexes"; format in docs/format/stores.md §5.5). It holds exactly what the BM25
// and overlap scorings read of a row — its token count and the count of each token — so
// Retrieve scores an indexed fragment without reading or tokenizing its text, with the same
// figures as the exact path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata::store {

// Index name, type and file extension in the base table.
inline constexpr std::string_view kTextIndexName = "text_payload_bm25";
inline constexpr std::string_view kTextIndexType = "inverted";
inline constexpr std::string_view kTextIndexExtension = "bm25";

class FragmentTextIndex {
 public:
  // One row of a token's posting list: the row's offset in the fragment and how many times
  // the token occurs in its text.
  struct Posting {
    uint32_t offset = 0;
    uint32_t count = 0;
  };

  // Collects a fragment's rows (any order, each offset once) and builds the index.
  class Builder {
   public:
    // Row `offset`'s text, tokenized as TextTokens; nullopt: the row has no text_payload.
    void Add(uint32_t offset, std::optional<std::string_view> text);
    Result<std::unique_ptr<FragmentTextIndex>> Finish() &&;

   private:
    std::vector<std::pair<uint32_t, uint32_t>> lengths_;  // (offset, tokens)
    std::map<std::string, std::vector<Posting>, std::less<>> postings_;
    std::vector<std::string> row_tokens_;  // scratch
  };

  // The index file's bytes and back. Corruption for bytes that fail their checksum or any
  // structural check (sorted distinct terms, postings in offset order within the row range,
  // every row's counts summing to its length); NotSupported for another format version.
  std::string Serialize() const;
  static Result<std::unique_ptr<FragmentTextIndex>> Deserialize(std::string_view bytes);

  // The postings of `token` (a token as TextTokens gives it), in offset order; empty when no
  // row has it.
  std::span<const Posting> Lookup(std::string_view token) const;
  // Tokens in row `offset`'s text (0 without text, or for an offset the index does not cover).
  uint32_t length(uint32_t offset) const { return offset < lengths_.size() ? lengths_[offset] : 0; }
  // One past the largest offset covered.
  size_t rows() const { return lengths_.size(); }
  size_t terms() const { return terms_.size(); }
  int64_t memory_bytes() const;

 private:
  FragmentTextIndex() = default;

  std::vector<uint32_t> lengths_;  // by offset
  std::string term_bytes_;         // the terms, sorted, one after another
  struct Term {
    uint32_t begin = 0;  // in term_bytes_
    uint32_t size = 0;
    uint64_t first_posting = 0;
    uint64_t postings = 0;
  };
  std::vector<Term> terms_;
  std::vector<Posting> postings_;  // grouped by term, in term order
};

}  // namespace strata::store
