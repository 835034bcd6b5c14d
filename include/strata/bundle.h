// Replication bundles (docs/format/bundle.md): one self-describing, digest-checked file
// carrying the net change of a store between two states of a replication chain, and the
// chain-state arithmetic (state ids, order-independent content checksums) both ends share.
//
// Thread safety: free functions over values; ContentChecksum is a value type.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/record_batch.h"
#include "strata/status.h"

namespace strata::replication {

inline constexpr uint32_t kBundleFormatVersion = 1;

using Hash256 = std::array<uint8_t, 32>;

// Lower-case hex of `hash`.
std::string ToHex(const Hash256& hash);
// SHA-256 of `data`.
Hash256 Sha256Of(std::string_view data);

// The schema hash of a store (docs/format/bundle.md): SHA-256 over the store kind, the key
// column and each field's name, type (with nested names and nullability), nullability and
// field metadata (which marks blob columns, primary keys and vector metrics). Schema-level
// metadata (where stores keep bookkeeping) is not part of it.
Hash256 SchemaHash(const Schema& schema, std::string_view key_column, std::string_view store_kind);

// The 128-bit hash of one row's canonical encoding (docs/format/bundle.md).
struct RowHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const RowHash&) const = default;
};

// The hash of every row of `batch`, in row order, over its columns in schema order. Every
// type strata stores is supported; InvalidArgument names a column of another type.
Result<std::vector<RowHash>> HashRows(const RecordBatch& batch);

// An order-independent checksum of a set of rows: their count and the sum of their hashes
// modulo 2^128. Adding and removing commute, so a replica can maintain it incrementally and
// an exporter can derive a later state's checksum from an earlier one.
struct ContentChecksum {
  int64_t rows = 0;
  uint64_t lo = 0;
  uint64_t hi = 0;

  void Add(const RowHash& h);
  void Remove(const RowHash& h);
  bool operator==(const ContentChecksum&) const = default;
  // "N rows, sum <32 hex digits>".
  std::string ToString() const;
};

// A state of a replication chain.
struct ChainState {
  uint64_t cursor = 0;  // exports since the base (0: the base)
  uint32_t part = 0;    // 0: after a whole export; k: after part k of a split export
  Hash256 id{};
  ContentChecksum content;
  bool operator==(const ChainState&) const = default;
};

// The id of a chain's base state.
Hash256 BaseStateId(std::string_view store_id, std::string_view token, const Hash256& schema_hash,
                    const ContentChecksum& content);
// The id of the state a bundle with `digest` leads to from `from`.
Hash256 NextStateId(const ChainState& from, uint64_t to_cursor, uint32_t to_part,
                    const ContentChecksum& to_content, const Hash256& digest);

enum class DigestKind : uint32_t { kSha256 = 1, kHmacSha256 = 2 };

struct BundleHeader {
  std::string store_id;
  std::string store_kind;
  Hash256 schema_hash{};  // set by EncodeBundle
  std::string key_column;
  std::string token;
  ChainState from;
  // The state after this bundle; `to.id` is ignored when encoding and computed when decoding.
  ChainState to;
  uint32_t part = 1;  // 1-based
  uint32_t parts = 1;
  int64_t row_count = 0;       // set by EncodeBundle
  int64_t deletion_count = 0;  // set by EncodeBundle
  int64_t created_at_micros = 0;
  uint64_t source_version = 0;
  // The source's trim floor at export: a replica whose cursor is below it cannot catch up
  // through bundles (TooOld) and must be re-seeded.
  uint64_t trim_floor = 0;
  DigestKind digest_kind = DigestKind::kSha256;  // set by EncodeBundle
};

struct Bundle {
  BundleHeader header;  // header.to.id computed from the digest
  Hash256 digest{};
  std::vector<RecordBatch> rows;  // in the rows section's schema
  SchemaPtr rows_schema;          // the store schema (with its schema-level metadata)
  RecordBatch deletions;          // one column, the key column; no rows when there are none
};

struct BundleWriteOptions {
  // Non-empty: HMAC-SHA-256 keyed with this secret instead of SHA-256.
  std::string_view hmac_secret;
};

// The bytes of a bundle of `rows` (batches of `schema`, which must hold header.key_column)
// and `deletions` (one column of the key column's type without nulls, or no rows). Sets the
// header's counts, digest kind and schema hash (SchemaHash of `schema`); InvalidArgument
// (nothing returned) for inconsistent input: a batch of another schema, a deletions batch of
// another column or with a null key, part outside 1..parts, a to-state not after the
// from-state.
Result<std::string> EncodeBundle(BundleHeader header, const SchemaPtr& schema,
                                 const std::vector<RecordBatch>& rows, const RecordBatch& deletions,
                                 const BundleWriteOptions& options = {});

struct BundleReadOptions {
  // The shared secret of keyed bundles. When set, unkeyed bundles are refused.
  std::string_view hmac_secret;
};

// Reads and verifies a bundle: every length is checked against the bytes, the digest is
// verified before anything it covers is parsed, then the header and sections are decoded and
// checked against each other (counts, the rows' schema against the schema hash, no null
// deletion key). Corruption (with what is wrong) for damaged or altered bytes,
// InvalidArgument for a keyed bundle without the secret or an unkeyed one when a secret is
// set, NotSupported for another format version.
Result<Bundle> DecodeBundle(std::string_view bytes, const BundleReadOptions& options = {});

}  // namespace strata::replication
