// Buffer: an immutable, shared, contiguous byte range; BufferBuilder grows one.
//
// A Buffer does not own memory directly: it points into memory kept alive by a shared
// owner (a heap block, an mmap'd file, a decompressed block, ...). Copies are cheap and
// share the owner. An empty Buffer (data() == nullptr) stands for an absent buffer, e.g. a
// validity bitmap of an array without nulls. Thread safety: immutable, safe to share.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace strata {

class Buffer {
 public:
  Buffer() = default;
  Buffer(const uint8_t* data, int64_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}

  // A new 64-byte aligned heap copy.
  static Buffer Copy(const void* data, int64_t size);
  static Buffer Copy(std::string_view bytes) { return Copy(bytes.data(), bytes.size()); }
  static Buffer FromVector(std::vector<uint8_t> bytes);
  // Points at memory the caller keeps alive for the Buffer's lifetime (e.g. static data).
  static Buffer Unowned(const void* data, int64_t size) {
    return {static_cast<const uint8_t*>(data), size, nullptr};
  }

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool is_null() const { return data_ == nullptr; }
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data_);
  }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(data_), static_cast<size_t>(size_)};
  }

  // REQUIRES: 0 <= offset <= offset + length <= size().
  Buffer Slice(int64_t offset, int64_t length) const { return {data_ + offset, length, owner_}; }

  bool Equals(const Buffer& other) const {
    return size_ == other.size_ && (size_ == 0 || std::memcmp(data_, other.data_, size_) == 0);
  }

 private:
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

// Appends bytes into 64-byte aligned, zero-padded memory; Finish() hands it to a Buffer.
// Not thread safe.
class BufferBuilder {
 public:
  BufferBuilder() = default;
  BufferBuilder(const BufferBuilder&) = delete;
  BufferBuilder& operator=(const BufferBuilder&) = delete;
  BufferBuilder(BufferBuilder&& other) noexcept;
  BufferBuilder& operator=(BufferBuilder&& other) noexcept;
  ~BufferBuilder();

  // Ensures capacity for `additional` more bytes.
  void Reserve(int64_t additional);
  // Grows (zero-filled) or shrinks to exactly `size` bytes.
  void Resize(int64_t size);
  // As Resize, but grown bytes are left uninitialised: for a caller that overwrites every
  // one of them before Finish (a read or decompression into the buffer).
  void ResizeForOverwrite(int64_t size);
  void Append(const void* data, int64_t size);
  void AppendZeros(int64_t size);
  template <typename T>
  void AppendValue(const T& value) {
    Append(&value, sizeof(T));
  }

  uint8_t* mutable_data() { return data_; }
  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  template <typename T>
  T* mutable_data_as() {
    return reinterpret_cast<T*>(data_);
  }

  // The bytes written so far; the builder is left empty and reusable.
  Buffer Finish();
  void Reset();

 private:
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

// Bit helpers for validity bitmaps and boolean values (LSB bit order, as in Arrow).
namespace bit_util {
inline bool GetBit(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
inline void SetBit(uint8_t* bits, int64_t i) {
  bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
}
inline void ClearBit(uint8_t* bits, int64_t i) {
  bits[i >> 3] &= static_cast<uint8_t>(~(1u << (i & 7)));
}
inline void SetBitTo(uint8_t* bits, int64_t i, bool v) { v ? SetBit(bits, i) : ClearBit(bits, i); }
inline int64_t BytesForBits(int64_t bits) { return (bits + 7) >> 3; }
// Number of set bits in [offset, offset + length).
int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length);
// Copies bits [offset, offset + length) of `src` to a new bitmap starting at bit 0.
Buffer CopyBitmap(const uint8_t* src, int64_t offset, int64_t length);
}  // namespace bit_util

}  // namespace strata
