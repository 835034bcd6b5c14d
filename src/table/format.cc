// Object keys, manifest encoding, schema <-> manifest conversion and Snapshot.
#include "table/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "strata/schema_json.h"
#include "strata/table.h"
#include "table/key_index.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::table::internal {
namespace {

Clock& ClockOr(Clock* clock) { return clock != nullptr ? *clock : *SystemClock(); }
RandomSource& RandomOr(RandomSource* random) {
  return random != nullptr ? *random : *SystemRandom();
}

std::string RandomHex(int bytes, RandomSource& random) {
  std::string out;
  for (int i = 0; i < bytes; i += 8) {
    uint64_t bits = random.Next();
    out += fmt::format("{:016x}", bits);
  }
  out.resize(static_cast<size_t>(bytes) * 2);
  return out;
}

bool IsTrueText(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "true" || lower == "1" || lower == "yes";
}

void MetadataToProto(const KeyValueMetadata& metadata,
                     google::protobuf::RepeatedPtrField<pb::KeyValue>* out) {
  for (const auto& [key, value] : metadata.entries()) {
    pb::KeyValue* kv = out->Add();
    kv->set_key(key);
    kv->set_value(value);
  }
}

KeyValueMetadata MetadataFromProto(const google::protobuf::RepeatedPtrField<pb::KeyValue>& kvs) {
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(kvs.size());
  for (const pb::KeyValue& kv : kvs) entries.emplace_back(kv.key(), kv.value());
  return KeyValueMetadata(std::move(entries));
}

pb::Value ScalarToValue(const expr::Scalar& s) {
  pb::Value v;
  switch (s.kind()) {
    case expr::Scalar::Kind::kNull:
      break;
    case expr::Scalar::Kind::kBool:
      v.set_bool_value(s.bool_value());
      break;
    case expr::Scalar::Kind::kInt64:
      v.set_int64_value(s.int64_value());
      break;
    case expr::Scalar::Kind::kUInt64:
      v.set_uint64_value(s.uint64_value());
      break;
    case expr::Scalar::Kind::kDouble:
      v.set_double_value(s.double_value());
      break;
    case expr::Scalar::Kind::kString:
      v.set_string_value(s.string_value());
      break;
    case expr::Scalar::Kind::kTimestamp:
      v.set_timestamp_micros(s.timestamp_micros());
      break;
  }
  return v;
}

std::optional<expr::Scalar> ValueToScalar(const pb::Value& v) {
  switch (v.kind_case()) {
    case pb::Value::kBoolValue:
      return expr::Scalar::Bool(v.bool_value());
    case pb::Value::kInt64Value:
      return expr::Scalar::Int64(v.int64_value());
    case pb::Value::kUint64Value:
      return expr::Scalar::UInt64(v.uint64_value());
    case pb::Value::kDoubleValue:
      return expr::Scalar::Double(v.double_value());
    case pb::Value::kStringValue:
      return expr::Scalar::String(v.string_value());
    case pb::Value::kTimestampMicros:
      return expr::Scalar::Timestamp(v.timestamp_micros());
    case pb::Value::KIND_NOT_SET:
      break;
  }
  return std::nullopt;
}

}  // namespace

int ParentSteps(std::string_view path) {
  int steps = 0;
  while (path.starts_with(kParentPathStep)) {
    path.remove_prefix(kParentPathStep.size());
    ++steps;
  }
  return steps;
}

std::string FileKey(std::string_view prefix, std::string_view path) {
  while (path.starts_with(kParentPathStep) && !prefix.empty()) {
    // Drop the last component of `prefix` ("a/b/" -> "a/"; it is "" or ends in '/').
    prefix.remove_suffix(1);
    const size_t slash = prefix.rfind('/');
    prefix = slash == std::string_view::npos ? std::string_view() : prefix.substr(0, slash + 1);
    path.remove_prefix(kParentPathStep.size());
  }
  std::string key(prefix);
  key += path;
  return key;
}

std::string ManifestKey(uint64_t version) {
  return fmt::format("{}{:020}.manifest", kVersionsDir, version);
}

std::optional<uint64_t> ParseManifestKey(std::string_view key) {
  if (key.substr(0, kVersionsDir.size()) != kVersionsDir) return std::nullopt;
  key.remove_prefix(kVersionsDir.size());
  constexpr std::string_view kSuffix = ".manifest";
  if (key.size() != 20 + kSuffix.size() || key.substr(20) != kSuffix) return std::nullopt;
  uint64_t version = 0;
  for (char c : key.substr(0, 20)) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (version > (UINT64_MAX - digit) / 10) return std::nullopt;
    version = version * 10 + digit;
  }
  return version;
}

std::string NewDataFileKey(Clock* clock, RandomSource* random) {
  return fmt::format("{}{}.arrow", kDataDir, UuidV7(ClockOr(clock), RandomOr(random)).ToString());
}

std::string NewDeletionFileKey(uint32_t fragment_id, uint64_t read_version, RandomSource* random) {
  return fmt::format("{}{}-{}-{}.bin", kDeletionsDir, fragment_id, read_version,
                     RandomHex(8, RandomOr(random)));
}

std::string NewKeySegmentKey(Clock* clock, RandomSource* random) {
  return fmt::format("{}{}.keys", kIndicesDir, UuidV7(ClockOr(clock), RandomOr(random)).ToString());
}

std::string EncodeManifest(const pb::Manifest& manifest) {
  std::string payload;
  manifest.SerializeToString(&payload);
  return EncodeEnvelope(kManifestKind, payload);
}

Result<pb::Manifest> DecodeManifest(std::string_view bytes, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(std::string_view payload, DecodeEnvelope(kManifestKind, bytes, what));
  pb::Manifest manifest;
  if (!manifest.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Status::Corruption(fmt::format("{}: manifest protobuf does not parse", what));
  }
  return manifest;
}

Result<std::optional<int>> FindPrimaryKey(const Schema& schema) {
  std::optional<int> key;
  for (int i = 0; i < schema.num_fields(); ++i) {
    const Field& field = *schema.field(i);
    std::optional<std::string_view> marker = field.metadata().Get(kPrimaryKeyMetadata);
    if (!marker || !IsTrueText(*marker)) continue;
    if (key) {
      return Status::InvalidArgument(
          fmt::format("only one primary-key column is supported; both '{}' and '{}' are marked",
                      schema.field(*key)->name(), field.name()));
    }
    if (field.nullable()) {
      return Status::InvalidArgument(
          fmt::format("primary-key column '{}' must be non-nullable", field.name()));
    }
    if (!KeyKindForType(*field.type()).ok()) {
      return Status::InvalidArgument(fmt::format(
          "primary-key column '{}' has type {}; expected utf8, large_utf8, an integer up to "
          "uint32/int64, or timestamp",
          field.name(), field.type()->ToString()));
    }
    key = i;
  }
  return key;
}

Result<pb::Schema> SchemaToProto(const Schema& schema) {
  if (schema.num_fields() == 0) return Status::InvalidArgument("a table needs at least one column");
  std::set<std::string, std::less<>> names;
  pb::Schema out;
  for (int i = 0; i < schema.num_fields(); ++i) {
    const Field& field = *schema.field(i);
    if (field.name().empty()) {
      return Status::InvalidArgument(fmt::format("column {} has an empty name", i));
    }
    if (field.name() == "_rowaddr") {
      return Status::InvalidArgument("column name '_rowaddr' is reserved for row addresses");
    }
    if (!names.insert(field.name()).second) {
      return Status::InvalidArgument(fmt::format("duplicate column name '{}'", field.name()));
    }
    pb::Field* f = out.add_fields();
    f->set_id(i);
    f->set_name(field.name());
    f->set_type(field.type()->ToString());
    f->set_nullable(field.nullable());
    MetadataToProto(field.metadata(), f->mutable_metadata());
  }
  MetadataToProto(schema.metadata(), out.mutable_metadata());
  STRATA_RETURN_IF_ERROR(FindPrimaryKey(schema).status());
  return out;
}

Result<SchemaPtr> SchemaFromProto(const pb::Schema& proto) {
  std::vector<FieldPtr> fields;
  fields.reserve(proto.fields_size());
  for (const pb::Field& f : proto.fields()) {
    Result<DataTypePtr> type = ParseDataType(f.type());
    if (!type.ok()) {
      return Status::Corruption(fmt::format("manifest field '{}' has an unreadable type '{}': {}",
                                            f.name(), f.type(), type.status().message()));
    }
    fields.push_back(
        std::make_shared<Field>(f.name(), *type, f.nullable(), MetadataFromProto(f.metadata())));
  }
  return strata::schema(std::move(fields), MetadataFromProto(proto.metadata()));
}

pb::ColumnStats StatsToProto(const expr::ColumnStatistics& stats) {
  pb::ColumnStats out;
  if (stats.min) *out.mutable_min() = ScalarToValue(*stats.min);
  if (stats.max) *out.mutable_max() = ScalarToValue(*stats.max);
  out.set_null_count(stats.null_count);
  return out;
}

expr::ColumnStatistics StatsFromProto(const pb::ColumnStats& stats, int64_t num_rows) {
  expr::ColumnStatistics out;
  if (stats.has_min()) out.min = ValueToScalar(stats.min());
  if (stats.has_max()) out.max = ValueToScalar(stats.max());
  out.null_count = stats.null_count();
  out.row_count = num_rows;
  return out;
}

const pb::Fragment* Snapshot::FindFragment(uint32_t id) const {
  auto it = fragment_index.find(id);
  return it == fragment_index.end() ? nullptr : &manifest.fragments(it->second);
}

const pb::Index* Snapshot::key_index() const {
  for (const pb::Index& index : manifest.indexes()) {
    if (index.name() == kKeyIndexName) return &index;
  }
  return nullptr;
}

int64_t Snapshot::live_rows() const {
  int64_t rows = 0;
  for (const pb::Fragment& f : manifest.fragments()) {
    rows += f.physical_rows() - (f.has_deletion() ? f.deletion().num_deleted() : 0);
  }
  return rows;
}

Result<SnapshotPtr> MakeSnapshot(pb::Manifest manifest) {
  auto snapshot = std::make_shared<Snapshot>();
  const std::string what = fmt::format("manifest {}", manifest.version());
  STRATA_ASSIGN_OR_RETURN(snapshot->schema, SchemaFromProto(manifest.schema()));
  for (int i = 0; i < manifest.schema().fields_size(); ++i) {
    const int32_t id = manifest.schema().fields(i).id();
    if (id < 0 || id >= manifest.next_field_id() ||
        !snapshot->column_of_field.emplace(id, i).second) {
      return Status::Corruption(fmt::format("{}: bad or duplicate field id {}", what, id));
    }
    snapshot->field_ids.push_back(id);
  }
  for (int i = 0; i < manifest.fragments_size(); ++i) {
    const pb::Fragment& f = manifest.fragments(i);
    if (f.id() >= manifest.next_fragment_id() ||
        !snapshot->fragment_index.emplace(f.id(), i).second) {
      return Status::Corruption(fmt::format("{}: bad or duplicate fragment id {}", what, f.id()));
    }
    if (f.physical_rows() < 0 || f.physical_rows() > int64_t{UINT32_MAX} ||
        (f.has_deletion() &&
         (f.deletion().num_deleted() <= 0 || f.deletion().num_deleted() > f.physical_rows()))) {
      return Status::Corruption(
          fmt::format("{}: fragment {} has inconsistent row counts", what, f.id()));
    }
  }
  Result<std::optional<int>> key = FindPrimaryKey(*snapshot->schema);
  if (!key.ok()) return Status::Corruption(fmt::format("{}: {}", what, key.status().message()));
  snapshot->key_column = *key;
  snapshot->manifest = std::move(manifest);
  snapshot->layouts = std::vector<std::atomic<std::shared_ptr<const FragmentLayout>>>(
      static_cast<size_t>(snapshot->manifest.fragments_size()));
  return SnapshotPtr(std::move(snapshot));
}

std::shared_ptr<const FragmentLayout> Snapshot::LayoutOf(const pb::Fragment& fragment) const {
  auto it = fragment_index.find(fragment.id());
  if (it == fragment_index.end() || static_cast<size_t>(it->second) >= layouts.size() ||
      &manifest.fragments(it->second) != &fragment) {
    // Not one of this manifest's fragments: made for the caller alone.
    return std::make_shared<const FragmentLayout>(MakeFragmentLayout(*this, fragment));
  }
  std::atomic<std::shared_ptr<const FragmentLayout>>& slot =
      layouts[static_cast<size_t>(it->second)];
  std::shared_ptr<const FragmentLayout> layout = slot.load(std::memory_order_acquire);
  if (layout != nullptr) return layout;
  auto made = std::make_shared<const FragmentLayout>(MakeFragmentLayout(*this, fragment));
  // A thread that made one first wins; `layout` then holds its layout.
  if (slot.compare_exchange_strong(layout, made, std::memory_order_acq_rel)) return made;
  return layout;
}

FragmentLayout MakeFragmentLayout(const Snapshot& snapshot, const pb::Fragment& fragment) {
  auto fail = [](std::string message) {
    FragmentLayout bad;
    bad.status = Status::Corruption(std::move(message));
    return bad;
  };
  FragmentLayout layout;
  const int num_columns = snapshot.schema->num_fields();
  layout.column_source.assign(static_cast<size_t>(num_columns), {-1, -1});
  // Every file of a fragment must cut its rows into the same batches, so batch i of the
  // fragment is batch i of each file.
  const pb::DataFile* first = nullptr;
  for (int f = 0; f < fragment.files_size(); ++f) {
    const pb::DataFile& entry = fragment.files(f);
    if (first == nullptr) {
      first = &entry;
    } else {
      bool aligned = entry.batches_size() == first->batches_size();
      for (int b = 0; aligned && b < entry.batches_size(); ++b) {
        aligned = entry.batches(b).num_rows() == first->batches(b).num_rows();
      }
      if (!aligned) {
        return fail(fmt::format("fragment {}: data files {} and {} have different batch row counts",
                                fragment.id(), first->path(), entry.path()));
      }
    }
    for (int c = 0; c < entry.field_ids_size(); ++c) {
      auto it = snapshot.column_of_field.find(entry.field_ids(c));
      if (it == snapshot.column_of_field.end()) continue;  // a column no longer in the schema
      std::pair<int, int>& source = layout.column_source[static_cast<size_t>(it->second)];
      if (source.first >= 0) {
        return fail(fmt::format("fragment {}: field id {} is in more than one file", fragment.id(),
                                entry.field_ids(c)));
      }
      source = {f, c};
    }
  }

  // Per file, the highest file column a schema column comes from (-1: none): a batch's
  // statistics entries suffice when they reach it.
  std::vector<int> highest_column(static_cast<size_t>(fragment.files_size()), -1);
  for (auto [f, c] : layout.column_source) {
    if (f >= 0) highest_column[static_cast<size_t>(f)] = std::max(highest_column[f], c);
  }
  int64_t offset = 0;
  if (first != nullptr) {
    layout.batch_offsets.reserve(static_cast<size_t>(first->batches_size()));
    for (int b = 0; b < first->batches_size(); ++b) {
      const int64_t rows = first->batches(b).num_rows();
      if (rows < 0) {
        return fail(fmt::format("fragment {}: batch {} has {} rows", fragment.id(), b, rows));
      }
      layout.batch_offsets.push_back(offset);
      offset += rows;
      // Statistics are decoded on first use (FragmentReader::Statistics), but a missing entry
      // is found now.
      bool complete = true;
      for (size_t f = 0; f < highest_column.size() && complete; ++f) {
        complete = highest_column[f] < fragment.files(static_cast<int>(f)).batches(b).stats_size();
      }
      if (complete) continue;
      for (int column = 0; column < num_columns; ++column) {  // the first one missing
        auto [f, c] = layout.column_source[static_cast<size_t>(column)];
        if (f >= 0 && c >= fragment.files(f).batches(b).stats_size()) {
          return fail(
              fmt::format("fragment {}: data file {} batch {} lacks statistics for column {}",
                          fragment.id(), fragment.files(f).path(), b, c));
        }
      }
    }
  }
  if (offset != fragment.physical_rows()) {
    return fail(fmt::format("fragment {}: data files hold {} rows; the manifest says {}",
                            fragment.id(), offset, fragment.physical_rows()));
  }
  return layout;
}

}  // namespace strata::table::internal
