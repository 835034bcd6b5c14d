// Text encodings shared by the engine, the server and the CLI: Base64 for bytes in JSON, and
// RFC 3339 timestamps (microseconds since the Unix epoch, UTC) for logs, manifests and the API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata {

// RFC 4648 Base64 with the standard alphabet (A-Z a-z 0-9 + /) and '=' padding.
std::string Base64Encode(std::string_view bytes);

// Inverse of Base64Encode. Strict, so every byte string has exactly one accepted encoding:
// the length must be a multiple of 4, '=' may appear only as the last one or two characters,
// the bits that padding leaves unused must be zero, and no whitespace or line breaks are
// allowed. Errors: InvalidArgument naming the offending position and character.
Result<std::string> Base64Decode(std::string_view text);

// RFC 3339 in UTC with exactly six fractional digits: "2024-05-01T12:34:56.123456Z".
// Uses the proleptic Gregorian calendar over the whole int64 range. Years outside 0000..9999
// (which RFC 3339 cannot express) use the ISO 8601 expanded form: a sign and at least four
// digits, e.g. "-0001-12-31T23:59:59.000000Z" or "+10000-01-01T00:00:00.000000Z".
// ParseTimestampMicros accepts every string this returns.
std::string FormatTimestampMicros(int64_t micros_since_epoch);

// Parses an RFC 3339 timestamp into microseconds since the Unix epoch (UTC):
//   YYYY-MM-DD ('T' | 't' | ' ') HH:MM:SS [.F{1,9}] ('Z' | 'z' | ('+'|'-') HH:MM)
// or a bare date "YYYY-MM-DD", meaning midnight UTC. Fraction digits beyond microseconds are
// truncated (dropped). The year may also use the signed expanded form that
// FormatTimestampMicros writes for years outside 0000..9999. Leap seconds (":60") are
// rejected, since they have no distinct microsecond value.
// Errors: InvalidArgument quoting the text and naming the bad field, for bad syntax, an
// out-of-range field (month 13, Feb 30, hour 24, offset +24:00, ...) or a result that does
// not fit in int64 microseconds.
Result<int64_t> ParseTimestampMicros(std::string_view text);

}  // namespace strata
