// The per-fragment text index (text_index.h): its postings and lengths against counts made
// here from TextTokens, its file round trip, and its reader's refusal of damaged files.
#include "store/text_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "strata/context_store.h"
#include "support/status_assertions.h"
#include "util/envelope.h"
#include "util/little_endian.h"

namespace strata::store {
namespace {

// A corpus of texts with mixed case, non-ASCII words, punctuation, an invalid byte, empty
// texts and rows without text, at offsets with gaps, added in shuffled order.
struct Corpus {
  std::map<uint32_t, std::optional<std::string>> rows;
};

Corpus MakeCorpus(uint32_t seed, int rows) {
  const std::vector<std::string> words = {"alpha", "Beta", "gamma", "DELTA", "école", "Über",
                                          "東京",  "x1",   "beta",  "naïve", "42",    "ÉCOLE"};
  std::mt19937 rng(seed);
  Corpus corpus;
  uint32_t offset = 0;
  for (int i = 0; i < rows; ++i) {
    offset += 1 + rng() % 3;
    std::optional<std::string> text;
    const int kind = static_cast<int>(rng() % 10);
    if (kind == 0) {
      text = std::nullopt;
    } else if (kind == 1) {
      text = "";
    } else {
      text = std::string();
      for (int w = static_cast<int>(rng() % 12); w >= 0; --w) {
        *text += words[rng() % words.size()];
        *text += rng() % 5 == 0 ? ", " : (rng() % 7 == 0 ? "\xff" : " ");
      }
    }
    corpus.rows.emplace(offset, std::move(text));
  }
  return corpus;
}

Result<std::unique_ptr<FragmentTextIndex>> Build(const Corpus& corpus, uint32_t seed) {
  std::vector<std::pair<uint32_t, std::optional<std::string>>> order(corpus.rows.begin(),
                                                                     corpus.rows.end());
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  FragmentTextIndex::Builder builder;
  for (const auto& [offset, text] : order) {
    builder.Add(offset, text ? std::optional<std::string_view>(*text) : std::nullopt);
  }
  return std::move(builder).Finish();
}

// The index says exactly what TextTokens says of every row.
void ExpectMatches(const FragmentTextIndex& index, const Corpus& corpus) {
  std::map<std::string, std::map<uint32_t, uint32_t>> want;  // token -> offset -> count
  uint32_t end = 0;
  for (const auto& [offset, text] : corpus.rows) {
    end = offset + 1;
    const std::vector<std::string> tokens = text ? TextTokens(*text) : std::vector<std::string>();
    EXPECT_EQ(index.length(offset), tokens.size()) << offset;
    for (const std::string& t : tokens) ++want[t][offset];
  }
  EXPECT_EQ(index.rows(), end);
  EXPECT_EQ(index.terms(), want.size());
  for (const auto& [token, counts] : want) {
    std::map<uint32_t, uint32_t> got;
    uint32_t previous = 0;
    bool first = true;
    for (const FragmentTextIndex::Posting& p : index.Lookup(token)) {
      EXPECT_TRUE(first || p.offset > previous) << token;
      first = false;
      previous = p.offset;
      got[p.offset] = p.count;
    }
    EXPECT_EQ(got, counts) << token;
  }
  EXPECT_TRUE(index.Lookup("absent").empty());
  EXPECT_TRUE(index.Lookup("").empty());
  EXPECT_TRUE(index.Lookup("Beta").empty());  // tokens are lowercase
  EXPECT_EQ(index.length(end + 5), 0u);
}

TEST(FragmentTextIndexTest, PostingsAndLengthsAreTheTokenizersCounts) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    const Corpus corpus = MakeCorpus(seed, 300);
    ASSERT_OK_AND_ASSIGN(auto index, Build(corpus, seed));
    ExpectMatches(*index, corpus);
  }
}

TEST(FragmentTextIndexTest, FileRoundTripIsExactAndStable) {
  const Corpus corpus = MakeCorpus(9, 200);
  ASSERT_OK_AND_ASSIGN(auto index, Build(corpus, 9));
  const std::string bytes = index->Serialize();
  ASSERT_OK_AND_ASSIGN(auto read, FragmentTextIndex::Deserialize(bytes));
  ExpectMatches(*read, corpus);
  EXPECT_EQ(read->Serialize(), bytes);
  // The insertion order does not change the file.
  ASSERT_OK_AND_ASSIGN(auto again, Build(corpus, 10));
  EXPECT_EQ(again->Serialize(), bytes);
  // An empty fragment is a valid index.
  ASSERT_OK_AND_ASSIGN(auto empty, FragmentTextIndex::Builder().Finish());
  ASSERT_OK_AND_ASSIGN(auto empty_read, FragmentTextIndex::Deserialize(empty->Serialize()));
  EXPECT_EQ(empty_read->rows(), 0u);
  EXPECT_TRUE(empty_read->Lookup("alpha").empty());
}

TEST(FragmentTextIndexTest, AnOffsetAddedTwiceIsRefused) {
  FragmentTextIndex::Builder builder;
  builder.Add(3, "a b");
  builder.Add(3, "c");
  EXPECT_EQ(std::move(builder).Finish().status().code(), StatusCode::kInvalidArgument);
}

TEST(FragmentTextIndexTest, EveryDamagedByteIsCorruption) {
  FragmentTextIndex::Builder builder;
  builder.Add(0, "alpha beta alpha");
  builder.Add(2, "Gamma");
  ASSERT_OK_AND_ASSIGN(auto index, std::move(builder).Finish());
  const std::string bytes = index->Serialize();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    EXPECT_EQ(FragmentTextIndex::Deserialize(damaged).status().code(), StatusCode::kCorruption)
        << "byte " << i;
  }
  EXPECT_EQ(FragmentTextIndex::Deserialize(bytes.substr(0, bytes.size() - 1)).status().code(),
            StatusCode::kCorruption);
}

// Payloads with a valid checksum that break the format's structure.
class PayloadBuilder {
 public:
  PayloadBuilder& Header(uint32_t version, uint64_t rows, uint64_t terms, uint64_t postings) {
    PutFixed32(&bytes_, version);
    PutFixed32(&bytes_, 0);
    PutFixed64(&bytes_, rows);
    PutFixed64(&bytes_, terms);
    PutFixed64(&bytes_, postings);
    return *this;
  }
  PayloadBuilder& U32(uint32_t v) {
    PutFixed32(&bytes_, v);
    return *this;
  }
  PayloadBuilder& Text(std::string_view text) {
    bytes_ += text;
    return *this;
  }
  std::string File() const { return EncodeEnvelope("BM25", bytes_); }

 private:
  std::string bytes_;
};

TEST(FragmentTextIndexTest, StructuralDamageUnderAValidChecksumIsRefused) {
  // Two rows (lengths 2, 1), terms "a" (row 0 x2) and "b" (row 1 x1): valid.
  auto valid = [] {
    return PayloadBuilder().Header(1, 2, 2, 2).U32(2).U32(1).U32(1).U32(1).U32(1).U32(1).Text("ab");
  };
  ASSERT_OK_AND_ASSIGN(auto index,
                       FragmentTextIndex::Deserialize(valid().U32(0).U32(2).U32(1).U32(1).File()));
  EXPECT_EQ(index->Lookup("a").size(), 1u);
  EXPECT_EQ(index->length(0), 2u);

  auto code = [](const std::string& file) {
    return FragmentTextIndex::Deserialize(file).status().code();
  };
  EXPECT_EQ(code(PayloadBuilder().Header(2, 0, 0, 0).File()), StatusCode::kNotSupported);
  EXPECT_EQ(code(PayloadBuilder().U32(1).File()), StatusCode::kCorruption);  // short header
  // Sections longer than the file (no allocation of the claimed size).
  EXPECT_EQ(code(PayloadBuilder().Header(1, 1ull << 40, 0, 0).File()), StatusCode::kCorruption);
  EXPECT_EQ(code(PayloadBuilder().Header(1, 0, 1ull << 60, 0).File()), StatusCode::kCorruption);
  // Terms out of order.
  EXPECT_EQ(code(PayloadBuilder()
                     .Header(1, 2, 2, 2)
                     .U32(2)
                     .U32(1)
                     .U32(1)
                     .U32(1)
                     .U32(1)
                     .U32(1)
                     .Text("ba")
                     .U32(0)
                     .U32(2)
                     .U32(1)
                     .U32(1)
                     .File()),
            StatusCode::kCorruption);
  // A posting past the rows, a zero count, counts not summing to a row's length.
  EXPECT_EQ(code(valid().U32(0).U32(2).U32(2).U32(1).File()), StatusCode::kCorruption);
  EXPECT_EQ(code(valid().U32(0).U32(2).U32(1).U32(0).File()), StatusCode::kCorruption);
  EXPECT_EQ(code(valid().U32(0).U32(1).U32(1).U32(1).File()), StatusCode::kCorruption);
  // Trailing bytes, missing postings, a posting count differing from the header.
  EXPECT_EQ(code(valid().U32(0).U32(2).U32(1).U32(1).U32(0).File()), StatusCode::kCorruption);
  EXPECT_EQ(code(valid().U32(0).U32(2).File()), StatusCode::kCorruption);
  EXPECT_EQ(code(PayloadBuilder().Header(1, 1, 1, 2).U32(1).U32(1).U32(1).Text("a").File()),
            StatusCode::kCorruption);
}

// Random payload damage re-wrapped in a valid envelope: the reader refuses it or returns an
// index whose own file reads back the same (never a crash or an inconsistent index).
TEST(FragmentTextIndexTest, RandomlyDamagedPayloadsAreRefusedOrConsistent) {
  const Corpus corpus = MakeCorpus(4, 40);
  ASSERT_OK_AND_ASSIGN(auto index, Build(corpus, 4));
  const std::string file = index->Serialize();
  // The payload sits between the envelope's 24-byte header and its 8-byte checksum.
  const std::string payload = file.substr(24, file.size() - 32);
  std::mt19937 rng(77);
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = payload;
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      damaged[rng() % damaged.size()] = static_cast<char>(rng());
    }
    if (rng() % 4 == 0) damaged.resize(rng() % damaged.size());
    auto read = FragmentTextIndex::Deserialize(EncodeEnvelope("BM25", damaged));
    if (!read.ok()) {
      EXPECT_TRUE(read.status().code() == StatusCode::kCorruption ||
                  read.status().code() == StatusCode::kNotSupported)
          << read.status();
      continue;
    }
    ++accepted;
    ASSERT_OK_AND_ASSIGN(auto again, FragmentTextIndex::Deserialize((*read)->Serialize()));
    EXPECT_EQ(again->Serialize(), (*read)->Serialize());
  }
  EXPECT_LT(accepted, 2000);
}

}  // namespace
}  // namespace strata::store
