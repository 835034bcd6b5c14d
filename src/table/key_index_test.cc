// Tests for key index segments: build/load/lookup round trips, a randomized oracle check,
// corruption detection and key normalization.
#include "table/key_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/table.h"
#include "support/temp_dir.h"
#include "table/format.h"

namespace strata::table::internal {
namespace {

using expr::Scalar;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

Array Int64Array(const std::vector<int64_t>& values) {
  Int64Builder builder(int64());
  for (int64_t v : values) builder.Append(v);
  return builder.Finish().value();
}

Array Utf8Array(const std::vector<std::string>& values, DataTypePtr type = utf8()) {
  if (type->id() == TypeId::kLargeUtf8) {
    LargeBinaryBuilder builder(type);
    for (const std::string& v : values) EXPECT_TRUE(builder.Append(v).ok());
    return builder.Finish().value();
  }
  BinaryBuilder builder(type);
  for (const std::string& v : values) EXPECT_TRUE(builder.Append(v).ok());
  return builder.Finish().value();
}

std::vector<uint64_t> Find(const KeySegment& segment, const Scalar& key) {
  std::vector<uint64_t> out;
  segment.Lookup(key, &out);
  return out;
}

class KeyIndexTest : public ::testing::Test {
 protected:
  std::shared_ptr<const KeySegment> BuildAndLoad(KeySegmentBuilder& builder,
                                                 std::vector<uint32_t> fragment_ids) {
    Result<pb::KeySegment> entry = builder.Finish(*store_, prefix_, std::move(fragment_ids));
    EXPECT_TRUE(entry.ok()) << entry.status().ToString();
    if (!entry.ok()) return nullptr;
    entry_ = *entry;
    Result<std::shared_ptr<const KeySegment>> segment = KeySegment::Load(*store_, prefix_, entry_);
    EXPECT_TRUE(segment.ok()) << segment.status().ToString();
    return segment.ok() ? *segment : nullptr;
  }

  // Puts `payload` in an envelope at a fresh key and loads it with an entry that matches
  // the stored object's size.
  Status LoadPayload(const std::string& payload, int num_fragments, int64_t num_entries) {
    pb::KeySegment entry;
    entry.set_path("_indices/handmade.keys");
    for (int i = 0; i < num_fragments; ++i) entry.add_fragment_ids(static_cast<uint32_t>(10 + i));
    entry.set_num_entries(num_entries);
    const std::string bytes = EncodeEnvelope(kKeySegmentKind, payload);
    entry.set_size(static_cast<int64_t>(bytes.size()));
    EXPECT_TRUE(store_->Put(prefix_ + entry.path(), bytes).ok());
    return KeySegment::Load(*store_, prefix_, entry).status();
  }

  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
  std::string prefix_ = "tbl/";
  pb::KeySegment entry_;
};

TEST_F(KeyIndexTest, KeyKindForTypeClassifiesEveryType) {
  for (const DataTypePtr& type : {int8(), int16(), int32(), int64(), uint8(), uint16(), uint32(),
                                  timestamp_us(), timestamp_us("UTC")}) {
    Result<KeyKind> kind = KeyKindForType(*type);
    ASSERT_TRUE(kind.ok()) << type->ToString();
    EXPECT_EQ(*kind, KeyKind::kInteger) << type->ToString();
  }
  for (const DataTypePtr& type : {utf8(), large_utf8()}) {
    Result<KeyKind> kind = KeyKindForType(*type);
    ASSERT_TRUE(kind.ok()) << type->ToString();
    EXPECT_EQ(*kind, KeyKind::kString) << type->ToString();
  }
  for (const DataTypePtr& type : {uint64(), float64(), binary(), boolean(), list(int64())}) {
    Result<KeyKind> kind = KeyKindForType(*type);
    ASSERT_FALSE(kind.ok()) << type->ToString();
    EXPECT_TRUE(kind.status().IsInvalidArgument());
    EXPECT_NE(kind.status().message().find(type->ToString()), std::string::npos)
        << kind.status().ToString();
  }
}

TEST_F(KeyIndexTest, IntegerRoundTripWithDuplicatesAcrossFragments) {
  KeySegmentBuilder builder(KeyKind::kInteger);
  ASSERT_TRUE(builder.Add(0, 0, Int64Array({5, 3, 5, -7})).ok());
  ASSERT_TRUE(builder.Add(1, 100, Int64Array({5, 42})).ok());
  EXPECT_EQ(builder.num_entries(), 6);
  auto segment = BuildAndLoad(builder, {7, 3});
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(entry_.num_entries(), 6);
  EXPECT_EQ(entry_.fragment_ids_size(), 2);
  EXPECT_TRUE(entry_.path().starts_with("_indices/")) << entry_.path();
  EXPECT_EQ(segment->kind(), KeyKind::kInteger);
  EXPECT_EQ(segment->num_entries(), 6);
  EXPECT_EQ(
      Find(*segment, Scalar::Int64(5)),
      (std::vector<uint64_t>{MakeRowAddress(7, 0), MakeRowAddress(7, 2), MakeRowAddress(3, 100)}));
  EXPECT_EQ(Find(*segment, Scalar::Int64(-7)), (std::vector<uint64_t>{MakeRowAddress(7, 3)}));
  EXPECT_EQ(Find(*segment, Scalar::Int64(42)), (std::vector<uint64_t>{MakeRowAddress(3, 101)}));
  EXPECT_TRUE(Find(*segment, Scalar::Int64(4)).empty());
  // Other scalar kinds are normalized; strings never match an integer index.
  EXPECT_EQ(Find(*segment, Scalar::Double(42.0)).size(), 1u);
  EXPECT_EQ(Find(*segment, Scalar::UInt64(3)).size(), 1u);
  EXPECT_TRUE(Find(*segment, Scalar::String("5")).empty());
  EXPECT_TRUE(Find(*segment, Scalar::Null()).empty());
  // Entries come back sorted by (key, address) for merging.
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < segment->num_entries(); ++i) keys.push_back(segment->IntegerKey(i));
  EXPECT_EQ(keys, (std::vector<int64_t>{-7, 3, 5, 5, 5, 42}));
  EXPECT_EQ(segment->Address(0), (uint64_t{0} << 32) | 3);
  EXPECT_EQ(segment->fragment_ids(), (std::vector<uint32_t>{7, 3}));
  EXPECT_GT(segment->memory_bytes(), 0);
}

TEST_F(KeyIndexTest, SmallIntegerTypesAndTimestampsAreWidened) {
  KeySegmentBuilder builder(KeyKind::kInteger);
  Int8Builder i8(int8());
  i8.Append(-128);
  i8.Append(127);
  UInt32Builder u32(uint32());
  u32.Append(UINT32_MAX);
  TimestampBuilder ts(timestamp_us("UTC"));
  ts.Append(1'700'000'000'000'000);
  ASSERT_TRUE(builder.Add(0, 0, i8.Finish().value()).ok());
  ASSERT_TRUE(builder.Add(0, 2, u32.Finish().value()).ok());
  ASSERT_TRUE(builder.Add(0, 3, ts.Finish().value()).ok());
  auto segment = BuildAndLoad(builder, {9});
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(Find(*segment, Scalar::Int64(-128)), (std::vector<uint64_t>{MakeRowAddress(9, 0)}));
  EXPECT_EQ(Find(*segment, Scalar::Int64(127)), (std::vector<uint64_t>{MakeRowAddress(9, 1)}));
  EXPECT_EQ(Find(*segment, Scalar::Int64(UINT32_MAX)),
            (std::vector<uint64_t>{MakeRowAddress(9, 2)}));
  EXPECT_EQ(Find(*segment, Scalar::Timestamp(1'700'000'000'000'000)),
            (std::vector<uint64_t>{MakeRowAddress(9, 3)}));
}

TEST_F(KeyIndexTest, SlicedArraysUseTheirOwnRows) {
  KeySegmentBuilder ints(KeyKind::kInteger);
  Array all = Int64Array({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(ints.Add(0, 50, all.Slice(3, 4)).ok());  // keys 3..6 at rows 50..53
  auto int_segment = BuildAndLoad(ints, {1});
  ASSERT_NE(int_segment, nullptr);
  EXPECT_EQ(int_segment->num_entries(), 4);
  EXPECT_EQ(Find(*int_segment, Scalar::Int64(3)), (std::vector<uint64_t>{MakeRowAddress(1, 50)}));
  EXPECT_EQ(Find(*int_segment, Scalar::Int64(6)), (std::vector<uint64_t>{MakeRowAddress(1, 53)}));
  EXPECT_TRUE(Find(*int_segment, Scalar::Int64(2)).empty());
  EXPECT_TRUE(Find(*int_segment, Scalar::Int64(7)).empty());

  for (const DataTypePtr& type : {utf8(), large_utf8()}) {
    SCOPED_TRACE(type->ToString());
    KeySegmentBuilder strings(KeyKind::kString);
    Array words = Utf8Array({"zero", "one", "two", "three", "one", ""}, type);
    ASSERT_TRUE(strings.Add(0, 0, words.Slice(1, 5)).ok());  // one two three one ""
    auto segment = BuildAndLoad(strings, {4});
    ASSERT_NE(segment, nullptr);
    EXPECT_EQ(segment->kind(), KeyKind::kString);
    EXPECT_EQ(Find(*segment, Scalar::String("one")),
              (std::vector<uint64_t>{MakeRowAddress(4, 0), MakeRowAddress(4, 3)}));
    EXPECT_EQ(Find(*segment, Scalar::String("")), (std::vector<uint64_t>{MakeRowAddress(4, 4)}));
    EXPECT_TRUE(Find(*segment, Scalar::String("zero")).empty());
    EXPECT_TRUE(Find(*segment, Scalar::Int64(1)).empty());
    std::vector<std::string_view> keys;
    for (int64_t i = 0; i < segment->num_entries(); ++i) keys.push_back(segment->StringKey(i));
    EXPECT_EQ(keys, (std::vector<std::string_view>{"", "one", "one", "three", "two"}));
  }
}

TEST_F(KeyIndexTest, StringKeysCompareBytewise) {
  KeySegmentBuilder builder(KeyKind::kString);
  ASSERT_TRUE(builder.Add(0, 0, Utf8Array({"\xc3\xa9", "z", "a", "ab"})).ok());
  auto segment = BuildAndLoad(builder, {0});
  ASSERT_NE(segment, nullptr);
  std::vector<std::string_view> keys;
  for (int64_t i = 0; i < segment->num_entries(); ++i) keys.push_back(segment->StringKey(i));
  EXPECT_EQ(keys, (std::vector<std::string_view>{"a", "ab", "z", "\xc3\xa9"}));
  EXPECT_EQ(Find(*segment, Scalar::String("\xc3\xa9")),
            (std::vector<uint64_t>{MakeRowAddress(0, 0)}));
}

TEST_F(KeyIndexTest, EmptySegmentRoundTrips) {
  KeySegmentBuilder builder(KeyKind::kString);
  auto segment = BuildAndLoad(builder, {});
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(segment->num_entries(), 0);
  EXPECT_TRUE(Find(*segment, Scalar::String("x")).empty());
}

TEST_F(KeyIndexTest, MergedEntriesRoundTrip) {
  KeySegmentBuilder builder(KeyKind::kString);
  builder.AddString("b", (uint64_t{1} << 32) | 5);
  builder.AddString("a", 7);
  builder.AddString("b", 2);
  auto segment = BuildAndLoad(builder, {20, 21});
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(Find(*segment, Scalar::String("b")),
            (std::vector<uint64_t>{MakeRowAddress(20, 2), MakeRowAddress(21, 5)}));
  KeySegmentBuilder ints(KeyKind::kInteger);
  ints.AddInteger(INT64_MIN, 1);
  ints.AddInteger(INT64_MAX, 0);
  auto int_segment = BuildAndLoad(ints, {3});
  ASSERT_NE(int_segment, nullptr);
  EXPECT_EQ(Find(*int_segment, Scalar::Int64(INT64_MIN)),
            (std::vector<uint64_t>{MakeRowAddress(3, 1)}));
  EXPECT_EQ(Find(*int_segment, Scalar::Int64(INT64_MAX)),
            (std::vector<uint64_t>{MakeRowAddress(3, 0)}));
}

TEST_F(KeyIndexTest, AddRejectsNullsAndWrongTypes) {
  KeySegmentBuilder builder(KeyKind::kInteger);
  Int64Builder with_null(int64());
  with_null.Append(1);
  with_null.AppendNull();
  Status status = builder.Add(0, 10, with_null.Finish().value());
  EXPECT_TRUE(status.IsInvalidArgument());
  EXPECT_NE(status.message().find("primary key is null at row 11"), std::string::npos)
      << status.ToString();
  EXPECT_EQ(builder.num_entries(), 0);  // nothing of the failed array was added
  EXPECT_TRUE(builder.Add(0, 0, Utf8Array({"a"})).IsInvalidArgument());
  Float64Builder doubles(float64());
  doubles.Append(1.0);
  EXPECT_TRUE(builder.Add(0, 0, doubles.Finish().value()).IsInvalidArgument());
  KeySegmentBuilder strings(KeyKind::kString);
  EXPECT_TRUE(strings.Add(0, 0, Int64Array({1})).IsInvalidArgument());
  // Rows past the 32-bit offset space of a fragment.
  EXPECT_TRUE(builder.Add(0, UINT32_MAX, Int64Array({1, 2})).IsInvalidArgument());
  EXPECT_TRUE(builder.Add(0, UINT32_MAX, Int64Array({1})).ok());
}

TEST_F(KeyIndexTest, FinishRejectsLocalFragmentOutsideTheList) {
  KeySegmentBuilder builder(KeyKind::kInteger);
  ASSERT_TRUE(builder.Add(2, 0, Int64Array({1})).ok());
  Result<pb::KeySegment> entry = builder.Finish(*store_, prefix_, {1, 2});
  EXPECT_TRUE(entry.status().IsInvalidArgument()) << entry.status().ToString();
}

TEST_F(KeyIndexTest, RandomKeysMatchMultimapOracle) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<uint32_t> fragment_ids = {12, 4, 30, 7};
  for (KeyKind kind : {KeyKind::kInteger, KeyKind::kString}) {
    SCOPED_TRACE(kind == KeyKind::kInteger ? "integer" : "string");
    KeySegmentBuilder builder(kind);
    std::multimap<std::string, uint64_t> oracle;  // key text -> global address
    auto text = [&](int64_t key) { return std::to_string(key); };
    constexpr int kTotal = 10000;
    int added = 0;
    for (int batch = 0; added < kTotal; ++batch) {
      const uint32_t local = static_cast<uint32_t>(rng() % fragment_ids.size());
      const int rows = std::min<int>(kTotal - added, 1 + static_cast<int>(rng() % 700));
      // Offsets within a fragment only need to be distinct per fragment: use the batch.
      const uint32_t first = static_cast<uint32_t>(batch) * 1000;
      std::vector<int64_t> keys;
      for (int i = 0; i < rows; ++i) keys.push_back(static_cast<int64_t>(rng() % 3000) - 1500);
      for (int i = 0; i < rows; ++i) {
        oracle.emplace(text(keys[i]), MakeRowAddress(fragment_ids[local], first + i));
      }
      if (kind == KeyKind::kInteger) {
        ASSERT_TRUE(builder.Add(local, first, Int64Array(keys)).ok());
      } else {
        std::vector<std::string> strings;
        for (int64_t k : keys) strings.push_back(text(k));
        ASSERT_TRUE(builder.Add(local, first, Utf8Array(strings)).ok());
      }
      added += rows;
    }
    auto segment = BuildAndLoad(builder, fragment_ids);
    ASSERT_NE(segment, nullptr);
    ASSERT_EQ(segment->num_entries(), kTotal);
    for (int probe = 0; probe < 2000; ++probe) {
      const int64_t key = static_cast<int64_t>(rng() % 3400) - 1700;
      std::vector<uint64_t> expected;
      auto range = oracle.equal_range(text(key));
      for (auto it = range.first; it != range.second; ++it) expected.push_back(it->second);
      std::vector<uint64_t> actual = Find(
          *segment, kind == KeyKind::kInteger ? Scalar::Int64(key) : Scalar::String(text(key)));
      std::sort(expected.begin(), expected.end());
      std::sort(actual.begin(), actual.end());
      ASSERT_EQ(actual, expected) << "key " << key;
    }
  }
}

// String keys sharing a long start, differing only after their first 8 bytes past it, one a
// prefix of another, with NUL bytes (which the search pads short keys with): every lookup
// matches a multimap oracle, lookups without the shared start or shorter than it included.
TEST_F(KeyIndexTest, StringKeysWithASharedStartMatchMultimapOracle) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::string start = "tenant-0042/session/";
  auto random_key = [&](bool shared) {
    static constexpr char kAlphabet[] = {'\0', 'a', 'b', '\xff'};
    std::string key = shared ? start : start.substr(0, rng() % (start.size() + 1));
    const size_t length = rng() % 14;
    for (size_t i = 0; i < length; ++i) key.push_back(kAlphabet[rng() % 4]);
    return key;
  };
  KeySegmentBuilder builder(KeyKind::kString);
  std::multimap<std::string, uint64_t> oracle;
  for (uint32_t row = 0; row < 5000; ++row) {
    // Mostly 8 bytes of 'a' first, so that many keys share their search prefix too.
    std::string key = start + (rng() % 4 != 0 ? std::string(8, 'a') : std::string());
    key += random_key(true).substr(start.size());
    builder.AddString(key, row);
    oracle.emplace(key, MakeRowAddress(9, row));
  }
  auto segment = BuildAndLoad(builder, {9});
  ASSERT_NE(segment, nullptr);
  std::vector<std::string> probes;
  for (const auto& [key, address] : oracle) probes.push_back(key);
  for (int i = 0; i < 3000; ++i) {
    std::string probe = random_key(rng() % 8 != 0);
    if (rng() % 2 == 0 && probe.size() >= start.size()) probe.insert(start.size(), 8, 'a');
    probes.push_back(probe);
  }
  probes.push_back("");
  probes.push_back("zzz");
  for (const std::string& probe : probes) {
    std::vector<uint64_t> expected;
    auto range = oracle.equal_range(probe);
    for (auto it = range.first; it != range.second; ++it) expected.push_back(it->second);
    std::vector<uint64_t> actual = Find(*segment, Scalar::String(probe));
    std::sort(actual.begin(), actual.end());
    ASSERT_EQ(actual, expected) << "key of " << probe.size() << " bytes";
  }
}

TEST_F(KeyIndexTest, EveryByteFlipIsCorruption) {
  for (KeyKind kind : {KeyKind::kInteger, KeyKind::kString}) {
    KeySegmentBuilder builder(kind);
    if (kind == KeyKind::kInteger) {
      ASSERT_TRUE(builder.Add(0, 0, Int64Array({3, 1, 2})).ok());
    } else {
      ASSERT_TRUE(builder.Add(0, 0, Utf8Array({"c", "a", "bb"})).ok());
    }
    Result<pb::KeySegment> entry = builder.Finish(*store_, prefix_, {5});
    ASSERT_TRUE(entry.ok()) << entry.status().ToString();
    const std::string key = prefix_ + entry->path();
    const std::string original(store_->Get(key).value().view());
    for (size_t i = 0; i < original.size(); ++i) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        std::string bytes = original;
        bytes[i] = static_cast<char>(bytes[i] ^ mask);
        ASSERT_TRUE(store_->Put(key, bytes).ok());
        Result<std::shared_ptr<const KeySegment>> segment =
            KeySegment::Load(*store_, prefix_, *entry);
        // A flip of the format version to something newer may be reported as NotSupported
        // only if the checksum matched, which it cannot: every flip is corruption.
        ASSERT_TRUE(segment.status().IsCorruption())
            << "byte " << i << " mask " << int{mask} << ": " << segment.status().ToString();
        EXPECT_NE(segment.status().message().find(entry->path()), std::string::npos);
      }
    }
    // Truncated and extended objects too.
    ASSERT_TRUE(store_->Put(key, original.substr(0, original.size() - 1)).ok());
    EXPECT_TRUE(KeySegment::Load(*store_, prefix_, *entry).status().IsCorruption());
    ASSERT_TRUE(store_->Put(key, original + "x").ok());
    EXPECT_TRUE(KeySegment::Load(*store_, prefix_, *entry).status().IsCorruption());
    ASSERT_TRUE(store_->Put(key, original).ok());
    EXPECT_TRUE(KeySegment::Load(*store_, prefix_, *entry).ok());
  }
}

TEST_F(KeyIndexTest, MissingSegmentIsNotFound) {
  pb::KeySegment entry;
  entry.set_path("_indices/missing.keys");
  EXPECT_TRUE(KeySegment::Load(*store_, prefix_, entry).status().IsNotFound());
}

TEST_F(KeyIndexTest, StructuralProblemsWithValidChecksumAreCorruption) {
  auto header = [](uint8_t kind, uint32_t fragments, uint64_t n) {
    std::string out(1, static_cast<char>(kind));
    PutU32(&out, fragments);
    PutU64(&out, n);
    return out;
  };
  auto integer_payload = [&](std::vector<int64_t> keys, std::vector<uint64_t> addresses,
                             uint32_t fragments = 1) {
    std::string out = header(0, fragments, keys.size());
    for (int64_t k : keys) PutU64(&out, static_cast<uint64_t>(k));
    for (uint64_t a : addresses) PutU64(&out, a);
    return out;
  };
  // A well-formed one loads (the helper itself is right).
  EXPECT_TRUE(LoadPayload(integer_payload({1, 2}, {0, 1}), 1, 2).ok());
  // Unknown kind, truncated header.
  EXPECT_TRUE(LoadPayload(header(2, 1, 0), 1, 0).IsCorruption());
  EXPECT_TRUE(LoadPayload(std::string(5, '\0'), 1, 0).IsCorruption());
  // Counts exceeding the payload, including ones that would overflow size arithmetic.
  EXPECT_TRUE(LoadPayload(header(0, 1, 3) + std::string(32, '\0'), 1, 3).IsCorruption());
  EXPECT_TRUE(LoadPayload(header(0, 1, UINT64_MAX), 1, -1).IsCorruption());
  EXPECT_TRUE(LoadPayload(header(1, 1, UINT64_MAX / 8), 1, INT64_MAX / 4).IsCorruption());
  // Trailing bytes after the entries.
  EXPECT_TRUE(LoadPayload(integer_payload({1}, {0}) + "x", 1, 1).IsCorruption());
  // Entry count or fragment count differing from the manifest entry.
  EXPECT_TRUE(LoadPayload(integer_payload({1, 2}, {0, 1}), 1, 3).IsCorruption());
  EXPECT_TRUE(LoadPayload(integer_payload({1, 2}, {0, 1}, 2), 1, 2).IsCorruption());
  // Local fragment outside the list.
  EXPECT_TRUE(LoadPayload(integer_payload({1, 2}, {0, uint64_t{1} << 32}), 1, 2).IsCorruption());
  EXPECT_TRUE(LoadPayload(integer_payload({1, 2}, {0, uint64_t{1} << 32}, 2), 2, 2).ok());
  // Unsorted keys, and equal keys with unsorted addresses.
  EXPECT_TRUE(LoadPayload(integer_payload({2, 1}, {0, 1}), 1, 2).IsCorruption());
  EXPECT_TRUE(LoadPayload(integer_payload({1, 1}, {5, 4}), 1, 2).IsCorruption());

  auto string_payload = [&](std::vector<uint64_t> offsets, std::string bytes,
                            std::vector<uint64_t> addresses) {
    std::string out = header(1, 1, addresses.size());
    for (uint64_t o : offsets) PutU64(&out, o);
    out += bytes;
    for (uint64_t a : addresses) PutU64(&out, a);
    return out;
  };
  EXPECT_TRUE(LoadPayload(string_payload({0, 1, 3}, "abb", {0, 1}), 1, 2).ok());
  // Offsets not starting at zero, decreasing, or not matching the key bytes.
  EXPECT_TRUE(LoadPayload(string_payload({1, 1, 3}, "abb", {0, 1}), 1, 2).IsCorruption());
  EXPECT_TRUE(LoadPayload(string_payload({0, 2, 1}, "ab", {0, 1}), 1, 2).IsCorruption());
  EXPECT_TRUE(LoadPayload(string_payload({0, 1, 2}, "abb", {0, 1}), 1, 2).IsCorruption());
  EXPECT_TRUE(LoadPayload(string_payload({0, 1, 99}, "abb", {0, 1}), 1, 2).IsCorruption());
  // Unsorted strings.
  EXPECT_TRUE(LoadPayload(string_payload({0, 2, 3}, "bba", {0, 1}), 1, 2).IsCorruption());
  // A middle key not sharing the start of the first and the last, though the bytes after
  // that start ascend ("1" < "2" < "3"): the keys themselves do not.
  EXPECT_TRUE(
      LoadPayload(string_payload({0, 3, 6, 9}, "aa1zz2aa3", {0, 1, 2}), 1, 3).IsCorruption());
  // Keys equal in the 8 bytes after their shared start are compared whole, addresses too.
  EXPECT_TRUE(LoadPayload(string_payload({0, 10, 20}, "k12345678bk12345678a", {0, 1}), 1, 2)
                  .IsCorruption());
  EXPECT_TRUE(LoadPayload(string_payload({0, 10, 20}, "k12345678ak12345678b", {0, 1}), 1, 2).ok());
  EXPECT_TRUE(LoadPayload(string_payload({0, 10, 20}, "k12345678ak12345678a", {1, 0}), 1, 2)
                  .IsCorruption());
  EXPECT_TRUE(LoadPayload(string_payload({0, 10, 20}, "k12345678ak12345678a", {0, 1}), 1, 2).ok());
  // A key that is a prefix of the next (zeros past its end in the 8 bytes).
  EXPECT_TRUE(LoadPayload(string_payload({0, 1, 3}, std::string("aa\0", 3), {0, 1}), 1, 2).ok());
}

TEST_F(KeyIndexTest, SizeDifferingFromManifestIsCorruption) {
  KeySegmentBuilder builder(KeyKind::kInteger);
  ASSERT_TRUE(builder.Add(0, 0, Int64Array({1})).ok());
  Result<pb::KeySegment> entry = builder.Finish(*store_, prefix_, {0});
  ASSERT_TRUE(entry.ok());
  pb::KeySegment wrong = *entry;
  wrong.set_size(entry->size() + 1);
  Status status = KeySegment::Load(*store_, prefix_, wrong).status();
  EXPECT_TRUE(status.IsCorruption());
  EXPECT_NE(status.message().find(entry->path()), std::string::npos) << status.ToString();
}

TEST_F(KeyIndexTest, NormalizeKeyConvertsComparableScalars) {
  auto integer = [](const Scalar& s) { return NormalizeKey(s, KeyKind::kInteger); };
  auto string = [](const Scalar& s) { return NormalizeKey(s, KeyKind::kString); };
  EXPECT_EQ(integer(Scalar::Int64(-5)), Scalar::Int64(-5));
  EXPECT_EQ(integer(Scalar::UInt64(7)), Scalar::Int64(7));
  EXPECT_EQ(integer(Scalar::UInt64(uint64_t{INT64_MAX})), Scalar::Int64(INT64_MAX));
  EXPECT_FALSE(integer(Scalar::UInt64(uint64_t{INT64_MAX} + 1)));
  EXPECT_EQ(integer(Scalar::Timestamp(123)), Scalar::Int64(123));
  EXPECT_EQ(integer(Scalar::Double(3.0)), Scalar::Int64(3));
  EXPECT_EQ(integer(Scalar::Double(-0.0)), Scalar::Int64(0));
  EXPECT_EQ(integer(Scalar::Double(-9223372036854775808.0)), Scalar::Int64(INT64_MIN));
  EXPECT_FALSE(integer(Scalar::Double(9223372036854775808.0)));
  EXPECT_FALSE(integer(Scalar::Double(2.5)));
  EXPECT_FALSE(integer(Scalar::Double(std::nan(""))));
  EXPECT_FALSE(integer(Scalar::Double(INFINITY)));
  EXPECT_FALSE(integer(Scalar::String("1")));
  EXPECT_FALSE(integer(Scalar::Bool(true)));
  EXPECT_FALSE(integer(Scalar::Null()));
  EXPECT_EQ(string(Scalar::String("abc")), Scalar::String("abc"));
  EXPECT_EQ(string(Scalar::String("")), Scalar::String(""));
  EXPECT_FALSE(string(Scalar::Int64(1)));
  EXPECT_FALSE(string(Scalar::Null()));
  EXPECT_FALSE(string(Scalar::Timestamp(1)));
}

}  // namespace
}  // namespace strata::table::internal
