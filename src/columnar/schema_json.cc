// Parses strata's type syntax and reads/writes schema JSON files (see schema_json.h).
#include "strata/schema_json.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

namespace strata {
namespace {

class TypeParser {
 public:
  explicit TypeParser(std::string_view text) : text_(text) {}

  Result<DataTypePtr> ParseAll() {
    STRATA_ASSIGN_OR_RETURN(DataTypePtr type, ParseType());
    SkipSpace();
    if (pos_ != text_.size()) return Error("end of type");
    return type;
  }

 private:
  Status Error(std::string_view expected) const {
    return Status::InvalidArgument(
        fmt::format("bad type '{}': expected {} at position {}", text_, expected, pos_));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool Consume(std::string_view token) {
    SkipSpace();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  Status Expect(std::string_view token) {
    if (!Consume(token)) return Error(fmt::format("'{}'", token));
    return Status::OK();
  }

  // A run of characters that can appear in a word: identifier characters plus '.', '-', '/'.
  std::string_view Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
          c == '/' || c == '+') {
        ++pos_;
      } else {
        break;
      }
    }
    return text_.substr(start, pos_ - start);
  }

  Result<int32_t> Integer() {
    std::string_view digits = Word();
    int32_t value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || value < 0) {
      return Error("a non-negative integer");
    }
    return value;
  }

  // `type` or `name: type [not null]`.
  Result<FieldPtr> ParseFieldOrType(bool require_name) {
    SkipSpace();
    size_t save = pos_;
    std::string_view name = Word();
    if (!name.empty() && Consume(":")) {
      STRATA_ASSIGN_OR_RETURN(DataTypePtr type, ParseType());
      bool nullable = !ConsumeNotNull();
      return field(std::string(name), std::move(type), nullable);
    }
    if (require_name) return Error("'name: type'");
    pos_ = save;
    STRATA_ASSIGN_OR_RETURN(DataTypePtr type, ParseType());
    bool nullable = !ConsumeNotNull();
    return field("item", std::move(type), nullable);
  }

  bool ConsumeNotNull() {
    size_t save = pos_;
    if (Word() == "not" && Word() == "null") return true;
    pos_ = save;
    return false;
  }

  Result<DataTypePtr> ParseType() {
    std::string_view name = Word();
    if (name.empty()) return Error("a type name");
    if (name == "list" || name == "large_list" || name == "fixed_size_list" || name == "struct" ||
        name == "dictionary") {
      // Checked while parsing (not after), so hostile text cannot exhaust the stack; the
      // message leaves out the text, which is long by then.
      if (++depth_ > kMaxTypeNestingDepth) {
        return Status::InvalidArgument(
            fmt::format("type nests deeper than {} levels, the most supported (position {})",
                        kMaxTypeNestingDepth, pos_ - name.size()));
      }
      Result<DataTypePtr> type = ParseNestedType(name);
      --depth_;
      return type;
    }
    static const std::pair<std::string_view, DataTypePtr (*)()> kSimple[] = {
        {"bool", boolean},
        {"boolean", boolean},
        {"int8", int8},
        {"int16", int16},
        {"int32", int32},
        {"int64", int64},
        {"uint8", uint8},
        {"uint16", uint16},
        {"uint32", uint32},
        {"uint64", uint64},
        {"float32", float32},
        {"float", float32},
        {"float64", float64},
        {"double", float64},
        {"utf8", utf8},
        {"string", utf8},
        {"large_utf8", large_utf8},
        {"large_string", large_utf8},
        {"binary", binary},
        {"large_binary", large_binary},
    };
    for (const auto& [n, make] : kSimple) {
      if (name == n) return make();
    }
    if (name == "timestamp") return ParseTimestamp();
    pos_ -= name.size();
    return Error("a type name");
  }

  // list, large_list, fixed_size_list, struct or dictionary, after its name.
  Result<DataTypePtr> ParseNestedType(std::string_view name) {
    if (name == "list" || name == "large_list" || name == "fixed_size_list") {
      STRATA_RETURN_IF_ERROR(Expect("<"));
      STRATA_ASSIGN_OR_RETURN(FieldPtr item, ParseFieldOrType(false));
      STRATA_RETURN_IF_ERROR(Expect(">"));
      if (name == "list") return list(std::move(item));
      if (name == "large_list") return large_list(std::move(item));
      STRATA_RETURN_IF_ERROR(Expect("["));
      STRATA_ASSIGN_OR_RETURN(int32_t size, Integer());
      STRATA_RETURN_IF_ERROR(Expect("]"));
      return fixed_size_list(std::move(item), size);
    }
    if (name == "struct") {
      STRATA_RETURN_IF_ERROR(Expect("<"));
      std::vector<FieldPtr> fields;
      if (!Consume(">")) {
        do {
          const size_t at = pos_;
          STRATA_ASSIGN_OR_RETURN(FieldPtr f, ParseFieldOrType(true));
          for (const FieldPtr& existing : fields) {
            if (existing->name() == f->name()) {
              pos_ = at;
              SkipSpace();
              return Status::InvalidArgument(
                  fmt::format("struct has two fields named '{}' (position {})", f->name(), pos_));
            }
          }
          fields.push_back(std::move(f));
        } while (Consume(","));
        STRATA_RETURN_IF_ERROR(Expect(">"));
      }
      return struct_(std::move(fields));
    }
    return ParseDictionary();
  }

  Result<DataTypePtr> ParseTimestamp() {
    if (!Consume("[")) return timestamp_us();
    if (Word() != "us") return Error("unit 'us' (strata stores microseconds)");
    std::string tz;
    if (Consume(",")) {
      STRATA_RETURN_IF_ERROR(Expect("tz"));
      STRATA_RETURN_IF_ERROR(Expect("="));
      SkipSpace();
      size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] != ']') ++pos_;
      tz = std::string(text_.substr(start, pos_ - start));
      while (!tz.empty() && std::isspace(static_cast<unsigned char>(tz.back()))) tz.pop_back();
      if (tz.empty()) return Error("a time zone name");
    }
    STRATA_RETURN_IF_ERROR(Expect("]"));
    return timestamp_us(std::move(tz));
  }

  Result<DataTypePtr> ParseDictionary() {
    STRATA_RETURN_IF_ERROR(Expect("<"));
    DataTypePtr values, indices = int32();
    bool ordered = false;
    size_t save = pos_;
    if (Word() == "values" && Consume("=")) {
      STRATA_ASSIGN_OR_RETURN(values, ParseType());
      while (Consume(",")) {
        size_t at = pos_;
        std::string_view key = Word();
        if (key == "ordered") {
          ordered = true;
        } else if (key == "indices" && Consume("=")) {
          STRATA_ASSIGN_OR_RETURN(indices, ParseType());
        } else {
          pos_ = at;
          return Error("'indices=TYPE' or 'ordered'");
        }
      }
    } else {
      pos_ = save;
      STRATA_ASSIGN_OR_RETURN(values, ParseType());
    }
    STRATA_RETURN_IF_ERROR(Expect(">"));
    if (!indices->is_integer()) return Error("an integer index type");
    return dictionary(std::move(indices), std::move(values), ordered);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;  // nested types open at pos_
};

Result<KeyValueMetadata> MetadataFromJson(const nlohmann::json& j, std::string_view where) {
  KeyValueMetadata out;
  if (j.is_null()) return out;
  if (!j.is_object()) {
    return Status::InvalidArgument(fmt::format("{}: \"metadata\" must be an object", where));
  }
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) {
      return Status::InvalidArgument(
          fmt::format("{}: metadata value of '{}' must be a string", where, k));
    }
    out.Set(k, v.get<std::string>());
  }
  return out;
}

nlohmann::ordered_json MetadataToJson(const KeyValueMetadata& md) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [k, v] : md.entries()) out[k] = v;
  return out;
}

}  // namespace

Result<DataTypePtr> ParseDataType(std::string_view text) { return TypeParser(text).ParseAll(); }

Result<SchemaPtr> SchemaFromJson(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument("schema is not valid JSON");
  if (!doc.is_object() || !doc.contains("fields") || !doc["fields"].is_array()) {
    return Status::InvalidArgument("schema JSON must be an object with a \"fields\" array");
  }
  std::vector<FieldPtr> fields;
  int index = 0;
  for (const auto& f : doc["fields"]) {
    std::string where = fmt::format("schema field {}", index++);
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("type") ||
        !f["type"].is_string()) {
      return Status::InvalidArgument(fmt::format("{}: needs string \"name\" and \"type\"", where));
    }
    std::string name = f["name"].get<std::string>();
    where = fmt::format("schema field '{}'", name);
    Result<DataTypePtr> type = ParseDataType(f["type"].get<std::string>());
    if (!type.ok()) return type.status().WithContext(where);
    bool nullable = true;
    if (f.contains("nullable")) {
      if (!f["nullable"].is_boolean()) {
        return Status::InvalidArgument(
            fmt::format("{}: \"nullable\" must be true or false", where));
      }
      nullable = f["nullable"].get<bool>();
    }
    STRATA_ASSIGN_OR_RETURN(KeyValueMetadata md,
                            MetadataFromJson(f.value("metadata", nlohmann::json()), where));
    for (const auto& existing : fields) {
      if (existing->name() == name) {
        return Status::InvalidArgument(fmt::format("schema has two fields named '{}'", name));
      }
    }
    fields.push_back(field(std::move(name), *std::move(type), nullable, std::move(md)));
  }
  STRATA_ASSIGN_OR_RETURN(KeyValueMetadata md,
                          MetadataFromJson(doc.value("metadata", nlohmann::json()), "schema"));
  return schema(std::move(fields), std::move(md));
}

std::string SchemaToJson(const Schema& s) {
  nlohmann::ordered_json doc;
  doc["fields"] = nlohmann::ordered_json::array();
  for (const auto& f : s.fields()) {
    nlohmann::ordered_json jf;
    jf["name"] = f->name();
    jf["type"] = f->type()->ToString();
    jf["nullable"] = f->nullable();
    if (!f->metadata().empty()) jf["metadata"] = MetadataToJson(f->metadata());
    doc["fields"].push_back(std::move(jf));
  }
  if (!s.metadata().empty()) doc["metadata"] = MetadataToJson(s.metadata());
  return doc.dump(2) + "\n";
}

}  // namespace strata
