// Arrow IPC metadata: layout plans, strata schema <-> flatbuffer Schema, message framing and
// flatbuffer verification.
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>

#include "columnar/ipc_internal.h"

namespace strata::ipc::internal {

static_assert(std::endian::native == std::endian::little,
              "strata's Arrow IPC code assumes a little-endian host");

namespace {

bool IsBinaryLike(const DataType& type) { return type.is_binary_like(); }

}  // namespace

int BufferCount(const DataType& type) {
  switch (type.id()) {
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return 3;
    case TypeId::kFixedSizeList:
    case TypeId::kStruct:
      return 1;
    default:  // fixed width, list, large list, dictionary
      return 2;
  }
}

namespace {

// Children of a node in the record batch layout (dictionary values live elsewhere).
const std::vector<FieldPtr>& LayoutChildren(const DataType& type) {
  static const std::vector<FieldPtr> kNone;
  switch (type.id()) {
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList:
    case TypeId::kStruct:
      return type.fields();
    default:
      return kNone;
  }
}

Status PlanNode(const DataTypePtr& type, LayoutPlan* plan, int64_t* next_dictionary_id) {
  NodePlan node;
  node.type = type;
  if (type->id() == TypeId::kDictionary) {
    const DataTypePtr& values = type->dictionary_value_type();
    if (values == nullptr || !IsBinaryLike(*values)) {
      return Status::NotSupported(fmt::format(
          "Arrow IPC supports dictionaries of utf8 / large_utf8 / binary / large_binary "
          "values, not {}",
          type->ToString()));
    }
    node.dictionary_id = (*next_dictionary_id)++;
    plan->dictionaries[node.dictionary_id] = values;
  }
  plan->nodes.push_back(std::move(node));
  plan->num_buffers += BufferCount(*type);
  for (const FieldPtr& child : LayoutChildren(*type)) {
    STRATA_RETURN_IF_ERROR(PlanNode(child->type(), plan, next_dictionary_id));
  }
  return Status::OK();
}

// Fills plan->columns from the node list, given where each top-level column starts.
void FinishColumns(const std::vector<int>& node_starts, LayoutPlan* plan) {
  int buffer = 0;
  int node = 0;
  const int num_nodes = static_cast<int>(plan->nodes.size());
  for (size_t c = 0; c < node_starts.size(); ++c) {
    ColumnSpan span;
    span.node_begin = node_starts[c];
    span.node_end = c + 1 < node_starts.size() ? node_starts[c + 1] : num_nodes;
    span.buffer_begin = buffer;
    for (node = span.node_begin; node < span.node_end; ++node) {
      buffer += BufferCount(*plan->nodes[node].type);
    }
    span.buffer_end = buffer;
    plan->columns.push_back(span);
  }
}

}  // namespace

Result<LayoutPlan> PlanSchema(const Schema& schema) {
  LayoutPlan plan;
  int64_t next_dictionary_id = 0;
  std::vector<int> starts;
  for (const FieldPtr& f : schema.fields()) {
    starts.push_back(static_cast<int>(plan.nodes.size()));
    Status st = PlanNode(f->type(), &plan, &next_dictionary_id);
    if (!st.ok()) return st.WithContext(fmt::format("field '{}'", f->name()));
  }
  FinishColumns(starts, &plan);
  return plan;
}

LayoutPlan PlanSingleType(const DataTypePtr& type) {
  LayoutPlan plan;
  int64_t next_dictionary_id = 0;
  PlanNode(type, &plan, &next_dictionary_id).IgnoreError();  // binary-like values: no error
  FinishColumns({0}, &plan);
  return plan;
}

// ---------------------------------------------------------------------------------------
// strata -> flatbuffer

namespace {

using TypeOffset = std::pair<fb::Type, flatbuffers::Offset<void>>;

TypeOffset TypeToFlatbuffer(flatbuffers::FlatBufferBuilder& fbb, const DataType& type) {
  switch (type.id()) {
    case TypeId::kBool:
      return {fb::Type::Bool, fb::CreateBool(fbb).Union()};
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return {fb::Type::Int,
              fb::CreateInt(fbb, type.bit_width(), type.is_signed_integer()).Union()};
    case TypeId::kFloat32:
      return {fb::Type::FloatingPoint, fb::CreateFloatingPoint(fbb, fb::Precision::SINGLE).Union()};
    case TypeId::kFloat64:
      return {fb::Type::FloatingPoint, fb::CreateFloatingPoint(fbb, fb::Precision::DOUBLE).Union()};
    case TypeId::kUtf8:
      return {fb::Type::Utf8, fb::CreateUtf8(fbb).Union()};
    case TypeId::kLargeUtf8:
      return {fb::Type::LargeUtf8, fb::CreateLargeUtf8(fbb).Union()};
    case TypeId::kBinary:
      return {fb::Type::Binary, fb::CreateBinary(fbb).Union()};
    case TypeId::kLargeBinary:
      return {fb::Type::LargeBinary, fb::CreateLargeBinary(fbb).Union()};
    case TypeId::kTimestamp: {
      flatbuffers::Offset<flatbuffers::String> tz;
      if (!type.timezone().empty()) tz = fbb.CreateString(type.timezone());
      return {fb::Type::Timestamp, fb::CreateTimestamp(fbb, fb::TimeUnit::MICROSECOND, tz).Union()};
    }
    case TypeId::kFixedSizeList:
      return {fb::Type::FixedSizeList, fb::CreateFixedSizeList(fbb, type.list_size()).Union()};
    case TypeId::kList:
      return {fb::Type::List, fb::CreateList(fbb).Union()};
    case TypeId::kLargeList:
      return {fb::Type::LargeList, fb::CreateLargeList(fbb).Union()};
    case TypeId::kStruct:
      return {fb::Type::Struct_, fb::CreateStruct_(fbb).Union()};
    case TypeId::kDictionary:
      break;  // handled by the caller (the field's type is the value type)
  }
  return {fb::Type::NONE, 0};
}

flatbuffers::Offset<fb::Field> FieldToFlatbuffer(flatbuffers::FlatBufferBuilder& fbb,
                                                 const Field& field, const LayoutPlan& plan,
                                                 int* node) {
  const NodePlan& node_plan = plan.nodes[(*node)++];
  const DataType& type = *field.type();
  const bool is_dictionary = type.id() == TypeId::kDictionary;
  const DataType& value_type = is_dictionary ? *type.dictionary_value_type() : type;

  std::vector<flatbuffers::Offset<fb::Field>> children;
  for (const FieldPtr& child : LayoutChildren(value_type)) {
    children.push_back(FieldToFlatbuffer(fbb, *child, plan, node));
  }
  auto children_offset = fbb.CreateVector(children);
  TypeOffset type_offset = TypeToFlatbuffer(fbb, value_type);
  flatbuffers::Offset<fb::DictionaryEncoding> dictionary;
  if (is_dictionary) {
    const DataType& index = *type.index_type();
    auto index_offset = fb::CreateInt(fbb, index.bit_width(), index.is_signed_integer());
    dictionary = fb::CreateDictionaryEncoding(fbb, node_plan.dictionary_id, index_offset,
                                              type.ordered(), fb::DictionaryKind::DenseArray);
  }
  auto name = fbb.CreateString(field.name());
  auto metadata = MetadataToFlatbuffer(fbb, field.metadata());
  return fb::CreateField(fbb, name, field.nullable(), type_offset.first, type_offset.second,
                         dictionary, children_offset, metadata);
}

}  // namespace

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>> MetadataToFlatbuffer(
    flatbuffers::FlatBufferBuilder& fbb, const KeyValueMetadata& metadata) {
  if (metadata.empty()) return 0;
  std::vector<flatbuffers::Offset<fb::KeyValue>> entries;
  for (const auto& [key, value] : metadata.entries()) {
    auto k = fbb.CreateString(key);
    auto v = fbb.CreateString(value);
    entries.push_back(fb::CreateKeyValue(fbb, k, v));
  }
  return fbb.CreateVector(entries);
}

flatbuffers::Offset<fb::Schema> SchemaToFlatbuffer(flatbuffers::FlatBufferBuilder& fbb,
                                                   const Schema& schema, const LayoutPlan& plan) {
  std::vector<flatbuffers::Offset<fb::Field>> fields;
  int node = 0;
  for (const FieldPtr& f : schema.fields()) {
    fields.push_back(FieldToFlatbuffer(fbb, *f, plan, &node));
  }
  auto fields_offset = fbb.CreateVector(fields);
  auto metadata = MetadataToFlatbuffer(fbb, schema.metadata());
  return fb::CreateSchema(fbb, fb::Endianness::Little, fields_offset, metadata);
}

// ---------------------------------------------------------------------------------------
// flatbuffer -> strata

KeyValueMetadata MetadataFromFlatbuffer(
    const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* entries) {
  KeyValueMetadata out;
  if (entries == nullptr) return out;
  for (const fb::KeyValue* kv : *entries) {
    std::string key = kv->key() != nullptr ? kv->key()->str() : std::string();
    std::string value = kv->value() != nullptr ? kv->value()->str() : std::string();
    out.Set(std::move(key), std::move(value));  // a repeated key keeps its last value
  }
  return out;
}

namespace {

Result<DataTypePtr> IntFromFlatbuffer(const fb::Int* int_type, const std::string& path) {
  if (int_type == nullptr) {
    return Status::Corruption(fmt::format("field '{}': Int type without parameters", path));
  }
  const bool is_signed = int_type->is_signed();
  switch (int_type->bit_width()) {
    case 8:
      return is_signed ? int8() : uint8();
    case 16:
      return is_signed ? int16() : uint16();
    case 32:
      return is_signed ? int32() : uint32();
    case 64:
      return is_signed ? int64() : uint64();
    default:
      return Status::Corruption(fmt::format(
          "field '{}': Int bit width {} (must be 8, 16, 32 or 64)", path, int_type->bit_width()));
  }
}

Status ExpectChildren(const fb::Field* field, flatbuffers::uoffset_t expected,
                      const std::string& path, std::string_view type_name) {
  const flatbuffers::uoffset_t n = field->children() ? field->children()->size() : 0;
  if (n != expected) {
    return Status::Corruption(fmt::format("field '{}' of type {} has {} children, expected {}",
                                          path, type_name, n, expected));
  }
  return Status::OK();
}

Result<FieldPtr> FieldFromFlatbuffer(const fb::Field* field, int depth, LayoutPlan* plan,
                                     const std::string& parent_path);

Result<std::vector<FieldPtr>> ChildrenFromFlatbuffer(const fb::Field* field, int depth,
                                                     LayoutPlan* plan, const std::string& path) {
  std::vector<FieldPtr> children;
  if (field->children() == nullptr) return children;
  for (const fb::Field* child : *field->children()) {
    STRATA_ASSIGN_OR_RETURN(FieldPtr f, FieldFromFlatbuffer(child, depth + 1, plan, path));
    children.push_back(std::move(f));
  }
  return children;
}

// The strata type of a field's Type union (the value type for dictionary fields). Fills the
// timestamp conversion of `node`.
Result<DataTypePtr> TypeFromFlatbuffer(const fb::Field* field, int depth, LayoutPlan* plan,
                                       const std::string& path, NodePlan* node) {
  const char* type_name = fb::EnumNameType(field->type_type());
  switch (field->type_type()) {
    case fb::Type::NONE:
      return Status::Corruption(fmt::format("field '{}' has no type", path));
    case fb::Type::Int:
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      return IntFromFlatbuffer(field->type_as_Int(), path);
    case fb::Type::FloatingPoint: {
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      const fb::FloatingPoint* fp = field->type_as_FloatingPoint();
      if (fp == nullptr) {
        return Status::Corruption(fmt::format("field '{}': FloatingPoint without precision", path));
      }
      if (fp->precision() == fb::Precision::SINGLE) return float32();
      if (fp->precision() == fb::Precision::DOUBLE) return float64();
      return Status::NotSupported(fmt::format(
          "field '{}': floating point precision {} is not supported (only SINGLE and DOUBLE)", path,
          static_cast<int>(fp->precision())));
    }
    case fb::Type::Bool:
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      return boolean();
    case fb::Type::Utf8:
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      return utf8();
    case fb::Type::LargeUtf8:
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      return large_utf8();
    case fb::Type::Binary:
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      return binary();
    case fb::Type::LargeBinary:
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      return large_binary();
    case fb::Type::Timestamp: {
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 0, path, type_name));
      const fb::Timestamp* ts = field->type_as_Timestamp();
      if (ts == nullptr) {
        return Status::Corruption(fmt::format("field '{}': Timestamp without unit", path));
      }
      switch (ts->unit()) {
        case fb::TimeUnit::SECOND:
          node->timestamp_multiplier = 1000000;
          break;
        case fb::TimeUnit::MILLISECOND:
          node->timestamp_multiplier = 1000;
          break;
        case fb::TimeUnit::MICROSECOND:
          break;
        case fb::TimeUnit::NANOSECOND:
          node->timestamp_divisor = 1000;
          break;
        default:
          return Status::Corruption(fmt::format("field '{}': unknown timestamp unit {}", path,
                                                static_cast<int>(ts->unit())));
      }
      return timestamp_us(ts->timezone() != nullptr ? ts->timezone()->str() : std::string());
    }
    case fb::Type::List:
    case fb::Type::LargeList: {
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 1, path, type_name));
      STRATA_ASSIGN_OR_RETURN(auto children, ChildrenFromFlatbuffer(field, depth, plan, path));
      return field->type_type() == fb::Type::List ? list(children[0]) : large_list(children[0]);
    }
    case fb::Type::FixedSizeList: {
      STRATA_RETURN_IF_ERROR(ExpectChildren(field, 1, path, type_name));
      const fb::FixedSizeList* fsl = field->type_as_FixedSizeList();
      if (fsl == nullptr || fsl->list_size() < 0) {
        return Status::Corruption(
            fmt::format("field '{}': fixed size list without a valid list size ({})", path,
                        fsl == nullptr ? -1 : fsl->list_size()));
      }
      STRATA_ASSIGN_OR_RETURN(auto children, ChildrenFromFlatbuffer(field, depth, plan, path));
      return fixed_size_list(children[0], fsl->list_size());
    }
    case fb::Type::Struct_: {
      STRATA_ASSIGN_OR_RETURN(auto children, ChildrenFromFlatbuffer(field, depth, plan, path));
      return struct_(std::move(children));
    }
    default: {
      std::string name = type_name[0] != '\0'
                             ? std::string(type_name)
                             : fmt::format("#{}", static_cast<int>(field->type_type()));
      return Status::NotSupported(
          fmt::format("field '{}' has Arrow type {}, which strata does not support", path, name));
    }
  }
}

Result<FieldPtr> FieldFromFlatbuffer(const fb::Field* field, int depth, LayoutPlan* plan,
                                     const std::string& parent_path) {
  std::string name = field->name() != nullptr ? field->name()->str() : std::string();
  std::string path = parent_path.empty() ? name : parent_path + "." + name;
  // The verifier's depth limit stops about here with the default options; this guards our
  // own recursion whatever they are.
  if (depth > kMaxTypeNestingDepth) {
    return Status::Corruption(
        fmt::format("field '{}' is nested more than {} levels deep", path, kMaxTypeNestingDepth));
  }
  const size_t node_index = plan->nodes.size();
  plan->nodes.emplace_back();
  NodePlan node;
  STRATA_ASSIGN_OR_RETURN(DataTypePtr type, TypeFromFlatbuffer(field, depth, plan, path, &node));

  if (const fb::DictionaryEncoding* encoding = field->dictionary()) {
    if (!IsBinaryLike(*type)) {
      return Status::NotSupported(fmt::format(
          "field '{}': dictionaries of {} values are not supported (only utf8, large_utf8, "
          "binary, large_binary)",
          path, type->ToString()));
    }
    if (encoding->dictionary_kind() != fb::DictionaryKind::DenseArray) {
      return Status::NotSupported(fmt::format("field '{}': dictionary kind {}", path,
                                              static_cast<int>(encoding->dictionary_kind())));
    }
    DataTypePtr index = int32();
    if (encoding->index_type() != nullptr) {
      STRATA_ASSIGN_OR_RETURN(index, IntFromFlatbuffer(encoding->index_type(), path));
    }
    const int64_t id = encoding->id();
    auto [it, inserted] = plan->dictionaries.emplace(id, type);
    if (!inserted && !it->second->Equals(*type)) {
      return Status::Corruption(
          fmt::format("field '{}': dictionary id {} is used with value types {} and {}", path, id,
                      it->second->ToString(), type->ToString()));
    }
    node.dictionary_id = id;
    type = dictionary(index, type, encoding->is_ordered());
  }
  node.type = type;
  plan->nodes[node_index] = std::move(node);
  return strata::field(std::move(name), std::move(type), field->nullable(),
                       MetadataFromFlatbuffer(field->custom_metadata()));
}

}  // namespace

Result<DecodedSchema> SchemaFromFlatbuffer(const fb::Schema* schema) {
  if (schema == nullptr) return Status::Corruption("schema metadata is missing");
  if (schema->endianness() != fb::Endianness::Little) {
    return Status::NotSupported("big-endian Arrow data is not supported");
  }
  DecodedSchema out;
  std::vector<FieldPtr> fields;
  std::vector<int> starts;
  if (schema->fields() != nullptr) {
    for (const fb::Field* f : *schema->fields()) {
      starts.push_back(static_cast<int>(out.plan.nodes.size()));
      STRATA_ASSIGN_OR_RETURN(FieldPtr converted, FieldFromFlatbuffer(f, 0, &out.plan, ""));
      fields.push_back(std::move(converted));
    }
  }
  for (const NodePlan& node : out.plan.nodes) out.plan.num_buffers += BufferCount(*node.type);
  FinishColumns(starts, &out.plan);
  out.schema = strata::schema(std::move(fields), MetadataFromFlatbuffer(schema->custom_metadata()));
  return out;
}

// ---------------------------------------------------------------------------------------
// Framing and verification

Status WriteZeros(OutputStream* out, int64_t n) {
  static const char kZeros[64] = {};
  while (n > 0) {
    const int64_t chunk = std::min<int64_t>(n, sizeof(kZeros));
    STRATA_RETURN_IF_ERROR(out->Write(std::string_view(kZeros, chunk)));
    n -= chunk;
  }
  return Status::OK();
}

Result<int64_t> WriteMessageMetadata(OutputStream* out, const flatbuffers::FlatBufferBuilder& fbb,
                                     int alignment) {
  const int64_t size = fbb.GetSize();
  const int64_t start = out->Tell();
  const int64_t end = AlignUp(start + 8 + size, alignment);
  const int64_t length = end - start - 8;  // flatbuffer plus padding
  if (length > std::numeric_limits<int32_t>::max()) {
    return Status::InvalidArgument(
        fmt::format("IPC message metadata of {} bytes exceeds the int32 limit", size));
  }
  char prefix[8];
  const uint32_t marker = kContinuation;
  const int32_t length32 = static_cast<int32_t>(length);
  std::memcpy(prefix, &marker, 4);
  std::memcpy(prefix + 4, &length32, 4);
  STRATA_RETURN_IF_ERROR(out->Write(std::string_view(prefix, 8)));
  STRATA_RETURN_IF_ERROR(
      out->Write(std::string_view(reinterpret_cast<const char*>(fbb.GetBufferPointer()), size)));
  STRATA_RETURN_IF_ERROR(WriteZeros(out, length - size));
  return end - start;
}

Buffer EnsureAligned(const Buffer& buffer, int64_t alignment) {
  if (reinterpret_cast<uintptr_t>(buffer.data()) % alignment == 0) return buffer;
  return Buffer::Copy(buffer.data(), buffer.size());
}

namespace {

flatbuffers::Verifier::Options VerifierOptions(const ReadOptions& options) {
  flatbuffers::Verifier::Options o;
  o.max_depth = static_cast<flatbuffers::uoffset_t>(std::max(1, options.max_flatbuffer_depth));
  o.max_tables = static_cast<flatbuffers::uoffset_t>(std::max(1, options.max_flatbuffer_tables));
  o.check_alignment = true;
  return o;
}

}  // namespace

Status CheckMetadataVersion(fb::MetadataVersion version, const std::string& where) {
  if (version == fb::MetadataVersion::V4 || version == fb::MetadataVersion::V5) {
    return Status::OK();
  }
  if (version < fb::MetadataVersion::V4) {
    return Status::NotSupported(
        fmt::format("{}: Arrow metadata version V{} is too old (V4 or V5 required)", where,
                    static_cast<int>(version) + 1));
  }
  return Status::NotSupported(
      fmt::format("{}: unknown Arrow metadata version {}", where, static_cast<int>(version) + 1));
}

Result<MessageView> VerifyMessage(Buffer metadata, const ReadOptions& options,
                                  const std::string& where) {
  MessageView view;
  view.bytes = EnsureAligned(metadata);
  flatbuffers::Verifier verifier(view.bytes.data(), static_cast<size_t>(view.bytes.size()),
                                 VerifierOptions(options));
  if (!fb::VerifyMessageBuffer(verifier)) {
    return Status::Corruption(
        fmt::format("{}: message metadata ({} bytes) is not a valid Arrow Message flatbuffer",
                    where, metadata.size()));
  }
  view.message = fb::GetMessage(view.bytes.data());
  STRATA_RETURN_IF_ERROR(CheckMetadataVersion(view.message->version(), where));
  if (view.message->body_length() < 0) {
    return Status::Corruption(
        fmt::format("{}: negative body length {}", where, view.message->body_length()));
  }
  return view;
}

Result<FooterView> VerifyFooter(Buffer footer, const ReadOptions& options) {
  FooterView view;
  view.bytes = EnsureAligned(footer);
  flatbuffers::Verifier verifier(view.bytes.data(), static_cast<size_t>(view.bytes.size()),
                                 VerifierOptions(options));
  if (!fb::VerifyFooterBuffer(verifier)) {
    return Status::Corruption(fmt::format(
        "file footer ({} bytes) is not a valid Arrow Footer flatbuffer", footer.size()));
  }
  view.footer = fb::GetFooter(view.bytes.data());
  STRATA_RETURN_IF_ERROR(CheckMetadataVersion(view.footer->version(), "file footer"));
  return view;
}

}  // namespace strata::ipc::internal
