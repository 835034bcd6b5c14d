// Fuzz target for the replication bundle reader (strata/bundle.h): any bytes either fail
// cleanly or decode to a bundle whose header, sections and computed state agree. Each input
// is read twice: as is, where the digest check rejects almost every mutation, and with its
// trailer rewritten to a valid SHA-256 digest of its body, so the mutations reach the header
// and section parsers behind the digest.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_targets.h"
#include "strata/bundle.h"

namespace strata::fuzz {
namespace {

constexpr size_t kTrailerBytes = 40;
// The secret of keyed seeds (make_seed_corpus): inputs whose trailer says HMAC are read with it.
constexpr std::string_view kSeedSecret = "seed-secret";

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "bundle reader broke its contract: %s\n", what);
  std::abort();
}

Status Check(std::string_view bytes) {
  replication::BundleReadOptions options;
  if (bytes.size() >= kTrailerBytes && bytes[bytes.size() - kTrailerBytes] == 2) {
    options.hmac_secret = kSeedSecret;
  }
  Result<replication::Bundle> decoded = replication::DecodeBundle(bytes, options);
  if (!decoded.ok()) return decoded.status();
  const replication::Bundle& b = *decoded;
  int64_t rows = 0;
  for (const RecordBatch& batch : b.rows) {
    if (!batch.ValidateFull().ok()) Die("a row batch fails ValidateFull");
    if (b.rows_schema == nullptr || !batch.schema()->Equals(*b.rows_schema, false)) {
      Die("a row batch does not have the rows schema");
    }
    rows += batch.num_rows();
  }
  if (rows != b.header.row_count) Die("row count differs from the header");
  if (b.deletions.num_rows() != b.header.deletion_count) Die("deletion count differs");
  if (b.deletions.num_rows() > 0 && !b.deletions.ValidateFull().ok()) {
    Die("the deletions fail ValidateFull");
  }
  if (b.header.to.id != replication::NextStateId(b.header.from, b.header.to.cursor,
                                                 b.header.to.part, b.header.to.content, b.digest)) {
    Die("the to-state id is not the chain step of the digest");
  }
  return Status::OK();
}

}  // namespace

Status FuzzBundle(std::span<const uint8_t> data) {
  const std::string_view bytes(reinterpret_cast<const char*>(data.data()), data.size());
  Status as_is = Check(bytes);
  if (bytes.size() < kTrailerBytes) return as_is;
  std::string fixed(bytes.substr(0, bytes.size() - kTrailerBytes));
  const replication::Hash256 digest = replication::Sha256Of(fixed);
  fixed.append("\x01\x00\x00\x00", 4);
  fixed.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  fixed.append("SBND");
  Status rehashed = Check(fixed);
  return as_is.ok() ? as_is : rehashed;
}

}  // namespace strata::fuzz
