// Table format basics: manifest encoding, object keys, schema conversion and
// the primary-key rules, and the checks MakeSnapshot makes.
#include "table/format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "strata/table.h"

namespace strata::table::internal {
namespace {

// A manifest with a bit of everything: schema with metadata, fragments with data files,
// regions and stats, a deletion file, an index, table metadata and a transaction.
pb::Manifest SampleManifest() {
  pb::Manifest m;
  m.set_version(7);
  m.set_table_uuid("0190b6d4-0000-7000-8000-000000000001");
  pb::Field* id = m.mutable_schema()->add_fields();
  id->set_id(0);
  id->set_name("id");
  id->set_type("int64");
  id->set_nullable(false);
  pb::KeyValue* pk = id->add_metadata();
  pk->set_key(std::string(kPrimaryKeyMetadata));
  pk->set_value("true");
  pb::Field* name = m.mutable_schema()->add_fields();
  name->set_id(1);
  name->set_name("name");
  name->set_type("utf8");
  name->set_nullable(true);
  m.set_next_field_id(2);
  for (uint32_t f = 0; f < 2; ++f) {
    pb::Fragment* fragment = m.add_fragments();
    fragment->set_id(f + 3);
    fragment->set_physical_rows(100);
    pb::DataFile* file = fragment->add_files();
    file->set_path("data/0190b6d4-0000-7000-8000-00000000000" + std::to_string(f) + ".arrow");
    file->add_field_ids(0);
    file->add_field_ids(1);
    file->set_size(4096);
    file->mutable_header()->set_length(256);
    file->mutable_header()->set_xxh3(0x1234567890abcdefULL);
    pb::BatchInfo* batch = file->add_batches();
    batch->set_num_rows(100);
    batch->mutable_region()->set_offset(256);
    batch->mutable_region()->set_length(3000);
    batch->mutable_region()->set_xxh3(42);
    *batch->add_stats() = StatsToProto({expr::Scalar::Int64(1), expr::Scalar::Int64(100), 0, 100});
    *batch->add_stats() = StatsToProto({expr::Scalar::String("a"), expr::Scalar::String("z"), 3});
    file->mutable_footer()->set_offset(3256);
    file->mutable_footer()->set_length(840);
  }
  m.mutable_fragments(1)->mutable_deletion()->set_path("_deletions/4-6-00112233aabbccdd.bin");
  m.mutable_fragments(1)->mutable_deletion()->set_num_deleted(5);
  m.mutable_fragments(1)->mutable_deletion()->set_size(60);
  m.set_next_fragment_id(5);
  pb::Index* index = m.add_indexes();
  index->set_name(std::string(kKeyIndexName));
  index->set_type("key");
  index->set_field_id(0);
  pb::KeySegment* segment = index->add_segments();
  segment->set_path("_indices/0190b6d4-0000-7000-8000-000000000009.keys");
  segment->add_fragment_ids(3);
  segment->add_fragment_ids(4);
  segment->set_num_entries(200);
  segment->set_size(3300);
  pb::KeyValue* meta = m.add_metadata();
  meta->set_key("owner");
  meta->set_value("tests");
  m.set_timestamp_micros(1'700'000'000'000'000);
  m.mutable_transaction()->set_read_version(6);
  m.mutable_transaction()->set_operation("delete");
  m.mutable_transaction()->set_uuid("0190b6d4-0000-7000-8000-00000000000a");
  m.mutable_transaction()->add_modified_fragments(4);
  m.mutable_transaction()->set_detail("id < 6");
  return m;
}

// --- Manifest encoding ------------------------------------------------------------------

TEST(ManifestEncodingTest, RoundTripsEveryField) {
  const pb::Manifest original = SampleManifest();
  const std::string bytes = EncodeManifest(original);
  Result<pb::Manifest> decoded = DecodeManifest(bytes, "manifest 7");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->SerializeAsString(), original.SerializeAsString());
  EXPECT_EQ(decoded->fragments(1).deletion().num_deleted(), 5);
  EXPECT_EQ(decoded->transaction().detail(), "id < 6");
}

TEST(ManifestEncodingTest, EveryByteFlipIsDetected) {
  const std::string good = EncodeManifest(SampleManifest());
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<uint8_t>(bad[i]) ^ mask);
      Result<pb::Manifest> decoded = DecodeManifest(bad, "flipped");
      const bool version_field = i >= 8 && i < 12;
      ASSERT_TRUE(decoded.status().IsCorruption() ||
                  (version_field && decoded.status().IsNotSupported()))
          << "byte " << i << " mask " << int{mask} << ": " << decoded.status().ToString();
    }
  }
}

TEST(ManifestEncodingTest, EveryTruncationIsCorruption) {
  const std::string good = EncodeManifest(SampleManifest());
  for (size_t length = 0; length < good.size(); ++length) {
    Result<pb::Manifest> decoded = DecodeManifest(good.substr(0, length), "truncated");
    ASSERT_TRUE(decoded.status().IsCorruption())
        << "length " << length << ": " << decoded.status().ToString();
  }
}

TEST(ManifestEncodingTest, ChecksummedGarbagePayloadIsCorruption) {
  const std::string bytes = EncodeEnvelope(kManifestKind, std::string(16, '\xff'));
  Result<pb::Manifest> decoded = DecodeManifest(bytes, "garbage");
  ASSERT_TRUE(decoded.status().IsCorruption()) << decoded.status().ToString();
  EXPECT_NE(decoded.status().message().find("garbage"), std::string::npos);
}

TEST(ManifestEncodingTest, DeletionEnvelopeIsNotAManifest) {
  const std::string bytes = EncodeEnvelope(kDeletionKind, SampleManifest().SerializeAsString());
  EXPECT_TRUE(DecodeManifest(bytes, "m").status().IsCorruption());
}

// --- Object keys ---------------------------------------------------------------------------

TEST(ManifestKeyTest, IsZeroPaddedUnderVersionsDir) {
  EXPECT_EQ(ManifestKey(42), "_versions/00000000000000000042.manifest");
  EXPECT_EQ(ManifestKey(UINT64_MAX), "_versions/18446744073709551615.manifest");
}

TEST(ManifestKeyTest, ParseRoundTrips) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{42}, uint64_t{1} << 40, UINT64_MAX}) {
    EXPECT_EQ(ParseManifestKey(ManifestKey(v)), v) << v;
  }
}

TEST(ManifestKeyTest, KeysSortLikeVersions) {
  EXPECT_LT(ManifestKey(9), ManifestKey(10));
  EXPECT_LT(ManifestKey(99999), ManifestKey(100000));
}

TEST(ManifestKeyTest, ParseRejectsOtherKeys) {
  for (std::string_view key : {
           "",
           "_versions/",
           "_versions/42.manifest",                        // not padded
           "_versions/0000000000000000004x.manifest",      // non-digit
           "_versions/00000000000000000042.manifes",       // suffix
           "_versions/00000000000000000042.manifest.tmp",  // trailing text
           "_versions/000000000000000000042.manifest",     // 21 digits
           "_versions/99999999999999999999.manifest",      // overflows uint64
           "versions/00000000000000000042.manifest",       // wrong dir
           "t/_versions/00000000000000000042.manifest",    // not relative to the table
           "_latest_version_hint",
       }) {
    EXPECT_FALSE(ParseManifestKey(key).has_value()) << key;
  }
}

TEST(ObjectKeyTest, NewKeysAreUniqueAndInTheirDirectories) {
  const std::string data1 = NewDataFileKey(), data2 = NewDataFileKey();
  EXPECT_EQ(data1.rfind("data/", 0), 0u);
  EXPECT_EQ(data1.substr(data1.size() - 6), ".arrow");
  EXPECT_NE(data1, data2);
  const std::string deletion = NewDeletionFileKey(12, 9);
  EXPECT_EQ(deletion.rfind("_deletions/12-9-", 0), 0u) << deletion;
  EXPECT_EQ(deletion.substr(deletion.size() - 4), ".bin");
  EXPECT_NE(deletion, NewDeletionFileKey(12, 9));
  const std::string segment = NewKeySegmentKey();
  EXPECT_EQ(segment.rfind("_indices/", 0), 0u);
  EXPECT_EQ(segment.substr(segment.size() - 5), ".keys");
  for (const std::string& key : {data1, deletion, segment}) {
    EXPECT_TRUE(ValidateObjectKey(key).ok()) << key;
  }
}

// --- Schema ----------------------------------------------------------------------------------

TEST(SchemaProtoTest, RoundTripsTypesNullabilityAndMetadata) {
  SchemaPtr original = schema(
      {field("id", int64(), false, KeyValueMetadata{{std::string(kPrimaryKeyMetadata), "true"}}),
       field("name", utf8(), true, KeyValueMetadata{{"comment", "display name"}}),
       field("at", timestamp_us("UTC")), field("tags", list(utf8())),
       field("score", float64(), false)},
      KeyValueMetadata{{"owner", "tests"}, {"purpose", "round trip"}});
  Result<pb::Schema> proto = SchemaToProto(*original);
  ASSERT_TRUE(proto.ok()) << proto.status().ToString();
  ASSERT_EQ(proto->fields_size(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(proto->fields(i).id(), i);
  EXPECT_EQ(proto->fields(0).type(), "int64");
  EXPECT_FALSE(proto->fields(0).nullable());
  Result<SchemaPtr> back = SchemaFromProto(*proto);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE((*back)->Equals(*original, /*check_metadata=*/true))
      << (*back)->ToString() << "\nvs\n"
      << original->ToString();
  EXPECT_EQ((*back)->field(1)->metadata().Get("comment"), "display name");
  EXPECT_EQ((*back)->metadata().Get("purpose"), "round trip");
}

TEST(SchemaProtoTest, RejectsBadSchemas) {
  EXPECT_TRUE(SchemaToProto(*schema({})).status().IsInvalidArgument());
  EXPECT_TRUE(SchemaToProto(*schema({field("", int64())})).status().IsInvalidArgument());
  EXPECT_TRUE(SchemaToProto(*schema({field("a", int64()), field("a", utf8())}))
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(SchemaToProto(*schema({field(std::string(kRowAddressColumn), int64())}))
                  .status()
                  .IsInvalidArgument());
}

TEST(SchemaProtoTest, UnreadableTypeInManifestIsCorruption) {
  pb::Schema proto;
  pb::Field* f = proto.add_fields();
  f->set_name("x");
  f->set_type("no_such_type<3>");
  EXPECT_TRUE(SchemaFromProto(proto).status().IsCorruption());
}

FieldPtr KeyField(std::string name, DataTypePtr type, std::string marker = "true",
                  bool nullable = false) {
  return field(std::move(name), std::move(type), nullable,
               KeyValueMetadata{{std::string(kPrimaryKeyMetadata), std::move(marker)}});
}

TEST(PrimaryKeyTest, MarkerValuesAreCaseInsensitive) {
  for (const char* marker : {"true", "TRUE", "True", "1", "yes", "YES"}) {
    Result<std::optional<int>> key =
        FindPrimaryKey(*schema({field("v", utf8()), KeyField("k", int32(), marker)}));
    ASSERT_TRUE(key.ok()) << marker << ": " << key.status().ToString();
    EXPECT_EQ(*key, 1) << marker;
  }
}

TEST(PrimaryKeyTest, OtherMarkerValuesDeclareNoKey) {
  for (const char* marker : {"false", "0", "no", "", "y"}) {
    Result<std::optional<int>> key = FindPrimaryKey(*schema({KeyField("k", int64(), marker)}));
    ASSERT_TRUE(key.ok()) << marker;
    EXPECT_FALSE(key->has_value()) << marker;
  }
}

TEST(PrimaryKeyTest, EveryAllowedTypeIsAccepted) {
  for (DataTypePtr type : {utf8(), large_utf8(), int8(), int16(), int32(), int64(), uint8(),
                           uint16(), uint32(), timestamp_us()}) {
    EXPECT_TRUE(SchemaToProto(*schema({KeyField("k", type)})).ok()) << type->ToString();
  }
}

TEST(PrimaryKeyTest, NullableKeyIsRejected) {
  Status s = SchemaToProto(*schema({KeyField("k", int64(), "true", /*nullable=*/true)})).status();
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("'k'"), std::string::npos) << s.message();
}

TEST(PrimaryKeyTest, UnsupportedTypesAreRejected) {
  for (DataTypePtr type : {float64(), boolean(), binary(), list(int64())}) {
    Status s = SchemaToProto(*schema({KeyField("k", type)})).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << type->ToString() << ": " << s.ToString();
  }
}

TEST(PrimaryKeyTest, TwoKeysAreRejected) {
  Status s =
      SchemaToProto(*schema({KeyField("a", int64()), KeyField("b", utf8(), "yes")})).status();
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("'a'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'b'"), std::string::npos) << s.message();
}

// --- Snapshot ----------------------------------------------------------------------------------

TEST(SnapshotTest, IndexesFragmentsFieldsAndKey) {
  Result<SnapshotPtr> snapshot = MakeSnapshot(SampleManifest());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  const Snapshot& s = **snapshot;
  EXPECT_EQ(s.version(), 7u);
  EXPECT_EQ(s.key_column, 0);
  EXPECT_EQ(s.field_ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(s.column_of_field.at(1), 1);
  ASSERT_NE(s.FindFragment(4), nullptr);
  EXPECT_EQ(s.FindFragment(4)->deletion().num_deleted(), 5);
  EXPECT_EQ(s.FindFragment(5), nullptr);
  ASSERT_NE(s.key_index(), nullptr);
  EXPECT_EQ(s.key_index()->segments_size(), 1);
  EXPECT_EQ(s.live_rows(), 195);
}

TEST(SnapshotTest, DuplicateFragmentIdIsCorruption) {
  pb::Manifest m = SampleManifest();
  m.mutable_fragments(1)->set_id(3);
  Status s = MakeSnapshot(m).status();
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("fragment id 3"), std::string::npos) << s.message();
}

TEST(SnapshotTest, FragmentIdAtOrPastNextIdIsCorruption) {
  pb::Manifest m = SampleManifest();
  m.set_next_fragment_id(4);
  EXPECT_TRUE(MakeSnapshot(m).status().IsCorruption());
}

TEST(SnapshotTest, DuplicateOrOutOfRangeFieldIdIsCorruption) {
  pb::Manifest dup = SampleManifest();
  dup.mutable_schema()->mutable_fields(1)->set_id(0);
  EXPECT_TRUE(MakeSnapshot(dup).status().IsCorruption());
  pb::Manifest past = SampleManifest();
  past.set_next_field_id(1);
  EXPECT_TRUE(MakeSnapshot(past).status().IsCorruption());
}

TEST(SnapshotTest, InconsistentRowCountsAreCorruption) {
  pb::Manifest too_many = SampleManifest();
  too_many.mutable_fragments(1)->mutable_deletion()->set_num_deleted(101);
  EXPECT_TRUE(MakeSnapshot(too_many).status().IsCorruption());
  pb::Manifest zero = SampleManifest();
  zero.mutable_fragments(1)->mutable_deletion()->set_num_deleted(0);
  EXPECT_TRUE(MakeSnapshot(zero).status().IsCorruption());
  pb::Manifest negative = SampleManifest();
  negative.mutable_fragments(0)->set_physical_rows(-1);
  EXPECT_TRUE(MakeSnapshot(negative).status().IsCorruption());
}

TEST(SnapshotTest, BrokenKeyDeclarationInManifestIsCorruption) {
  pb::Manifest m = SampleManifest();
  m.mutable_schema()->mutable_fields(0)->set_nullable(true);
  EXPECT_TRUE(MakeSnapshot(m).status().IsCorruption());
}

// --- Statistics --------------------------------------------------------------------------------

TEST(StatsProtoTest, RoundTripsEveryScalarKind) {
  for (const expr::Scalar& value :
       {expr::Scalar::Bool(true), expr::Scalar::Int64(-5), expr::Scalar::UInt64(UINT64_MAX),
        expr::Scalar::Double(2.5), expr::Scalar::String(std::string("a\0b", 3)),
        expr::Scalar::Timestamp(1'700'000'000'000'000)}) {
    expr::ColumnStatistics stats{value, value, 2, 10};
    expr::ColumnStatistics back = StatsFromProto(StatsToProto(stats), 10);
    ASSERT_TRUE(back.min.has_value() && back.max.has_value()) << value.ToString();
    EXPECT_EQ(*back.min, value);
    EXPECT_EQ(*back.max, value);
    EXPECT_EQ(back.null_count, 2);
    EXPECT_EQ(back.row_count, 10);
  }
  expr::ColumnStatistics unknown = StatsFromProto(StatsToProto({}), 4);
  EXPECT_FALSE(unknown.min.has_value());
  EXPECT_FALSE(unknown.max.has_value());
}

}  // namespace
}  // namespace strata::table::internal
