// RolloutStore: the rollout schema and typed reads over StorageBase
// (include/strata/rollout_store.h).
#include "strata/rollout_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "store/filter_text.h"
#include "strata/generic_store.h"
#include "strata/table.h"

namespace strata::store {
namespace {

constexpr int kPageAttempts = 3;

using internal::QuoteLiteral;

Result<std::vector<RolloutRecord>> DecodeAll(const std::vector<RecordBatch>& batches) {
  std::vector<RolloutRecord> out;
  for (const RecordBatch& batch : batches) {
    STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records, DecodeRolloutRecords(batch));
    for (RolloutRecord& r : records) out.push_back(std::move(r));
  }
  return out;
}

// The string ids of a one-column scan result.
std::vector<std::string> Ids(const std::vector<RecordBatch>& batches) {
  std::vector<std::string> ids;
  for (const RecordBatch& batch : batches) {
    const Array& column = batch.column(0);
    for (int64_t i = 0; i < batch.num_rows(); ++i) ids.emplace_back(column.StringValue(i));
  }
  return ids;
}

std::vector<expr::Scalar> IdScalars(const std::vector<std::string>& ids, size_t begin, size_t end) {
  std::vector<expr::Scalar> out;
  for (size_t i = begin; i < end; ++i) out.push_back(expr::Scalar::String(ids[i]));
  return out;
}

}  // namespace

// --- Filters -------------------------------------------------------------------------

Result<RolloutFilters> RolloutFilters::FromJson(std::string_view json) {
  // A JSON object reader keeps one value of a key given twice; a filter must not silently
  // drop the other, so the parser's key events are checked at the top level.
  std::set<std::string> keys;
  std::optional<std::string> repeated;
  nlohmann::json::parser_callback_t check = [&](int depth, nlohmann::json::parse_event_t event,
                                                nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !keys.insert(parsed.get<std::string>()).second && !repeated) {
      repeated = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json value = nlohmann::json::parse(json, check, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return Status::InvalidArgument("rollout filters are not valid JSON");
  }
  if (!value.is_object()) {
    return Status::InvalidArgument("rollout filters must be a JSON object");
  }
  if (repeated) {
    return Status::InvalidArgument(
        fmt::format("rollout filter key '{}' is given twice", *repeated));
  }
  RolloutFilters out;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& key = it.key();
    std::optional<std::string>* target = nullptr;
    if (key == "rollout_id") target = &out.rollout_id;
    if (key == "problem_id") target = &out.problem_id;
    if (key == "dataset") target = &out.dataset;
    if (key == "policy_version") target = &out.policy_version;
    if (key == "role") target = &out.role;
    if (key == "content_type") target = &out.content_type;
    if (key == "artifact_type") target = &out.artifact_type;
    if (target != nullptr) {
      if (!it.value().is_string()) {
        return Status::InvalidArgument(
            fmt::format("rollout filter '{}' must be a string, got {}", key, it.value().dump()));
      }
      *target = it.value().get<std::string>();
      continue;
    }
    if (key == "include_in_training") {
      if (!it.value().is_boolean()) {
        return Status::InvalidArgument(
            fmt::format("rollout filter 'include_in_training' must be true or false, got {}",
                        it.value().dump()));
      }
      out.include_in_training = it.value().get<bool>();
      continue;
    }
    return Status::InvalidArgument(fmt::format("unsupported rollout filter '{}'", key));
  }
  return out;
}

std::string RolloutFilters::Expression() const {
  std::vector<std::string> clauses;
  auto add = [&](std::string_view column, const std::optional<std::string>& value) {
    if (value.has_value() && !value->empty()) {
      clauses.push_back(fmt::format("{} = {}", column, QuoteLiteral(*value)));
    }
  };
  add("id", id);
  add("rollout_id", rollout_id);
  add("problem_id", problem_id);
  add("dataset", dataset);
  add("role", role);
  add("content_type", content_type);
  add("policy_version", policy_version);
  add("artifact_type", artifact_type);
  if (include_in_training.has_value()) {
    clauses.push_back(
        fmt::format("include_in_training = {}", *include_in_training ? "true" : "false"));
  }
  std::string out;
  for (size_t i = 0; i < clauses.size(); ++i) {
    if (i > 0) out += " AND ";
    out += clauses[i];
  }
  return out;
}

bool RolloutFilters::Matches(const RolloutRecord& r) const {
  auto required = [](const std::optional<std::string>& want, const std::string& have) {
    return !want.has_value() || want->empty() || *want == have;
  };
  auto optional = [](const std::optional<std::string>& want,
                     const std::optional<std::string>& have) {
    return !want.has_value() || want->empty() || (have.has_value() && *want == *have);
  };
  return required(id, r.id) && required(rollout_id, r.rollout_id) &&
         required(problem_id, r.problem_id) && optional(dataset, r.dataset) &&
         required(role, r.role) && required(content_type, r.content_type) &&
         optional(policy_version, r.policy_version) && optional(artifact_type, r.artifact_type) &&
         (!include_in_training.has_value() ||
          (r.include_in_training.has_value() && *r.include_in_training == *include_in_training));
}

// --- Store -----------------------------------------------------------------------------

RolloutStore::RolloutStore(std::unique_ptr<StorageBase> base) : base_(std::move(base)) {}

Result<std::unique_ptr<RolloutStore>> RolloutStore::Open(std::shared_ptr<ObjectStore> store,
                                                         std::string prefix,
                                                         RolloutStoreOptions options,
                                                         bool create_if_missing) {
  StorageBaseOptions base_options = std::move(options.base);
  if (store == nullptr) return Status::InvalidArgument("RolloutStore::Open: no object store");
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*store, prefix));
  if (exists) {
    // A generic store records the same kind as a plain StorageBase ("generic"), which a
    // rollout store may adopt (older stores): tell it by its schema spec, before the schema
    // evolution below would try to add the rollout columns to it.
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                            table::Table::Open(store, prefix, base_options.table_options));
    if (table->schema()->metadata().Get(kSchemaSpecMetadata).has_value()) {
      return Status::InvalidArgument(
          fmt::format("store at '{}{}' is a generic store, not a rollout store (open it with "
                      "GenericStore)",
                      store->Describe(), prefix.empty() ? "" : "/" + prefix));
    }
  }
  base_options.schema = RolloutSchema();
  base_options.key_column = "id";
  base_options.store_kind = std::string(kRolloutStoreKind);
  base_options.seal_on_put = false;
  if (base_options.latest_schema == nullptr) base_options.latest_schema = RolloutSchema();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StorageBase> base,
                          StorageBase::Open(std::move(store), std::move(prefix),
                                            std::move(base_options), create_if_missing));
  return std::unique_ptr<RolloutStore>(new RolloutStore(std::move(base)));
}

Result<uint64_t> RolloutStore::Add(const std::vector<RolloutRecord>& records) {
  if (records.empty()) return base_->version();
  for (size_t i = 0; i < records.size(); ++i) {
    const RolloutRecord& r = records[i];
    if (r.id.empty()) {
      return Status::InvalidArgument(fmt::format("record {}: id must not be empty", i));
    }
    if (r.rollout_id.empty()) {
      return Status::InvalidArgument(
          fmt::format("record '{}': rollout_id must not be empty", r.id));
    }
    if (r.problem_id.empty()) {
      return Status::InvalidArgument(
          fmt::format("record '{}': problem_id must not be empty", r.id));
    }
  }
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, EncodeRolloutRecords(records, base_->schema()));
  STRATA_RETURN_IF_ERROR(base_->Put({batch}));
  return base_->version();
}

Result<std::vector<RolloutRecord>> RolloutStore::List(std::optional<int64_t> limit, int64_t offset,
                                                      const RolloutFilters& filters) const {
  if (offset < 0 || (limit.has_value() && *limit < 0)) {
    return Status::InvalidArgument("limit and offset must not be negative");
  }
  ScanRequest request;
  request.columns = RolloutNonBlobColumns();
  request.filter = filters.Expression();
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, base_->Scan(request));
  STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records, DecodeAll(batches));
  std::sort(records.begin(), records.end(),
            [](const RolloutRecord& a, const RolloutRecord& b) { return a.id < b.id; });
  size_t begin = std::min(records.size(), static_cast<size_t>(offset));
  size_t end = limit.has_value() ? std::min(records.size(), begin + static_cast<size_t>(*limit))
                                 : records.size();
  return std::vector<RolloutRecord>(std::make_move_iterator(records.begin() + begin),
                                    std::make_move_iterator(records.begin() + end));
}

Result<RolloutPage> RolloutStore::ListFiltered(const RolloutFilters& filters, int64_t limit,
                                               int64_t offset, ListSource source) const {
  if (offset < 0 || limit < 0) {
    return Status::InvalidArgument("limit and offset must not be negative");
  }
  for (int attempt = 0; attempt < kPageAttempts; ++attempt) {
    // Page by ids first (one narrow column), then fetch only the page's rows.
    ScanRequest request;
    request.source = source;
    request.columns = {"id"};
    request.filter = filters.Expression();
    STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> id_batches, base_->Scan(request));
    std::vector<std::string> ids = Ids(id_batches);
    std::sort(ids.begin(), ids.end());
    size_t begin = std::min(ids.size(), static_cast<size_t>(offset));
    size_t end = std::min(ids.size(), begin + static_cast<size_t>(limit));
    RolloutPage page;
    page.has_more = end < ids.size();
    std::vector<RolloutRecord> rows;
    for (size_t chunk = begin; chunk < end; chunk += 1024) {
      size_t chunk_end = std::min(end, chunk + 1024);
      STRATA_ASSIGN_OR_RETURN(RecordBatch fetched, base_->GetMany(IdScalars(ids, chunk, chunk_end),
                                                                  RolloutNonBlobColumns(), source));
      STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> decoded, DecodeRolloutRecords(fetched));
      for (RolloutRecord& r : decoded) rows.push_back(std::move(r));
    }
    if (rows.size() != end - begin) continue;  // a merge moved rows between the two reads
    // GetMany keeps the order of the ids asked for: the page is in id order.
    page.records = std::move(rows);
    return page;
  }
  return Status::Busy("rollout rows disappeared while reading their page; retry the request");
}

Result<std::vector<RolloutRecord>> RolloutStore::GetTrajectory(std::string_view rollout_id) const {
  if (rollout_id.empty()) return Status::InvalidArgument("rollout_id must not be empty");
  ScanRequest request;
  request.columns = RolloutNonBlobColumns();
  request.filter = fmt::format("rollout_id = {}", QuoteLiteral(rollout_id));
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, base_->Scan(request));
  STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records, DecodeAll(batches));
  std::sort(records.begin(), records.end(), [](const RolloutRecord& a, const RolloutRecord& b) {
    if (a.sequence_order != b.sequence_order) return a.sequence_order < b.sequence_order;
    return a.id < b.id;
  });
  return records;
}

Result<std::optional<RolloutRecord>> RolloutStore::GetById(std::string_view id,
                                                           ListSource source) const {
  std::vector<expr::Scalar> key = {expr::Scalar::String(std::string(id))};
  // Rows are immutable by contract, so the base (where most rows live) is asked first. A
  // miss there is asked again of the whole tree in one consistent read: asking only the
  // pending generations would miss a row a merge moved into the base in between.
  std::vector<ListSource> order;
  if (source == ListSource::kAll) {
    order = {ListSource::kFragments, ListSource::kAll};
  } else {
    order = {source};
  }
  for (ListSource s : order) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, base_->GetMany(key, RolloutNonBlobColumns(), s));
    if (batch.num_rows() == 0) continue;
    STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records, DecodeRolloutRecords(batch));
    return std::optional<RolloutRecord>(std::move(records.front()));
  }
  return std::optional<RolloutRecord>();
}

Result<std::optional<std::string>> RolloutStore::GetBlob(std::string_view id) const {
  std::vector<expr::Scalar> key = {expr::Scalar::String(std::string(id))};
  // As GetById: the base first, then the whole tree in one consistent read.
  for (ListSource s : {ListSource::kFragments, ListSource::kAll}) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, base_->GetMany(key, {"binary_payload"}, s));
    if (batch.num_rows() == 0) continue;
    const Array& column = batch.column(0);
    if (column.IsNull(0)) return std::optional<std::string>();
    return std::optional<std::string>(std::string(column.StringValue(0)));
  }
  return std::optional<std::string>();
}

Result<RolloutObservation> RolloutStore::Observe() const {
  STRATA_ASSIGN_OR_RETURN(StoreObservation o, base_->Observe());
  RolloutObservation out;
  out.row_count = o.base_rows + o.generation_rows;
  out.fragment_count = o.fragments;
  out.version = o.version;
  out.last_updated_micros = o.last_updated_micros;
  out.pending_generations = o.pending_generations;
  out.unflushed_rows = o.unflushed_rows;
  return out;
}

Result<FlushOutcome> RolloutStore::Flush() { return base_->Flush(); }
Status RolloutStore::Close() { return base_->Close(); }
Result<MergeReport> RolloutStore::MaybeMerge() { return base_->MaybeMerge(); }
Result<MergeReport> RolloutStore::Cleanup() { return base_->Cleanup(); }
Result<bool> RolloutStore::CountMergeDue() const { return base_->CountMergeDue(); }
Result<table::CompactionResult> RolloutStore::Compact(const table::CompactionOptions& options) {
  return base_->Compact(options);
}
Result<table::RepairReport> RolloutStore::Repair() { return base_->Repair(); }
Result<std::optional<PreparedMerge>> RolloutStore::PrepareCountMerge() {
  return base_->PrepareCountMerge();
}
Result<std::optional<PreparedMerge>> RolloutStore::PrepareCleanupMerge() {
  return base_->PrepareCleanupMerge();
}
Result<MergeReport> RolloutStore::CommitPreparedMerge(PreparedMerge prepared) {
  return base_->CommitPreparedMerge(std::move(prepared));
}
Result<bool> RolloutStore::ShouldCompact(int64_t min_fragments,
                                         const std::vector<QuietHours>& quiet_hours) const {
  return base_->ShouldCompact(min_fragments, quiet_hours);
}
Result<bool> RolloutStore::ShouldCompact(const CompactionPolicy& policy) const {
  return base_->ShouldCompact(policy);
}
Result<CompactionStats> RolloutStore::GetCompactionStats() const {
  return base_->GetCompactionStats();
}
Status RolloutStore::DeleteData() { return base_->DeleteData(); }
Result<int64_t> RolloutStore::PendingGenerations() const { return base_->PendingGenerations(); }
uint64_t RolloutStore::version() const { return base_->version(); }
Status RolloutStore::Checkout(uint64_t version) { return base_->Checkout(version); }
Status RolloutStore::RefreshLatest() { return base_->RefreshLatest(); }
bool RolloutStore::pinned() const { return base_->pinned(); }

}  // namespace strata::store
