// The store kinds of the store torture tests; see torture_store.h.
#include "store/torture_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <utility>

#include "strata/builder.h"
#include "strata/generic_store.h"
#include "strata/rollout_store.h"
#include "strata/type.h"

namespace strata::store::torture {
namespace {

constexpr int kEmbeddingDim = 8;

uint64_t HashId(std::string_view id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// The values of the user-schema row with id `id`.
struct UserRow {
  std::string id;
  int64_t seq = 0;
  bool score_null = false;
  double score = 0;
  std::string label;
  std::vector<float> embedding;
  std::vector<std::string> tags;
  std::string payload;
  bool payload_as_bytes = false;  // JSON: an array of byte values instead of base64
};

UserRow MakeUserRow(const std::string& id) {
  const uint64_t h = HashId(id);
  UserRow r;
  r.id = id;
  r.seq = static_cast<int64_t>(h >> 12) - (int64_t{1} << 50);
  r.score_null = h % 7 == 0;
  r.score = static_cast<double>((h >> 8) % 100000) / 64.0;  // exact in binary and decimal
  r.label = fmt::format("l\t{}-\xc3\xbc\"q\"", id);         // tab, ü and quotes: escapes
  for (int i = 0; i < kEmbeddingDim; ++i) {
    r.embedding.push_back(static_cast<float>(static_cast<int>((h >> (i * 5)) % 1024) - 512) /
                          16.0f);
  }
  for (int i = 0; i < static_cast<int>((h >> 40) % 4); ++i) {
    r.tags.push_back(fmt::format("t{}-{}", (h >> (i * 3)) % 97, i));
  }
  const size_t size = 1024 + static_cast<size_t>((h >> 16) % 3072);
  r.payload.resize(size);
  uint64_t x = h | 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r.payload[i] = static_cast<char>(x & 0xff);
  }
  r.payload_as_bytes = (h >> 20) % 2 == 1;
  return r;
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    for (int k = 3; k >= 0; --k) out += kAlphabet[(v >> (6 * k)) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (i + 1 < bytes.size()) v |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

Status Mismatch(std::string_view id, std::string_view column, std::string_view what) {
  return Status::Corruption(fmt::format("row '{}': column '{}' {}", id, column, what));
}

// --- Rollout kind ------------------------------------------------------------------------

RolloutRecord RolloutRow(const std::string& id) {
  const int n = static_cast<int>(HashId(id) % 100000);
  RolloutRecord r;
  r.id = id;
  r.rollout_id = fmt::format("traj-{}", n % 7);
  r.problem_id = "p";
  r.sequence_order = n;
  r.created_at_micros = 1'700'000'000'000'000 + n;
  r.content = std::string(200 + n % 300, 'c');
  r.reward = static_cast<float>(n % 10) / 10.0f;
  return r;
}

class RolloutTortureStore final : public TortureStore {
 public:
  explicit RolloutTortureStore(std::unique_ptr<RolloutStore> store) : store_(std::move(store)) {}

  Status Add(const std::vector<std::string>& ids) override {
    std::vector<RolloutRecord> rows;
    rows.reserve(ids.size());
    for (const std::string& id : ids) rows.push_back(RolloutRow(id));
    return store_->Add(rows).status();
  }
  Result<FlushOutcome> Flush() override { return store_->Flush(); }
  Result<MergeReport> Cleanup() override { return store_->Cleanup(); }
  Status Compact() override { return store_->Compact().status(); }
  Status Close() override { return store_->Close(); }
  StorageBase& base() override { return store_->base(); }

  Result<std::map<std::string, int>> ListIds(bool /*check_values*/, int /*blob_sample*/) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> listed, store_->List());
    std::map<std::string, int> out;
    for (const RolloutRecord& r : listed) ++out[r.id];
    return out;
  }

 private:
  std::unique_ptr<RolloutStore> store_;
};

// --- User-schema kind ----------------------------------------------------------------------

// Ids of `listed` spread evenly, at most `n` of them.
std::vector<std::string> Sample(const std::map<std::string, int>& listed, int n) {
  std::vector<std::string> out;
  if (n <= 0 || listed.empty()) return out;
  const size_t stride = std::max<size_t>(1, listed.size() / static_cast<size_t>(n));
  size_t i = 0;
  for (const auto& [id, times] : listed) {
    if (i++ % stride == 0 && out.size() < static_cast<size_t>(n)) out.push_back(id);
  }
  return out;
}

// The user schema on a GenericStore: JSON rows through Add, one call in four a built batch
// through AddBatches.
class GenericTortureStore final : public TortureStore {
 public:
  explicit GenericTortureStore(std::unique_ptr<GenericStore> store) : store_(std::move(store)) {}

  Status Add(const std::vector<std::string>& ids) override {
    if (!ids.empty() && HashId(ids.front()) % 4 == 0) {
      STRATA_ASSIGN_OR_RETURN(RecordBatch batch, UserRowsBatch(store_->schema(), ids));
      return store_->AddBatches({batch}).status();
    }
    return store_->Add(UserRowsJson(ids)).status();
  }
  Result<FlushOutcome> Flush() override { return store_->Flush(); }
  Result<MergeReport> Cleanup() override { return store_->Cleanup(); }
  Status Compact() override { return store_->Compact().status(); }
  Status Close() override { return store_->Close(); }
  StorageBase& base() override { return store_->base(); }

  Result<std::map<std::string, int>> ListIds(bool check_values, int blob_sample) override {
    // Every non-blob column: the payload is read only when named (Get / GetMany below).
    STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, store_->List());
    std::map<std::string, int> out;
    for (const RecordBatch& b : batches) {
      if (b.GetColumnByName("payload").is_valid_handle()) {
        return Status::Corruption("List returned the blob column 'payload'");
      }
      if (check_values) STRATA_RETURN_IF_ERROR(CheckUserRows(b));
      Array id = b.GetColumnByName("id");
      for (int64_t i = 0; i < b.num_rows(); ++i) ++out[std::string(id.StringValue(i))];
    }
    if (check_values) {
      const std::vector<std::string> ids = Sample(out, blob_sample);
      if (!ids.empty()) {
        STRATA_ASSIGN_OR_RETURN(RecordBatch blobs, store_->GetMany(ids, {"payload"}));
        if (blobs.num_rows() != static_cast<int64_t>(ids.size()) ||
            !blobs.GetColumnByName("payload").is_valid_handle()) {
          return Status::Corruption(fmt::format("{} listed rows sampled, GetMany returned {} {}",
                                                ids.size(), blobs.num_rows(),
                                                blobs.schema()->ToString()));
        }
        STRATA_RETURN_IF_ERROR(CheckUserRows(blobs));
      }
    }
    return out;
  }

 private:
  std::unique_ptr<GenericStore> store_;
};

}  // namespace

Result<StoreKind> ParseStoreKind(std::string_view name) {
  if (name == "rollout") return StoreKind::kRollout;
  if (name == "generic") return StoreKind::kGeneric;
  return Status::InvalidArgument(fmt::format("unknown store kind '{}' (rollout or generic)", name));
}

std::string_view StoreKindName(StoreKind kind) {
  return kind == StoreKind::kRollout ? "rollout" : "generic";
}

std::string UserSchemaSpecJson() {
  return R"({"columns": [
    ["id", {"type": "string", "nullable": false}],
    ["seq", {"type": "int64"}],
    ["score", {"type": "float64"}],
    ["label", {"type": "string"}],
    ["embedding", {"type": "vector", "dim": 8, "metric": "cosine"}],
    ["tags", {"type": "list", "item": {"type": "string"}}],
    ["payload", {"type": "binary", "blob": true}]]})";
}

std::string UserRowsJson(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) {
    const UserRow r = MakeUserRow(id);
    out += fmt::format(R"({{"id": {}, "seq": {}, )", JsonString(r.id), r.seq);
    if (!r.score_null) out += fmt::format(R"("score": {}, )", r.score);
    out += fmt::format(R"("label": {}, "embedding": [)", JsonString(r.label));
    for (size_t i = 0; i < r.embedding.size(); ++i) {
      out += fmt::format("{}{}", i > 0 ? ", " : "", r.embedding[i]);
    }
    out += R"(], "tags": [)";
    for (size_t i = 0; i < r.tags.size(); ++i) {
      out += fmt::format("{}{}", i > 0 ? ", " : "", JsonString(r.tags[i]));
    }
    out += R"(], "payload": )";
    if (r.payload_as_bytes) {
      out += "[";
      for (size_t i = 0; i < r.payload.size(); ++i) {
        out += fmt::format("{}{}", i > 0 ? "," : "", static_cast<unsigned char>(r.payload[i]));
      }
      out += "]";
    } else {
      out += JsonString(Base64(r.payload));
    }
    out += "}\n";
  }
  return out;
}

Result<RecordBatch> UserRowsBatch(const SchemaPtr& schema, const std::vector<std::string>& ids) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchBuilder> builder,
                          RecordBatchBuilder::Make(schema));
  for (const std::string& id : ids) {
    const UserRow r = MakeUserRow(id);
    for (int c = 0; c < schema->num_fields(); ++c) {
      const std::string& name = schema->field(c)->name();
      ArrayBuilder* b = builder->builder(c);
      if (name == "id") {
        STRATA_RETURN_IF_ERROR(static_cast<BinaryBuilder*>(b)->Append(r.id));
      } else if (name == "seq") {
        static_cast<Int64Builder*>(b)->Append(r.seq);
      } else if (name == "score") {
        if (r.score_null) {
          b->AppendNull();
        } else {
          static_cast<Float64Builder*>(b)->Append(r.score);
        }
      } else if (name == "label") {
        STRATA_RETURN_IF_ERROR(static_cast<BinaryBuilder*>(b)->Append(r.label));
      } else if (name == "embedding") {
        auto* list = static_cast<FixedSizeListBuilder*>(b);
        list->Append();
        auto* values = static_cast<Float32Builder*>(list->value_builder());
        for (float v : r.embedding) values->Append(v);
      } else if (name == "tags") {
        auto* list = static_cast<ListBuilder*>(b);
        list->Append();
        auto* values = static_cast<BinaryBuilder*>(list->value_builder());
        for (const std::string& t : r.tags) STRATA_RETURN_IF_ERROR(values->Append(t));
      } else if (name == "payload") {
        STRATA_RETURN_IF_ERROR(static_cast<LargeBinaryBuilder*>(b)->Append(r.payload));
      } else {
        return Status::InvalidArgument(fmt::format("unexpected column '{}'", name));
      }
    }
  }
  return builder->Finish();
}

Status CheckUserRows(const RecordBatch& batch) {
  Array ids = batch.GetColumnByName("id");
  if (!ids.is_valid_handle()) return Status::Corruption("rows without an id column");
  Array seq = batch.GetColumnByName("seq");
  Array score = batch.GetColumnByName("score");
  Array label = batch.GetColumnByName("label");
  Array embedding = batch.GetColumnByName("embedding");
  Array tags = batch.GetColumnByName("tags");
  Array payload = batch.GetColumnByName("payload");
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    const UserRow r = MakeUserRow(std::string(ids.StringValue(i)));
    if (seq.is_valid_handle() && (seq.IsNull(i) || seq.Value<int64_t>(i) != r.seq)) {
      return Mismatch(r.id, "seq", fmt::format("is not {}", r.seq));
    }
    if (score.is_valid_handle()) {
      if (score.IsNull(i) != r.score_null || (!r.score_null && score.Value<double>(i) != r.score)) {
        return Mismatch(
            r.id, "score",
            r.score_null ? std::string("is not null") : fmt::format("is not {}", r.score));
      }
    }
    if (label.is_valid_handle() && (label.IsNull(i) || label.StringValue(i) != r.label)) {
      return Mismatch(r.id, "label", "differs");
    }
    if (embedding.is_valid_handle()) {
      if (embedding.IsNull(i)) return Mismatch(r.id, "embedding", "is null");
      auto [begin, end] = embedding.ValueRange(i);
      Array values = embedding.values_array();
      if (end - begin != kEmbeddingDim) return Mismatch(r.id, "embedding", "has a wrong length");
      for (int64_t k = 0; k < kEmbeddingDim; ++k) {
        if (values.IsNull(begin + k) ||
            values.Value<float>(begin + k) != r.embedding[static_cast<size_t>(k)]) {
          return Mismatch(r.id, "embedding", fmt::format("differs at element {}", k));
        }
      }
    }
    if (tags.is_valid_handle()) {
      if (tags.IsNull(i)) return Mismatch(r.id, "tags", "is null");
      auto [begin, end] = tags.ValueRange(i);
      Array values = tags.values_array();
      if (end - begin != static_cast<int64_t>(r.tags.size())) {
        return Mismatch(r.id, "tags",
                        fmt::format("has {} items, not {}", end - begin, r.tags.size()));
      }
      for (int64_t k = 0; k < end - begin; ++k) {
        if (values.IsNull(begin + k) ||
            values.StringValue(begin + k) != r.tags[static_cast<size_t>(k)]) {
          return Mismatch(r.id, "tags", fmt::format("differs at item {}", k));
        }
      }
    }
    if (payload.is_valid_handle() && (payload.IsNull(i) || payload.StringValue(i) != r.payload)) {
      return Mismatch(r.id, "payload",
                      fmt::format("differs ({} bytes expected)", r.payload.size()));
    }
  }
  return Status::OK();
}

StorageBaseOptions TortureBaseOptions(const std::string& shard) {
  StorageBaseOptions options;
  options.shard_id = shard;
  options.table_options.max_rows_per_batch = 64;
  options.pending_generations_max = 0;  // the torture tests let generations pile up
  // Small segments: seals of 2 KiB and more link the WAL into the generation, so kills
  // land in linked seals too.
  options.max_wal_segment_bytes = 16 << 10;
  // Recodes of those linked generations run between the puts too, so kills land in them.
  options.recode_linked_generations = true;
  options.recode_quiet_seconds = 0;
  return options;
}

Result<std::unique_ptr<TortureStore>> TortureStore::Open(StoreKind kind,
                                                         std::shared_ptr<ObjectStore> objects,
                                                         const std::string& shard) {
  if (kind == StoreKind::kRollout) {
    RolloutStoreOptions options;
    options.base = TortureBaseOptions(shard);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> store,
                            RolloutStore::Open(std::move(objects), "", options));
    return std::unique_ptr<TortureStore>(new RolloutTortureStore(std::move(store)));
  }
  STRATA_ASSIGN_OR_RETURN(SchemaSpec spec, SchemaSpec::FromJson(UserSchemaSpecJson()));
  GenericStoreOptions options;
  options.base = TortureBaseOptions(shard);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GenericStore> store,
                          GenericStore::Open(std::move(objects), "", spec, options));
  return std::unique_ptr<TortureStore>(new GenericTortureStore(std::move(store)));
}

}  // namespace strata::store::torture
