// The checksummed object envelope (envelope.h).
#include "util/envelope.h"

#include <fmt/format.h>

#include "util/checksum.h"
#include "util/little_endian.h"

namespace strata {
namespace {

constexpr std::string_view kEnvelopeMagic = "STRA";
constexpr size_t kEnvelopeHeaderBytes = 4 + 4 + 4 + 4 + 8;
constexpr size_t kEnvelopeTrailerBytes = 8;

}  // namespace

std::string EncodeEnvelope(std::string_view kind, std::string_view payload) {
  std::string out;
  out.reserve(kEnvelopeHeaderBytes + payload.size() + kEnvelopeTrailerBytes);
  out.append(kEnvelopeMagic);
  out.append(kind.substr(0, 4));
  PutFixed32(&out, kEnvelopeFormatVersion);
  PutFixed32(&out, 0);
  PutFixed64(&out, payload.size());
  out.append(payload);
  PutFixed64(&out, XxHash3_64(out));
  return out;
}

Result<std::string_view> DecodeEnvelope(std::string_view kind, std::string_view bytes,
                                        std::string_view what) {
  if (bytes.size() < kEnvelopeHeaderBytes + kEnvelopeTrailerBytes) {
    return Status::Corruption(fmt::format("{}: truncated ({} bytes)", what, bytes.size()));
  }
  if (bytes.substr(0, 4) != kEnvelopeMagic || bytes.substr(4, 4) != kind) {
    return Status::Corruption(fmt::format("{}: not a strata {} object (bad magic)", what, kind));
  }
  const size_t body = bytes.size() - kEnvelopeTrailerBytes;
  const uint64_t stored = DecodeFixed64(bytes.data() + body);
  const uint64_t actual = XxHash3_64(bytes.substr(0, body));
  if (stored != actual) {
    return Status::Corruption(fmt::format(
        "{}: checksum mismatch (stored {:016x}, computed {:016x})", what, stored, actual));
  }
  const uint32_t version = DecodeFixed32(bytes.data() + 8);
  if (version > kEnvelopeFormatVersion) {
    return Status::NotSupported(
        fmt::format("{}: format version {} is newer than this build reads ({})", what, version,
                    kEnvelopeFormatVersion));
  }
  const uint64_t length = DecodeFixed64(bytes.data() + 16);
  if (length != body - kEnvelopeHeaderBytes) {
    return Status::Corruption(fmt::format("{}: payload length {} does not match object size {}",
                                          what, length, bytes.size()));
  }
  return bytes.substr(kEnvelopeHeaderBytes, length);
}

}  // namespace strata
