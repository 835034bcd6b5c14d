// The per-fragment inverted index of text_payload tokens (text_index.h; format in
// docs/format/stores.md §5.5).
#include "store/text_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "store/text_tokens.h"
#include "util/envelope.h"
#include "util/little_endian.h"

namespace strata::store {
namespace {

constexpr std::string_view kEnvelopeKind = "BM25";
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 32;  // version, reserved, rows, terms, postings
constexpr size_t kTermEntryBytes = 8;
constexpr size_t kPostingBytes = 8;

Status Corrupt(std::string_view what) {
  return Status::Corruption(fmt::format("text index file: {}", what));
}

}  // namespace

void FragmentTextIndex::Builder::Add(uint32_t offset, std::optional<std::string_view> text) {
  row_tokens_.clear();
  if (text) {
    internal::ForEachToken(*text, [&](std::string_view token) { row_tokens_.emplace_back(token); });
  }
  lengths_.emplace_back(offset, static_cast<uint32_t>(row_tokens_.size()));
  std::sort(row_tokens_.begin(), row_tokens_.end());
  for (size_t i = 0; i < row_tokens_.size();) {
    size_t j = i + 1;
    while (j < row_tokens_.size() && row_tokens_[j] == row_tokens_[i]) ++j;
    auto it = postings_.find(row_tokens_[i]);
    if (it == postings_.end()) it = postings_.emplace(row_tokens_[i], std::vector<Posting>()).first;
    it->second.push_back(Posting{offset, static_cast<uint32_t>(j - i)});
    i = j;
  }
}

Result<std::unique_ptr<FragmentTextIndex>> FragmentTextIndex::Builder::Finish() && {
  std::unique_ptr<FragmentTextIndex> index(new FragmentTextIndex());
  uint32_t rows = 0;
  for (const auto& [offset, length] : lengths_) {
    if (offset == std::numeric_limits<uint32_t>::max()) {
      return Status::InvalidArgument("text index: row offset out of range");
    }
    rows = std::max(rows, offset + 1);
  }
  index->lengths_.assign(rows, 0);
  std::vector<bool> seen(rows, false);
  for (const auto& [offset, length] : lengths_) {
    if (seen[offset]) {
      return Status::InvalidArgument(fmt::format("text index: row offset {} added twice", offset));
    }
    seen[offset] = true;
    index->lengths_[offset] = length;
  }
  for (auto& [term, postings] : postings_) {
    if (index->term_bytes_.size() + term.size() > std::numeric_limits<uint32_t>::max()) {
      return Status::InvalidArgument("text index: the fragment's terms exceed 4 GiB");
    }
    std::sort(postings.begin(), postings.end(),
              [](const Posting& a, const Posting& b) { return a.offset < b.offset; });
    Term t;
    t.begin = static_cast<uint32_t>(index->term_bytes_.size());
    t.size = static_cast<uint32_t>(term.size());
    t.first_posting = index->postings_.size();
    t.postings = postings.size();
    index->term_bytes_ += term;
    index->terms_.push_back(t);
    index->postings_.insert(index->postings_.end(), postings.begin(), postings.end());
  }
  return index;
}

std::string FragmentTextIndex::Serialize() const {
  std::string payload;
  payload.reserve(kHeaderBytes + lengths_.size() * 4 + terms_.size() * kTermEntryBytes +
                  term_bytes_.size() + postings_.size() * kPostingBytes);
  PutFixed32(&payload, kFormatVersion);
  PutFixed32(&payload, 0);
  PutFixed64(&payload, lengths_.size());
  PutFixed64(&payload, terms_.size());
  PutFixed64(&payload, postings_.size());
  for (uint32_t length : lengths_) PutFixed32(&payload, length);
  for (const Term& t : terms_) {
    PutFixed32(&payload, t.size);
    PutFixed32(&payload, static_cast<uint32_t>(t.postings));
  }
  payload += term_bytes_;
  for (const Posting& p : postings_) {
    PutFixed32(&payload, p.offset);
    PutFixed32(&payload, p.count);
  }
  return EncodeEnvelope(kEnvelopeKind, payload);
}

Result<std::unique_ptr<FragmentTextIndex>> FragmentTextIndex::Deserialize(std::string_view bytes) {
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kEnvelopeKind, bytes, "text index file"));
  if (payload.size() < kHeaderBytes) return Corrupt("shorter than its header");
  const uint32_t version = DecodeFixed32(payload.data());
  if (version != kFormatVersion) {
    return Status::NotSupported(fmt::format(
        "text index file: format version {} (this build reads {})", version, kFormatVersion));
  }
  const uint64_t rows = DecodeFixed64(payload.data() + 8);
  const uint64_t terms = DecodeFixed64(payload.data() + 16);
  const uint64_t postings = DecodeFixed64(payload.data() + 24);
  // Each section's size, checked against what is left before it is allocated.
  size_t at = kHeaderBytes;
  auto take = [&](uint64_t count, size_t unit, std::string_view what) -> Result<size_t> {
    const size_t left = payload.size() - at;
    if (count > left / unit) return Corrupt(fmt::format("{} run past the end", what));
    const size_t begin = at;
    at += static_cast<size_t>(count) * unit;
    return begin;
  };
  if (rows > std::numeric_limits<uint32_t>::max()) return Corrupt("more rows than offsets");
  STRATA_ASSIGN_OR_RETURN(size_t lengths_at, take(rows, 4, "row lengths"));
  STRATA_ASSIGN_OR_RETURN(size_t terms_at, take(terms, kTermEntryBytes, "term entries"));
  std::unique_ptr<FragmentTextIndex> index(new FragmentTextIndex());
  index->lengths_.resize(static_cast<size_t>(rows));
  for (size_t r = 0; r < rows; ++r)
    index->lengths_[r] = DecodeFixed32(payload.data() + lengths_at + 4 * r);
  index->terms_.resize(static_cast<size_t>(terms));
  uint64_t term_bytes = 0;
  uint64_t total_postings = 0;
  for (size_t t = 0; t < terms; ++t) {
    const char* entry = payload.data() + terms_at + kTermEntryBytes * t;
    Term& term = index->terms_[t];
    term.size = DecodeFixed32(entry);
    term.postings = DecodeFixed32(entry + 4);
    if (term.size == 0 || term.postings == 0) return Corrupt("an empty term or posting list");
    term.begin = static_cast<uint32_t>(term_bytes);
    term.first_posting = total_postings;
    term_bytes += term.size;
    total_postings += term.postings;
    if (term_bytes > std::numeric_limits<uint32_t>::max()) return Corrupt("terms exceed 4 GiB");
  }
  if (total_postings != postings) return Corrupt("posting counts differ from the header");
  STRATA_ASSIGN_OR_RETURN(size_t bytes_at, take(term_bytes, 1, "terms"));
  STRATA_ASSIGN_OR_RETURN(size_t postings_at, take(postings, kPostingBytes, "postings"));
  if (at != payload.size()) return Corrupt("bytes after the postings");
  index->term_bytes_.assign(payload.substr(bytes_at, static_cast<size_t>(term_bytes)));
  index->postings_.resize(static_cast<size_t>(postings));
  for (size_t p = 0; p < postings; ++p) {
    const char* entry = payload.data() + postings_at + kPostingBytes * p;
    index->postings_[p] = Posting{DecodeFixed32(entry), DecodeFixed32(entry + 4)};
  }
  // Structure: terms strictly ascending; each list in strictly ascending offsets within the
  // rows; every row's counts summing to its length.
  std::vector<uint64_t> counted(static_cast<size_t>(rows), 0);
  std::string_view previous;
  for (size_t t = 0; t < terms; ++t) {
    const Term& term = index->terms_[t];
    const std::string_view text(index->term_bytes_.data() + term.begin, term.size);
    if (t > 0 && !(previous < text)) return Corrupt("terms out of order");
    previous = text;
    for (uint64_t p = 0; p < term.postings; ++p) {
      const Posting& posting = index->postings_[term.first_posting + p];
      if (posting.offset >= rows || posting.count == 0 ||
          (p > 0 && posting.offset <= index->postings_[term.first_posting + p - 1].offset)) {
        return Corrupt("a posting list out of order or out of range");
      }
      counted[posting.offset] += posting.count;
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    if (counted[r] != index->lengths_[r]) return Corrupt("a row's counts differ from its length");
  }
  return index;
}

std::span<const FragmentTextIndex::Posting> FragmentTextIndex::Lookup(
    std::string_view token) const {
  auto text = [&](const Term& t) { return std::string_view(term_bytes_.data() + t.begin, t.size); };
  auto it = std::lower_bound(terms_.begin(), terms_.end(), token,
                             [&](const Term& t, std::string_view want) { return text(t) < want; });
  if (it == terms_.end() || text(*it) != token) return {};
  return std::span<const Posting>(postings_.data() + it->first_posting,
                                  static_cast<size_t>(it->postings));
}

int64_t FragmentTextIndex::memory_bytes() const {
  return static_cast<int64_t>(lengths_.capacity() * sizeof(uint32_t) + term_bytes_.capacity() +
                              terms_.capacity() * sizeof(Term) +
                              postings_.capacity() * sizeof(Posting));
}

}  // namespace strata::store
