// Body-buffer compression: decoders keep one context per thread, so a failed or unfinished
// decode must leave nothing behind that changes the next buffer's result, on any thread.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "columnar/ipc_internal.h"
#include "strata/ipc.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::ipc::internal {
namespace {

// Compressible but not trivial bytes: words from a small vocabulary, chosen at random.
std::string CompressibleBytes(size_t size, uint64_t seed) {
  static const char* const kWords[] = {"alpha ", "beta ", "gamma ", "delta ", "epsilon ",
                                       "zeta ",  "eta ",  "theta ", "iota ",  "kappa "};
  std::mt19937_64 rng(seed);
  std::string out;
  while (out.size() < size) out += kWords[rng() % 10];
  out.resize(size);
  return out;
}

Result<Buffer> Decompress(Compression codec, const Buffer& stored) {
  int64_t budget = std::numeric_limits<int64_t>::max();
  return DecompressBuffer(codec, stored, &budget, "test buffer");
}

// Replaces the compressed bytes after the 8-byte length prefix, keeping the declared length.
Buffer WithPayload(const Buffer& stored, std::string payload) {
  std::string bytes(stored.view().substr(0, 8));
  bytes += payload;
  return Buffer::Copy(bytes);
}

class IpcCompressionTest : public ::testing::TestWithParam<Compression> {};

TEST_P(IpcCompressionTest, BadBufferDoesNotChangeTheNextDecodeOnTheSameThread) {
  const Compression codec = GetParam();
  // Several LZ4 blocks (64 KiB each), so a truncated frame stops in the middle of one.
  const std::string raw = CompressibleBytes(300 << 10, 7);
  ASSERT_OK_AND_ASSIGN(Buffer stored, CompressBuffer(codec, 3, Buffer::Copy(raw)));
  ASSERT_LT(stored.size(), static_cast<int64_t>(raw.size()));  // really compressed
  const std::string payload(stored.view().substr(8));

  std::vector<Buffer> bad;
  bad.push_back(WithPayload(stored, payload.substr(0, payload.size() / 2)));  // truncated
  std::string flipped = payload;
  for (size_t i = 16; i < flipped.size(); i += 97) flipped[i] = static_cast<char>(~flipped[i]);
  bad.push_back(WithPayload(stored, flipped));
  std::string garbage_tail = payload.substr(0, payload.size() / 3);
  garbage_tail += CompressibleBytes(payload.size(), 8);
  bad.push_back(WithPayload(stored, garbage_tail));

  int failures = 0;
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    Result<Buffer> out = Decompress(codec, bad[i]);
    if (!out.ok()) {
      ++failures;
      EXPECT_EQ(out.status().code(), StatusCode::kCorruption) << out.status();
    }
    // Whatever the bad buffer did to this thread's context, the good one decodes exactly.
    ASSERT_OK_AND_ASSIGN(Buffer good, Decompress(codec, stored));
    EXPECT_EQ(good.view(), raw);
  }
  EXPECT_GE(failures, 1);  // the cases really exercised a failed decode
}

TEST_P(IpcCompressionTest, BuffersOfManySizesRoundTripOnSeveralThreads) {
  const Compression codec = GetParam();
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::vector<std::string> raws;
  std::vector<Buffer> stored;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 24; ++i) {
    const size_t size = 1 + rng() % (i % 3 == 0 ? 400000 : 5000);
    raws.push_back(CompressibleBytes(size, rng()));
    ASSERT_OK_AND_ASSIGN(Buffer s, CompressBuffer(codec, 1 + i % 5, Buffer::Copy(raws.back())));
    stored.push_back(s);
  }
  std::vector<int> mismatches(3, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 4; ++round) {
        for (size_t k = 0; k < stored.size(); ++k) {
          const size_t i = (k * (t + 1) + round) % stored.size();
          Result<Buffer> out = Decompress(codec, stored[i]);
          if (!out.ok() || out->view() != raws[i]) ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 3; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// A buffer that shrinks by less than min_space_savings is stored raw (prefix -1), so reads skip
// its decompression; with 0 any gain keeps it compressed.
TEST_P(IpcCompressionTest, BuffersThatBarelyShrinkAreStoredRaw) {
  const Compression codec = GetParam();
  // Float32 values uniform in [-1, 1): the exponent bytes repeat, the mantissas do not.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> floats(64 << 10);
  for (float& f : floats) f = uniform(rng);
  const Buffer raw = Buffer::Copy(
      std::string_view(reinterpret_cast<const char*>(floats.data()), floats.size() * 4));
  ASSERT_OK_AND_ASSIGN(Buffer any_gain, CompressBuffer(codec, 1, raw, 0.0));
  ASSERT_OK_AND_ASSIGN(Buffer tenth, CompressBuffer(codec, 1, raw, 0.1));
  int64_t prefix = 0;
  std::memcpy(&prefix, tenth.data(), 8);
  EXPECT_EQ(prefix, -1) << "stored compressed: " << tenth.size() << " of " << raw.size();
  EXPECT_EQ(tenth.size(), raw.size() + 8);
  ASSERT_OK_AND_ASSIGN(Buffer back, Decompress(codec, tenth));
  EXPECT_EQ(back.view(), raw.view());
  ASSERT_OK_AND_ASSIGN(back, Decompress(codec, any_gain));
  EXPECT_EQ(back.view(), raw.view());
  // Text that compresses well stays compressed under the threshold.
  const Buffer text = Buffer::Copy(CompressibleBytes(64 << 10, 3));
  ASSERT_OK_AND_ASSIGN(Buffer packed, CompressBuffer(codec, 1, text, 0.1));
  std::memcpy(&prefix, packed.data(), 8);
  EXPECT_EQ(prefix, text.size());
  EXPECT_LT(packed.size(), text.size() / 2);
}

// Buffers under min_compressed_bytes are stored raw however well they would compress; the
// threshold is exclusive.
TEST_P(IpcCompressionTest, BuffersUnderTheMinimumSizeAreStoredRaw) {
  const Compression codec = GetParam();
  const Buffer text = Buffer::Copy(CompressibleBytes(4096, 5));
  int64_t prefix = 0;
  ASSERT_OK_AND_ASSIGN(Buffer small, CompressBuffer(codec, 1, text, 0.1, 4097));
  std::memcpy(&prefix, small.data(), 8);
  EXPECT_EQ(prefix, -1);
  EXPECT_EQ(small.view().substr(8), text.view());
  ASSERT_OK_AND_ASSIGN(Buffer back, Decompress(codec, small));
  EXPECT_EQ(back.view(), text.view());
  ASSERT_OK_AND_ASSIGN(Buffer at_minimum, CompressBuffer(codec, 1, text, 0.1, 4096));
  std::memcpy(&prefix, at_minimum.data(), 8);
  EXPECT_EQ(prefix, 4096);
  EXPECT_LT(at_minimum.size(), text.size() / 2);
}

INSTANTIATE_TEST_SUITE_P(Codecs, IpcCompressionTest,
                         ::testing::Values(Compression::kLz4Frame, Compression::kZstd),
                         [](const ::testing::TestParamInfo<Compression>& info) {
                           return std::string(info.param == Compression::kZstd ? "Zstd" : "Lz4");
                         });

}  // namespace
}  // namespace strata::ipc::internal
