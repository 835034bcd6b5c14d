// Arrow IPC body compression (BodyCompression method BUFFER) with LZ4 frames and zstd.
//
// Decompression trusts nothing in the stored bytes: the declared length is checked against
// the caller's budget and against what the compressed size can possibly expand to before
// anything is allocated, and the decoder must produce exactly the declared length.
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_decompressBound
#include <fmt/format.h>
#include <lz4frame.h>
#include <zstd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "columnar/ipc_internal.h"

namespace strata::ipc::internal {
namespace {

constexpr int64_t kPrefixLength = 8;
constexpr int64_t kStoredRaw = -1;

// An LZ4 sequence spends at least one byte per 255 bytes of match length, so a frame can
// never expand by more than that (plus headers); the slack covers tiny frames.
constexpr int64_t kLz4MaxRatio = 256;
constexpr int64_t kLz4Slack = 64 << 10;

struct Lz4DecompressionContextFree {
  void operator()(LZ4F_dctx* dctx) const { LZ4F_freeDecompressionContext(dctx); }
};

Result<int64_t> CompressLz4(const Buffer& raw, uint8_t* dst, int64_t capacity) {
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof(prefs));
  prefs.frameInfo.contentSize = static_cast<unsigned long long>(raw.size());
  const size_t n = LZ4F_compressFrame(dst, static_cast<size_t>(capacity), raw.data(),
                                      static_cast<size_t>(raw.size()), &prefs);
  if (LZ4F_isError(n)) {
    return Status::Internal(fmt::format("LZ4 frame compression failed: {}", LZ4F_getErrorName(n)));
  }
  return static_cast<int64_t>(n);
}

struct ZstdCompressionContextFree {
  void operator()(ZSTD_CCtx* cctx) const { ZSTD_freeCCtx(cctx); }
};

Result<int64_t> CompressZstd(const Buffer& raw, int level, uint8_t* dst, int64_t capacity) {
  // One context per thread, reused: ZSTD_compress would set up (and allocate) a fresh one for
  // every buffer. ZSTD_compressCCtx resets it to `level`, so the output is the same.
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdCompressionContextFree> cctx(ZSTD_createCCtx());
  if (cctx == nullptr) return Status::Internal("zstd: cannot create a compression context");
  const size_t n = ZSTD_compressCCtx(cctx.get(), dst, static_cast<size_t>(capacity), raw.data(),
                                     static_cast<size_t>(raw.size()), level);
  if (ZSTD_isError(n)) {
    return Status::Internal(fmt::format("zstd compression failed: {}", ZSTD_getErrorName(n)));
  }
  return static_cast<int64_t>(n);
}

using Lz4DecompressionContext = std::unique_ptr<LZ4F_dctx, Lz4DecompressionContextFree>;

Result<Lz4DecompressionContext> NewLz4DecompressionContext() {
  LZ4F_dctx* raw_dctx = nullptr;
  const size_t created = LZ4F_createDecompressionContext(&raw_dctx, LZ4F_VERSION);
  if (LZ4F_isError(created)) {
    return Status::Internal(
        fmt::format("LZ4 decompression context: {}", LZ4F_getErrorName(created)));
  }
  return Lz4DecompressionContext(raw_dctx);
}

Status DecompressLz4(const Buffer& payload, uint8_t* dst, int64_t declared,
                     const std::string& where) {
  // One context per thread, reused: a fresh one allocates its block buffers again for every
  // buffer. A previous call may have stopped mid-frame or on an error, so the context is reset
  // to a clean state first.
  thread_local Lz4DecompressionContext dctx;
  if (dctx == nullptr) {
    STRATA_ASSIGN_OR_RETURN(dctx, NewLz4DecompressionContext());
  } else {
    LZ4F_resetDecompressionContext(dctx.get());
  }
  const uint8_t* src = payload.data();
  size_t src_left = static_cast<size_t>(payload.size());
  size_t dst_left = static_cast<size_t>(declared);
  bool frame_done = false;
  while (true) {
    size_t src_size = src_left;
    size_t dst_size = dst_left;
    const size_t hint = LZ4F_decompress(dctx.get(), dst, &dst_size, src, &src_size, nullptr);
    if (LZ4F_isError(hint)) {
      return Status::Corruption(
          fmt::format("{}: invalid LZ4 frame: {}", where, LZ4F_getErrorName(hint)));
    }
    src += src_size;
    src_left -= src_size;
    dst += dst_size;
    dst_left -= dst_size;
    if (hint == 0) {
      frame_done = true;
      break;
    }
    if (src_size == 0 && dst_size == 0) break;  // input exhausted or output full
  }
  if (!frame_done) {
    return Status::Corruption(
        fmt::format("{}: LZ4 frame is truncated or decompresses to more than the declared {} bytes",
                    where, declared));
  }
  if (src_left != 0) {
    return Status::Corruption(
        fmt::format("{}: {} bytes follow the LZ4 frame in one buffer", where, src_left));
  }
  if (dst_left != 0) {
    return Status::Corruption(fmt::format("{}: LZ4 frame decompresses to {} bytes, declared {}",
                                          where, declared - static_cast<int64_t>(dst_left),
                                          declared));
  }
  return Status::OK();
}

struct ZstdDecompressionContextFree {
  void operator()(ZSTD_DCtx* dctx) const { ZSTD_freeDCtx(dctx); }
};

Status DecompressZstd(const Buffer& payload, uint8_t* dst, int64_t declared,
                      const std::string& where) {
  // One context per thread, reused: ZSTD_decompress would allocate and initialise a fresh one
  // (~100 KB) for every buffer. ZSTD_decompressDCtx starts every frame from a clean state
  // (also after a failed call) and no dictionary or parameter is ever set on the context, so
  // the result is the same.
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDecompressionContextFree> dctx;
  if (dctx == nullptr) dctx.reset(ZSTD_createDCtx());
  if (dctx == nullptr) return Status::Internal("zstd: cannot create a decompression context");
  const size_t n = ZSTD_decompressDCtx(dctx.get(), dst, static_cast<size_t>(declared),
                                       payload.data(), static_cast<size_t>(payload.size()));
  if (ZSTD_isError(n)) {
    return Status::Corruption(fmt::format("{}: invalid zstd data (declared {} bytes): {}", where,
                                          declared, ZSTD_getErrorName(n)));
  }
  if (static_cast<int64_t>(n) != declared) {
    return Status::Corruption(
        fmt::format("{}: zstd data decompresses to {} bytes, declared {}", where, n, declared));
  }
  return Status::OK();
}

// The most bytes `payload` can decompress to with `codec`.
Result<int64_t> DecompressedBound(Compression codec, const Buffer& payload,
                                  const std::string& where) {
  if (codec == Compression::kZstd) {
    const unsigned long long bound = ZSTD_decompressBound(payload.data(), payload.size());
    if (bound == ZSTD_CONTENTSIZE_ERROR) {
      return Status::Corruption(
          fmt::format("{}: {} bytes of invalid zstd frames", where, payload.size()));
    }
    return bound > static_cast<unsigned long long>(INT64_MAX) ? INT64_MAX
                                                              : static_cast<int64_t>(bound);
  }
  return payload.size() * kLz4MaxRatio + kLz4Slack;
}

}  // namespace

Result<Buffer> CompressBuffer(Compression codec, int zstd_level, const Buffer& raw,
                              double min_space_savings, int64_t min_compressed_bytes) {
  if (raw.size() == 0 || codec == Compression::kNone) return raw;
  const bool small = raw.size() < min_compressed_bytes;
  int64_t capacity = 0;
  if (codec == Compression::kZstd) {
    capacity = static_cast<int64_t>(ZSTD_compressBound(static_cast<size_t>(raw.size())));
  } else {
    LZ4F_preferences_t prefs;
    std::memset(&prefs, 0, sizeof(prefs));
    prefs.frameInfo.contentSize = static_cast<unsigned long long>(raw.size());
    capacity =
        static_cast<int64_t>(LZ4F_compressFrameBound(static_cast<size_t>(raw.size()), &prefs));
  }
  // Not zero-filled (BufferBuilder would clear the whole bound): only the bytes the codec
  // writes are ever read, and padding is added by the message writer.
  const size_t block = static_cast<size_t>(kPrefixLength + capacity + 63) / 64 * 64;
  auto* base = static_cast<uint8_t*>(std::aligned_alloc(64, block));
  if (base == nullptr) throw std::bad_alloc();  // as BufferBuilder: not a recoverable Status
  std::shared_ptr<uint8_t> owner(base, [](uint8_t* p) { std::free(p); });
  uint8_t* dst = base + kPrefixLength;
  int64_t compressed = raw.size();
  if (small) {
    // Not worth a codec call on every read.
  } else if (codec == Compression::kZstd) {
    STRATA_ASSIGN_OR_RETURN(compressed, CompressZstd(raw, zstd_level, dst, capacity));
  } else {
    STRATA_ASSIGN_OR_RETURN(compressed, CompressLz4(raw, dst, capacity));
  }
  int64_t prefix = raw.size();
  const auto worth_it = static_cast<double>(raw.size()) * (1.0 - min_space_savings);
  if (small || compressed >= raw.size() || static_cast<double>(compressed) > worth_it) {
    // Too little gain: store the bytes as they are, and every read skips the decompression.
    prefix = kStoredRaw;
    std::memcpy(dst, raw.data(), static_cast<size_t>(raw.size()));
    compressed = raw.size();
  }
  std::memcpy(base, &prefix, kPrefixLength);
  return Buffer(base, kPrefixLength + compressed, std::move(owner));
}

Result<int64_t> UncompressedLength(const Buffer& stored, const std::string& where) {
  if (stored.size() == 0) return 0;
  if (stored.size() < kPrefixLength) {
    return Status::Corruption(
        fmt::format("{}: compressed buffer of {} bytes is shorter than its 8-byte length prefix",
                    where, stored.size()));
  }
  int64_t declared;
  std::memcpy(&declared, stored.data(), kPrefixLength);
  if (declared == kStoredRaw) return stored.size() - kPrefixLength;
  if (declared < 0) {
    return Status::Corruption(
        fmt::format("{}: negative uncompressed length {} in buffer prefix", where, declared));
  }
  return declared;
}

Result<Buffer> DecompressBuffer(Compression codec, const Buffer& stored, int64_t* budget,
                                const std::string& where) {
  if (codec == Compression::kNone || stored.size() == 0) return stored;
  STRATA_ASSIGN_OR_RETURN(int64_t declared, UncompressedLength(stored, where));
  Buffer payload = stored.Slice(kPrefixLength, stored.size() - kPrefixLength);
  int64_t prefix;
  std::memcpy(&prefix, stored.data(), kPrefixLength);
  if (prefix == kStoredRaw) return payload;
  if (declared > *budget) {
    return Status::Corruption(fmt::format(
        "{}: buffer declares {} uncompressed bytes, more than the {} left of the message's "
        "max_decompressed_bytes",
        where, declared, *budget));
  }
  STRATA_ASSIGN_OR_RETURN(int64_t bound, DecompressedBound(codec, payload, where));
  if (declared > bound) {
    return Status::Corruption(
        fmt::format("{}: buffer declares {} uncompressed bytes, but {} compressed bytes of {} "
                    "expand to at most {}",
                    where, declared, payload.size(), CompressionName(codec), bound));
  }
  if (declared == 0) return Buffer();
  *budget -= declared;
  BufferBuilder out;
  out.ResizeForOverwrite(declared);  // the decompressors check they filled all of it
  if (codec == Compression::kZstd) {
    STRATA_RETURN_IF_ERROR(DecompressZstd(payload, out.mutable_data(), declared, where));
  } else {
    STRATA_RETURN_IF_ERROR(DecompressLz4(payload, out.mutable_data(), declared, where));
  }
  return out.Finish();
}

Result<Compression> CompressionFromFlatbuffer(const fb::BodyCompression* compression,
                                              const std::string& where) {
  if (compression == nullptr) return Compression::kNone;
  if (compression->method() != fb::BodyCompressionMethod::BUFFER) {
    return Status::NotSupported(fmt::format("{}: body compression method {} is not supported",
                                            where, static_cast<int>(compression->method())));
  }
  switch (compression->codec()) {
    case fb::CompressionType::LZ4_FRAME:
      return Compression::kLz4Frame;
    case fb::CompressionType::ZSTD:
      return Compression::kZstd;
  }
  return Status::NotSupported(fmt::format("{}: unknown compression codec {}", where,
                                          static_cast<int>(compression->codec())));
}

}  // namespace strata::ipc::internal

namespace strata::ipc {

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kLz4Frame:
      return "lz4_frame";
    case Compression::kZstd:
      return "zstd";
  }
  return "unknown";
}

}  // namespace strata::ipc
