// The fuzz targets: one function per reader of untrusted bytes. The libFuzzer binaries
// (fuzz_main.cc, fuzz preset) and the replay test over the corpus and the regressions (every
// build) run the same functions.
//
// A target must not crash, hang, leak or trip a sanitizer on any input. It returns the
// reader's verdict: OK when the input was read completely, an error otherwise. When a reader
// breaks its own contract (e.g. returns a batch that fails Validate()) the target aborts.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "strata/status.h"

namespace strata::fuzz {

using FuzzFunction = Status (*)(std::span<const uint8_t> data);

struct FuzzTarget {
  std::string_view name;  // the binary and the folder names under fuzz/corpus, fuzz/regressions
  FuzzFunction run;
};

// Every target, in a fixed order.
std::span<const FuzzTarget> FuzzTargets();
// nullptr when there is no target of that name.
const FuzzTarget* FindFuzzTarget(std::string_view name);

// Reads a stream with ipc::StreamReader: every batch, validated and printed.
Status FuzzIpcStream(std::span<const uint8_t> data);
// Reads a file with ipc::FileReader: every batch, then a projection of each batch.
Status FuzzIpcFile(std::span<const uint8_t> data);

// Parses arbitrary text as a predicate, binds it to a fixed schema and evaluates it on a fixed
// batch, checking printing, selection, pruning and key extraction agree.
Status FuzzExprParse(std::span<const uint8_t> data);

// Reads a replication bundle with DecodeBundle, as is and with a valid digest grafted on, and
// checks the decoded header, sections and chain state agree.
Status FuzzBundle(std::span<const uint8_t> data);

// Parses an HTTP request body of a write route (first byte: which) or a multipart body (first
// byte >= 0xf0) and checks that what parses writes back to JSON that round-trips.
Status FuzzServerBody(std::span<const uint8_t> data);

}  // namespace strata::fuzz
