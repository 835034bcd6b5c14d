// DatagenStore and DatagenStreamWriter (include/strata/datagen_store.h): writes, the reads
// that fold events, and the client that derives idempotent checkpoint and event ids.
#include "strata/datagen_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "store/filter_text.h"
#include "util/clock.h"

namespace strata::store {
namespace {

constexpr size_t kGetManyLimit = 1024;

using internal::QuoteLiteral;

void SortEvents(std::vector<DatagenEvent>& events) {
  std::sort(events.begin(), events.end(), [](const DatagenEvent& a, const DatagenEvent& b) {
    return std::tie(a.item_id, a.item_seq, a.event_id) <
           std::tie(b.item_id, b.item_seq, b.event_id);
  });
}

// Calls `each` with every item's events of `events` (sorted by item_id): one call per item.
template <typename F>
Status ForEachItem(std::vector<DatagenEvent>& events, F each) {
  size_t begin = 0;
  while (begin < events.size()) {
    size_t end = begin + 1;
    while (end < events.size() && events[end].item_id == events[begin].item_id) ++end;
    std::vector<DatagenEvent> item(std::make_move_iterator(events.begin() + begin),
                                   std::make_move_iterator(events.begin() + end));
    STRATA_RETURN_IF_ERROR(each(std::move(item)));
    begin = end;
  }
  return Status::OK();
}

}  // namespace

// --- Store -----------------------------------------------------------------------------

DatagenStore::DatagenStore(std::unique_ptr<StorageBase> base, Clock* clock)
    : base_(std::move(base)), clock_(clock) {}

Result<std::unique_ptr<DatagenStore>> DatagenStore::Open(std::shared_ptr<ObjectStore> store,
                                                         std::string prefix,
                                                         DatagenStoreOptions options,
                                                         bool create_if_missing) {
  StorageBaseOptions base_options = std::move(options.base);
  base_options.schema = DatagenSchema();
  base_options.key_column = "event_id";
  base_options.store_kind = std::string(kDatagenStoreKind);
  base_options.seal_on_put = true;
  Clock* clock = base_options.clock != nullptr ? base_options.clock : SystemClock();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StorageBase> base,
                          StorageBase::Open(std::move(store), std::move(prefix),
                                            std::move(base_options), create_if_missing));
  return std::unique_ptr<DatagenStore>(new DatagenStore(std::move(base), clock));
}

Result<uint64_t> DatagenStore::Write(const std::vector<DatagenEvent>& events) {
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, EncodeDatagenEvents(events, base_->schema()));
  STRATA_RETURN_IF_ERROR(base_->Put({batch}));
  // The count trigger: the put sealed a generation. A step the merge could not finish after
  // its base commit (MergeReport::follow_up) is finished by the shard's next merge.
  STRATA_RETURN_IF_ERROR(base_->MaybeMerge().status());
  return base_->version();
}

Result<uint64_t> DatagenStore::Append(const std::vector<DatagenEvent>& events) {
  if (events.empty()) return base_->version();
  STRATA_RETURN_IF_ERROR(ValidateDatagenWriteBatch(events));
  return Write(events);
}

Result<uint64_t> DatagenStore::AppendCheckpoint(const std::vector<DatagenEvent>& events) {
  STRATA_RETURN_IF_ERROR(ValidateDatagenCheckpoint(events));
  return Write(events);
}

Result<std::vector<DatagenEvent>> DatagenStore::Read(const std::string& filter) const {
  ScanRequest request;
  request.columns = DatagenNonBlobColumns();
  request.filter = filter;
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, base_->Scan(request));
  std::vector<DatagenEvent> out;
  for (const RecordBatch& batch : batches) {
    Result<std::vector<DatagenEvent>> events = DecodeDatagenEvents(batch);
    if (!events.ok()) {
      return Status::Corruption(
          fmt::format("a stored datagen event does not decode: {}", events.status().message()));
    }
    for (DatagenEvent& e : *events) out.push_back(std::move(e));
  }
  SortEvents(out);
  return out;
}

Result<std::vector<DatagenEvent>> DatagenStore::EventsForItem(std::string_view item_id) const {
  return Read(fmt::format("item_id = {}", QuoteLiteral(item_id)));
}

Result<std::vector<DatagenEvent>> DatagenStore::EventsForRoot(std::string_view root_item_id) const {
  return Read(fmt::format("root_item_id = {}", QuoteLiteral(root_item_id)));
}

Result<DatagenItemTree> DatagenStore::ItemTree(std::string_view root_item_id) const {
  STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events, EventsForRoot(root_item_id));
  DatagenItemTree tree;
  STRATA_RETURN_IF_ERROR(ForEachItem(events, [&](std::vector<DatagenEvent> item) -> Status {
    STRATA_ASSIGN_OR_RETURN(std::optional<DatagenFoldedItem> folded,
                            FoldDatagenEvents(std::move(item)));
    if (folded) {
      std::string id = folded->item_id;
      tree.nodes.emplace(std::move(id), DatagenItemTreeNode{std::move(*folded), {}});
    }
    return Status::OK();
  }));
  // nodes is ordered by id, so children and roots come out sorted.
  for (auto& [id, node] : tree.nodes) {
    const std::optional<std::string>& parent = node.item.parent_item_id;
    auto it = parent ? tree.nodes.find(*parent) : tree.nodes.end();
    if (it != tree.nodes.end() && it->first != id) {
      it->second.children.push_back(id);
    } else {
      tree.roots.push_back(id);
    }
  }
  return tree;
}

Result<std::vector<DatagenEvent>> DatagenStore::Failures(
    const std::optional<std::string>& run_id) const {
  std::string filter = "event_type = 'FAILED'";
  if (run_id) filter += fmt::format(" AND run_id = {}", QuoteLiteral(*run_id));
  return Read(filter);
}

Result<std::vector<DatagenItemFailure>> DatagenStore::ItemFailures(std::string_view item_id) const {
  STRATA_ASSIGN_OR_RETURN(
      std::vector<DatagenEvent> events,
      Read(fmt::format("item_id = {} AND event_type = 'FAILED'", QuoteLiteral(item_id))));
  std::vector<DatagenItemFailure> out;
  out.reserve(events.size());
  for (DatagenEvent& e : events) {
    out.push_back(DatagenItemFailure{DatagenCursor{*e.position(), e.item_seq}, std::move(e.run_id),
                                     e.attempt, std::move(*e.error_type), std::move(e.error_dump),
                                     std::move(e.traceback)});
  }
  return out;
}

Result<std::vector<DatagenCursor>> DatagenStore::Trajectory(std::string_view item_id) const {
  STRATA_ASSIGN_OR_RETURN(std::optional<DatagenFoldedItem> folded, FoldItem(item_id));
  if (!folded) return std::vector<DatagenCursor>();
  return std::move(folded->trajectory);
}

Result<std::optional<DatagenFoldedItem>> DatagenStore::FoldItem(std::string_view item_id,
                                                                DatagenFoldMode mode) const {
  STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events, EventsForItem(item_id));
  if (mode == DatagenFoldMode::kEager) {
    // Every blob value's bytes (an appended field holds several), read together.
    std::vector<DatagenEvent*> blobs;
    for (DatagenEvent& e : events) {
      if (e.value && e.value->kind() == DatagenValue::Kind::kBlob) blobs.push_back(&e);
    }
    for (size_t begin = 0; begin < blobs.size(); begin += kGetManyLimit) {
      size_t end = std::min(blobs.size(), begin + kGetManyLimit);
      std::vector<expr::Scalar> keys;
      for (size_t i = begin; i < end; ++i) keys.push_back(expr::Scalar::String(blobs[i]->event_id));
      STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                              base_->GetMany(keys, {"event_id", "value_blob"}, ListSource::kAll));
      std::map<std::string, std::string, std::less<>> bytes;
      for (int64_t r = 0; r < batch.num_rows(); ++r) {
        if (batch.column(1).IsValid(r)) {
          bytes.emplace(std::string(batch.column(0).StringValue(r)),
                        std::string(batch.column(1).StringValue(r)));
        }
      }
      for (size_t i = begin; i < end; ++i) {
        auto it = bytes.find(blobs[i]->event_id);
        if (it != bytes.end()) blobs[i]->value->mutable_blob().bytes = it->second;
      }
    }
  }
  return FoldDatagenEvents(std::move(events));
}

Result<std::map<std::string, std::optional<DatagenItemStatus>>> DatagenStore::RootItemStatuses(
    const std::vector<std::string>& root_item_ids) const {
  std::map<std::string, std::optional<DatagenItemStatus>> out;
  for (const std::string& root : root_item_ids) out[root] = std::nullopt;
  // One read per chunk of ids (item_id IN (...)), then one fold per item found.
  std::vector<std::string> ids;
  ids.reserve(out.size());
  for (const auto& [id, status] : out) ids.push_back(QuoteLiteral(id));
  for (size_t begin = 0; begin < ids.size(); begin += kGetManyLimit) {
    const size_t end = std::min(ids.size(), begin + kGetManyLimit);
    std::string filter = "item_id IN (";
    for (size_t i = begin; i < end; ++i) filter += (i > begin ? ", " : "") + ids[i];
    filter += ")";
    STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events, Read(filter));
    STRATA_RETURN_IF_ERROR(ForEachItem(events, [&](std::vector<DatagenEvent> item) -> Status {
      std::string id = item.front().item_id;
      STRATA_ASSIGN_OR_RETURN(std::optional<DatagenFoldedItem> folded,
                              FoldDatagenEvents(std::move(item)));
      if (folded) out[id] = folded->status;
      return Status::OK();
    }));
  }
  return out;
}

Result<DatagenOverview> DatagenStore::Overview() const {
  STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events, Read(""));
  DatagenOverview overview;
  std::map<std::string, std::set<std::string>> failed_roots;  // run -> roots
  for (const DatagenEvent& e : events) {
    if (e.event_type == DatagenEventType::kFailed) {
      ++overview.failures;
      ++overview.failures_by_error_type[*e.error_type];
      DatagenRunFailures& run = overview.failures_by_run[e.run_id];
      ++run.failures;
      ++run.failures_by_error_type[*e.error_type];
      failed_roots[e.run_id].insert(e.root_item_id);
    } else if (e.event_type == DatagenEventType::kStepCompleted) {
      ++overview.completed_steps[*e.step_name];
    }
  }
  for (auto& [run, roots] : failed_roots) {
    std::vector<std::string>& sample = overview.failures_by_run[run].sample_root_item_ids;
    for (const std::string& root : roots) {
      if (sample.size() == kDatagenFailureSampleLimit) break;
      sample.push_back(root);
    }
  }
  STRATA_RETURN_IF_ERROR(ForEachItem(events, [&](std::vector<DatagenEvent> item) -> Status {
    if (item.front().item_id != item.front().root_item_id) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(std::optional<DatagenFoldedItem> folded,
                            FoldDatagenEvents(std::move(item)));
    if (!folded) return Status::OK();
    ++overview.items;
    switch (folded->status) {
      case DatagenItemStatus::kCompleted:
        ++overview.completed;
        break;
      case DatagenItemStatus::kFiltered:
        ++overview.filtered;
        break;
      case DatagenItemStatus::kRunning:
      case DatagenItemStatus::kFailed:
        ++overview.running;
        break;
    }
    return Status::OK();
  }));
  return overview;
}

Result<std::optional<std::string>> DatagenStore::GetBlob(std::string_view event_id) const {
  std::vector<expr::Scalar> key = {expr::Scalar::String(std::string(event_id))};
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, base_->GetMany(key, {"value_blob"}, ListSource::kAll));
  if (batch.num_rows() == 0 || batch.column(0).IsNull(0)) return std::optional<std::string>();
  return std::optional<std::string>(std::string(batch.column(0).StringValue(0)));
}

Result<std::string> DatagenStore::LoadBlob(const DatagenFoldedItem& item,
                                           std::string_view field) const {
  auto it = item.blob_event_ids.find(std::string(field));
  if (it == item.blob_event_ids.end()) {
    return Status::InvalidArgument(
        fmt::format("field '{}' of item '{}' holds no blob", field, item.item_id));
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> bytes, GetBlob(it->second));
  if (!bytes) {
    return Status::NotFound(fmt::format("blob event '{}' of field '{}' of item '{}' is not stored",
                                        it->second, field, item.item_id));
  }
  return std::move(*bytes);
}

Result<FlushOutcome> DatagenStore::Flush() { return base_->Flush(); }
Status DatagenStore::Close() { return base_->Close(); }
Result<MergeReport> DatagenStore::MaybeMerge() { return base_->MaybeMerge(); }
Result<MergeReport> DatagenStore::Cleanup() { return base_->Cleanup(); }
Result<table::CompactionResult> DatagenStore::Compact(const table::CompactionOptions& options) {
  return base_->Compact(options);
}
Result<int64_t> DatagenStore::PendingGenerations() const { return base_->PendingGenerations(); }
Result<StoreObservation> DatagenStore::Observe() const { return base_->Observe(); }
uint64_t DatagenStore::version() const { return base_->version(); }
Status DatagenStore::Checkout(uint64_t version) { return base_->Checkout(version); }
Status DatagenStore::RefreshLatest() { return base_->RefreshLatest(); }
Result<bool> DatagenStore::CountMergeDue() const { return base_->CountMergeDue(); }
Result<std::optional<PreparedMerge>> DatagenStore::PrepareCountMerge() {
  return base_->PrepareCountMerge();
}
Result<std::optional<PreparedMerge>> DatagenStore::PrepareCleanupMerge() {
  return base_->PrepareCleanupMerge();
}
Result<MergeReport> DatagenStore::CommitPreparedMerge(PreparedMerge prepared) {
  return base_->CommitPreparedMerge(std::move(prepared));
}
Result<bool> DatagenStore::ShouldCompact(int64_t min_fragments,
                                         const std::vector<QuietHours>& quiet_hours) const {
  return base_->ShouldCompact(min_fragments, quiet_hours);
}
Result<bool> DatagenStore::ShouldCompact(const CompactionPolicy& policy) const {
  return base_->ShouldCompact(policy);
}
Result<CompactionStats> DatagenStore::GetCompactionStats() const {
  return base_->GetCompactionStats();
}
Status DatagenStore::DeleteData() { return base_->DeleteData(); }

// --- Stream writer -----------------------------------------------------------------------

Result<DatagenStreamWriter> DatagenStore::OpenStream(const DatagenItemId& item,
                                                     DatagenWriteContext context,
                                                     std::optional<std::string> parent_item_id,
                                                     std::optional<std::string> query_tags_json) {
  if (!parent_item_id) {
    if (std::optional<DatagenItemId> parent = item.Parent()) parent_item_id = parent->str();
  }
  DatagenStreamWriter writer(this, item, item.Root().str(), std::move(parent_item_id),
                             std::move(context), /*next_seq=*/1, /*attempt=*/0);
  DatagenEvent created = writer.NewEvent(DatagenEventType::kItemCreated,
                                         item.str() + std::string("\0created", 8), 0, 1);
  created.status = DatagenItemStatus::kRunning;
  created.query_tags_json = std::move(query_tags_json);
  STRATA_RETURN_IF_ERROR(Append({created}).status());
  writer.next_seq_ = 2;
  return writer;
}

Result<std::optional<DatagenStreamWriter>> DatagenStore::ResumeStream(const DatagenItemId& item,
                                                                      DatagenWriteContext context) {
  STRATA_ASSIGN_OR_RETURN(std::optional<DatagenFoldedItem> folded, FoldItem(item.str()));
  if (!folded) return std::optional<DatagenStreamWriter>();
  return std::optional<DatagenStreamWriter>(
      DatagenStreamWriter(this, item, folded->root_item_id, folded->parent_item_id,
                          std::move(context), folded->last_item_seq + 1, folded->last_attempt + 1));
}

DatagenStreamWriter::DatagenStreamWriter(DatagenStore* store, DatagenItemId item, std::string root,
                                         std::optional<std::string> parent,
                                         DatagenWriteContext context, int64_t next_seq,
                                         int32_t attempt)
    : store_(store),
      clock_(store->clock_),
      item_(std::move(item)),
      root_(std::move(root)),
      parent_(std::move(parent)),
      context_(std::move(context)),
      next_seq_(next_seq),
      attempt_(attempt) {}

DatagenEvent DatagenStreamWriter::NewEvent(DatagenEventType type, std::string checkpoint_id,
                                           uint64_t ordinal, int64_t item_seq) const {
  DatagenEvent e;
  e.event_id = DatagenEventId(item_.str(), checkpoint_id, ordinal);
  e.item_id = item_.str();
  e.root_item_id = root_;
  e.parent_item_id = parent_;
  e.item_seq = item_seq;
  e.checkpoint_id = std::move(checkpoint_id);
  e.event_type = type;
  e.attempt = attempt_;
  e.run_id = context_.run_id;
  e.writer_epoch = context_.writer_epoch;
  e.event_ts_micros = clock_->NowMicros();
  return e;
}

std::string DatagenStreamWriter::StepCheckpointId(const DatagenStepPosition& position) const {
  std::string id = item_.str();
  for (const std::string& part : {std::to_string(attempt_), position.step_name,
                                  std::to_string(position.step_index), std::to_string(ordinal_)}) {
    id.push_back('\0');
    id += part;
  }
  return id;
}

Result<DatagenEvent> DatagenStreamWriter::BuildStepStarted(const DatagenStepPosition& position) {
  DatagenEvent e =
      NewEvent(DatagenEventType::kStepStarted, StepCheckpointId(position), 0, next_seq_);
  e.set_position(position);
  STRATA_RETURN_IF_ERROR(ValidateDatagenWriteBatch({e}));
  ++next_seq_;
  ++ordinal_;
  return e;
}

Result<std::vector<DatagenEvent>> DatagenStreamWriter::BuildStepCompleted(
    const DatagenStepPosition& position, const std::vector<DatagenFieldWrite>& fields) {
  const std::string checkpoint = StepCheckpointId(position);
  std::vector<DatagenEvent> events;
  events.reserve(fields.size() + 1);
  for (size_t i = 0; i < fields.size(); ++i) {
    const DatagenFieldWrite& f = fields[i];
    DatagenEvent e =
        NewEvent(f.append ? DatagenEventType::kFieldAppend : DatagenEventType::kFieldSet,
                 checkpoint, i + 1, next_seq_ + static_cast<int64_t>(i));
    e.set_position(position);
    e.field_name = f.name;
    e.field_type =
        f.field_type.empty() ? std::string(DatagenValueKindName(f.value.kind())) : f.field_type;
    e.codec_version = f.codec_version;
    e.value = f.value;
    events.push_back(std::move(e));
  }
  DatagenEvent done = NewEvent(DatagenEventType::kStepCompleted, checkpoint, 0,
                               next_seq_ + static_cast<int64_t>(fields.size()));
  done.set_position(position);
  events.push_back(std::move(done));
  STRATA_RETURN_IF_ERROR(ValidateDatagenCheckpoint(events));
  next_seq_ += static_cast<int64_t>(events.size());
  ++ordinal_;
  return events;
}

Result<DatagenEvent> DatagenStreamWriter::BuildItemTerminal(DatagenItemStatus status) {
  if (!IsTerminalStatus(status)) {
    return Status::InvalidArgument(fmt::format(
        "item_terminal needs status completed or filtered, got {}", DatagenItemStatusName(status)));
  }
  std::string checkpoint =
      item_.str() + std::string("\0terminal\0", 10) + std::to_string(next_seq_);
  DatagenEvent e = NewEvent(DatagenEventType::kTerminal, std::move(checkpoint), 0, next_seq_);
  e.status = status;
  STRATA_RETURN_IF_ERROR(ValidateDatagenWriteBatch({e}));
  ++next_seq_;
  return e;
}

Result<DatagenEvent> DatagenStreamWriter::BuildItemFailed(const DatagenStepPosition& position,
                                                          std::string error_type,
                                                          std::optional<std::string> error_dump,
                                                          std::optional<std::string> traceback) {
  DatagenEvent e = NewEvent(DatagenEventType::kFailed, StepCheckpointId(position), 0, next_seq_);
  e.set_position(position);
  e.status = DatagenItemStatus::kFailed;
  e.error_type = std::move(error_type);
  e.error_dump = std::move(error_dump);
  e.traceback = std::move(traceback);
  STRATA_RETURN_IF_ERROR(ValidateDatagenWriteBatch({e}));
  ++next_seq_;
  ++ordinal_;
  return e;
}

// The writing calls build on a copy and keep it only when the append succeeded, so a call that
// fails leaves the writer as it was and its retry writes the same ids.

Status DatagenStreamWriter::StepStarted(const DatagenStepPosition& position) {
  DatagenStreamWriter next = *this;
  STRATA_ASSIGN_OR_RETURN(DatagenEvent e, next.BuildStepStarted(position));
  STRATA_RETURN_IF_ERROR(store_->Append({e}).status());
  *this = std::move(next);
  return Status::OK();
}

Status DatagenStreamWriter::StepCompleted(const DatagenStepPosition& position,
                                          const std::vector<DatagenFieldWrite>& fields) {
  DatagenStreamWriter next = *this;
  STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events,
                          next.BuildStepCompleted(position, fields));
  STRATA_RETURN_IF_ERROR(store_->AppendCheckpoint(events).status());
  *this = std::move(next);
  return Status::OK();
}

Status DatagenStreamWriter::ItemTerminal(DatagenItemStatus status) {
  DatagenStreamWriter next = *this;
  STRATA_ASSIGN_OR_RETURN(DatagenEvent e, next.BuildItemTerminal(status));
  STRATA_RETURN_IF_ERROR(store_->Append({e}).status());
  *this = std::move(next);
  return Status::OK();
}

Status DatagenStreamWriter::ItemFailed(const DatagenStepPosition& position, std::string error_type,
                                       std::optional<std::string> error_dump,
                                       std::optional<std::string> traceback) {
  DatagenStreamWriter next = *this;
  STRATA_ASSIGN_OR_RETURN(
      DatagenEvent e, next.BuildItemFailed(position, std::move(error_type), std::move(error_dump),
                                           std::move(traceback)));
  STRATA_RETURN_IF_ERROR(store_->Append({e}).status());
  *this = std::move(next);
  return Status::OK();
}

}  // namespace strata::store
