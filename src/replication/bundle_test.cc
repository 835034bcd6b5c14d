// Bundle format (docs/format/bundle.md): round trips, chain ids, and that no damaged, altered,
// truncated or downgraded bundle is ever accepted; row hashes and content checksums.
#include "strata/bundle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/json.h"
#include "support/status_assertions.h"

namespace strata::replication {
namespace {

SchemaPtr TestSchema() {
  return std::make_shared<Schema>(std::vector<FieldPtr>{
      field("id", utf8(), /*nullable=*/false),
      field("score", float32()),
      field("n", int64()),
      field("ok", boolean()),
      field("at", timestamp_us()),
      field("blob", large_binary()),
      field("embedding", fixed_size_list(float32(), 3)),
      field("tags", list(utf8())),
  });
}

RecordBatch Rows(std::string_view json_lines) {
  Result<RecordBatch> batch = json::RowsToBatch(TestSchema(), json_lines);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *batch : RecordBatch::MakeEmpty(TestSchema());
}

RecordBatch Keys(std::string_view json_lines) {
  auto schema = std::make_shared<Schema>(std::vector<FieldPtr>{field("id", utf8(), false)});
  Result<RecordBatch> batch = json::RowsToBatch(schema, json_lines);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *batch : RecordBatch::MakeEmpty(schema);
}

Hash256 Filled(uint8_t v) {
  Hash256 h;
  h.fill(v);
  return h;
}

BundleHeader TestHeader() {
  BundleHeader h;
  h.store_id = "7c1d0f5e-0000-4000-8000-000000000001";
  h.store_kind = "generic";
  h.schema_hash = Filled(0xab);
  h.key_column = "id";
  h.token = "nightly";
  h.from.cursor = 0;
  h.from.content = ContentChecksum{.rows = 1, .lo = 5, .hi = 6};
  h.from.id = BaseStateId(h.store_id, h.token, h.schema_hash, h.from.content);
  h.to.cursor = 1;
  h.to.content = ContentChecksum{.rows = 2, .lo = 7, .hi = 8};
  h.created_at_micros = 1764720000000000;
  h.source_version = 12;
  return h;
}

constexpr std::string_view kTwoRows =
    R"({"id": "a", "score": 1.5, "n": -7, "ok": true, "at": 5, "blob": "AQID",)"
    R"( "embedding": [1, 2, 3], "tags": ["x", null]})"
    "\n"
    R"({"id": "b"})";

std::string Encode(const BundleHeader& h, const std::vector<RecordBatch>& rows,
                   const RecordBatch& deletions, std::string_view secret = {}) {
  Result<std::string> bytes =
      EncodeBundle(h, TestSchema(), rows, deletions, BundleWriteOptions{.hmac_secret = secret});
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

TEST(BundleTest, RowsDeletionsAndHeaderRoundTrip) {
  const BundleHeader h = TestHeader();
  const RecordBatch first = Rows(kTwoRows);
  const RecordBatch second = Rows(R"({"id": "c", "n": 3})");
  const RecordBatch deleted = Keys("{\"id\": \"gone-1\"}\n{\"id\": \"gone-2\"}");
  const std::string bytes = Encode(h, {first, second}, deleted);
  ASSERT_OK_AND_ASSIGN(Bundle b, DecodeBundle(bytes));

  EXPECT_EQ(b.header.store_id, h.store_id);
  EXPECT_EQ(b.header.store_kind, "generic");
  EXPECT_EQ(b.header.schema_hash, SchemaHash(*TestSchema(), "id", "generic"));
  EXPECT_EQ(b.header.token, "nightly");
  EXPECT_EQ(b.header.from, h.from);
  EXPECT_EQ(b.header.to.cursor, 1u);
  EXPECT_EQ(b.header.to.part, 0u);
  EXPECT_EQ(b.header.to.content, h.to.content);
  EXPECT_EQ(b.header.row_count, 3);
  EXPECT_EQ(b.header.deletion_count, 2);
  EXPECT_EQ(b.header.created_at_micros, h.created_at_micros);
  EXPECT_EQ(b.header.source_version, 12u);
  EXPECT_EQ(b.header.digest_kind, DigestKind::kSha256);
  // The to-state id binds the chain to the digest of these exact bytes.
  EXPECT_EQ(b.header.to.id, NextStateId(h.from, 1, 0, h.to.content, b.digest));

  ASSERT_EQ(b.rows.size(), 2u);
  EXPECT_TRUE(b.rows[0].Equals(first)) << b.rows[0].ToString();
  EXPECT_TRUE(b.rows[1].Equals(second));
  EXPECT_TRUE(b.deletions.Equals(deleted)) << b.deletions.ToString();
}

TEST(BundleTest, FieldMetadataSurvivesAndBindsTheSchemaHash) {
  // Blob and primary-key markers are field metadata: the decoded rows keep them, so the
  // schema hash the replica checks is the one of the rows it installs.
  auto schema = std::make_shared<Schema>(std::vector<FieldPtr>{
      field("id", utf8(), false, {{"strata:primary_key", "true"}}),
      field("blob", large_binary(), true, {{"strata:blob", "true"}}),
  });
  ASSERT_OK_AND_ASSIGN(RecordBatch rows,
                       json::RowsToBatch(schema, R"({"id": "a", "blob": "AQID"})"));
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeBundle(TestHeader(), schema, {rows}, {}));
  ASSERT_OK_AND_ASSIGN(Bundle b, DecodeBundle(bytes));
  ASSERT_NE(b.rows_schema, nullptr);
  EXPECT_TRUE(b.rows_schema->Equals(*schema, /*check_metadata=*/true));
  EXPECT_EQ(b.header.schema_hash, SchemaHash(*schema, "id", "generic"));
  EXPECT_NE(b.header.schema_hash, SchemaHash(*TestSchema(), "id", "generic"));
}

TEST(BundleTest, AnEmptyBundleRoundTrips) {
  const std::string bytes = Encode(TestHeader(), {}, RecordBatch());
  ASSERT_OK_AND_ASSIGN(Bundle b, DecodeBundle(bytes));
  EXPECT_EQ(b.header.row_count, 0);
  EXPECT_EQ(b.header.deletion_count, 0);
  EXPECT_TRUE(b.rows.empty());
  // The schema travels even without rows: a replica can be created from any bundle.
  ASSERT_NE(b.rows_schema, nullptr);
  EXPECT_TRUE(b.rows_schema->Equals(*TestSchema(), /*check_metadata=*/false));
  EXPECT_EQ(b.deletions.num_rows(), 0);
}

TEST(BundleTest, StatesChainFromBundleToBundle) {
  BundleHeader h1 = TestHeader();
  ASSERT_OK_AND_ASSIGN(Bundle b1, DecodeBundle(Encode(h1, {Rows(kTwoRows)}, RecordBatch())));
  BundleHeader h2 = TestHeader();
  h2.from = b1.header.to;
  h2.to.cursor = 2;
  ASSERT_OK_AND_ASSIGN(Bundle b2, DecodeBundle(Encode(h2, {}, Keys(R"({"id": "a"})"))));
  EXPECT_EQ(b2.header.from, b1.header.to);
  EXPECT_NE(b2.header.to.id, b1.header.to.id);
  // The same change from another chain's state leads elsewhere.
  BundleHeader other = h2;
  other.from.id = Filled(1);
  ASSERT_OK_AND_ASSIGN(Bundle b3, DecodeBundle(Encode(other, {}, Keys(R"({"id": "a"})"))));
  EXPECT_NE(b3.header.to.id, b2.header.to.id);
}

TEST(BundleTest, PartsOfASplitExportChainToTheExportsEnd) {
  BundleHeader h = TestHeader();
  h.parts = 3;
  h.part = 1;
  h.to.part = 1;
  ASSERT_OK_AND_ASSIGN(Bundle p1, DecodeBundle(Encode(h, {Rows(kTwoRows)}, RecordBatch())));
  h.from = p1.header.to;
  h.part = 2;
  h.to.part = 2;
  ASSERT_OK_AND_ASSIGN(Bundle p2, DecodeBundle(Encode(h, {}, Keys(R"({"id": "x"})"))));
  h.from = p2.header.to;
  h.part = 3;
  h.to.part = 0;  // the last part ends the export
  ASSERT_OK_AND_ASSIGN(Bundle p3, DecodeBundle(Encode(h, {}, RecordBatch())));
  EXPECT_EQ(p3.header.to.cursor, 1u);
  EXPECT_EQ(p3.header.to.part, 0u);
}

TEST(BundleTest, EncodeRefusesInconsistentInput) {
  const RecordBatch rows = Rows(kTwoRows);
  auto refused = [&](BundleHeader h, const std::vector<RecordBatch>& batches,
                     const RecordBatch& deletions) {
    Result<std::string> bytes = EncodeBundle(h, TestSchema(), batches, deletions);
    EXPECT_FALSE(bytes.ok());
    EXPECT_TRUE(bytes.status().IsInvalidArgument()) << bytes.status();
    return bytes.ok() ? std::string() : std::string(bytes.status().message());
  };
  BundleHeader h = TestHeader();
  EXPECT_EQ(refused(h, {Keys(R"({"id": "a"})")}, RecordBatch()),
            "bundle: a row batch does not have the bundle's schema");
  auto int_keys = json::RowsToBatch(
      std::make_shared<Schema>(std::vector<FieldPtr>{field("id", int64())}), R"({"id": 1})");
  ASSERT_TRUE(int_keys.ok());
  EXPECT_EQ(refused(h, {rows}, *int_keys),
            "bundle: deletions must be one column 'id' of type utf8");
  h.key_column = "nope";
  EXPECT_EQ(refused(h, {rows}, RecordBatch()), "bundle: the schema has no key column 'nope'");
  h = TestHeader();
  h.part = 0;
  EXPECT_EQ(refused(h, {rows}, RecordBatch()), "part 0 of 1 is not a part");
  h = TestHeader();
  h.to.cursor = 0;
  EXPECT_EQ(refused(h, {rows}, RecordBatch()), "to-state 0.0 is not after from-state 0.0");
  h = TestHeader();
  h.parts = 2;
  h.to.part = 0;
  EXPECT_EQ(refused(h, {rows}, RecordBatch()), "part 1 of 2 must end at state part 1, not 0");
}

TEST(BundleTest, EveryFlippedByteIsRefused) {
  const std::string bytes = Encode(TestHeader(), {Rows(kTwoRows)}, Keys(R"({"id": "gone"})"));
  ASSERT_OK(DecodeBundle(bytes).status());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    EXPECT_FALSE(DecodeBundle(damaged).ok()) << "flip at byte " << i << " of " << bytes.size();
  }
}

TEST(BundleTest, EveryTruncationAndExtensionIsRefused) {
  const std::string bytes = Encode(TestHeader(), {Rows(kTwoRows)}, Keys(R"({"id": "gone"})"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeBundle(std::string_view(bytes).substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeBundle(bytes + '\0').ok());
}

TEST(BundleTest, AlteredContentWithAFreshDigestBreaksTheChain) {
  // An attacker who edits rows and recomputes the plain digest gets a valid bundle — whose
  // to-state id differs, so the next genuine bundle no longer chains from it.
  const BundleHeader h = TestHeader();
  ASSERT_OK_AND_ASSIGN(Bundle genuine, DecodeBundle(Encode(h, {Rows(kTwoRows)}, RecordBatch())));
  ASSERT_OK_AND_ASSIGN(Bundle forged,
                       DecodeBundle(Encode(h, {Rows(R"({"id": "a", "n": 666})")}, RecordBatch())));
  EXPECT_NE(forged.header.to.id, genuine.header.to.id);
}

TEST(BundleTest, KeyedBundlesNeedTheirSecretAndCannotBeDowngraded) {
  const BundleHeader h = TestHeader();
  const std::string keyed = Encode(h, {Rows(kTwoRows)}, RecordBatch(), "s3cret");
  ASSERT_OK_AND_ASSIGN(Bundle b, DecodeBundle(keyed, {.hmac_secret = "s3cret"}));
  EXPECT_EQ(b.header.digest_kind, DigestKind::kHmacSha256);

  Result<Bundle> wrong = DecodeBundle(keyed, {.hmac_secret = "guess"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(wrong.status().IsCorruption()) << wrong.status();
  EXPECT_EQ(wrong.status().message(),
            "bundle: HMAC-SHA-256 digest mismatch (the content was altered or damaged)");

  Result<Bundle> no_secret = DecodeBundle(keyed);
  ASSERT_FALSE(no_secret.ok());
  EXPECT_TRUE(no_secret.status().IsInvalidArgument()) << no_secret.status();

  const std::string plain = Encode(h, {Rows(kTwoRows)}, RecordBatch());
  Result<Bundle> unkeyed = DecodeBundle(plain, {.hmac_secret = "s3cret"});
  ASSERT_FALSE(unkeyed.ok());
  EXPECT_TRUE(unkeyed.status().IsInvalidArgument()) << unkeyed.status();

  // Downgrade: relabel the keyed bundle's trailer as SHA-256 with a plain digest that does
  // cover its bytes. The header still records HMAC: refused.
  const std::string body = keyed.substr(0, keyed.size() - 40);
  const Hash256 plain_digest = Sha256Of(body);
  std::string downgraded = body;
  downgraded += std::string("\x01\x00\x00\x00", 4);
  downgraded.append(reinterpret_cast<const char*>(plain_digest.data()), plain_digest.size());
  downgraded += "SBND";
  Result<Bundle> relabelled = DecodeBundle(downgraded);
  ASSERT_FALSE(relabelled.ok());
  EXPECT_EQ(relabelled.status().message(), "bundle: the header says digest kind 2, the trailer 1");
}

TEST(BundleTest, NotABundleAndAnotherVersionAreNamed) {
  std::string bytes = Encode(TestHeader(), {}, RecordBatch());
  std::string other = bytes;
  other[0] = 'X';
  Result<Bundle> magic = DecodeBundle(other);
  ASSERT_FALSE(magic.ok());
  EXPECT_EQ(magic.status().message(), "bundle: bad magic (not a strata bundle)");
  other = bytes;
  other[8] = 2;
  Result<Bundle> version = DecodeBundle(other);
  ASSERT_FALSE(version.ok());
  EXPECT_TRUE(version.status().IsNotSupported()) << version.status();
}

TEST(SchemaHashTest, CoversWhatRowsMeanAndNothingElse) {
  const SchemaPtr base = TestSchema();
  const Hash256 h = SchemaHash(*base, "id", "generic");
  EXPECT_EQ(SchemaHash(*base, "id", "generic"), h);
  EXPECT_NE(SchemaHash(*base, "id", "rollout"), h);
  EXPECT_NE(SchemaHash(*base, "n", "generic"), h);

  auto with = [&](int index, FieldPtr replacement) {
    std::vector<FieldPtr> fields = base->fields();
    fields[static_cast<size_t>(index)] = std::move(replacement);
    return std::make_shared<Schema>(std::move(fields));
  };
  EXPECT_NE(SchemaHash(*with(1, field("score", float32(), /*nullable=*/false)), "id", "generic"),
            h);
  EXPECT_NE(SchemaHash(*with(1, field("score", float64())), "id", "generic"), h);
  EXPECT_NE(SchemaHash(*with(1, field("rating", float32())), "id", "generic"), h);
  EXPECT_NE(
      SchemaHash(*with(7, field("tags", list(field("item", utf8(), false)))), "id", "generic"), h);
  EXPECT_NE(SchemaHash(*with(5, field("blob", large_binary(), true, {{"strata:blob", "true"}})),
                       "id", "generic"),
            h);
  std::vector<FieldPtr> fewer = base->fields();
  fewer.pop_back();
  EXPECT_NE(SchemaHash(Schema(fewer), "id", "generic"), h);
  // Schema-level metadata is bookkeeping, not meaning.
  EXPECT_EQ(SchemaHash(Schema(base->fields(), {{"strata:store_kind", "generic"}}), "id", "generic"),
            h);
}

// --- row hashes and content checksums ------------------------------------------------------

TEST(RowHashTest, EqualRowsHashEquallyWhateverTheirBatchLayout) {
  const RecordBatch all = Rows(kTwoRows);
  ASSERT_OK_AND_ASSIGN(std::vector<RowHash> whole, HashRows(all));
  ASSERT_OK_AND_ASSIGN(std::vector<RowHash> second, HashRows(all.Slice(1, 1)));
  ASSERT_EQ(whole.size(), 2u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0], whole[1]);
  EXPECT_NE(whole[0], whole[1]);
}

TEST(RowHashTest, NullEmptyAndNeighbouringValuesDiffer) {
  // Each pair differs in one value only; the encoding is prefix-free so none collide.
  const std::vector<std::string> rows = {
      R"({"id": "a"})",
      R"({"id": "a", "tags": []})",
      R"({"id": "a", "tags": [null]})",
      R"({"id": "a", "tags": [""]})",
      R"({"id": "a", "tags": ["", ""]})",
      R"({"id": "a", "blob": ""})",
      R"({"id": "a", "n": 0})",
      R"({"id": "a", "score": 0})",
      R"({"id": "a", "score": -0.0})",
      R"({"id": "a", "ok": false})",
      R"({"id": "ab"})",
  };
  std::vector<RowHash> hashes;
  for (const std::string& r : rows) {
    ASSERT_OK_AND_ASSIGN(std::vector<RowHash> h, HashRows(Rows(r)));
    hashes.push_back(h.at(0));
  }
  for (size_t i = 0; i < hashes.size(); ++i) {
    for (size_t j = i + 1; j < hashes.size(); ++j) {
      EXPECT_NE(hashes[i], hashes[j]) << rows[i] << " vs " << rows[j];
    }
  }
}

TEST(RowHashTest, ADictionaryColumnHashesLikeItsPlainForm) {
  auto plain_schema = std::make_shared<Schema>(std::vector<FieldPtr>{field("role", utf8())});
  auto dict_schema =
      std::make_shared<Schema>(std::vector<FieldPtr>{field("role", dictionary(int32(), utf8()))});
  constexpr std::string_view kRows = "{\"role\": \"user\"}\n{\"role\": null}\n{\"role\": \"bot\"}";
  ASSERT_OK_AND_ASSIGN(RecordBatch plain, json::RowsToBatch(plain_schema, kRows));
  ASSERT_OK_AND_ASSIGN(RecordBatch dict, json::RowsToBatch(dict_schema, kRows));
  ASSERT_OK_AND_ASSIGN(std::vector<RowHash> a, HashRows(plain));
  ASSERT_OK_AND_ASSIGN(std::vector<RowHash> b, HashRows(dict));
  EXPECT_EQ(a, b);
}

TEST(ContentChecksumTest, IsOrderIndependentAndRemovable) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<RowHash> h,
      HashRows(Rows("{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\": \"c\", \"n\": 1}")));
  ContentChecksum forward, backward;
  for (const RowHash& r : h) forward.Add(r);
  for (auto it = h.rbegin(); it != h.rend(); ++it) backward.Add(*it);
  EXPECT_EQ(forward, backward);
  EXPECT_EQ(forward.rows, 3);

  ContentChecksum without_b = forward;
  without_b.Remove(h[1]);
  ContentChecksum direct;
  direct.Add(h[0]);
  direct.Add(h[2]);
  EXPECT_EQ(without_b, direct);
  without_b.Remove(h[0]);
  without_b.Remove(h[2]);
  EXPECT_EQ(without_b, ContentChecksum());
}

TEST(ContentChecksumTest, CarriesIntoTheHighWord) {
  ContentChecksum c;
  c.Add(RowHash{.lo = ~uint64_t{0}, .hi = 0});
  c.Add(RowHash{.lo = 2, .hi = 0});
  EXPECT_EQ(c.lo, 1u);
  EXPECT_EQ(c.hi, 1u);
  c.Remove(RowHash{.lo = 2, .hi = 0});
  EXPECT_EQ(c.lo, ~uint64_t{0});
  EXPECT_EQ(c.hi, 0u);
}

}  // namespace
}  // namespace strata::replication
