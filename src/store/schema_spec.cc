// SchemaSpec (include/strata/generic_store.h): the declared columns of a generic store, their
// two JSON forms, the validation rules and the mapping to the base table's schema.
#include <fmt/format.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "strata/generic_store.h"
#include "strata/schema_json.h"
#include "strata/table.h"

namespace strata::store {
namespace {

using Json = nlohmann::ordered_json;

// Field metadata keys of the strata schema JSON form.
constexpr std::string_view kFieldMetricMetadata = "strata:distance_metric";

std::string_view KindName(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kString:
      return "string";
    case ColumnKind::kInt32:
      return "int32";
    case ColumnKind::kInt64:
      return "int64";
    case ColumnKind::kFloat32:
      return "float32";
    case ColumnKind::kFloat64:
      return "float64";
    case ColumnKind::kBool:
      return "bool";
    case ColumnKind::kTimestamp:
      return "timestamp";
    case ColumnKind::kBinary:
      return "binary";
    case ColumnKind::kVector:
      return "vector";
    case ColumnKind::kList:
      return "list";
  }
  return "string";
}

std::optional<ColumnKind> ParseKind(std::string_view name) {
  for (ColumnKind kind :
       {ColumnKind::kString, ColumnKind::kInt32, ColumnKind::kInt64, ColumnKind::kFloat32,
        ColumnKind::kFloat64, ColumnKind::kBool, ColumnKind::kTimestamp, ColumnKind::kBinary,
        ColumnKind::kVector, ColumnKind::kList}) {
    if (KindName(kind) == name) return kind;
  }
  return std::nullopt;
}

// A type object ({"type": ..., ...}) or a shorthand type name ("float32"). `column` names the
// column in messages; `allow_nullable` is true at the top level of a column, where the
// "nullable" key lives.
Result<ColumnType> TypeFromJson(const Json& value, const std::string& column,
                                std::optional<bool>* nullable) {
  if (value.is_string()) {
    std::optional<ColumnKind> kind = ParseKind(value.get<std::string>());
    if (!kind) {
      return Status::InvalidArgument(
          fmt::format("column '{}': unknown type '{}'", column, value.get<std::string>()));
    }
    if (*kind == ColumnKind::kVector || *kind == ColumnKind::kList) {
      return Status::InvalidArgument(fmt::format(
          "column '{}': a {} type needs an object with its parameters", column, KindName(*kind)));
    }
    ColumnType type;
    type.kind = *kind;
    return type;
  }
  if (!value.is_object()) {
    return Status::InvalidArgument(fmt::format(
        "column '{}': the type must be an object like {{\"type\": \"string\"}}", column));
  }
  auto type_it = value.find("type");
  if (type_it == value.end() || !type_it->is_string()) {
    return Status::InvalidArgument(
        fmt::format("column '{}': the type object needs a \"type\" string", column));
  }
  std::optional<ColumnKind> kind = ParseKind(type_it->get<std::string>());
  if (!kind) {
    return Status::InvalidArgument(
        fmt::format("column '{}': unknown type '{}'", column, type_it->get<std::string>()));
  }
  ColumnType type;
  type.kind = *kind;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    auto expect = [&](bool ok, std::string_view what) -> Status {
      if (ok) return Status::OK();
      return Status::InvalidArgument(
          fmt::format("column '{}': \"{}\" must be {}, got {}", column, key, what, v.dump()));
    };
    if (key == "type") continue;
    if (key == "nullable" && nullable != nullptr) {
      STRATA_RETURN_IF_ERROR(expect(v.is_boolean(), "true or false"));
      *nullable = v.get<bool>();
    } else if (key == "large" && type.kind == ColumnKind::kString) {
      STRATA_RETURN_IF_ERROR(expect(v.is_boolean(), "true or false"));
      type.large = v.get<bool>();
    } else if (key == "blob" && type.kind == ColumnKind::kBinary) {
      STRATA_RETURN_IF_ERROR(expect(v.is_boolean(), "true or false"));
      type.blob = v.get<bool>();
    } else if (key == "dim" && type.kind == ColumnKind::kVector) {
      STRATA_RETURN_IF_ERROR(expect(v.is_number_integer(), "an integer"));
      const auto dim = v.get<int64_t>();
      if (dim <= 0) {
        return Status::InvalidArgument(
            fmt::format("column '{}': vector dim must be positive, got {}", column, dim));
      }
      if (dim > INT32_MAX) {
        return Status::InvalidArgument(fmt::format(
            "column '{}': vector dim must be at most {}, got {}", column, INT32_MAX, dim));
      }
      type.dim = static_cast<int32_t>(dim);
    } else if (key == "metric" && type.kind == ColumnKind::kVector) {
      STRATA_RETURN_IF_ERROR(expect(v.is_string(), "a string"));
      Result<VectorMetric> metric = ParseVectorMetric(v.get<std::string>());
      if (!metric.ok()) return metric.status().WithContext(fmt::format("column '{}'", column));
      type.metric = *metric;
    } else if (key == "item" && type.kind == ColumnKind::kList) {
      STRATA_ASSIGN_OR_RETURN(ColumnType item, TypeFromJson(v, column, nullptr));
      type.item = std::make_shared<const ColumnType>(std::move(item));
    } else {
      return Status::InvalidArgument(fmt::format("column '{}': unexpected key \"{}\" in a {} type",
                                                 column, key, KindName(type.kind)));
    }
  }
  if (type.kind == ColumnKind::kVector && !value.contains("dim")) {
    return Status::InvalidArgument(
        fmt::format("column '{}': a vector type needs \"dim\" (its length)", column));
  }
  if (type.kind == ColumnKind::kList && type.item == nullptr) {
    return Status::InvalidArgument(
        fmt::format("column '{}': a list type needs \"item\" (its element type)", column));
  }
  return type;
}

Json TypeToJson(const ColumnType& type) {
  Json out = Json::object();
  out["type"] = KindName(type.kind);
  switch (type.kind) {
    case ColumnKind::kString:
      if (type.large) out["large"] = true;
      break;
    case ColumnKind::kBinary:
      if (type.blob) out["blob"] = true;
      break;
    case ColumnKind::kVector:
      out["dim"] = type.dim;
      out["metric"] = VectorMetricName(type.metric);
      break;
    case ColumnKind::kList:
      if (type.item != nullptr) out["item"] = TypeToJson(*type.item);
      break;
    default:
      break;
  }
  return out;
}

Result<SchemaSpec> SpecFromColumnsJson(const Json& columns) {
  if (!columns.is_array()) {
    return Status::InvalidArgument(
        "schema spec: \"columns\" must be an array of [name, type] pairs");
  }
  SchemaSpec spec;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Json& pair = columns[i];
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string()) {
      return Status::InvalidArgument(fmt::format(
          "schema spec: column #{} must be a [name, type] pair, got {}", i, pair.dump()));
    }
    ColumnSpec column;
    column.name = pair[0].get<std::string>();
    std::optional<bool> nullable;
    STRATA_ASSIGN_OR_RETURN(column.type, TypeFromJson(pair[1], column.name, &nullable));
    column.nullable = nullable.value_or(true);
    spec.columns.push_back(std::move(column));
  }
  return spec;
}

// A field of a strata schema as a column type, for the types that map.
Result<ColumnType> TypeFromField(const Field& f, const std::string& column) {
  const DataType& t = *f.type();
  ColumnType type;
  switch (t.id()) {
    case TypeId::kUtf8:
      type.kind = ColumnKind::kString;
      return type;
    case TypeId::kLargeUtf8:
      type.kind = ColumnKind::kString;
      type.large = true;
      return type;
    case TypeId::kInt32:
      type.kind = ColumnKind::kInt32;
      return type;
    case TypeId::kInt64:
      type.kind = ColumnKind::kInt64;
      return type;
    case TypeId::kFloat32:
      type.kind = ColumnKind::kFloat32;
      return type;
    case TypeId::kFloat64:
      type.kind = ColumnKind::kFloat64;
      return type;
    case TypeId::kBool:
      type.kind = ColumnKind::kBool;
      return type;
    case TypeId::kTimestamp:
      if (t.timezone().empty() || t.timezone() == "UTC") {
        type.kind = ColumnKind::kTimestamp;
        return type;
      }
      break;
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      type.kind = ColumnKind::kBinary;
      type.blob = f.metadata().Get(kBlobColumnMetadata) == std::optional<std::string_view>("true");
      return type;
    case TypeId::kFixedSizeList:
      if (t.value_type()->id() == TypeId::kFloat32) {
        type.kind = ColumnKind::kVector;
        type.dim = t.list_size();
        if (std::optional<std::string_view> metric = f.metadata().Get(kFieldMetricMetadata)) {
          Result<VectorMetric> parsed = ParseVectorMetric(*metric);
          if (!parsed.ok()) return parsed.status().WithContext(fmt::format("column '{}'", column));
          type.metric = *parsed;
        }
        return type;
      }
      break;
    case TypeId::kList:
    case TypeId::kLargeList: {
      type.kind = ColumnKind::kList;
      STRATA_ASSIGN_OR_RETURN(ColumnType item, TypeFromField(*t.value_field(), column));
      type.item = std::make_shared<const ColumnType>(std::move(item));
      return type;
    }
    default:
      break;
  }
  return Status::InvalidArgument(fmt::format(
      "column '{}': type {} is not supported by a generic store", column, t.ToString()));
}

Result<SchemaSpec> SpecFromStrataSchema(std::string_view json) {
  STRATA_ASSIGN_OR_RETURN(SchemaPtr schema, SchemaFromJson(json));
  SchemaSpec spec;
  for (const FieldPtr& f : schema->fields()) {
    ColumnSpec column;
    column.name = f->name();
    STRATA_ASSIGN_OR_RETURN(column.type, TypeFromField(*f, column.name));
    column.nullable = f->nullable();
    spec.columns.push_back(std::move(column));
  }
  return spec;
}

DataTypePtr ArrowType(const ColumnType& type) {
  switch (type.kind) {
    case ColumnKind::kString:
      return type.large ? large_utf8() : utf8();
    case ColumnKind::kInt32:
      return int32();
    case ColumnKind::kInt64:
      return int64();
    case ColumnKind::kFloat32:
      return float32();
    case ColumnKind::kFloat64:
      return float64();
    case ColumnKind::kBool:
      return boolean();
    case ColumnKind::kTimestamp:
      return timestamp_us();
    case ColumnKind::kBinary:
      return large_binary();
    case ColumnKind::kVector:
      return fixed_size_list(float32(), type.dim);
    case ColumnKind::kList:
      return list(ArrowType(*type.item));
  }
  return utf8();
}

}  // namespace

Result<VectorMetric> ParseVectorMetric(std::string_view name) {
  if (name == "l2" || name == "euclidean") return VectorMetric::kL2;
  if (name == "cosine") return VectorMetric::kCosine;
  if (name == "dot" || name == "dot_product") return VectorMetric::kDot;
  return Status::InvalidArgument(fmt::format(
      "unknown vector metric '{}': expected l2, euclidean, cosine, dot or dot_product", name));
}

std::string_view VectorMetricName(VectorMetric metric) {
  switch (metric) {
    case VectorMetric::kL2:
      return "l2";
    case VectorMetric::kCosine:
      return "cosine";
    case VectorMetric::kDot:
      return "dot";
  }
  return "l2";
}

bool operator==(const ColumnType& a, const ColumnType& b) {
  if (a.kind != b.kind || a.large != b.large || a.blob != b.blob || a.dim != b.dim ||
      a.metric != b.metric) {
    return false;
  }
  if (a.item == nullptr || b.item == nullptr) return a.item == b.item;
  return *a.item == *b.item;
}

Result<SchemaSpec> SchemaSpec::FromJson(std::string_view json) {
  Json value;
  try {
    value = Json::parse(json);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("schema spec is not valid JSON: {}", e.what()));
  }
  if (!value.is_object()) {
    return Status::InvalidArgument(
        "schema spec must be a JSON object with \"columns\" (or strata's schema JSON with "
        "\"fields\")");
  }
  if (value.contains("columns")) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it.key() != "columns") {
        return Status::InvalidArgument(fmt::format(
            "schema spec: unexpected key \"{}\" (expected only \"columns\")", it.key()));
      }
    }
    return SpecFromColumnsJson(value["columns"]);
  }
  if (value.contains("fields")) return SpecFromStrataSchema(json);
  return Status::InvalidArgument(
      "schema spec must have \"columns\" (or be strata's schema JSON with \"fields\")");
}

std::string SchemaSpec::ToJson() const {
  Json columns_json = Json::array();
  for (const ColumnSpec& column : columns) {
    Json type = TypeToJson(column.type);
    if (!column.nullable) type["nullable"] = false;
    columns_json.push_back(Json::array({column.name, std::move(type)}));
  }
  Json out = Json::object();
  out["columns"] = std::move(columns_json);
  return out.dump();
}

Status SchemaSpec::Validate() const {
  if (columns.empty()) {
    return Status::InvalidArgument("schema must declare at least one column");
  }
  if (columns.size() > static_cast<size_t>(kMaxSpecColumns)) {
    return Status::InvalidArgument(fmt::format("schema declares {} columns, the maximum is {}",
                                               columns.size(), kMaxSpecColumns));
  }
  std::set<std::string_view> names;
  const ColumnSpec* id = nullptr;
  for (size_t i = 0; i < columns.size(); ++i) {
    const ColumnSpec& column = columns[i];
    if (column.name.empty()) {
      return Status::InvalidArgument(fmt::format("column #{} has an empty name", i));
    }
    if (!names.insert(column.name).second) {
      return Status::InvalidArgument(
          fmt::format("column '{}' is declared more than once", column.name));
    }
    if (column.name.front() == '_') {
      return Status::InvalidArgument(fmt::format(
          "column '{}' is reserved: names starting with '_' are used by strata internals",
          column.name));
    }
    const ColumnType& type = column.type;
    if (type.kind == ColumnKind::kVector && type.dim <= 0) {
      return Status::InvalidArgument(
          fmt::format("column '{}': vector dim must be positive, got {}", column.name, type.dim));
    }
    if (type.kind == ColumnKind::kList) {
      if (type.item == nullptr) {
        return Status::InvalidArgument(
            fmt::format("column '{}': a list type needs an item type", column.name));
      }
      if (type.item->kind == ColumnKind::kList) {
        return Status::InvalidArgument(
            fmt::format("column '{}': nested lists are not supported", column.name));
      }
      if (type.item->kind == ColumnKind::kVector) {
        return Status::InvalidArgument(
            fmt::format("column '{}': a list of vectors is not supported; declare a vector column",
                        column.name));
      }
    }
    if (column.name == "id") id = &column;
  }
  if (id == nullptr) {
    return Status::InvalidArgument(
        "schema must declare an 'id' column: it is the primary key and the LSM merge key");
  }
  if (id->type.kind != ColumnKind::kString || id->type.large) {
    return Status::InvalidArgument(fmt::format(
        "column 'id' must be of type string (not large), got {}{}: it is the primary key",
        id->type.large ? "large " : "", KindName(id->type.kind)));
  }
  if (id->nullable) {
    return Status::InvalidArgument(
        "column 'id' must not be nullable: it is the primary key (declare \"nullable\": false)");
  }
  return Status::OK();
}

Result<SchemaPtr> SchemaSpec::ToArrowSchema() const {
  STRATA_RETURN_IF_ERROR(Validate());
  std::vector<FieldPtr> fields;
  KeyValueMetadata metadata;
  auto add = [&](const ColumnSpec& column) {
    KeyValueMetadata field_metadata;
    if (column.name == "id") field_metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
    if (column.type.kind == ColumnKind::kBinary && column.type.blob) {
      field_metadata.Set(std::string(kBlobColumnMetadata), "true");
    }
    if (column.type.kind == ColumnKind::kVector) {
      metadata.Set(fmt::format("{}{}", kDistanceMetricMetadataPrefix, column.name),
                   std::string(VectorMetricName(column.type.metric)));
    }
    fields.push_back(
        field(column.name, ArrowType(column.type), column.nullable, std::move(field_metadata)));
  };
  for (const ColumnSpec& column : columns) {
    if (column.name == "id") add(column);
  }
  for (const ColumnSpec& column : columns) {
    if (column.name != "id") add(column);
  }
  metadata.Set(std::string(kSchemaSpecMetadata), ToJson());
  return schema(std::move(fields), std::move(metadata));
}

Result<SchemaSpec> SchemaSpec::FromStoredSchema(const Schema& schema) {
  std::optional<std::string_view> stored = schema.metadata().Get(kSchemaSpecMetadata);
  if (!stored) {
    return Status::InvalidArgument(
        "dataset has no stored schema spec: it was not created as a generic store");
  }
  Result<SchemaSpec> spec = FromJson(*stored);
  if (!spec.ok()) return spec.status().WithContext("stored schema spec");
  return spec;
}

std::vector<std::string> SchemaSpec::NonBlobColumns() const {
  std::vector<std::string> out;
  for (const ColumnSpec& column : columns) {
    if (column.name == "id") out.push_back(column.name);
  }
  for (const ColumnSpec& column : columns) {
    if (column.name == "id") continue;
    if (column.type.kind == ColumnKind::kBinary && column.type.blob) continue;
    out.push_back(column.name);
  }
  return out;
}

}  // namespace strata::store
