// Buffer allocation (64-byte aligned heap blocks) and bitmap helpers; lives in io, the lowest
// layer that hands out Buffers (mmap reads), so every layer above can use it.
#include "strata/buffer.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <utility>

namespace strata {
namespace {

constexpr int64_t kAlignment = 64;

int64_t RoundUp(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

uint8_t* AlignedAlloc(int64_t size) {
  void* p =
      std::aligned_alloc(kAlignment, static_cast<size_t>(RoundUp(std::max<int64_t>(size, 1))));
  if (p == nullptr) throw std::bad_alloc();  // out of memory is not a recoverable Status
  return static_cast<uint8_t*>(p);
}

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};

// Wraps an aligned block in a shared owner.
std::shared_ptr<const void> OwnBlock(uint8_t* p) {
  return std::shared_ptr<uint8_t>(p, AlignedFree());
}

}  // namespace

Buffer Buffer::Copy(const void* data, int64_t size) {
  uint8_t* p = AlignedAlloc(size);
  if (size > 0) std::memcpy(p, data, size);
  std::memset(p + size, 0, RoundUp(std::max<int64_t>(size, 1)) - size);
  return {p, size, OwnBlock(p)};
}

Buffer Buffer::FromVector(std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return {owner->data(), static_cast<int64_t>(owner->size()), owner};
}

BufferBuilder::BufferBuilder(BufferBuilder&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

BufferBuilder& BufferBuilder::operator=(BufferBuilder&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

BufferBuilder::~BufferBuilder() { std::free(data_); }

void BufferBuilder::Reserve(int64_t additional) {
  int64_t needed = size_ + additional;
  if (needed <= capacity_) return;
  int64_t new_capacity = RoundUp(std::max<int64_t>(needed, capacity_ * 2));
  uint8_t* p = AlignedAlloc(new_capacity);
  // Bytes past size_ are left as they are: Resize zeroes what it grows into and Finish the
  // padding, so reserving never touches (and faults in) memory nobody writes.
  if (size_ > 0) std::memcpy(p, data_, size_);
  std::free(data_);
  data_ = p;
  capacity_ = new_capacity;
}

void BufferBuilder::Resize(int64_t size) {
  if (size > size_) {
    Reserve(size - size_);
    std::memset(data_ + size_, 0, size - size_);
  }
  size_ = size;
}

void BufferBuilder::ResizeForOverwrite(int64_t size) {
  if (size > size_) Reserve(size - size_);
  size_ = size;
}

void BufferBuilder::Append(const void* data, int64_t size) {
  if (size <= 0) return;
  Reserve(size);
  std::memcpy(data_ + size_, data, size);
  size_ += size;
}

void BufferBuilder::AppendZeros(int64_t size) { Resize(size_ + size); }

Buffer BufferBuilder::Finish() {
  if (data_ == nullptr) Reserve(0 + 1);
  // Zero the padding up to the next 64-byte boundary so padding bytes written to files are
  // deterministic (the rest of the capacity is never read).
  std::memset(data_ + size_, 0, std::min(capacity_, RoundUp(std::max<int64_t>(size_, 1))) - size_);
  Buffer out(data_, size_, OwnBlock(data_));
  data_ = nullptr;
  size_ = capacity_ = 0;
  return out;
}

void BufferBuilder::Reset() {
  std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

namespace bit_util {

int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length) {
  int64_t count = 0;
  int64_t i = offset;
  const int64_t end = offset + length;
  for (; i < end && (i & 7); ++i) count += GetBit(bits, i);
  for (; i + 64 <= end; i += 64) {
    uint64_t word;
    std::memcpy(&word, bits + (i >> 3), 8);
    count += std::popcount(word);
  }
  for (; i < end; ++i) count += GetBit(bits, i);
  return count;
}

Buffer CopyBitmap(const uint8_t* src, int64_t offset, int64_t length) {
  BufferBuilder out;
  out.Resize(BytesForBits(length));
  uint8_t* dst = out.mutable_data();
  if ((offset & 7) == 0) {
    std::memcpy(dst, src + (offset >> 3), BytesForBits(length));
    if (length & 7) dst[length >> 3] &= static_cast<uint8_t>((1u << (length & 7)) - 1);
  } else {
    for (int64_t i = 0; i < length; ++i) {
      if (GetBit(src, offset + i)) SetBit(dst, i);
    }
  }
  return out.Finish();
}

}  // namespace bit_util
}  // namespace strata
