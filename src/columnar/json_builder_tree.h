// BuilderNode: a tree that mirrors a schema, pairing each field with its builder and what the
// JSON decoder needs per field (value kind, integer range, type name for messages).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/builder.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::json::internal {

enum class ValueKind : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat32,
  kFloat64,
  kString,
  kLargeString,
  kBinary,
  kLargeBinary,
  kTimestamp,
  kList,
  kLargeList,
  kFixedSizeList,
  kStruct,
  kDictionary,        // string dictionary values
  kDictionaryBinary,  // binary dictionary values, base64 in JSON
};

// One node per field of the schema (recursively); the row itself is a struct-like root.
struct BuilderNode {
  ValueKind kind = ValueKind::kStruct;
  const Field* field = nullptr;     // nullptr for the root
  ArrayBuilder* builder = nullptr;  // nullptr for the root
  std::string type_name;
  uint64_t max_positive = 0;  // integers and timestamps
  uint64_t max_negative = 0;  // magnitude of the most negative value
  int64_t list_size = 0;      // fixed size list
  std::vector<BuilderNode> children;
  // Struct and root: key lookup (views into the schema's field names) and which keys the open
  // object has had. A node is never open twice at once, so this state can live here.
  std::unordered_map<std::string_view, int> field_index;
  std::vector<uint8_t> seen;
  int num_seen = 0;
  int next_field = 0;  // the likely next key: rows usually follow schema order

  bool nullable() const { return field == nullptr || field->nullable(); }
};

// Fills `root` (a struct-like node for the row) with one child per schema field, over the
// builders of `builder`. Internal if a builder is not of the class its type needs.
Status BuildRowTree(const Schema& schema, const RecordBatchBuilder& builder, BuilderNode* root);

}  // namespace strata::json::internal
