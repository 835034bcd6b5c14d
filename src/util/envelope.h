// The checksummed envelope every strata-defined object outside the WAL is stored in (table
// manifests, deletion files and key segments; LSM shard manifests and bloom filters). Byte
// layout and reader checks: docs/format/table.md §3.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata {

// Layout (little endian): "STRA" | kind (4 bytes) | u32 format version | u32 reserved (0) |
// u64 payload length | payload | u64 XXH3-64 of every preceding byte.
inline constexpr uint32_t kEnvelopeFormatVersion = 1;

// `kind` is the object's four ASCII bytes (longer kinds are cut to four).
std::string EncodeEnvelope(std::string_view kind, std::string_view payload);
// The payload (a view into `bytes`). Corruption, naming `what` (e.g. the key), for a wrong
// magic or kind, a truncated object, trailing bytes or a checksum mismatch; NotSupported for
// a newer format version. The checksum is checked before the version and length fields are
// interpreted, so a damaged byte anywhere is Corruption.
Result<std::string_view> DecodeEnvelope(std::string_view kind, std::string_view bytes,
                                        std::string_view what);

}  // namespace strata
