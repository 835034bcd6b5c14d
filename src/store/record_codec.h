// Record <-> RecordBatch conversion for the typed stores whose rows are one C++ struct
// (RolloutRecord, ContextRecord): one table of column descriptors (name, type, how to append
// a record's value, how to read it back) drives the schema, the encoder and the decoder, so
// the three cannot drift apart. Columns are matched by name, so a store with fewer columns —
// an older schema — is handled: encoding a value for a missing column is InvalidArgument
// naming it; decoding a missing column leaves the field empty.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/builder.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::store::internal {

template <typename B>
B& As(ArrayBuilder& b) {
  return static_cast<B&>(b);
}

template <typename Record>
struct RecordColumn {
  std::string name;
  DataTypePtr type;
  bool nullable = true;
  std::function<Status(ArrayBuilder&, const Record&)> encode;
  // Reads row `row` of `column` into the record (the column is known to be non-null there
  // for required columns; optional ones check).
  std::function<Status(const Array&, int64_t, Record&)> decode;
  // True when the record has a value for this column (used to reject values for columns an
  // older store lacks).
  std::function<bool(const Record&)> has_value;
  // String columns: the record's value bytes, so the builder reserves a batch's bytes once.
  std::function<int64_t(const Record&)> value_bytes = nullptr;
  // String columns: reserves `bytes` of values in the column's builder.
  std::function<void(ArrayBuilder&, int64_t bytes)> reserve_bytes = nullptr;
  // The message for a value of this column in a store without it ("" = the generic one).
  std::string missing_message;
  // Whether a stored column of type `t` is this column (default: equal to `type`).
  std::function<bool(const DataType& t)> accepts = nullptr;

  bool Accepts(const DataType& t) const { return accepts ? accepts(t) : type->Equals(t); }
};

// --- Column factories -------------------------------------------------------------

template <typename OffsetT, typename Record>
RecordColumn<Record> RequiredString(std::string name, DataTypePtr type,
                                    std::string Record::*member) {
  RecordColumn<Record> c{std::move(name), std::move(type), false};
  c.encode = [member](ArrayBuilder& b, const Record& r) {
    return As<BaseBinaryBuilder<OffsetT>>(b).Append(r.*member);
  };
  c.decode = [member](const Array& a, int64_t i, Record& r) {
    r.*member = std::string(a.StringValue(i));
    return Status::OK();
  };
  c.has_value = [](const Record&) { return true; };
  c.value_bytes = [member](const Record& r) { return static_cast<int64_t>((r.*member).size()); };
  c.reserve_bytes = [](ArrayBuilder& b, int64_t bytes) {
    As<BaseBinaryBuilder<OffsetT>>(b).ReserveData(bytes);
  };
  return c;
}

template <typename OffsetT, typename Record>
RecordColumn<Record> OptionalString(std::string name, DataTypePtr type,
                                    std::optional<std::string> Record::*member) {
  RecordColumn<Record> c{std::move(name), std::move(type), true};
  c.encode = [member](ArrayBuilder& b, const Record& r) -> Status {
    const auto& v = r.*member;
    if (!v.has_value()) {
      b.AppendNull();
      return Status::OK();
    }
    return As<BaseBinaryBuilder<OffsetT>>(b).Append(*v);
  };
  c.decode = [member](const Array& a, int64_t i, Record& r) {
    if (a.IsValid(i)) r.*member = std::string(a.StringValue(i));
    return Status::OK();
  };
  c.has_value = [member](const Record& r) { return (r.*member).has_value(); };
  c.value_bytes = [member](const Record& r) {
    const auto& v = r.*member;
    return v.has_value() ? static_cast<int64_t>(v->size()) : int64_t{0};
  };
  c.reserve_bytes = [](ArrayBuilder& b, int64_t bytes) {
    As<BaseBinaryBuilder<OffsetT>>(b).ReserveData(bytes);
  };
  return c;
}

// A required fixed-width value (T is the builder's C type: int64_t for timestamps).
template <typename T, typename Record>
RecordColumn<Record> RequiredNumber(std::string name, DataTypePtr type, T Record::*member) {
  RecordColumn<Record> c{std::move(name), std::move(type), false};
  c.encode = [member](ArrayBuilder& b, const Record& r) {
    As<NumericBuilder<T>>(b).Append(r.*member);
    return Status::OK();
  };
  c.decode = [member](const Array& a, int64_t i, Record& r) {
    r.*member = a.Value<T>(i);
    return Status::OK();
  };
  c.has_value = [](const Record&) { return true; };
  return c;
}

template <typename T, typename Record>
RecordColumn<Record> OptionalNumber(std::string name, DataTypePtr type,
                                    std::optional<T> Record::*member) {
  RecordColumn<Record> c{std::move(name), std::move(type), true};
  c.encode = [member](ArrayBuilder& b, const Record& r) {
    const auto& v = r.*member;
    if (v.has_value()) {
      As<NumericBuilder<T>>(b).Append(*v);
    } else {
      b.AppendNull();
    }
    return Status::OK();
  };
  c.decode = [member](const Array& a, int64_t i, Record& r) {
    if (a.IsValid(i)) r.*member = a.Value<T>(i);
    return Status::OK();
  };
  c.has_value = [member](const Record& r) { return (r.*member).has_value(); };
  return c;
}

template <typename T, typename Record>
RecordColumn<Record> OptionalList(std::string name, DataTypePtr element,
                                  std::optional<std::vector<T>> Record::*member) {
  RecordColumn<Record> c{std::move(name), list(element), true};
  c.encode = [member](ArrayBuilder& b, const Record& r) {
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
  c.decode = [member](const Array& a, int64_t i, Record& r) {
    if (!a.IsValid(i)) return Status::OK();
    auto [begin, end] = a.ValueRange(i);
    Array values = a.values_array();
    std::vector<T> out;
    out.reserve(static_cast<size_t>(end - begin));
    for (int64_t k = begin; k < end; ++k) out.push_back(values.Value<T>(k));
    r.*member = std::move(out);
    return Status::OK();
  };
  c.has_value = [member](const Record& r) { return (r.*member).has_value(); };
  return c;
}

// A required dictionary<int8, utf8> string.
template <typename Record>
RecordColumn<Record> DictionaryString(std::string name, std::string Record::*member) {
  RecordColumn<Record> c{std::move(name), dictionary(int8(), utf8()), false};
  c.encode = [member](ArrayBuilder& b, const Record& r) {
    return As<DictionaryBuilder>(b).Append(r.*member);
  };
  c.decode = [member](const Array& a, int64_t i, Record& r) {
    r.*member = std::string(a.dictionary().StringValue(a.DictionaryIndex(i)));
    return Status::OK();
  };
  c.has_value = [](const Record&) { return true; };
  return c;
}

// A list<struct<target_id utf8, relation utf8, weight float32>> of Rel {target_id,
// relation, optional<float> weight}. With `nullable_fields` the struct's string fields are
// nullable in the schema and a null one is InvalidArgument on decode.
template <typename Rel, typename Record>
RecordColumn<Record> RelationshipList(std::string name,
                                      std::optional<std::vector<Rel>> Record::*member,
                                      bool nullable_fields) {
  DataTypePtr type = list(
      field("item",
            struct_({field("target_id", utf8(), nullable_fields),
                     field("relation", utf8(), nullable_fields), field("weight", float32(), true)}),
            true));
  RecordColumn<Record> c{std::move(name), std::move(type), true};
  c.encode = [member](ArrayBuilder& b, const Record& r) -> Status {
    const auto& v = r.*member;
    if (!v.has_value()) {
      b.AppendNull();
      return Status::OK();
    }
    auto& lb = As<ListBuilder>(b);
    lb.Append();
    auto& sb = As<StructBuilder>(*lb.value_builder());
    for (const Rel& rel : *v) {
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
  c.decode = [member, column = c.name](const Array& a, int64_t i, Record& r) -> Status {
    if (!a.IsValid(i)) return Status::OK();
    auto [begin, end] = a.ValueRange(i);
    Array values = a.values_array();
    Array target = values.field(0);
    Array relation = values.field(1);
    Array weight = values.field(2);
    std::vector<Rel> out;
    for (int64_t k = begin; k < end; ++k) {
      if (!values.IsValid(k)) continue;  // a null entry is skipped
      if (target.IsNull(k) || relation.IsNull(k)) {
        return Status::InvalidArgument(
            fmt::format("{}: a relationship with a null target_id or relation", column));
      }
      Rel rel;
      rel.target_id = std::string(target.StringValue(k));
      rel.relation = std::string(relation.StringValue(k));
      if (weight.IsValid(k)) rel.weight = weight.Value<float>(k);
      out.push_back(std::move(rel));
    }
    r.*member = std::move(out);
    return Status::OK();
  };
  c.has_value = [member](const Record& r) { return (r.*member).has_value(); };
  return c;
}

// --- The codec ----------------------------------------------------------------------

template <typename Record>
const RecordColumn<Record>* FindRecordColumn(const std::vector<RecordColumn<Record>>& columns,
                                             std::string_view name) {
  for (const RecordColumn<Record>& c : columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// `kind` names the store's columns in messages ("rollout store", "dataset"); `id_of` names a
// record.
template <typename Record>
Result<RecordBatch> EncodeRecords(const std::vector<RecordColumn<Record>>& all,
                                  std::string_view kind, const std::vector<Record>& records,
                                  const SchemaPtr& schema,
                                  const std::function<std::string_view(const Record&)>& id_of) {
  std::vector<const RecordColumn<Record>*> columns;
  for (const FieldPtr& f : schema->fields()) {
    const RecordColumn<Record>* c = FindRecordColumn(all, f->name());
    if (c == nullptr) {
      return Status::InvalidArgument(fmt::format("unsupported {} column '{}'", kind, f->name()));
    }
    if (!c->Accepts(*f->type())) {
      return Status::InvalidArgument(fmt::format("{} column '{}' has type {}, expected {}", kind,
                                                 f->name(), f->type()->ToString(),
                                                 c->type->ToString()));
    }
    columns.push_back(c);
  }
  // A value for a column the store lacks would be dropped silently: refuse it.
  for (const RecordColumn<Record>& c : all) {
    if (schema->GetFieldIndex(c.name) >= 0) continue;
    for (const Record& record : records) {
      if (!c.has_value(record)) continue;
      if (!c.missing_message.empty()) return Status::InvalidArgument(c.missing_message);
      return Status::InvalidArgument(
          fmt::format("record '{}' sets '{}', but this {} has no such column (open it with the "
                      "current schema to add it)",
                      id_of(record), c.name, kind));
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
      for (const Record& record : records) bytes += columns[k]->value_bytes(record);
      columns[k]->reserve_bytes(column_builder, bytes);
    }
    for (const Record& record : records) {
      STRATA_RETURN_IF_ERROR(columns[k]->encode(column_builder, record));
    }
  }
  return builder->Finish();
}

// The record columns of `batch` with their arrays. Columns of `batch` the table does not know
// (e.g. a row-address column) are skipped.
template <typename Record>
Result<std::vector<std::pair<const RecordColumn<Record>*, const Array*>>> DecodableColumns(
    const std::vector<RecordColumn<Record>>& all, std::string_view kind, const RecordBatch& batch) {
  std::vector<std::pair<const RecordColumn<Record>*, const Array*>> columns;
  for (int k = 0; k < batch.num_columns(); ++k) {
    const FieldPtr& f = batch.schema()->field(k);
    const RecordColumn<Record>* c = FindRecordColumn(all, f->name());
    if (c == nullptr) continue;
    if (!c->Accepts(*f->type())) {
      return Status::InvalidArgument(fmt::format("{} column '{}' has type {}, expected {}", kind,
                                                 f->name(), f->type()->ToString(),
                                                 c->type->ToString()));
    }
    columns.emplace_back(c, &batch.column(k));
  }
  return columns;
}

template <typename Record>
Result<std::vector<Record>> DecodeRecords(const std::vector<RecordColumn<Record>>& all,
                                          std::string_view kind, const RecordBatch& batch) {
  STRATA_ASSIGN_OR_RETURN(auto columns, DecodableColumns(all, kind, batch));
  std::vector<Record> out(static_cast<size_t>(batch.num_rows()));
  for (const auto& [column, array] : columns) {
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      if (!column->nullable && array->IsNull(i)) continue;
      STRATA_RETURN_IF_ERROR(column->decode(*array, i, out[static_cast<size_t>(i)]));
    }
  }
  return out;
}

// As DecodeRecords, for rows `rows` of `batch` only, in that order: a reader that needs a few
// rows of a batch skips decoding the others. REQUIRES every row < batch.num_rows().
template <typename Record>
Result<std::vector<Record>> DecodeRecordRows(const std::vector<RecordColumn<Record>>& all,
                                             std::string_view kind, const RecordBatch& batch,
                                             std::span<const int64_t> rows) {
  STRATA_ASSIGN_OR_RETURN(auto columns, DecodableColumns(all, kind, batch));
  std::vector<Record> out(rows.size());
  for (const auto& [column, array] : columns) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!column->nullable && array->IsNull(rows[i])) continue;
      STRATA_RETURN_IF_ERROR(column->decode(*array, rows[i], out[i]));
    }
  }
  return out;
}

}  // namespace strata::store::internal
