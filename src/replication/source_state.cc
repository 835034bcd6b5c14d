// The replication objects a source keeps (source_state.h).
#include "replication/source_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>

#include "strata/builder.h"
#include "strata/ipc.h"

namespace strata::replication::internal {
namespace {

using nlohmann::json;

constexpr int64_t kIndexBatchRows = 65536;
constexpr std::string_view kStatesDir = "states/";
constexpr std::string_view kConsumersDir = "consumers/";
constexpr std::string_view kStateMetadata = "strata:replication:state";

json StateObject(const ChainState& s) {
  return json{{"cursor", s.cursor},     {"part", s.part},     {"id", ToHex(s.id)},
              {"rows", s.content.rows}, {"lo", s.content.lo}, {"hi", s.content.hi}};
}

Result<ChainState> StateFromObject(const json& j, std::string_view what) {
  try {
    ChainState s;
    s.cursor = j.at("cursor").get<uint64_t>();
    s.part = j.at("part").get<uint32_t>();
    STRATA_ASSIGN_OR_RETURN(s.id, HashFromHex(j.at("id").get<std::string>(), what));
    s.content.rows = j.at("rows").get<int64_t>();
    s.content.lo = j.at("lo").get<uint64_t>();
    s.content.hi = j.at("hi").get<uint64_t>();
    return s;
  } catch (const json::exception& e) {
    return Status::Corruption(fmt::format("{}: bad chain state: {}", what, e.what()));
  }
}

Result<json> ParseObject(const Buffer& bytes, std::string_view what) {
  json j = json::parse(bytes.view(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption(fmt::format("{}: not a JSON object", what));
  }
  return j;
}

std::string ChainKey(const StoreLocation& source) {
  return ReplicationPrefix(source) + "chain.json";
}

std::string ConsumerKey(const StoreLocation& source, std::string_view id) {
  return fmt::format("{}{}{}.json", ReplicationPrefix(source), kConsumersDir, id);
}

}  // namespace

ChainState EmptyState(const ChainRecord& chain) {
  ChainState s;
  s.id = BaseStateId(chain.chain_id, chain.token, chain.schema_hash, ContentChecksum{});
  return s;
}

std::string ReplicationPrefix(const StoreLocation& location) {
  return location.prefix + std::string(kReplicationDirectory);
}

Result<Hash256> HashFromHex(std::string_view hex, std::string_view what) {
  Hash256 out{};
  if (hex.size() != out.size() * 2) {
    return Status::Corruption(fmt::format("{}: a state id must be 64 hex digits", what));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const char* first = hex.data() + 2 * i;
    auto [ptr, ec] = std::from_chars(first, first + 2, out[i], 16);
    if (ec != std::errc() || ptr != first + 2) {
      return Status::Corruption(fmt::format("{}: a state id must be 64 hex digits", what));
    }
  }
  return out;
}

std::string StateToJson(const ChainState& state) { return StateObject(state).dump(); }

Result<ChainState> StateFromJson(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption(fmt::format("{}: not a JSON object", what));
  }
  return StateFromObject(j, what);
}

Result<std::optional<ChainRecord>> ReadChain(const StoreLocation& source) {
  const std::string key = ChainKey(source);
  Result<Buffer> bytes = source.store->Get(key);
  if (bytes.status().IsNotFound()) return std::optional<ChainRecord>();
  if (!bytes.ok()) return bytes.status();
  STRATA_ASSIGN_OR_RETURN(json j, ParseObject(*bytes, key));
  try {
    ChainRecord c;
    c.chain_id = j.at("chain_id").get<std::string>();
    c.token = j.at("token").get<std::string>();
    c.store_kind = j.at("store_kind").get<std::string>();
    c.key_column = j.at("key_column").get<std::string>();
    STRATA_ASSIGN_OR_RETURN(c.schema_hash,
                            HashFromHex(j.at("schema_hash").get<std::string>(), key));
    STRATA_ASSIGN_OR_RETURN(c.base, StateFromObject(j.at("base"), key));
    c.trim_floor = j.at("trim_floor").get<uint64_t>();
    c.created_at_micros = j.at("created_at_micros").get<int64_t>();
    return std::optional<ChainRecord>(std::move(c));
  } catch (const json::exception& e) {
    return Status::Corruption(fmt::format("{}: {}", key, e.what()));
  }
}

Status WriteChain(const StoreLocation& source, const ChainRecord& chain) {
  json j{{"chain_id", chain.chain_id},
         {"token", chain.token},
         {"store_kind", chain.store_kind},
         {"key_column", chain.key_column},
         {"schema_hash", ToHex(chain.schema_hash)},
         {"base", StateObject(chain.base)},
         {"trim_floor", chain.trim_floor},
         {"created_at_micros", chain.created_at_micros}};
  return source.store->Put(ChainKey(source), j.dump(2) + "\n");
}

SchemaPtr IndexSchema() {
  static const SchemaPtr schema = std::make_shared<Schema>(std::vector<FieldPtr>{
      field("key", large_binary(), /*nullable=*/false),
      field("lo", uint64(), /*nullable=*/false),
      field("hi", uint64(), /*nullable=*/false),
  });
  return schema;
}

struct IndexBuilder::Builders {
  LargeBinaryBuilder keys{large_binary()};
  UInt64Builder lo{uint64()};
  UInt64Builder hi{uint64()};
};

IndexBuilder::IndexBuilder() : builders_(std::make_unique<Builders>()) {}
IndexBuilder::~IndexBuilder() = default;

Status IndexBuilder::Add(std::string_view key, const RowHash& hash) {
  STRATA_RETURN_IF_ERROR(builders_->keys.Append(key));
  builders_->lo.Append(hash.lo);
  builders_->hi.Append(hash.hi);
  ++rows_;
  if (builders_->keys.length() >= kIndexBatchRows) return Cut();
  return Status::OK();
}

Status IndexBuilder::Cut() {
  const int64_t n = builders_->keys.length();
  if (n == 0) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(Array keys, builders_->keys.Finish());
  STRATA_ASSIGN_OR_RETURN(Array lo, builders_->lo.Finish());
  STRATA_ASSIGN_OR_RETURN(Array hi, builders_->hi.Finish());
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, RecordBatch::Make(IndexSchema(), n, {keys, lo, hi}));
  done_.push_back(std::move(batch));
  return Status::OK();
}

void IndexBuilder::Reset() {
  builders_ = std::make_unique<Builders>();
  done_.clear();
  rows_ = 0;
}

Result<std::vector<RecordBatch>> IndexBuilder::Finish() {
  STRATA_RETURN_IF_ERROR(Cut());
  rows_ = 0;
  return std::move(done_);
}

std::string StateKey(const StoreLocation& source, uint64_t cursor) {
  return fmt::format("{}{}{:020}", ReplicationPrefix(source), kStatesDir, cursor);
}

Result<std::vector<KeptState>> ListStates(const StoreLocation& source) {
  const std::string dir = ReplicationPrefix(source) + std::string(kStatesDir);
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, source.store->List(dir));
  std::vector<KeptState> out;
  for (const ObjectMeta& meta : objects) {
    std::string_view name = std::string_view(meta.key).substr(dir.size());
    uint64_t cursor = 0;
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), cursor);
    if (ec != std::errc() || ptr != name.data() + name.size() || name.size() != 20) continue;
    out.push_back(KeptState{.cursor = cursor, .reserved = meta.size == 0, .bytes = meta.size});
  }
  std::sort(out.begin(), out.end(),
            [](const KeptState& a, const KeptState& b) { return a.cursor < b.cursor; });
  return out;
}

uint64_t NewestCursor(const std::vector<KeptState>& kept) {
  uint64_t head = 0;
  for (const KeptState& k : kept) {
    if (!k.reserved) head = std::max(head, k.cursor);
  }
  return head;
}

Result<std::optional<StateIndex>> ReadState(const StoreLocation& source, uint64_t cursor) {
  const std::string key = StateKey(source, cursor);
  Result<Buffer> bytes = source.store->Get(key);
  if (bytes.status().IsNotFound()) return std::optional<StateIndex>();
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() == 0) return std::optional<StateIndex>();
  ipc::ReadOptions read_options;
  read_options.validate_full = true;
  Result<std::unique_ptr<ipc::FileReader>> reader =
      ipc::FileReader::Open(ipc::SourceFromBuffer(std::move(*bytes)), read_options);
  if (!reader.ok()) return reader.status().WithContext(key);
  StateIndex out;
  const SchemaPtr& schema = (*reader)->schema();
  if (!schema->Equals(*IndexSchema(), /*check_metadata=*/false)) {
    return Status::Corruption(fmt::format("{}: not a replication state index", key));
  }
  std::optional<std::string_view> state = schema->metadata().Get(kStateMetadata);
  if (!state) return Status::Corruption(fmt::format("{}: no state in its metadata", key));
  STRATA_ASSIGN_OR_RETURN(out.state, StateFromJson(*state, key));
  if (out.state.cursor != cursor) {
    return Status::Corruption(
        fmt::format("{}: holds the state of cursor {}", key, out.state.cursor));
  }
  for (int i = 0; i < (*reader)->num_batches(); ++i) {
    Result<RecordBatch> batch = (*reader)->ReadBatch(i);
    if (!batch.ok()) return batch.status().WithContext(key);
    out.batches.push_back(std::move(*batch));
  }
  return std::optional<StateIndex>(std::move(out));
}

Status WriteState(const StoreLocation& source, const ChainState& state,
                  const std::vector<RecordBatch>& batches) {
  KeyValueMetadata metadata;
  metadata.Set(std::string(kStateMetadata), StateToJson(state));
  const SchemaPtr schema = IndexSchema()->WithMetadata(std::move(metadata));
  std::vector<RecordBatch> rebound;
  rebound.reserve(batches.size());
  for (const RecordBatch& b : batches) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch r, RecordBatch::Make(schema, b.num_rows(), b.columns()));
    rebound.push_back(std::move(r));
  }
  ipc::WriteOptions options;
  options.compression = ipc::Compression::kLz4Frame;
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, ipc::WriteFileToBuffer(schema, rebound, options));
  return source.store->Put(StateKey(source, state.cursor), bytes.view());
}

Result<uint64_t> ReserveCursor(const StoreLocation& source) {
  STRATA_ASSIGN_OR_RETURN(std::vector<KeptState> states, ListStates(source));
  uint64_t next = states.empty() ? 1 : states.back().cursor + 1;
  for (int attempt = 0; attempt < 100; ++attempt, ++next) {
    Status put = source.store->PutIfAbsent(StateKey(source, next), "");
    if (put.ok()) return next;
    if (!put.IsAlreadyExists()) return put;
  }
  return Status::Busy("could not reserve a chain cursor: 100 concurrent exports won the race");
}

Result<std::vector<Consumer>> ReadConsumers(const StoreLocation& source) {
  const std::string dir = ReplicationPrefix(source) + std::string(kConsumersDir);
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, source.store->List(dir));
  std::vector<Consumer> out;
  for (const ObjectMeta& meta : objects) {
    if (!meta.key.ends_with(".json")) continue;
    Result<Buffer> bytes = source.store->Get(meta.key);
    if (bytes.status().IsNotFound()) continue;  // removed meanwhile
    if (!bytes.ok()) return bytes.status();
    STRATA_ASSIGN_OR_RETURN(json j, ParseObject(*bytes, meta.key));
    try {
      out.push_back(Consumer{.id = j.at("id").get<std::string>(),
                             .cursor = j.at("cursor").get<uint64_t>(),
                             .last_seen_micros = j.at("last_seen_micros").get<int64_t>()});
    } catch (const json::exception& e) {
      return Status::Corruption(fmt::format("{}: {}", meta.key, e.what()));
    }
  }
  return out;
}

Status WriteConsumer(const StoreLocation& source, const Consumer& consumer) {
  STRATA_RETURN_IF_ERROR(ValidateObjectKey(consumer.id).WithContext("consumer id"));
  if (consumer.id.find('/') != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("consumer id '{}' must not contain '/'", consumer.id));
  }
  json j{{"id", consumer.id},
         {"cursor", consumer.cursor},
         {"last_seen_micros", consumer.last_seen_micros}};
  return source.store->Put(ConsumerKey(source, consumer.id), j.dump() + "\n");
}

}  // namespace strata::replication::internal
