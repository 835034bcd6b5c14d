// The rollout schema and RolloutRecord <-> RecordBatch conversion, through the column table
// of record_codec.h.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "store/record_codec.h"
#include "strata/builder.h"
#include "strata/rollout_store.h"
#include "strata/table.h"

namespace strata::store {
namespace {

using Column = internal::RecordColumn<RolloutRecord>;
using internal::As;
using internal::OptionalList;
using internal::OptionalNumber;
using internal::OptionalString;
using internal::RequiredString;

const std::vector<Column>& Columns() {
  static const std::vector<Column>* columns = [] {
    auto* cols = new std::vector<Column>();
    cols->push_back(RequiredString<int32_t>("id", utf8(), &RolloutRecord::id));
    cols->push_back(RequiredString<int32_t>("rollout_id", utf8(), &RolloutRecord::rollout_id));
    cols->push_back(RequiredString<int32_t>("problem_id", utf8(), &RolloutRecord::problem_id));
    cols->push_back(OptionalString<int32_t>("dataset", utf8(), &RolloutRecord::dataset));
    cols->push_back(internal::RequiredNumber<int32_t>("sequence_order", int32(),
                                                      &RolloutRecord::sequence_order));
    cols->push_back(internal::DictionaryString("role", &RolloutRecord::role));
    cols->push_back(internal::RequiredNumber<int64_t>("created_at", timestamp_us(),
                                                      &RolloutRecord::created_at_micros));
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
      Column c{"include_in_training", boolean(), true};
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
        return Status::OK();
      };
      c.has_value = [](const RolloutRecord& r) { return r.include_in_training.has_value(); };
      cols->push_back(std::move(c));
    }
    cols->push_back(
        OptionalString<int32_t>("exclude_reason", utf8(), &RolloutRecord::exclude_reason));
    cols->push_back(
        OptionalString<int32_t>("policy_version", utf8(), &RolloutRecord::policy_version));
    cols->push_back(internal::RelationshipList<RolloutRelationship>(
        "relationships", &RolloutRecord::relationships, /*nullable_fields=*/false));
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
  return internal::EncodeRecords<RolloutRecord>(
      Columns(), "rollout store", records, schema,
      [](const RolloutRecord& r) -> std::string_view { return r.id; });
}

Result<std::vector<RolloutRecord>> DecodeRolloutRecords(const RecordBatch& batch) {
  return internal::DecodeRecords<RolloutRecord>(Columns(), "rollout store", batch);
}

}  // namespace strata::store
