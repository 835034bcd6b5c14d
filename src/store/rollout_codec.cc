// The rollout schema and RolloutRecord <-> RecordBatch conversion: one table of column
// descriptors (name, type, how to append a record's value, how to read it back) drives the
// schema, the encoder and the decoder, so the three cannot drift apart.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/rollout_store.h"
#include "strata/table.h"

namespace strata::store {
namespace {

using Encode = std::function<Status(ArrayBuilder&, const RolloutRecord&)>;
// Reads row `row` of `column` into the record (the column is known to be non-null there
// for required columns; optional ones check).
using Decode = std::function<void(const Array&, int64_t, RolloutRecord&)>;

struct Column {
  std::string name;
  DataTypePtr type;
  bool nullable;
  Encode encode;
  Decode decode;
  // True when the record has a value for this column (used to reject values for columns an
  // older store lacks).
  std::function<bool(const RolloutRecord&)> has_value;
  // String columns: the record's value bytes, so the builder reserves a batch's bytes once.
  std::function<int64_t(const RolloutRecord&)> value_bytes = nullptr;
  // String columns: reserves `bytes` of values in the column's builder.
  std::function<void(ArrayBuilder&, int64_t bytes)> reserve_bytes = nullptr;
};

DataTypePtr RelationshipType() {
  return list(field("item",
                    struct_({field("target_id", utf8(), false), field("relation", utf8(), false),
                             field("weight", float32(), true)}),
                    true));
}

template <typename B>
B& As(ArrayBuilder& b) {
  return static_cast<B&>(b);
}

// --- Column factories -------------------------------------------------------------

template <typename OffsetT>
Column RequiredString(std::string name, DataTypePtr type, std::string RolloutRecord::*member) {
  Column c{std::move(name), std::move(type), false, nullptr, nullptr, nullptr};
  c.encode = [member](ArrayBuilder& b, const RolloutRecord& r) {
    return As<BaseBinaryBuilder<OffsetT>>(b).Append(r.*member);
  };
  c.decode = [member](const Array& a, int64_t i, RolloutRecord& r) {
    r.*member = std::string(a.StringValue(i));
  };
  c.has_value = [](const RolloutRecord&) { return true; };
  c.value_bytes = [member](const RolloutRecord& r) {
    return static_cast<int64_t>((r.*member).size());
  };
  c.reserve_bytes = [](ArrayBuilder& b, int64_t bytes) {
    As<BaseBinaryBuilder<OffsetT>>(b).ReserveData(bytes);
  };
  return c;
}

template <typename OffsetT>
Column OptionalString(std::string name, DataTypePtr type,
                      std::optional<std::string> RolloutRecord::*member) {
  Column c{std::move(name), std::move(type), true, nullptr, nullptr, nullptr};
  c.encode = [member](ArrayBuilder& b, const RolloutRecord& r) -> Status {
    const auto& v = r.*member;
    if (!v.has_value()) {
      b.AppendNull();
      return Status::OK();
    }
    return As<BaseBinaryBuilder<OffsetT>>(b).Append(*v);
  };
  c.decode = [member](const Array& a, int64_t i, RolloutRecord& r) {
    if (a.IsValid(i)) r.*member = std::string(a.StringValue(i));
  };
  c.has_value = [member](const RolloutRecord& r) { return (r.*member).has_value(); };
  c.value_bytes = [member](const RolloutRecord& r) {
    const auto& v = r.*member;
    return v.has_value() ? static_cast<int64_t>(v->size()) : int64_t{0};
  };
  c.reserve_bytes = [](ArrayBuilder& b, int64_t bytes) {
    As<BaseBinaryBuilder<OffsetT>>(b).ReserveData(bytes);
  };
  return c;
}

template <typename T>
Column OptionalNumber(std::string name, DataTypePtr type, std::optional<T> RolloutRecord::*member) {
  Column c{std::move(name), std::move(type), true, nullptr, nullptr, nullptr};
  c.encode = [member](ArrayBuilder& b, const RolloutRecord& r) {
    const auto& v = r.*member;
    if (v.has_value()) {
      As<NumericBuilder<T>>(b).Append(*v);
    } else {
      b.AppendNull();
    }
    return Status::OK();
  };
  c.decode = [member](const Array& a, int64_t i, RolloutRecord& r) {
    if (a.IsValid(i)) r.*member = a.Value<T>(i);
  };
  c.has_value = [member](const RolloutRecord& r) { return (r.*member).has_value(); };
  return c;
}

template <typename T>
Column OptionalList(std::string name, DataTypePtr element,
                    std::optional<std::vector<T>> RolloutRecord::*member) {
  Column c{std::move(name), list(element), true, nullptr, nullptr, nullptr};
  c.encode = [member](ArrayBuilder& b, const RolloutRecord& r) {
    const auto& v = r.*member;
    if (!v.has_value()) {
      b.AppendNull();
      return Status::OK();
    }
    auto& lb = As<ListBuilder>(b);
    lb.Append();
    As<NumericBuilder<T>>(*lb.value_builder()).AppendValues(v->data(), v->size());
    return Status::OK();
  };
  c.decode = [member](const Array& a, int64_t i, RolloutRecord& r) {
    if (!a.IsValid(i)) return;
    auto [begin, end] = a.ValueRange(i);
    Array values = a.values_array();
    std::vector<T> out;
    out.reserve(end - begin);
    for (int64_t k = begin; k < end; ++k) out.push_back(values.Value<T>(k));
    r.*member = std::move(out);
  };
  c.has_value = [member](const RolloutRecord& r) { return (r.*member).has_value(); };
  return c;
}

const std::vector<Column>& Columns() {
  static const std::vector<Column>* columns = [] {
    auto* cols = new std::vector<Column>();
    cols->push_back(RequiredString<int32_t>("id", utf8(), &RolloutRecord::id));
    cols->push_back(RequiredString<int32_t>("rollout_id", utf8(), &RolloutRecord::rollout_id));
    cols->push_back(RequiredString<int32_t>("problem_id", utf8(), &RolloutRecord::problem_id));
    cols->push_back(OptionalString<int32_t>("dataset", utf8(), &RolloutRecord::dataset));
    {
      Column c{"sequence_order", int32(), false, nullptr, nullptr, nullptr};
      c.encode = [](ArrayBuilder& b, const RolloutRecord& r) {
        As<NumericBuilder<int32_t>>(b).Append(r.sequence_order);
        return Status::OK();
      };
      c.decode = [](const Array& a, int64_t i, RolloutRecord& r) {
        r.sequence_order = a.Value<int32_t>(i);
      };
      c.has_value = [](const RolloutRecord&) { return true; };
      cols->push_back(std::move(c));
    }
    {
      Column c{"role", dictionary(int8(), utf8()), false, nullptr, nullptr, nullptr};
      c.encode = [](ArrayBuilder& b, const RolloutRecord& r) {
        return As<DictionaryBuilder>(b).Append(r.role);
      };
      c.decode = [](const Array& a, int64_t i, RolloutRecord& r) {
        r.role = std::string(a.dictionary().StringValue(a.DictionaryIndex(i)));
      };
      c.has_value = [](const RolloutRecord&) { return true; };
      cols->push_back(std::move(c));
    }
    {
      Column c{"created_at", timestamp_us(), false, nullptr, nullptr, nullptr};
      c.encode = [](ArrayBuilder& b, const RolloutRecord& r) {
        As<NumericBuilder<int64_t>>(b).Append(r.created_at_micros);
        return Status::OK();
      };
      c.decode = [](const Array& a, int64_t i, RolloutRecord& r) {
        r.created_at_micros = a.Value<int64_t>(i);
      };
      c.has_value = [](const RolloutRecord&) { return true; };
      cols->push_back(std::move(c));
    }
    cols->push_back(OptionalString<int64_t>("content", large_utf8(), &RolloutRecord::content));
    cols->push_back(RequiredString<int32_t>("content_type", utf8(), &RolloutRecord::content_type));
    cols->push_back(OptionalString<int64_t>("model_input_string", large_utf8(),
                                            &RolloutRecord::model_input_string));
    cols->push_back(OptionalString<int64_t>("model_output_string", large_utf8(),
                                            &RolloutRecord::model_output_string));
    cols->push_back(OptionalString<int64_t>("rationale", large_utf8(), &RolloutRecord::rationale));
    cols->push_back(
        OptionalString<int64_t>("problem_text", large_utf8(), &RolloutRecord::problem_text));
    cols->push_back(
        OptionalString<int64_t>("user_metadata", large_utf8(), &RolloutRecord::user_metadata));
    cols->push_back(OptionalList<int32_t>("input_tokens", int32(), &RolloutRecord::input_tokens));
    cols->push_back(OptionalList<int32_t>("output_tokens", int32(), &RolloutRecord::output_tokens));
    cols->push_back(
        OptionalNumber<int32_t>("num_input_tokens", int32(), &RolloutRecord::num_input_tokens));
    cols->push_back(
        OptionalNumber<int32_t>("num_output_tokens", int32(), &RolloutRecord::num_output_tokens));
    cols->push_back(
        OptionalList<float>("output_logprobs", float32(), &RolloutRecord::output_logprobs));
    cols->push_back(
        OptionalList<float>("input_logprobs", float32(), &RolloutRecord::input_logprobs));
    cols->push_back(OptionalList<float>("ref_logprobs", float32(), &RolloutRecord::ref_logprobs));
    cols->push_back(OptionalList<int8_t>("loss_mask", int8(), &RolloutRecord::loss_mask));
    cols->push_back(OptionalNumber<float>("advantage", float32(), &RolloutRecord::advantage));
    cols->push_back(OptionalNumber<float>("reward", float32(), &RolloutRecord::reward));
    cols->push_back(OptionalNumber<float>("raw_reward", float32(), &RolloutRecord::raw_reward));
    cols->push_back(OptionalString<int32_t>("grader_id", utf8(), &RolloutRecord::grader_id));
    cols->push_back(OptionalNumber<float>("score", float32(), &RolloutRecord::score));
    {
      Column c{"include_in_training", boolean(), true, nullptr, nullptr, nullptr};
      c.encode = [](ArrayBuilder& b, const RolloutRecord& r) {
        if (r.include_in_training.has_value()) {
          As<BooleanBuilder>(b).Append(*r.include_in_training);
        } else {
          b.AppendNull();
        }
        return Status::OK();
      };
      c.decode = [](const Array& a, int64_t i, RolloutRecord& r) {
        if (a.IsValid(i)) r.include_in_training = a.BoolValue(i);
      };
      c.has_value = [](const RolloutRecord& r) { return r.include_in_training.has_value(); };
      cols->push_back(std::move(c));
    }
    cols->push_back(
        OptionalString<int32_t>("exclude_reason", utf8(), &RolloutRecord::exclude_reason));
    cols->push_back(
        OptionalString<int32_t>("policy_version", utf8(), &RolloutRecord::policy_version));
    {
      Column c{"relationships", RelationshipType(), true, nullptr, nullptr, nullptr};
      c.encode = [](ArrayBuilder& b, const RolloutRecord& r) -> Status {
        if (!r.relationships.has_value()) {
          b.AppendNull();
          return Status::OK();
        }
        auto& lb = As<ListBuilder>(b);
        lb.Append();
        auto& sb = As<StructBuilder>(*lb.value_builder());
        for (const RolloutRelationship& rel : *r.relationships) {
          sb.Append();
          STRATA_RETURN_IF_ERROR(As<BinaryBuilder>(*sb.field_builder(0)).Append(rel.target_id));
          STRATA_RETURN_IF_ERROR(As<BinaryBuilder>(*sb.field_builder(1)).Append(rel.relation));
          if (rel.weight.has_value()) {
            As<NumericBuilder<float>>(*sb.field_builder(2)).Append(*rel.weight);
          } else {
            sb.field_builder(2)->AppendNull();
          }
        }
        return Status::OK();
      };
      c.decode = [](const Array& a, int64_t i, RolloutRecord& r) {
        if (!a.IsValid(i)) return;
        auto [begin, end] = a.ValueRange(i);
        Array values = a.values_array();
        Array target = values.field(0);
        Array relation = values.field(1);
        Array weight = values.field(2);
        std::vector<RolloutRelationship> out;
        for (int64_t k = begin; k < end; ++k) {
          RolloutRelationship rel;
          rel.target_id = std::string(target.StringValue(k));
          rel.relation = std::string(relation.StringValue(k));
          if (weight.IsValid(k)) rel.weight = weight.Value<float>(k);
          out.push_back(std::move(rel));
        }
        r.relationships = std::move(out);
      };
      c.has_value = [](const RolloutRecord& r) { return r.relationships.has_value(); };
      cols->push_back(std::move(c));
    }
    cols->push_back(
        OptionalString<int64_t>("binary_payload", large_binary(), &RolloutRecord::binary_payload));
    cols->push_back(OptionalNumber<int64_t>("payload_size", int64(), &RolloutRecord::payload_size));
    cols->push_back(
        OptionalString<int32_t>("payload_checksum", utf8(), &RolloutRecord::payload_checksum));
    cols->push_back(
        OptionalString<int32_t>("artifact_type", utf8(), &RolloutRecord::artifact_type));
    cols->push_back(OptionalString<int64_t>("metadata", large_utf8(), &RolloutRecord::metadata));
    return cols;
  }();
  return *columns;
}

const Column* FindColumn(std::string_view name) {
  for (const Column& c : Columns()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

SchemaPtr RolloutSchema() {
  static const SchemaPtr schema = [] {
    std::vector<FieldPtr> fields;
    for (const Column& c : Columns()) {
      KeyValueMetadata metadata;
      if (c.name == "id") metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
      fields.push_back(field(c.name, c.type, c.nullable, std::move(metadata)));
    }
    return std::make_shared<Schema>(std::move(fields));
  }();
  return schema;
}

std::vector<std::string> RolloutNonBlobColumns() {
  std::vector<std::string> out;
  for (const Column& c : Columns()) {
    if (c.name != "binary_payload") out.push_back(c.name);
  }
  return out;
}

Result<RecordBatch> EncodeRolloutRecords(const std::vector<RolloutRecord>& records,
                                         const SchemaPtr& schema) {
  std::vector<const Column*> columns;
  for (const FieldPtr& f : schema->fields()) {
    const Column* c = FindColumn(f->name());
    if (c == nullptr) {
      return Status::InvalidArgument(
          fmt::format("unsupported rollout store column '{}'", f->name()));
    }
    if (!c->type->Equals(*f->type())) {
      return Status::InvalidArgument(
          fmt::format("rollout store column '{}' has type {}, expected {}", f->name(),
                      f->type()->ToString(), c->type->ToString()));
    }
    columns.push_back(c);
  }
  // A value for a column the store lacks would be dropped silently: refuse it.
  for (const Column& c : Columns()) {
    if (schema->GetFieldIndex(c.name) >= 0) continue;
    for (size_t i = 0; i < records.size(); ++i) {
      if (c.has_value(records[i])) {
        return Status::InvalidArgument(fmt::format(
            "record '{}' sets '{}', but this rollout store has no such column (open it with "
            "the current schema to add it)",
            records[i].id, c.name));
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchBuilder> builder,
                          RecordBatchBuilder::Make(schema));
  // Column by column: each builder's buffers stay hot in cache while it fills.
  for (size_t k = 0; k < columns.size(); ++k) {
    ArrayBuilder& column_builder = *builder->builder(static_cast<int>(k));
    column_builder.Reserve(static_cast<int64_t>(records.size()));
    if (columns[k]->value_bytes) {
      int64_t bytes = 0;
      for (const RolloutRecord& record : records) bytes += columns[k]->value_bytes(record);
      columns[k]->reserve_bytes(column_builder, bytes);
    }
    for (const RolloutRecord& record : records) {
      STRATA_RETURN_IF_ERROR(columns[k]->encode(column_builder, record));
    }
  }
  return builder->Finish();
}

Result<std::vector<RolloutRecord>> DecodeRolloutRecords(const RecordBatch& batch) {
  std::vector<std::pair<const Column*, const Array*>> columns;
  for (int k = 0; k < batch.num_columns(); ++k) {
    const FieldPtr& f = batch.schema()->field(k);
    const Column* c = FindColumn(f->name());
    if (c == nullptr) continue;  // e.g. a row-address column
    if (!c->type->Equals(*f->type())) {
      return Status::InvalidArgument(fmt::format("rollout column '{}' has type {}, expected {}",
                                                 f->name(), f->type()->ToString(),
                                                 c->type->ToString()));
    }
    columns.emplace_back(c, &batch.column(k));
  }
  std::vector<RolloutRecord> out(batch.num_rows());
  for (const auto& [column, array] : columns) {
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      if (!column->nullable && array->IsNull(i)) continue;
      column->decode(*array, i, out[i]);
    }
  }
  return out;
}

}  // namespace strata::store
