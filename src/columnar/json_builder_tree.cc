// Builds the BuilderNode tree of a schema over the builders MakeBuilder() created for it.
#include "columnar/json_builder_tree.h"

#include <fmt/format.h>

#include <type_traits>

namespace strata::json::internal {
namespace {

Status BuildStructChildren(const std::vector<FieldPtr>& fields,
                           const std::vector<ArrayBuilder*>& builders, BuilderNode* node);

template <typename B>
Result<B*> BuilderAs(ArrayBuilder* builder, const Field& field) {
  auto* typed = dynamic_cast<B*>(builder);
  if (typed == nullptr) {
    return Status::Internal(fmt::format("JSON decoder: unexpected builder for field '{}' of {}",
                                        field.name(), field.type()->ToString()));
  }
  return typed;
}

void SetIntegerRange(BuilderNode* node, ValueKind kind, uint64_t max_positive,
                     uint64_t max_negative) {
  node->kind = kind;
  node->max_positive = max_positive;
  node->max_negative = max_negative;
}

Status BuildNode(const FieldPtr& field, ArrayBuilder* builder, BuilderNode* node) {
  const DataType& type = *field->type();
  node->field = field.get();
  node->builder = builder;
  node->type_name = type.ToString();
  Status check;
  const auto verify = [&](auto* typed_null) {
    using B = std::remove_pointer_t<decltype(typed_null)>;
    check = BuilderAs<B>(builder, *field).status();
  };
  switch (type.id()) {
    case TypeId::kBool:
      node->kind = ValueKind::kBool;
      verify(static_cast<BooleanBuilder*>(nullptr));
      break;
    case TypeId::kInt8:
      SetIntegerRange(node, ValueKind::kInt8, INT8_MAX, 128);
      verify(static_cast<Int8Builder*>(nullptr));
      break;
    case TypeId::kInt16:
      SetIntegerRange(node, ValueKind::kInt16, INT16_MAX, 32768);
      verify(static_cast<Int16Builder*>(nullptr));
      break;
    case TypeId::kInt32:
      SetIntegerRange(node, ValueKind::kInt32, INT32_MAX, uint64_t{1} << 31);
      verify(static_cast<Int32Builder*>(nullptr));
      break;
    case TypeId::kInt64:
      SetIntegerRange(node, ValueKind::kInt64, INT64_MAX, uint64_t{1} << 63);
      verify(static_cast<Int64Builder*>(nullptr));
      break;
    case TypeId::kTimestamp:
      SetIntegerRange(node, ValueKind::kTimestamp, INT64_MAX, uint64_t{1} << 63);
      verify(static_cast<TimestampBuilder*>(nullptr));
      break;
    case TypeId::kUInt8:
      SetIntegerRange(node, ValueKind::kUInt8, UINT8_MAX, 0);
      verify(static_cast<UInt8Builder*>(nullptr));
      break;
    case TypeId::kUInt16:
      SetIntegerRange(node, ValueKind::kUInt16, UINT16_MAX, 0);
      verify(static_cast<UInt16Builder*>(nullptr));
      break;
    case TypeId::kUInt32:
      SetIntegerRange(node, ValueKind::kUInt32, UINT32_MAX, 0);
      verify(static_cast<UInt32Builder*>(nullptr));
      break;
    case TypeId::kUInt64:
      SetIntegerRange(node, ValueKind::kUInt64, UINT64_MAX, 0);
      verify(static_cast<UInt64Builder*>(nullptr));
      break;
    case TypeId::kFloat32:
      node->kind = ValueKind::kFloat32;
      verify(static_cast<Float32Builder*>(nullptr));
      break;
    case TypeId::kFloat64:
      node->kind = ValueKind::kFloat64;
      verify(static_cast<Float64Builder*>(nullptr));
      break;
    case TypeId::kUtf8:
      node->kind = ValueKind::kString;
      verify(static_cast<BinaryBuilder*>(nullptr));
      break;
    case TypeId::kLargeUtf8:
      node->kind = ValueKind::kLargeString;
      verify(static_cast<LargeBinaryBuilder*>(nullptr));
      break;
    case TypeId::kBinary:
      node->kind = ValueKind::kBinary;
      verify(static_cast<BinaryBuilder*>(nullptr));
      break;
    case TypeId::kLargeBinary:
      node->kind = ValueKind::kLargeBinary;
      verify(static_cast<LargeBinaryBuilder*>(nullptr));
      break;
    case TypeId::kList: {
      node->kind = ValueKind::kList;
      STRATA_ASSIGN_OR_RETURN(auto* list, BuilderAs<ListBuilder>(builder, *field));
      node->children.resize(1);
      return BuildNode(type.value_field(), list->value_builder(), &node->children[0]);
    }
    case TypeId::kLargeList: {
      node->kind = ValueKind::kLargeList;
      STRATA_ASSIGN_OR_RETURN(auto* list, BuilderAs<LargeListBuilder>(builder, *field));
      node->children.resize(1);
      return BuildNode(type.value_field(), list->value_builder(), &node->children[0]);
    }
    case TypeId::kFixedSizeList: {
      node->kind = ValueKind::kFixedSizeList;
      node->list_size = type.list_size();
      STRATA_ASSIGN_OR_RETURN(auto* list, BuilderAs<FixedSizeListBuilder>(builder, *field));
      node->children.resize(1);
      return BuildNode(type.value_field(), list->value_builder(), &node->children[0]);
    }
    case TypeId::kStruct: {
      node->kind = ValueKind::kStruct;
      STRATA_ASSIGN_OR_RETURN(auto* struct_builder, BuilderAs<StructBuilder>(builder, *field));
      std::vector<ArrayBuilder*> builders;
      builders.reserve(struct_builder->num_fields());
      for (int i = 0; i < struct_builder->num_fields(); ++i) {
        builders.push_back(struct_builder->field_builder(i));
      }
      return BuildStructChildren(type.fields(), builders, node);
    }
    case TypeId::kDictionary: {
      const DataTypePtr& values = type.dictionary_value_type();
      if (values->is_string()) {
        node->kind = ValueKind::kDictionary;
      } else if (values->id() == TypeId::kBinary || values->id() == TypeId::kLargeBinary) {
        node->kind = ValueKind::kDictionaryBinary;
      } else {
        return Status::NotSupported(fmt::format("JSON: field '{}' has unsupported type {}",
                                                field->name(), node->type_name));
      }
      verify(static_cast<DictionaryBuilder*>(nullptr));
      break;
    }
  }
  return check;
}

Status BuildStructChildren(const std::vector<FieldPtr>& fields,
                           const std::vector<ArrayBuilder*>& builders, BuilderNode* node) {
  if (fields.size() != builders.size()) {
    return Status::Internal("JSON decoder: struct builder does not match its type");
  }
  node->children.resize(fields.size());
  node->seen.assign(fields.size(), 0);
  for (size_t i = 0; i < fields.size(); ++i) {
    STRATA_RETURN_IF_ERROR(BuildNode(fields[i], builders[i], &node->children[i]));
    node->field_index.emplace(fields[i]->name(), static_cast<int>(i));  // first name wins
  }
  return Status::OK();
}

}  // namespace

Status BuildRowTree(const Schema& schema, const RecordBatchBuilder& builder, BuilderNode* root) {
  std::vector<ArrayBuilder*> builders;
  builders.reserve(schema.num_fields());
  for (int i = 0; i < schema.num_fields(); ++i) builders.push_back(builder.builder(i));
  root->type_name = "object";
  return BuildStructChildren(schema.fields(), builders, root);
}

}  // namespace strata::json::internal
