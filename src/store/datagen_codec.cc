// The datagen v2 schema and DatagenEvent <-> RecordBatch conversion. Columns are found by
// name, so a batch in the store's persisted column order (or a projection without
// value_blob) encodes and decodes alike.
#include <fmt/format.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/datagen_store.h"
#include "strata/table.h"

namespace strata::store {
namespace {

using Kind = DatagenValue::Kind;

template <typename B>
B& As(ArrayBuilder& b) {
  return static_cast<B&>(b);
}

// Appends an optional string (utf8 or large_utf8/large_binary, by builder offset width).
template <typename OffsetT>
Status AppendText(ArrayBuilder& b, const std::optional<std::string>& v) {
  if (!v) {
    b.AppendNull();
    return Status::OK();
  }
  return As<BaseBinaryBuilder<OffsetT>>(b).Append(*v);
}

template <typename T>
void AppendNumber(ArrayBuilder& b, const std::optional<T>& v) {
  if (v) {
    As<NumericBuilder<T>>(b).Append(*v);
  } else {
    b.AppendNull();
  }
}

std::optional<std::string> Text(const DatagenEvent& e, Kind kind) {
  if (e.value && e.value->kind() == kind) return e.value->text();
  return std::nullopt;
}

struct Column {
  std::string name;
  DataTypePtr type;
  bool nullable;
  std::function<Status(ArrayBuilder&, const DatagenEvent&)> encode;
};

template <typename OffsetT>
Column TextColumn(std::string name, DataTypePtr type, bool nullable,
                  std::function<std::optional<std::string>(const DatagenEvent&)> get) {
  return Column{
      std::move(name), std::move(type), nullable,
      [get](ArrayBuilder& b, const DatagenEvent& e) { return AppendText<OffsetT>(b, get(e)); }};
}

template <typename T>
Column NumberColumn(std::string name, DataTypePtr type, bool nullable,
                    std::function<std::optional<T>(const DatagenEvent&)> get) {
  return Column{std::move(name), std::move(type), nullable,
                [get](ArrayBuilder& b, const DatagenEvent& e) {
                  AppendNumber<T>(b, get(e));
                  return Status::OK();
                }};
}

const std::vector<Column>& Columns() {
  static const std::vector<Column>* columns = [] {
    auto* c = new std::vector<Column>();
    auto str = [c](std::string name, bool nullable,
                   std::function<std::optional<std::string>(const DatagenEvent&)> get) {
      c->push_back(TextColumn<int32_t>(std::move(name), utf8(), nullable, std::move(get)));
    };
    auto large = [c](std::string name, DataTypePtr type,
                     std::function<std::optional<std::string>(const DatagenEvent&)> get) {
      c->push_back(TextColumn<int64_t>(std::move(name), std::move(type), true, std::move(get)));
    };
    str("event_id", false, [](const DatagenEvent& e) { return e.event_id; });
    str("item_id", false, [](const DatagenEvent& e) { return e.item_id; });
    str("root_item_id", false, [](const DatagenEvent& e) { return e.root_item_id; });
    str("parent_item_id", true, [](const DatagenEvent& e) { return e.parent_item_id; });
    c->push_back(NumberColumn<int64_t>("item_seq", int64(), false, [](const DatagenEvent& e) {
      return std::optional<int64_t>(e.item_seq);
    }));
    str("checkpoint_id", false, [](const DatagenEvent& e) { return e.checkpoint_id; });
    str("event_type", false, [](const DatagenEvent& e) {
      return std::optional<std::string>(DatagenEventTypeName(e.event_type));
    });
    str("step_name", true, [](const DatagenEvent& e) { return e.step_name; });
    str("step_kind", true, [](const DatagenEvent& e) {
      return e.step_kind ? std::optional<std::string>(DatagenStepKindName(*e.step_kind))
                         : std::nullopt;
    });
    c->push_back(NumberColumn<int64_t>("step_index", int64(), true,
                                       [](const DatagenEvent& e) { return e.step_index; }));
    str("enclosing_step", true, [](const DatagenEvent& e) { return e.enclosing_step; });
    str("selector_step", true, [](const DatagenEvent& e) { return e.selector_step; });
    c->push_back(NumberColumn<int32_t>("attempt", int32(), false, [](const DatagenEvent& e) {
      return std::optional<int32_t>(e.attempt);
    }));
    str("run_id", false, [](const DatagenEvent& e) { return e.run_id; });
    str("writer_epoch", false, [](const DatagenEvent& e) { return e.writer_epoch; });
    str("field_name", true, [](const DatagenEvent& e) { return e.field_name; });
    str("field_type", true, [](const DatagenEvent& e) { return e.field_type; });
    c->push_back(NumberColumn<int32_t>("codec_version", int32(), true,
                                       [](const DatagenEvent& e) { return e.codec_version; }));
    str("value_kind", true, [](const DatagenEvent& e) {
      return e.value ? std::optional<std::string>(DatagenValueKindName(e.value->kind()))
                     : std::nullopt;
    });
    c->push_back(NumberColumn<int64_t>("value_i64", int64(), true, [](const DatagenEvent& e) {
      return e.value && e.value->kind() == Kind::kInt ? std::optional<int64_t>(e.value->int_value())
                                                      : std::nullopt;
    }));
    c->push_back(NumberColumn<double>("value_f64", float64(), true, [](const DatagenEvent& e) {
      return e.value && e.value->kind() == Kind::kFloat
                 ? std::optional<double>(e.value->float_value())
                 : std::nullopt;
    }));
    c->push_back(Column{"value_bool", boolean(), true, [](ArrayBuilder& b, const DatagenEvent& e) {
                          if (e.value && e.value->kind() == Kind::kBool) {
                            As<BooleanBuilder>(b).Append(e.value->bool_value());
                          } else {
                            b.AppendNull();
                          }
                          return Status::OK();
                        }});
    large("value_str", large_utf8(), [](const DatagenEvent& e) { return Text(e, Kind::kStr); });
    large("value_json", large_utf8(), [](const DatagenEvent& e) { return Text(e, Kind::kJson); });
    large("value_blob", large_binary(), [](const DatagenEvent& e) {
      return e.value && e.value->kind() == Kind::kBlob ? e.value->blob().bytes : std::nullopt;
    });
    c->push_back(NumberColumn<int64_t>("payload_size", int64(), true, [](const DatagenEvent& e) {
      return e.value && e.value->kind() == Kind::kBlob
                 ? std::optional<int64_t>(e.value->blob().size)
                 : std::nullopt;
    }));
    str("payload_checksum", true, [](const DatagenEvent& e) {
      return e.value && e.value->kind() == Kind::kBlob ? e.value->blob().checksum : std::nullopt;
    });
    large("query_tags_json", large_utf8(), [](const DatagenEvent& e) { return e.query_tags_json; });
    str("status", true, [](const DatagenEvent& e) {
      return e.status ? std::optional<std::string>(DatagenItemStatusName(*e.status)) : std::nullopt;
    });
    str("error_type", true, [](const DatagenEvent& e) { return e.error_type; });
    large("error_dump", large_utf8(), [](const DatagenEvent& e) { return e.error_dump; });
    large("traceback", large_utf8(), [](const DatagenEvent& e) { return e.traceback; });
    c->push_back(NumberColumn<int64_t>(
        "event_ts", timestamp_us("UTC"), false,
        [](const DatagenEvent& e) { return std::optional<int64_t>(e.event_ts_micros); }));
    c->push_back(NumberColumn<int32_t>("schema_version", int32(), false, [](const DatagenEvent& e) {
      return std::optional<int32_t>(e.schema_version);
    }));
    return c;
  }();
  return *columns;
}

const Column* FindColumn(std::string_view name) {
  for (const Column& c : Columns()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

enum Col {
  kColEventId,
  kColItemId,
  kColRootItemId,
  kColParentItemId,
  kColItemSeq,
  kColCheckpointId,
  kColEventType,
  kColStepName,
  kColStepKind,
  kColStepIndex,
  kColEnclosingStep,
  kColSelectorStep,
  kColAttempt,
  kColRunId,
  kColWriterEpoch,
  kColFieldName,
  kColFieldType,
  kColCodecVersion,
  kColValueKind,
  kColValueI64,
  kColValueF64,
  kColValueBool,
  kColValueStr,
  kColValueJson,
  kColValueBlob,
  kColPayloadSize,
  kColPayloadChecksum,
  kColQueryTagsJson,
  kColStatus,
  kColErrorType,
  kColErrorDump,
  kColTraceback,
  kColEventTs,
  kColSchemaVersion,
  kColumnCount
};

constexpr std::string_view kColumnNames[kColumnCount] = {
    "event_id",       "item_id",          "root_item_id",    "parent_item_id", "item_seq",
    "checkpoint_id",  "event_type",       "step_name",       "step_kind",      "step_index",
    "enclosing_step", "selector_step",    "attempt",         "run_id",         "writer_epoch",
    "field_name",     "field_type",       "codec_version",   "value_kind",     "value_i64",
    "value_f64",      "value_bool",       "value_str",       "value_json",     "value_blob",
    "payload_size",   "payload_checksum", "query_tags_json", "status",         "error_type",
    "error_dump",     "traceback",        "event_ts",        "schema_version",
};

// Read access to one decoded batch's columns, resolved by name once per batch; absent
// columns (a projection) read as null.
class Row {
 public:
  explicit Row(const RecordBatch& batch) {
    for (int c = 0; c < kColumnCount; ++c) {
      int k = batch.schema()->GetFieldIndex(std::string(kColumnNames[c]));
      arrays_[c] = k < 0 ? nullptr : &batch.column(k);
    }
  }
  void at(int64_t i) { i_ = i; }

  std::optional<std::string> Str(Col c) const {
    const Array* a = arrays_[c];
    if (a == nullptr || a->IsNull(i_)) return std::nullopt;
    return std::string(a->StringValue(i_));
  }
  template <typename T>
  std::optional<T> Num(Col c) const {
    const Array* a = arrays_[c];
    if (a == nullptr || a->IsNull(i_)) return std::nullopt;
    return a->Value<T>(i_);
  }
  std::optional<bool> Bool(Col c) const {
    const Array* a = arrays_[c];
    if (a == nullptr || a->IsNull(i_)) return std::nullopt;
    return a->BoolValue(i_);
  }

 private:
  const Array* arrays_[kColumnCount] = {};
  int64_t i_ = 0;
};

Result<DatagenEvent> DecodeRow(const Row& row) {
  DatagenEvent e;
  e.event_id = row.Str(kColEventId).value_or("");
  e.item_id = row.Str(kColItemId).value_or("");
  e.root_item_id = row.Str(kColRootItemId).value_or("");
  e.parent_item_id = row.Str(kColParentItemId);
  e.item_seq = row.Num<int64_t>(kColItemSeq).value_or(0);
  e.checkpoint_id = row.Str(kColCheckpointId).value_or("");
  STRATA_ASSIGN_OR_RETURN(e.event_type, ParseDatagenEventType(row.Str(kColEventType).value_or("")));
  e.step_name = row.Str(kColStepName);
  if (auto kind = row.Str(kColStepKind)) {
    STRATA_ASSIGN_OR_RETURN(e.step_kind, ParseDatagenStepKind(*kind));
  }
  e.step_index = row.Num<int64_t>(kColStepIndex);
  e.enclosing_step = row.Str(kColEnclosingStep);
  e.selector_step = row.Str(kColSelectorStep);
  e.attempt = row.Num<int32_t>(kColAttempt).value_or(0);
  e.run_id = row.Str(kColRunId).value_or("");
  e.writer_epoch = row.Str(kColWriterEpoch).value_or("");
  e.field_name = row.Str(kColFieldName);
  e.field_type = row.Str(kColFieldType);
  e.codec_version = row.Num<int32_t>(kColCodecVersion);
  if (auto kind = row.Str(kColValueKind)) {
    auto missing = [&](std::string_view what) {
      return Status::InvalidArgument(fmt::format("event '{}': {}", e.event_id, what));
    };
    if (*kind == "int") {
      auto v = row.Num<int64_t>(kColValueI64);
      if (!v) return missing("value_i64 must not be null");
      e.value = DatagenValue::Int(*v);
    } else if (*kind == "float") {
      auto v = row.Num<double>(kColValueF64);
      if (!v) return missing("value_f64 must not be null");
      e.value = DatagenValue::Float(*v);
    } else if (*kind == "bool") {
      auto v = row.Bool(kColValueBool);
      if (!v) return missing("value_bool must not be null");
      e.value = DatagenValue::Bool(*v);
    } else if (*kind == "str") {
      auto v = row.Str(kColValueStr);
      if (!v) return missing("value_kind=str requires value_str");
      e.value = DatagenValue::Str(std::move(*v));
    } else if (*kind == "json") {
      auto v = row.Str(kColValueJson);
      if (!v) return missing("value_kind=json requires value_json");
      e.value = DatagenValue::Json(std::move(*v));
    } else if (*kind == "blob") {
      DatagenBlob blob;
      auto size = row.Num<int64_t>(kColPayloadSize);
      if (!size) return missing("value_kind=blob requires payload_size");
      blob.size = *size;
      blob.bytes = row.Str(kColValueBlob);  // absent when reads project it out
      blob.checksum = row.Str(kColPayloadChecksum);
      e.value = DatagenValue::Blob(std::move(blob));
    } else {
      return Status::InvalidArgument(
          fmt::format("event '{}' has unsupported value_kind '{}'", e.event_id, *kind));
    }
  }
  e.query_tags_json = row.Str(kColQueryTagsJson);
  if (auto status = row.Str(kColStatus)) {
    STRATA_ASSIGN_OR_RETURN(e.status, ParseDatagenItemStatus(*status));
  }
  e.error_type = row.Str(kColErrorType);
  e.error_dump = row.Str(kColErrorDump);
  e.traceback = row.Str(kColTraceback);
  e.event_ts_micros = row.Num<int64_t>(kColEventTs).value_or(0);
  e.schema_version = row.Num<int32_t>(kColSchemaVersion).value_or(0);
  STRATA_RETURN_IF_ERROR(e.Validate());
  return e;
}

}  // namespace

SchemaPtr DatagenSchema() {
  static const SchemaPtr schema = [] {
    std::vector<FieldPtr> fields;
    for (const Column& c : Columns()) {
      KeyValueMetadata metadata;
      if (c.name == "event_id") metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
      fields.push_back(field(c.name, c.type, c.nullable, std::move(metadata)));
    }
    return std::make_shared<Schema>(std::move(fields));
  }();
  return schema;
}

std::vector<std::string> DatagenNonBlobColumns() {
  std::vector<std::string> out;
  for (const Column& c : Columns()) {
    if (c.name != "value_blob") out.push_back(c.name);
  }
  return out;
}

Result<RecordBatch> EncodeDatagenEvents(const std::vector<DatagenEvent>& events,
                                        const SchemaPtr& schema) {
  std::vector<const Column*> columns;
  for (const FieldPtr& f : schema->fields()) {
    const Column* c = FindColumn(f->name());
    if (c == nullptr) {
      return Status::InvalidArgument(
          fmt::format("unsupported datagen store column '{}'", f->name()));
    }
    if (!c->type->Equals(*f->type())) {
      return Status::InvalidArgument(
          fmt::format("datagen store column '{}' has type {}, expected {}", f->name(),
                      f->type()->ToString(), c->type->ToString()));
    }
    columns.push_back(c);
  }
  if (static_cast<size_t>(schema->num_fields()) != Columns().size()) {
    return Status::InvalidArgument(fmt::format("datagen store schema has {} columns, expected {}",
                                               schema->num_fields(), Columns().size()));
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchBuilder> builder,
                          RecordBatchBuilder::Make(schema));
  for (size_t k = 0; k < columns.size(); ++k) {
    ArrayBuilder& b = *builder->builder(static_cast<int>(k));
    b.Reserve(static_cast<int64_t>(events.size()));
    for (const DatagenEvent& event : events) {
      STRATA_RETURN_IF_ERROR(columns[k]->encode(b, event));
    }
  }
  return builder->Finish();
}

Result<std::vector<DatagenEvent>> DecodeDatagenEvents(const RecordBatch& batch) {
  for (int k = 0; k < batch.num_columns(); ++k) {
    const FieldPtr& f = batch.schema()->field(k);
    const Column* c = FindColumn(f->name());
    if (c != nullptr && !c->type->Equals(*f->type())) {
      return Status::InvalidArgument(fmt::format("datagen column '{}' has type {}, expected {}",
                                                 f->name(), f->type()->ToString(),
                                                 c->type->ToString()));
    }
  }
  std::vector<DatagenEvent> out;
  out.reserve(batch.num_rows());
  Row row(batch);
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    row.at(i);
    STRATA_ASSIGN_OR_RETURN(DatagenEvent event, DecodeRow(row));
    out.push_back(std::move(event));
  }
  return out;
}

}  // namespace strata::store
