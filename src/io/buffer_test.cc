// BufferBuilder: contents survive growth, Resize zero-fills what it grows into, Finish
// leaves the padding up to the 64-byte boundary zeroed.
#include "strata/buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace strata {
namespace {

TEST(BufferBuilderTest, ReserveKeepsContentsAndSize) {
  BufferBuilder b;
  b.Append("abc", 3);
  b.Reserve(1 << 20);
  EXPECT_EQ(b.size(), 3);
  EXPECT_GE(b.capacity(), 3 + (1 << 20));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 3), "abc");
}

TEST(BufferBuilderTest, ResizeZeroFillsWhatItGrowsIntoEvenAfterAShrink) {
  BufferBuilder b;
  std::string ones(300, '\xff');
  b.Append(ones.data(), static_cast<int64_t>(ones.size()));
  b.Resize(10);
  b.Resize(300);  // the bytes 10..299 held 0xff before the shrink
  for (int64_t i = 10; i < 300; ++i) ASSERT_EQ(b.data()[i], 0) << i;
  for (int64_t i = 0; i < 10; ++i) ASSERT_EQ(b.data()[i], 0xff) << i;
  b.Reserve(int64_t{1} << 20);  // growth by Reserve, then Resize into it
  b.Resize(5000);
  for (int64_t i = 300; i < 5000; ++i) ASSERT_EQ(b.data()[i], 0) << i;
}

TEST(BufferBuilderTest, ResizeForOverwriteKeepsWrittenBytesAndSetsTheSize) {
  BufferBuilder b;
  b.Append("xyz", 3);
  b.ResizeForOverwrite(1000);
  EXPECT_EQ(b.size(), 1000);
  EXPECT_EQ(std::memcmp(b.data(), "xyz", 3), 0);
  std::memset(b.mutable_data() + 3, 'q', 997);
  b.ResizeForOverwrite(500);  // shrinking drops the tail
  Buffer out = b.Finish();
  ASSERT_EQ(out.size(), 500);
  EXPECT_EQ(out.view().substr(0, 4), "xyzq");
  EXPECT_EQ(out.view().substr(496), "qqqq");
}

TEST(BufferBuilderTest, FinishZeroesThePaddingToTheNext64Bytes) {
  for (int64_t size : {1, 3, 63, 64, 65, 1000, 70000}) {
    SCOPED_TRACE(size);
    BufferBuilder b;
    std::string ones(static_cast<size_t>(size) + 200, '\xff');
    b.Append(ones.data(), static_cast<int64_t>(ones.size()));  // dirty bytes past `size`
    b.Resize(size);
    Buffer out = b.Finish();
    ASSERT_EQ(out.size(), size);
    const int64_t padded = (size + 63) / 64 * 64;
    for (int64_t i = size; i < padded; ++i) ASSERT_EQ(out.data()[i], 0) << i;
  }
  BufferBuilder empty;
  EXPECT_EQ(empty.Finish().size(), 0);
}

}  // namespace
}  // namespace strata
