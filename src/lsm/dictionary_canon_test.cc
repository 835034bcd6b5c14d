// Tests of canonical WAL dictionaries: values survive re-indexing, every dictionary handed
// out is a prefix of every later one, and overflow or null entries turn the canon off.
#include "lsm/dictionary_canon.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "support/status_assertions.h"

namespace strata::lsm {
namespace {

SchemaPtr Schema2() {
  return schema({field("id", int64(), false), field("role", dictionary(int8(), utf8())),
                 field("kind", dictionary(uint16(), large_utf8()), false)});
}

// `values` as a dictionary array of `type` (nullopt = null row), with its own dictionary in
// first-seen order.
Array Dict(const DataTypePtr& type, const std::vector<std::optional<std::string>>& values) {
  DictionaryBuilder builder(type);
  for (const auto& v : values) {
    if (v) {
      EXPECT_TRUE(builder.Append(*v).ok());
    } else {
      builder.AppendNull();
    }
  }
  Result<Array> array = builder.Finish();
  EXPECT_TRUE(array.ok()) << array.status();
  return *array;
}

RecordBatch Batch(const std::vector<std::optional<std::string>>& roles,
                  const std::vector<std::string>& kinds) {
  Int64Builder ids(int64());
  std::vector<std::optional<std::string>> kind_values;
  for (size_t i = 0; i < roles.size(); ++i) {
    ids.Append(static_cast<int64_t>(i));
    kind_values.emplace_back(kinds[i]);
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(Schema2(), static_cast<int64_t>(roles.size()),
                        {*ids.Finish(), Dict(dictionary(int8(), utf8()), roles),
                         Dict(dictionary(uint16(), large_utf8()), kind_values)});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

std::vector<std::optional<std::string>> Decode(const Array& a) {
  std::vector<std::optional<std::string>> out;
  for (int64_t i = 0; i < a.length(); ++i) {
    if (a.IsNull(i)) {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(std::string(a.dictionary().StringValue(a.DictionaryIndex(i))));
    }
  }
  return out;
}

std::vector<std::string> Entries(const Array& a) {
  std::vector<std::string> out;
  const Array d = a.dictionary();
  for (int64_t i = 0; i < d.length(); ++i) out.emplace_back(d.StringValue(i));
  return out;
}

TEST(DictionaryCanonTest, ValuesSurviveAndEveryDictionaryIsAPrefixOfTheNext) {
  DictionaryCanon canon(*Schema2());
  ASSERT_FALSE(canon.empty());
  RecordBatch a = Batch({"tool", std::nullopt, "assistant"}, {"x", "y", "x"});
  RecordBatch b = Batch({"grade", "assistant", "grade"}, {"z", "x", "y"});
  ASSERT_OK_AND_ASSIGN(auto first, canon.Apply({a, b}));
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const RecordBatch& in = i == 0 ? a : b;
    const RecordBatch& out = (*first)[i];
    EXPECT_TRUE(out.column(0).Equals(in.column(0)));
    EXPECT_EQ(Decode(out.column(1)), Decode(in.column(1))) << "batch " << i;
    EXPECT_EQ(Decode(out.column(2)), Decode(in.column(2))) << "batch " << i;
    ASSERT_OK(out.column(1).ValidateFull());
  }
  // One shared dictionary per column for the whole put, values in first-seen order.
  EXPECT_EQ((*first)[0].column(1).data()->dictionary, (*first)[1].column(1).data()->dictionary);
  EXPECT_EQ(Entries((*first)[1].column(1)),
            (std::vector<std::string>{"tool", "assistant", "grade"}));
  EXPECT_EQ(Entries((*first)[1].column(2)), (std::vector<std::string>{"x", "y", "z"}));

  // A later put with new and old values: the dictionary grows at its end only.
  RecordBatch c = Batch({"artifact", "tool"}, {"w", "x"});
  ASSERT_OK_AND_ASSIGN(auto second, canon.Apply({c}));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(Entries((*second)[0].column(1)),
            (std::vector<std::string>{"tool", "assistant", "grade", "artifact"}));
  EXPECT_EQ(Decode((*second)[0].column(1)), Decode(c.column(1)));
  // Indices written earlier still mean the same against the newer dictionary.
  for (int64_t r = 0; r < (*first)[0].num_rows(); ++r) {
    const Array& old = (*first)[0].column(1);
    if (old.IsNull(r)) continue;
    EXPECT_EQ((*second)[0].column(1).dictionary().StringValue(old.DictionaryIndex(r)),
              old.dictionary().StringValue(old.DictionaryIndex(r)));
  }
  EXPECT_TRUE(canon.usable());
}

TEST(DictionaryCanonTest, SlicedInputKeepsItsRows) {
  DictionaryCanon canon(*Schema2());
  RecordBatch whole = Batch({"a", "b", std::nullopt, "c", "a"}, {"p", "q", "r", "s", "t"});
  RecordBatch slice = whole.Slice(1, 3);
  ASSERT_OK_AND_ASSIGN(auto out, canon.Apply({slice}));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(Decode((*out)[0].column(1)), Decode(slice.column(1)));
  EXPECT_EQ(Decode((*out)[0].column(2)), Decode(slice.column(2)));
  EXPECT_EQ((*out)[0].column(1).null_count(), 1);
}

TEST(DictionaryCanonTest, OutgrowingTheIndexTypeTurnsTheCanonOffForGood) {
  DictionaryCanon canon(*Schema2());
  std::vector<std::optional<std::string>> roles;
  std::vector<std::string> kinds;
  for (int i = 0; i < 128; ++i) {  // int8 indices address 128 entries
    roles.emplace_back("r" + std::to_string(i));
    kinds.emplace_back("k");
  }
  ASSERT_OK_AND_ASSIGN(auto full, canon.Apply({Batch(roles, kinds)}));
  EXPECT_TRUE(full.has_value());
  ASSERT_OK_AND_ASSIGN(auto over, canon.Apply({Batch({"one more"}, {"k"})}));
  EXPECT_FALSE(over.has_value());
  EXPECT_FALSE(canon.usable());
  ASSERT_OK_AND_ASSIGN(auto later, canon.Apply({Batch({"r1"}, {"k"})}));
  EXPECT_FALSE(later.has_value());
}

TEST(DictionaryCanonTest, ANullDictionaryEntryTurnsTheCanonOff) {
  DictionaryCanon canon(*Schema2());
  BinaryBuilder entries(utf8());
  ASSERT_OK(entries.Append("a"));
  entries.AppendNull();
  ASSERT_OK_AND_ASSIGN(Array values, entries.Finish());
  ArrayData data;
  data.type = dictionary(int8(), utf8());
  data.length = 2;
  const std::vector<uint8_t> indices = {0, 1};
  data.buffers = {Buffer(), Buffer::FromVector(indices)};
  data.dictionary = values.data();
  ASSERT_OK_AND_ASSIGN(Array role, Array::Make(std::move(data)));
  RecordBatch base = Batch({"a", "a"}, {"k", "k"});
  std::vector<Array> columns = base.columns();
  columns[1] = role;
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, RecordBatch::Make(Schema2(), 2, columns));
  ASSERT_OK_AND_ASSIGN(auto out, canon.Apply({batch}));
  EXPECT_FALSE(out.has_value());
  EXPECT_FALSE(canon.usable());
}

TEST(DictionaryCanonTest, SchemasWithoutDictionariesPassThroughAndNestedOnesAreFound) {
  SchemaPtr plain = schema({field("id", int64(), false), field("v", utf8())});
  DictionaryCanon canon(*plain);
  EXPECT_TRUE(canon.empty());
  EXPECT_FALSE(DictionaryCanon::HasNestedDictionary(*plain));
  EXPECT_FALSE(DictionaryCanon::HasNestedDictionary(*Schema2()));
  SchemaPtr nested = schema({field("id", int64(), false),
                             field("s", struct_({field("role", dictionary(int8(), utf8()))}))});
  EXPECT_TRUE(DictionaryCanon::HasNestedDictionary(*nested));
  SchemaPtr listed = schema({field("l", list(dictionary(int32(), utf8())))});
  EXPECT_TRUE(DictionaryCanon::HasNestedDictionary(*listed));
}

}  // namespace
}  // namespace strata::lsm
