// The context schema, ContextRecord <-> RecordBatch conversion (through record_codec.h's
// column table), distance metrics, the lifecycle part of the visibility predicate and
// RecordFilters (shared/reference/lance-context.md §3.2).
#include "store/context_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "store/record_codec.h"
#include "strata/builder.h"
#include "strata/context_store.h"
#include "strata/table.h"
#include "util/text_codec.h"

namespace strata::store {
namespace {

using Column = internal::RecordColumn<ContextRecord>;
using internal::As;
using internal::OptionalNumber;
using internal::OptionalString;
using internal::RequiredString;

constexpr std::string_view kTextPayload = "text_payload";
constexpr std::string_view kBinaryPayload = "binary_payload";

Column Timestamp(std::string name, std::optional<int64_t> ContextRecord::*member) {
  return OptionalNumber<int64_t>(std::move(name), timestamp_us(), member);
}

DataTypePtr StateMetadataType() {
  return struct_({field("step", int32()), field("active_plan_id", utf8()),
                  field("tokens_used", int32()), field("custom", utf8())});
}

Column StateMetadataColumn() {
  Column c{"state_metadata", StateMetadataType(), true};
  c.encode = [](ArrayBuilder& b, const ContextRecord& r) -> Status {
    auto& sb = As<StructBuilder>(b);
    if (!r.state_metadata.has_value()) {
      sb.AppendNull();
      return Status::OK();
    }
    const ContextStateMetadata& m = *r.state_metadata;
    sb.Append();
    auto number = [&](int k, const std::optional<int32_t>& v) {
      if (v) {
        As<NumericBuilder<int32_t>>(*sb.field_builder(k)).Append(*v);
      } else {
        sb.field_builder(k)->AppendNull();
      }
    };
    auto text = [&](int k, const std::optional<std::string>& v) -> Status {
      if (!v) {
        sb.field_builder(k)->AppendNull();
        return Status::OK();
      }
      return As<BinaryBuilder>(*sb.field_builder(k)).Append(*v);
    };
    number(0, m.step);
    STRATA_RETURN_IF_ERROR(text(1, m.active_plan_id));
    number(2, m.tokens_used);
    return text(3, m.custom);
  };
  c.decode = [](const Array& a, int64_t i, ContextRecord& r) {
    if (!a.IsValid(i)) return Status::OK();
    ContextStateMetadata m;
    const Array step = a.field(0);
    const Array plan = a.field(1);
    const Array tokens = a.field(2);
    const Array custom = a.field(3);
    if (step.IsValid(i)) m.step = step.Value<int32_t>(i);
    if (plan.IsValid(i)) m.active_plan_id = std::string(plan.StringValue(i));
    if (tokens.IsValid(i)) m.tokens_used = tokens.Value<int32_t>(i);
    if (custom.IsValid(i)) m.custom = std::string(custom.StringValue(i));
    r.state_metadata = std::move(m);
    return Status::OK();
  };
  c.has_value = [](const ContextRecord& r) { return r.state_metadata.has_value(); };
  return c;
}

// lifecycle_status: NOT NULL in new stores; a null (older rows) reads as "active".
Column LifecycleStatusColumn() {
  Column c = RequiredString<int32_t>("lifecycle_status", utf8(), &ContextRecord::lifecycle_status);
  c.nullable = true;  // decode sees nulls and maps them
  c.decode = [](const Array& a, int64_t i, ContextRecord& r) {
    r.lifecycle_status =
        a.IsValid(i) ? std::string(a.StringValue(i)) : std::string(kLifecycleActive);
    return Status::OK();
  };
  c.has_value = [](const ContextRecord& r) { return r.lifecycle_status != kLifecycleActive; };
  return c;
}

// text_payload: large_utf8, or large_binary when configured as a blob column.
Column TextPayloadColumn() {
  Column c = OptionalString<int64_t>(std::string(kTextPayload), large_utf8(),
                                     &ContextRecord::text_payload);
  c.accepts = [](const DataType& t) {
    return t.id() == TypeId::kLargeUtf8 || t.id() == TypeId::kLargeBinary;
  };
  c.decode = [](const Array& a, int64_t i, ContextRecord& r) {
    if (!a.IsValid(i)) return Status::OK();
    r.text_payload = a.type()->id() == TypeId::kLargeBinary ? LossyUtf8(a.StringValue(i))
                                                            : std::string(a.StringValue(i));
    return Status::OK();
  };
  return c;
}

// embedding: fixed_size_list<float32 (nullable items), dim>; any dim is accepted here, the
// encoder checks a record's length against the schema's.
Column EmbeddingColumn() {
  Column c{"embedding", fixed_size_list(float32(), kDefaultEmbeddingDim), true};
  c.accepts = [](const DataType& t) {
    return t.id() == TypeId::kFixedSizeList && t.fields()[0]->type()->id() == TypeId::kFloat32;
  };
  c.encode = [](ArrayBuilder& b, const ContextRecord& r) -> Status {
    auto& lb = As<FixedSizeListBuilder>(b);
    if (!r.embedding.has_value()) {
      lb.AppendNull();
      return Status::OK();
    }
    const int32_t dim = b.type()->list_size();
    if (static_cast<int64_t>(r.embedding->size()) != dim) {
      return Status::InvalidArgument(fmt::format(
          "embedding length {} does not match expected dimension {}", r.embedding->size(), dim));
    }
    lb.Append();
    As<NumericBuilder<float>>(*lb.value_builder())
        .AppendValues(r.embedding->data(), r.embedding->size());
    return Status::OK();
  };
  c.decode = [](const Array& a, int64_t i, ContextRecord& r) {
    if (!a.IsValid(i)) return Status::OK();
    auto [begin, end] = a.ValueRange(i);
    const Array values = a.values_array();
    std::vector<float> out;
    out.reserve(static_cast<size_t>(end - begin));
    for (int64_t k = begin; k < end; ++k) {
      out.push_back(values.IsValid(k) ? values.Value<float>(k) : std::nanf(""));
    }
    r.embedding = std::move(out);
    return Status::OK();
  };
  c.has_value = [](const ContextRecord& r) { return r.embedding.has_value(); };
  return c;
}

// The group a column belongs to and the message for a value the store cannot hold.
struct Group {
  bool ContextColumnGroups::*flag;
  const char* message;
};

std::optional<Group> GroupOf(std::string_view column) {
  static const char* kLifecycle =
      "lifecycle fields require a context dataset created with lifecycle support";
  static const char* kReference =
      "external payload references require a context dataset created with external-reference "
      "support";
  if (column == "external_id") {
    return Group{&ContextColumnGroups::external_id,
                 "external_id requires a context dataset created with external_id support"};
  }
  if (column == "tenant") {
    return Group{&ContextColumnGroups::partition_keys,
                 "tenant requires a context dataset created with partition-key column support"};
  }
  if (column == "source") {
    return Group{&ContextColumnGroups::partition_keys,
                 "source requires a context dataset created with partition-key column support"};
  }
  if (column == "metadata") {
    return Group{&ContextColumnGroups::metadata,
                 "metadata requires a context dataset created with metadata support"};
  }
  if (column == "relationships") {
    return Group{&ContextColumnGroups::relationships,
                 "relationships require a context dataset with relationships support; run "
                 "migrate_relationships_column() on older datasets"};
  }
  if (column == "expires_at" || column == "retention_policy" || column == "lifecycle_status" ||
      column == "retired_at" || column == "retired_reason" || column == "supersedes_id" ||
      column == "superseded_by_id") {
    return Group{&ContextColumnGroups::lifecycle, kLifecycle};
  }
  if (column == "payload_uri" || column == "payload_size" || column == "payload_checksum") {
    return Group{&ContextColumnGroups::external_reference, kReference};
  }
  return std::nullopt;
}

const std::vector<Column>& Columns() {
  static const std::vector<Column>* columns = [] {
    auto* cols = new std::vector<Column>();
    auto add = [cols](Column c) {
      if (std::optional<Group> group = GroupOf(c.name)) c.missing_message = group->message;
      cols->push_back(std::move(c));
    };
    add(RequiredString<int32_t>("id", utf8(), &ContextRecord::id));
    add(OptionalString<int32_t>("external_id", utf8(), &ContextRecord::external_id));
    add(RequiredString<int32_t>("run_id", utf8(), &ContextRecord::run_id));
    add(OptionalString<int32_t>("bot_id", utf8(), &ContextRecord::bot_id));
    add(OptionalString<int32_t>("session_id", utf8(), &ContextRecord::session_id));
    add(OptionalString<int32_t>("tenant", utf8(), &ContextRecord::tenant));
    add(OptionalString<int32_t>("source", utf8(), &ContextRecord::source));
    add(internal::RequiredNumber<int64_t>("created_at", timestamp_us(),
                                          &ContextRecord::created_at_micros));
    add(internal::DictionaryString("role", &ContextRecord::role));
    add(StateMetadataColumn());
    add(OptionalString<int64_t>("metadata", large_utf8(), &ContextRecord::metadata));
    add(internal::RelationshipList<ContextRelationship>(
        "relationships", &ContextRecord::relationships, /*nullable_fields=*/true));
    add(Timestamp("expires_at", &ContextRecord::expires_at_micros));
    add(OptionalString<int32_t>("retention_policy", utf8(), &ContextRecord::retention_policy));
    add(LifecycleStatusColumn());
    add(Timestamp("retired_at", &ContextRecord::retired_at_micros));
    add(OptionalString<int32_t>("retired_reason", utf8(), &ContextRecord::retired_reason));
    add(OptionalString<int32_t>("supersedes_id", utf8(), &ContextRecord::supersedes_id));
    add(OptionalString<int32_t>("superseded_by_id", utf8(), &ContextRecord::superseded_by_id));
    add(RequiredString<int32_t>("content_type", utf8(), &ContextRecord::content_type));
    add(TextPayloadColumn());
    add(OptionalString<int64_t>(std::string(kBinaryPayload), large_binary(),
                                &ContextRecord::binary_payload));
    add(OptionalString<int32_t>("payload_uri", utf8(), &ContextRecord::payload_uri));
    add(OptionalNumber<int64_t>("payload_size", int64(), &ContextRecord::payload_size));
    add(OptionalString<int32_t>("payload_checksum", utf8(), &ContextRecord::payload_checksum));
    add(EmbeddingColumn());
    return cols;
  }();
  return *columns;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string LossyUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    size_t n = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 2;
      min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3;
      min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4;
      min = 0x10000;
    }
    bool ok = n > 0 && i + n <= bytes.size();
    uint32_t cp = n > 0 ? (c & (0x7F >> n)) : 0;
    for (size_t k = 1; ok && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(bytes[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

std::string_view DistanceMetricName(DistanceMetric metric) {
  switch (metric) {
    case DistanceMetric::kL2:
      return "l2";
    case DistanceMetric::kCosine:
      return "cosine";
    case DistanceMetric::kDot:
      return "dot";
  }
  return "l2";
}

Result<DistanceMetric> ParseDistanceMetric(std::string_view text) {
  const std::string s = Lower(text);
  if (s == "l2" || s == "euclidean") return DistanceMetric::kL2;
  if (s == "cosine") return DistanceMetric::kCosine;
  if (s == "dot" || s == "dot_product") return DistanceMetric::kDot;
  return Status::InvalidArgument(
      fmt::format("invalid distance metric '{}': valid values are 'l2', 'cosine', 'dot'", text));
}

double Distance(DistanceMetric metric, const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0;
  double aa = 0;
  double bb = 0;
  double l2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i];
    const double y = b[i];
    dot += x * y;
    aa += x * x;
    bb += y * y;
    l2 += (x - y) * (x - y);
  }
  switch (metric) {
    case DistanceMetric::kL2:
      return std::sqrt(l2);
    case DistanceMetric::kCosine:
      if (aa == 0 || bb == 0) return 1.0;
      return 1.0 - dot / (std::sqrt(aa) * std::sqrt(bb));
    case DistanceMetric::kDot:
      return -dot;
  }
  return std::sqrt(l2);
}

Result<SchemaPtr> ContextSchema(const ContextSchemaOptions& options) {
  if (options.embedding_dim <= 0) {
    return Status::InvalidArgument(
        fmt::format("embedding_dim must be positive, got {}", options.embedding_dim));
  }
  for (const std::string& blob : options.blob_columns) {
    if (blob != kTextPayload && blob != kBinaryPayload) {
      return Status::InvalidArgument(fmt::format(
          "invalid blob column '{}': valid columns are [binary_payload, text_payload]", blob));
    }
  }
  std::vector<FieldPtr> fields;
  for (const Column& c : Columns()) {
    if (std::optional<Group> group = GroupOf(c.name); group && !(options.groups.*group->flag)) {
      continue;
    }
    KeyValueMetadata metadata;
    if (c.name == "id") metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
    const bool blob = options.blob_columns.count(c.name) > 0;
    if (blob) metadata.Set(std::string(kBlobColumnMetadata), "true");
    DataTypePtr type = c.type;
    if (c.name == kTextPayload && blob) type = large_binary();
    if (c.name == "embedding") type = fixed_size_list(float32(), options.embedding_dim);
    // lifecycle_status is NOT NULL in the schema; the decoder still maps a null to active.
    const bool nullable = c.name == "lifecycle_status" ? false : c.nullable;
    fields.push_back(field(c.name, std::move(type), nullable, std::move(metadata)));
  }
  return schema(std::move(fields),
                KeyValueMetadata({{std::string(kDistanceMetricMetadata),
                                   std::string(DistanceMetricName(options.distance_metric))}}));
}

Result<RecordBatch> EncodeContextRecords(const std::vector<ContextRecord>& records,
                                         const SchemaPtr& schema) {
  return internal::EncodeRecords<ContextRecord>(
      Columns(), "dataset", records, schema,
      [](const ContextRecord& r) -> std::string_view { return r.id; });
}

Result<std::vector<ContextRecord>> DecodeContextRecords(const RecordBatch& batch) {
  return internal::DecodeRecords<ContextRecord>(Columns(), "dataset", batch);
}

Result<std::vector<ContextRecord>> DecodeContextRecordRows(const RecordBatch& batch,
                                                           std::span<const int64_t> rows) {
  return internal::DecodeRecordRows<ContextRecord>(Columns(), "dataset", batch, rows);
}

bool VisibleByLifecycle(const ContextRecord& record, const LifecycleQueryOptions& options,
                        int64_t now_micros) {
  if (record.is_tombstone()) return false;
  if (!options.include_expired && record.expires_at_micros &&
      *record.expires_at_micros <= now_micros) {
    return false;
  }
  if (options.include_retired) return true;
  if (record.lifecycle_status == kLifecycleActive ||
      record.lifecycle_status == kLifecycleContradicted) {
    return !record.retired_at_micros && !record.superseded_by_id;
  }
  return false;
}

// --- RecordFilters ------------------------------------------------------------------

namespace {

using Json = nlohmann::json;

Status StringFilter(const Json& value, std::string_view key, std::optional<std::string>* out) {
  if (value.is_null()) return Status::OK();
  if (!value.is_string()) {
    return Status::InvalidArgument(fmt::format("filter '{}' must be a string or null", key));
  }
  *out = value.get<std::string>();
  return Status::OK();
}

Result<int64_t> TimestampFilter(const Json& value, std::string_view key) {
  if (!value.is_string()) {
    return Status::InvalidArgument(
        fmt::format("filter '{}' must be an ISO-8601 timestamp string", key));
  }
  Result<int64_t> micros = ParseTimestampMicros(value.get<std::string>());
  if (!micros.ok()) {
    return Status::InvalidArgument(
        fmt::format("filter '{}' must be an ISO-8601 timestamp string", key));
  }
  return *micros;
}

bool IsStartAlias(std::string_view k) {
  return k == "created_at_start" || k == "created_after" || k == "created_at_gte";
}
bool IsEndAlias(std::string_view k) {
  return k == "created_at_end" || k == "created_before" || k == "created_at_lte";
}

}  // namespace

Result<RecordFilters> RecordFilters::FromJson(std::string_view text) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return Status::InvalidArgument("filters must be a JSON object (invalid JSON)");
  }
  if (!root.is_object()) return Status::InvalidArgument("filters must be a JSON object");
  RecordFilters out;
  for (const auto& [key, value] : root.items()) {
    if (key == "bot_id") {
      STRATA_RETURN_IF_ERROR(StringFilter(value, key, &out.bot_id));
    } else if (key == "session_id") {
      STRATA_RETURN_IF_ERROR(StringFilter(value, key, &out.session_id));
    } else if (key == "role") {
      STRATA_RETURN_IF_ERROR(StringFilter(value, key, &out.role));
    } else if (key == "content_type") {
      STRATA_RETURN_IF_ERROR(StringFilter(value, key, &out.content_type));
    } else if (key == "tenant") {
      STRATA_RETURN_IF_ERROR(StringFilter(value, key, &out.tenant));
    } else if (key == "source") {
      STRATA_RETURN_IF_ERROR(StringFilter(value, key, &out.source));
    } else if (key == "created_at") {
      if (!value.is_object()) {
        return Status::InvalidArgument("filter 'created_at' must be an object with gte/lte bounds");
      }
      for (const auto& [op, bound] : value.items()) {
        if (op == "gte" || op == "start" || op == "after") {
          STRATA_ASSIGN_OR_RETURN(out.created_at_start_micros, TimestampFilter(bound, key));
        } else if (op == "lte" || op == "end" || op == "before") {
          STRATA_ASSIGN_OR_RETURN(out.created_at_end_micros, TimestampFilter(bound, key));
        } else {
          return Status::InvalidArgument(
              fmt::format("unsupported created_at filter operator '{}'", op));
        }
      }
    } else if (IsStartAlias(key)) {
      STRATA_ASSIGN_OR_RETURN(out.created_at_start_micros, TimestampFilter(value, key));
    } else if (IsEndAlias(key)) {
      STRATA_ASSIGN_OR_RETURN(out.created_at_end_micros, TimestampFilter(value, key));
    } else {
      MetadataMatch match;
      if (value.is_object() && value.size() == 1 && value.contains("contains")) {
        match.kind = MetadataMatch::Kind::kContains;
        match.json = value["contains"].dump();
      } else {
        match.json = value.dump();
      }
      out.metadata[key] = std::move(match);
    }
  }
  return out;
}

bool RecordFilters::empty() const {
  return !bot_id && !session_id && !role && !content_type && !tenant && !source &&
         !created_at_start_micros && !created_at_end_micros && metadata.empty();
}

bool RecordFilters::Matches(const ContextRecord& record) const {
  auto equal = [](const std::optional<std::string>& want, const std::optional<std::string>& got) {
    return !want || (got && *got == *want);
  };
  if (!equal(bot_id, record.bot_id) || !equal(session_id, record.session_id) ||
      !equal(tenant, record.tenant) || !equal(source, record.source)) {
    return false;
  }
  if (role && *role != record.role) return false;
  if (content_type && *content_type != record.content_type) return false;
  if (created_at_start_micros && record.created_at_micros < *created_at_start_micros) {
    return false;
  }
  if (created_at_end_micros && record.created_at_micros > *created_at_end_micros) return false;
  if (metadata.empty()) return true;
  if (!record.metadata) return false;
  const Json doc = Json::parse(*record.metadata, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return false;
  for (const auto& [key, match] : metadata) {
    auto it = doc.find(key);
    if (it == doc.end()) return false;
    const Json want = Json::parse(match.json);
    if (match.kind == MetadataMatch::Kind::kEquals) {
      if (*it != want) return false;
      continue;
    }
    if (it->is_array()) {
      if (std::find(it->begin(), it->end(), want) == it->end()) return false;
    } else if (it->is_string() && want.is_string()) {
      if (it->get<std::string>().find(want.get<std::string>()) == std::string::npos) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace strata::store
