// Bundle encoding and verification (docs/format/bundle.md) and chain-state ids.
#include "strata/bundle.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replication/bundle.pb.h"
#include "replication/bundle_internal.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "util/little_endian.h"

namespace strata::replication {
namespace {

constexpr std::string_view kMagic("STRBNDL\0", 8);
constexpr std::string_view kEndMagic = "SBND";
constexpr size_t kPrefixBytes = 16;   // magic, version, header length
constexpr size_t kTrailerBytes = 40;  // digest kind, digest, end magic
constexpr uint32_t kMaxHeaderBytes = 1u << 20;

void AppendString(std::string* out, std::string_view s) {
  PutFixed64(out, s.size());
  out->append(s);
}

void AppendContent(std::string* out, const ContentChecksum& c) {
  PutFixed64(out, static_cast<uint64_t>(c.rows));
  PutFixed64(out, c.lo);
  PutFixed64(out, c.hi);
}

Result<Hash256> Digest(DigestKind kind, std::string_view data, std::string_view secret) {
  if (kind == DigestKind::kSha256) return Sha256Of(data);
  Hash256 out{};
  unsigned int length = 0;
  if (secret.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
           &length) == nullptr ||
      length != out.size()) {
    return Status::Internal("HMAC-SHA-256 failed");
  }
  return out;
}

std::string_view DigestName(DigestKind kind) {
  return kind == DigestKind::kHmacSha256 ? "HMAC-SHA-256" : "SHA-256";
}

std::string AsBytes(const Hash256& h) {
  return std::string(reinterpret_cast<const char*>(h.data()), h.size());
}

Result<Hash256> HashFromBytes(const std::string& bytes, std::string_view what) {
  Hash256 h{};
  if (bytes.size() != h.size()) {
    return Status::Corruption(
        fmt::format("bundle header: {} is {} bytes, expected {}", what, bytes.size(), h.size()));
  }
  std::memcpy(h.data(), bytes.data(), h.size());
  return h;
}

void ToProto(const ContentChecksum& c, proto::ContentChecksum* p) {
  p->set_rows(c.rows);
  p->set_lo(c.lo);
  p->set_hi(c.hi);
}

ContentChecksum FromProto(const proto::ContentChecksum& p) {
  return ContentChecksum{.rows = p.rows(), .lo = p.lo(), .hi = p.hi()};
}

// The order of chain states: by cursor, and within a cursor the parts of a split export
// before its end (part 0).
std::pair<uint64_t, uint64_t> Position(const ChainState& s) {
  return internal::StateOrder(s.cursor, s.part);
}

// Checks what must hold between the header's fields, for both ends.
Status CheckHeader(const BundleHeader& h) {
  if (h.parts == 0 || h.part == 0 || h.part > h.parts) {
    return Status::InvalidArgument(fmt::format("part {} of {} is not a part", h.part, h.parts));
  }
  if (Position(h.to) <= Position(h.from)) {
    return Status::InvalidArgument(fmt::format("to-state {}.{} is not after from-state {}.{}",
                                               h.to.cursor, h.to.part, h.from.cursor, h.from.part));
  }
  // The last part ends an export (part 0 of its cursor); earlier parts end at their number.
  const uint32_t want_to_part = h.part == h.parts ? 0 : h.part;
  if (h.to.part != want_to_part) {
    return Status::InvalidArgument(fmt::format("part {} of {} must end at state part {}, not {}",
                                               h.part, h.parts, want_to_part, h.to.part));
  }
  if (h.key_column.empty()) return Status::InvalidArgument("no key column");
  if (h.row_count < 0 || h.deletion_count < 0 || h.from.content.rows < 0 || h.to.content.rows < 0) {
    return Status::InvalidArgument("negative count");
  }
  return Status::OK();
}

Result<std::string> WriteSection(const SchemaPtr& schema, const std::vector<RecordBatch>& batches) {
  ipc::WriteOptions options;
  options.compression = ipc::Compression::kZstd;
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, ipc::WriteStreamToBuffer(schema, batches, options));
  return std::string(reinterpret_cast<const char*>(bytes.data()),
                     static_cast<size_t>(bytes.size()));
}

struct Section {
  SchemaPtr schema;
  std::vector<RecordBatch> batches;
  int64_t rows = 0;
};

Result<Section> ReadSection(std::string_view bytes, std::string_view what) {
  Section out;
  if (bytes.empty()) return out;
  Result<std::unique_ptr<ipc::StreamReader>> reader =
      ipc::StreamReader::Open(Buffer::Copy(bytes), ipc::ReadOptions{.validate_full = true});
  if (!reader.ok()) return reader.status().WithContext(fmt::format("bundle {}", what));
  out.schema = (*reader)->schema();
  while (true) {
    Result<std::optional<RecordBatch>> next = (*reader)->Next();
    if (!next.ok()) return next.status().WithContext(fmt::format("bundle {}", what));
    if (!next->has_value()) break;
    out.rows += (*next)->num_rows();
    out.batches.push_back(std::move(**next));
  }
  return out;
}

}  // namespace

Hash256 Sha256Of(std::string_view data) {
  Hash256 out{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
  return out;
}

std::string ToHex(const Hash256& hash) {
  std::string out;
  out.reserve(hash.size() * 2);
  for (uint8_t b : hash) out += fmt::format("{:02x}", b);
  return out;
}

Hash256 SchemaHash(const Schema& schema, std::string_view key_column, std::string_view store_kind) {
  std::string in;
  AppendString(&in, "strata-replication-schema");
  AppendString(&in, store_kind);
  AppendString(&in, key_column);
  PutFixed64(&in, static_cast<uint64_t>(schema.num_fields()));
  for (const FieldPtr& f : schema.fields()) {
    AppendString(&in, f->ToString());
    const auto& entries = f->metadata().entries();
    PutFixed64(&in, entries.size());
    for (const auto& [key, value] : entries) {
      AppendString(&in, key);
      AppendString(&in, value);
    }
  }
  return Sha256Of(in);
}

Hash256 BaseStateId(std::string_view store_id, std::string_view token, const Hash256& schema_hash,
                    const ContentChecksum& content) {
  std::string in;
  AppendString(&in, "strata-replication-base");
  AppendString(&in, store_id);
  AppendString(&in, token);
  in.append(AsBytes(schema_hash));
  AppendContent(&in, content);
  return Sha256Of(in);
}

Hash256 NextStateId(const ChainState& from, uint64_t to_cursor, uint32_t to_part,
                    const ContentChecksum& to_content, const Hash256& digest) {
  std::string in;
  AppendString(&in, "strata-replication-step");
  in.append(AsBytes(from.id));
  PutFixed64(&in, from.cursor);
  PutFixed32(&in, from.part);
  PutFixed64(&in, to_cursor);
  PutFixed32(&in, to_part);
  AppendContent(&in, to_content);
  in.append(AsBytes(digest));
  return Sha256Of(in);
}

Result<std::string> EncodeBundle(BundleHeader header, const SchemaPtr& schema,
                                 const std::vector<RecordBatch>& rows, const RecordBatch& deletions,
                                 const BundleWriteOptions& options) {
  if (schema == nullptr) return Status::InvalidArgument("bundle: no schema");
  int64_t row_count = 0;
  for (const RecordBatch& b : rows) {
    if (b.schema() == nullptr || !b.schema()->Equals(*schema, /*check_metadata=*/false)) {
      return Status::InvalidArgument("bundle: a row batch does not have the bundle's schema");
    }
    row_count += b.num_rows();
  }
  STRATA_ASSIGN_OR_RETURN(std::string rows_section, internal::WriteRowsSection(schema, rows));
  return internal::AssembleBundle(std::move(header), *schema, rows_section, row_count, deletions,
                                  options);
}

namespace internal {

Result<std::string> WriteRowsSection(const SchemaPtr& schema,
                                     const std::vector<RecordBatch>& rows) {
  return WriteSection(schema, rows);
}

Result<std::string> AssembleBundle(BundleHeader header, const Schema& schema,
                                   std::string_view rows_section, int64_t row_count,
                                   const RecordBatch& deletions,
                                   const BundleWriteOptions& options) {
  const int key_index = schema.GetFieldIndex(header.key_column);
  if (key_index < 0) {
    return Status::InvalidArgument(
        fmt::format("bundle: the schema has no key column '{}'", header.key_column));
  }
  header.row_count = row_count;
  header.deletion_count = deletions.schema() == nullptr ? 0 : deletions.num_rows();
  const FieldPtr& key_field = schema.field(key_index);
  const SchemaPtr key_schema = std::make_shared<Schema>(std::vector<FieldPtr>{key_field});
  RecordBatch keys;
  if (header.deletion_count > 0) {
    if (deletions.num_columns() != 1 || deletions.schema()->field(0)->name() != key_field->name() ||
        !deletions.schema()->field(0)->type()->Equals(*key_field->type())) {
      return Status::InvalidArgument(
          fmt::format("bundle: deletions must be one column '{}' of type {}", key_field->name(),
                      key_field->type()->ToString()));
    }
    if (deletions.column(0).null_count() > 0) {
      return Status::InvalidArgument("bundle: a deletion key is null");
    }
    STRATA_ASSIGN_OR_RETURN(
        keys, RecordBatch::Make(key_schema, deletions.num_rows(), deletions.columns()));
  }
  // The hash the replica compares with its own is the hash of the rows actually sent.
  header.schema_hash = SchemaHash(schema, header.key_column, header.store_kind);
  header.digest_kind = options.hmac_secret.empty() ? DigestKind::kSha256 : DigestKind::kHmacSha256;
  STRATA_RETURN_IF_ERROR(CheckHeader(header));

  proto::BundleHeader p;
  p.set_store_id(header.store_id);
  p.set_store_kind(header.store_kind);
  p.set_schema_hash(AsBytes(header.schema_hash));
  p.set_key_column(header.key_column);
  p.set_token(header.token);
  p.mutable_from()->set_cursor(header.from.cursor);
  p.mutable_from()->set_part(header.from.part);
  p.mutable_from()->set_id(AsBytes(header.from.id));
  ToProto(header.from.content, p.mutable_from()->mutable_content());
  p.mutable_to()->set_cursor(header.to.cursor);
  p.mutable_to()->set_part(header.to.part);
  ToProto(header.to.content, p.mutable_to()->mutable_content());
  p.set_part(header.part);
  p.set_parts(header.parts);
  p.set_row_count(header.row_count);
  p.set_deletion_count(header.deletion_count);
  p.set_created_at_micros(header.created_at_micros);
  p.set_source_version(header.source_version);
  p.set_trim_floor(header.trim_floor);
  p.set_digest_kind(static_cast<uint32_t>(header.digest_kind));
  std::string header_bytes;
  if (!p.SerializeToString(&header_bytes)) return Status::Internal("bundle header: serialize");

  const std::string_view rows_bytes = rows_section;
  std::string deletion_bytes;
  if (header.deletion_count > 0) {
    STRATA_ASSIGN_OR_RETURN(deletion_bytes, WriteSection(key_schema, {keys}));
  }

  std::string out;
  out.reserve(kPrefixBytes + header_bytes.size() + 16 + rows_bytes.size() + deletion_bytes.size() +
              kTrailerBytes);
  out.append(kMagic);
  PutFixed32(&out, kBundleFormatVersion);
  PutFixed32(&out, static_cast<uint32_t>(header_bytes.size()));
  out.append(header_bytes);
  PutFixed64(&out, rows_bytes.size());
  out.append(rows_bytes);
  PutFixed64(&out, deletion_bytes.size());
  out.append(deletion_bytes);
  STRATA_ASSIGN_OR_RETURN(Hash256 digest, Digest(header.digest_kind, out, options.hmac_secret));
  PutFixed32(&out, static_cast<uint32_t>(header.digest_kind));
  out.append(AsBytes(digest));
  out.append(kEndMagic);
  return out;
}

}  // namespace internal

Result<Bundle> DecodeBundle(std::string_view bytes, const BundleReadOptions& options) {
  if (bytes.size() < kPrefixBytes + 16 + kTrailerBytes) {
    return Status::Corruption(fmt::format("bundle: {} bytes is too short", bytes.size()));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return Status::Corruption("bundle: bad magic (not a strata bundle)");
  }
  const uint32_t version = DecodeFixed32(bytes.data() + 8);
  if (version != kBundleFormatVersion) {
    return Status::NotSupported(fmt::format(
        "bundle format version {} (this build reads version {})", version, kBundleFormatVersion));
  }
  if (bytes.substr(bytes.size() - kEndMagic.size()) != kEndMagic) {
    return Status::Corruption("bundle: bad end magic (truncated?)");
  }
  // Lengths, each checked against what remains before the trailer.
  const size_t body_end = bytes.size() - kTrailerBytes;
  const uint32_t header_length = DecodeFixed32(bytes.data() + 12);
  if (header_length > kMaxHeaderBytes || header_length > body_end - kPrefixBytes - 16) {
    return Status::Corruption(
        fmt::format("bundle: header length {} exceeds the file", header_length));
  }
  size_t at = kPrefixBytes + header_length;
  const uint64_t rows_length = DecodeFixed64(bytes.data() + at);
  at += 8;
  if (rows_length > body_end - at - 8) {
    return Status::Corruption(fmt::format("bundle: rows length {} exceeds the file", rows_length));
  }
  const std::string_view rows_bytes = bytes.substr(at, rows_length);
  at += rows_length;
  const uint64_t deletions_length = DecodeFixed64(bytes.data() + at);
  at += 8;
  if (deletions_length != body_end - at) {
    return Status::Corruption(
        fmt::format("bundle: deletions length {} does not end at the trailer ({} bytes left)",
                    deletions_length, body_end - at));
  }
  const std::string_view deletion_bytes = bytes.substr(at, deletions_length);

  // The digest, before anything it covers is parsed.
  const uint32_t kind_value = DecodeFixed32(bytes.data() + body_end);
  if (kind_value != static_cast<uint32_t>(DigestKind::kSha256) &&
      kind_value != static_cast<uint32_t>(DigestKind::kHmacSha256)) {
    return Status::Corruption(fmt::format("bundle: unknown digest kind {}", kind_value));
  }
  const auto kind = static_cast<DigestKind>(kind_value);
  if (kind == DigestKind::kHmacSha256 && options.hmac_secret.empty()) {
    return Status::InvalidArgument(
        "bundle is keyed (HMAC-SHA-256): the shared secret is needed to verify it");
  }
  if (kind == DigestKind::kSha256 && !options.hmac_secret.empty()) {
    return Status::InvalidArgument(
        "bundle is not keyed (SHA-256) but a shared secret is set: refusing an unkeyed bundle");
  }
  Bundle out;
  std::memcpy(out.digest.data(), bytes.data() + body_end + 4, out.digest.size());
  STRATA_ASSIGN_OR_RETURN(Hash256 computed,
                          Digest(kind, bytes.substr(0, body_end), options.hmac_secret));
  if (CRYPTO_memcmp(computed.data(), out.digest.data(), computed.size()) != 0) {
    return Status::Corruption(fmt::format(
        "bundle: {} digest mismatch (the content was altered or damaged)", DigestName(kind)));
  }

  proto::BundleHeader p;
  if (!p.ParseFromArray(bytes.data() + kPrefixBytes, static_cast<int>(header_length))) {
    return Status::Corruption("bundle: the header does not parse");
  }
  BundleHeader& h = out.header;
  h.store_id = p.store_id();
  h.store_kind = p.store_kind();
  STRATA_ASSIGN_OR_RETURN(h.schema_hash, HashFromBytes(p.schema_hash(), "schema_hash"));
  h.key_column = p.key_column();
  h.token = p.token();
  h.from.cursor = p.from().cursor();
  h.from.part = p.from().part();
  STRATA_ASSIGN_OR_RETURN(h.from.id, HashFromBytes(p.from().id(), "from.id"));
  h.from.content = FromProto(p.from().content());
  h.to.cursor = p.to().cursor();
  h.to.part = p.to().part();
  h.to.content = FromProto(p.to().content());
  h.part = p.part();
  h.parts = p.parts();
  h.row_count = p.row_count();
  h.deletion_count = p.deletion_count();
  h.created_at_micros = p.created_at_micros();
  h.source_version = p.source_version();
  h.trim_floor = p.trim_floor();
  h.digest_kind = static_cast<DigestKind>(p.digest_kind());
  if (h.digest_kind != kind) {
    return Status::Corruption(fmt::format("bundle: the header says digest kind {}, the trailer {}",
                                          p.digest_kind(), kind_value));
  }
  if (Status st = CheckHeader(h); !st.ok()) {
    return Status::Corruption(fmt::format("bundle header: {}", st.message()));
  }
  h.to.id = NextStateId(h.from, h.to.cursor, h.to.part, h.to.content, out.digest);

  if (rows_bytes.empty()) return Status::Corruption("bundle: the rows section is missing");
  STRATA_ASSIGN_OR_RETURN(Section rows, ReadSection(rows_bytes, "rows"));
  if (rows.rows != h.row_count) {
    return Status::Corruption(fmt::format("bundle: the header counts {} rows, the section holds {}",
                                          h.row_count, rows.rows));
  }
  {
    if (rows.schema->GetFieldIndex(h.key_column) < 0) {
      return Status::Corruption(
          fmt::format("bundle: the rows have no key column '{}'", h.key_column));
    }
    if (SchemaHash(*rows.schema, h.key_column, h.store_kind) != h.schema_hash) {
      return Status::Corruption("bundle: the rows' schema does not have the header's schema hash");
    }
  }
  out.rows_schema = rows.schema;
  out.rows = std::move(rows.batches);

  STRATA_ASSIGN_OR_RETURN(Section deletions, ReadSection(deletion_bytes, "deletions"));
  if (deletions.rows != h.deletion_count) {
    return Status::Corruption(
        fmt::format("bundle: the header counts {} deletions, the section holds {}",
                    h.deletion_count, deletions.rows));
  }
  if (deletions.schema != nullptr) {
    if (deletions.schema->num_fields() != 1 || deletions.schema->field(0)->name() != h.key_column) {
      return Status::Corruption(
          fmt::format("bundle: the deletions are not one column '{}'", h.key_column));
    }
    const FieldPtr& key = rows.schema->field(rows.schema->GetFieldIndex(h.key_column));
    if (!deletions.schema->field(0)->type()->Equals(*key->type())) {
      return Status::Corruption("bundle: the deletion keys' type is not the rows' key type");
    }
    for (const RecordBatch& batch : deletions.batches) {
      if (batch.column(0).null_count() > 0) {
        return Status::Corruption("bundle: a deletion key is null");
      }
    }
    if (deletions.batches.empty()) {
      out.deletions = RecordBatch::MakeEmpty(deletions.schema);
    } else if (deletions.batches.size() == 1) {
      out.deletions = std::move(deletions.batches[0]);
    } else {
      STRATA_ASSIGN_OR_RETURN(out.deletions, ConcatenateBatches(deletions.batches));
    }
  }
  return out;
}

}  // namespace strata::replication
