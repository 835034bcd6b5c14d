// Server state: registries, handle caches, budgets.
#include "server/state.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "server/clock.h"
#include "strata/table.h"

namespace strata::server {

namespace {

constexpr std::string_view kRegistryDir = "_registry/";

std::string RegistryKey(StoreKind kind, std::string_view name) {
  return fmt::format("{}{}/{}", kRegistryDir, KindName(kind), name);
}

// A store opened by this server claims its shard at once: the writer replays the shard's WAL
// and publishes what it replays, so rows acknowledged before a crash (or before a restart
// without a clean shutdown) are readable without waiting for the next write. A replica has
// no writer: it is opened for reading only.
template <typename Store>
Result<std::unique_ptr<Store>> ClaimShard(Result<std::unique_ptr<Store>> opened) {
  if (!opened.ok()) return opened;
  store::StorageBase& base = (*opened)->base();
  Status claimed = base.OpenWriter();
  if (!claimed.ok() && !claimed.IsInvalidArgument()) return claimed;
  return opened;
}

}  // namespace

std::string_view KindName(StoreKind kind) {
  switch (kind) {
    case StoreKind::kContext:
      return "context";
    case StoreKind::kRollout:
      return "rollout";
    case StoreKind::kDatagen:
      return "datagen";
    case StoreKind::kGeneric:
      return "generic";
  }
  return "?";
}

std::string_view KindTitle(StoreKind kind) {
  switch (kind) {
    case StoreKind::kContext:
      return "Context";
    case StoreKind::kRollout:
      return "Rollout store";
    case StoreKind::kDatagen:
      return "Datagen store";
    case StoreKind::kGeneric:
      return "Generic store";
  }
  return "?";
}

Status ValidateStoreName(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return Status::InvalidArgument(
        fmt::format("invalid store name '{}': must be 1 to 128 characters", name));
  }
  if (name == "_registry" || name == "_stats") {
    return Status::InvalidArgument(fmt::format("invalid store name '{}': reserved", name));
  }
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (!word(name[0])) {
    return Status::InvalidArgument(fmt::format(
        "invalid store name '{}': must start with a letter, digit or underscore", name));
  }
  for (char c : name.substr(1)) {
    if (!word(c) && c != '.' && c != '-') {
      return Status::InvalidArgument(
          fmt::format("invalid store name '{}': only letters, digits, '_', '.' and '-' are "
                      "allowed",
                      name));
    }
  }
  return Status::OK();
}

// --- Registry -----------------------------------------------------------------------------

Status Registry::Add(StoreKind kind, std::string_view name, std::string_view uri) {
  const nlohmann::json entry = {{"name", name}, {"uri", uri}};
  Status s = objects_->PutIfAbsent(RegistryKey(kind, name), entry.dump());
  if (s.IsAlreadyExists()) {
    return Status::AlreadyExists(fmt::format("{} '{}' already exists", KindTitle(kind), name));
  }
  return s;
}

Result<bool> Registry::Contains(StoreKind kind, std::string_view name) const {
  return objects_->Exists(RegistryKey(kind, name));
}

Result<std::vector<std::string>> Registry::List(StoreKind kind) const {
  const std::string prefix = fmt::format("{}{}/", kRegistryDir, KindName(kind));
  Result<std::vector<ObjectMeta>> listed = objects_->List(prefix);
  if (listed.status().IsNotFound()) return std::vector<std::string>{};
  STRATA_RETURN_IF_ERROR(listed.status());
  std::vector<std::string> names;
  names.reserve(listed->size());
  for (const ObjectMeta& meta : *listed) names.push_back(meta.key.substr(prefix.size()));
  return names;
}

Status Registry::Remove(StoreKind kind, std::string_view name) {
  Status s = objects_->Delete(RegistryKey(kind, name));
  if (s.IsNotFound()) {
    return Status::NotFound(fmt::format("{} '{}' does not exist", KindTitle(kind), name));
  }
  return s;
}

// --- Budgets --------------------------------------------------------------------------------

std::shared_ptr<void> BlobBudget::TryAcquire(int64_t bytes) {
  bytes = std::max<int64_t>(0, bytes);
  {
    std::lock_guard lock(mu_);
    if (limit_ > 0 && used_ != 0 && bytes > limit_ - used_) return nullptr;
    used_ += bytes;
  }
  // The guard must not compare equal to nullptr (a refusal): it holds `this`.
  return std::shared_ptr<void>(this, [this, bytes](void*) {
    std::lock_guard lock(mu_);
    used_ -= bytes;
  });
}

int64_t BlobBudget::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

std::shared_ptr<void> ConcurrencyLimit::TryAcquire() {
  {
    std::lock_guard lock(mu_);
    if (limit_ > 0 && used_ >= limit_) return nullptr;
    ++used_;
  }
  return std::shared_ptr<void>(this, [this](void*) {
    std::lock_guard lock(mu_);
    --used_;
  });
}

// --- ServerState ------------------------------------------------------------------------------

ServerState::ServerState(ServerOptions options)
    : options_(std::move(options)),
      registry_(nullptr),
      blob_budget_(options_.max_inflight_blob_bytes),
      merge_limit_(options_.merge_concurrency),
      metrics_(&DefaultMetrics()),
      contexts_(options_.cache_capacity),
      rollouts_(options_.cache_capacity),
      datagens_(options_.cache_capacity),
      generics_(options_.cache_capacity) {}

ServerState::~ServerState() {
  Status s = CloseAll();
  if (!s.ok()) spdlog::error("closing stores: {}", s.ToString());
  if (maintenance_) maintenance_->Stop();
}

Result<std::unique_ptr<ServerState>> ServerState::Open(ServerOptions options) {
  if (!options.now_micros) options.now_micros = WallMicros;
  if (options.instance_id.empty()) options.instance_id = "default";
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return Status::IOError(
        fmt::format("cannot create data directory '{}': {}", options.data_dir, ec.message()));
  }
  std::unique_ptr<ServerState> state(new ServerState(std::move(options)));
  LocalObjectStoreOptions local;
  local.sync = state->options_.sync;
  STRATA_ASSIGN_OR_RETURN(state->objects_, OpenLocalObjectStore(state->options_.data_dir, local));
  state->registry_ = Registry(state->objects_);
  if (state->options_.merge_memory_bytes > 0) {
    state->merge_budget_ = std::make_shared<MergeBudget>(state->options_.merge_memory_bytes);
  }
  store::MaintenanceOptions maintenance;
  maintenance.flush_interval_seconds = state->options_.flush_interval_seconds;
  maintenance.cleanup_interval_seconds = state->options_.cleanup_interval_seconds;
  maintenance.compaction.enabled = state->options_.compaction_interval_seconds > 0;
  maintenance.compaction.check_interval_seconds = state->options_.compaction_interval_seconds;
  maintenance.compaction.min_fragments = state->options_.compaction_min_fragments;
  STRATA_ASSIGN_OR_RETURN(state->maintenance_, store::Maintenance::Create(maintenance));
  return state;
}

std::string ServerState::StoreUri(StoreKind kind, std::string_view name) const {
  return fmt::format("{}/{}.{}", options_.data_dir, name, KindName(kind));
}

std::string ServerState::StorePrefix(StoreKind kind, std::string_view name) const {
  return fmt::format("{}.{}/", name, KindName(kind));
}

store::StorageBaseOptions ServerStoreOptions(const ServerOptions& options, bool context_store) {
  store::StorageBaseOptions base;
  base.shard_id = options.instance_id.empty() ? std::string("default") : options.instance_id;
  base.merge_after_generations =
      context_store ? options.context_merge_after_generations : options.merge_after_generations;
  base.merge_max_generations = options.merge_max_generations;
  base.merge_max_bytes = options.merge_max_bytes;
  base.pending_generations_warn = options.pending_generations_warn;
  base.pending_generations_max = options.pending_generations_max;
  base.recode_linked_generations = options.recode_linked_generations;
  return base;
}

store::StorageBaseOptions ServerState::BaseOptions(StoreKind kind, std::string_view name) const {
  store::StorageBaseOptions base = ServerStoreOptions(options_, kind == StoreKind::kContext);
  base.merge_budget = merge_budget_;
  base.maintenance = maintenance_;
  base.display_name = fmt::format("{}/{}", KindName(kind), name);
  return base;
}

Status ServerState::CheckRegistered(StoreKind kind, std::string_view name) const {
  STRATA_RETURN_IF_ERROR(ValidateStoreName(name));
  STRATA_ASSIGN_OR_RETURN(bool registered, registry_.Contains(kind, name));
  if (!registered) {
    return Status::NotFound(fmt::format("{} '{}' does not exist", KindTitle(kind), name));
  }
  return Status::OK();
}

void ServerState::CountCache(StoreKind kind, bool hit) {
  const auto k = static_cast<size_t>(kind);
  auto lookup = [&] {
    const MetricLabels labels = {{"kind", std::string(KindName(kind))}};
    return hit ? metrics_->GetCounter("strata_store_cache_hits_total",
                                      "Requests that found their store's handle open", labels)
               : metrics_->GetCounter("strata_store_cache_misses_total",
                                      "Requests that had to open their store's handle", labels);
  };
  Counter* counter =
      hit ? hot_series_.cache_hits[k].Get(lookup) : hot_series_.cache_misses[k].Get(lookup);
  if (counter != nullptr) counter->Increment();
}

Result<std::shared_ptr<store::ContextStore>> ServerState::Context(std::string_view name) {
  const std::string key(name);
  bool hit = false;
  Result<std::shared_ptr<store::ContextStore>> handle = contexts_.GetOrOpen(
      key,
      [&]() -> Result<std::unique_ptr<store::ContextStore>> {
        STRATA_RETURN_IF_ERROR(CheckRegistered(StoreKind::kContext, name));
        store::ContextStoreOptions o;
        o.base = BaseOptions(StoreKind::kContext, name);
        return ClaimShard(store::ContextStore::Open(objects_,
                                                    StorePrefix(StoreKind::kContext, name),
                                                    std::move(o), /*create_if_missing=*/false));
      },
      &hit);
  if (handle.ok()) CountCache(StoreKind::kContext, hit);
  return handle;
}

Result<uint64_t> ServerState::ContextVersion(std::string_view name) {
  if (auto handle = contexts_.Peek(std::string(name))) return handle->version();
  STRATA_RETURN_IF_ERROR(CheckRegistered(StoreKind::kContext, name));
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<store::ContextStore> s,
      store::ContextStore::Open(objects_, StorePrefix(StoreKind::kContext, name), {},
                                /*create_if_missing=*/false));
  return s->version();
}

Result<std::shared_ptr<store::RolloutStore>> ServerState::Rollout(std::string_view name) {
  bool hit = false;
  Result<std::shared_ptr<store::RolloutStore>> handle = rollouts_.GetOrOpen(
      std::string(name),
      [&]() -> Result<std::unique_ptr<store::RolloutStore>> {
        STRATA_RETURN_IF_ERROR(CheckRegistered(StoreKind::kRollout, name));
        store::RolloutStoreOptions o;
        o.base = BaseOptions(StoreKind::kRollout, name);
        return ClaimShard(store::RolloutStore::Open(objects_,
                                                    StorePrefix(StoreKind::kRollout, name),
                                                    std::move(o), /*create_if_missing=*/false));
      },
      &hit);
  if (handle.ok()) CountCache(StoreKind::kRollout, hit);
  return handle;
}

Result<std::shared_ptr<store::DatagenStore>> ServerState::Datagen(std::string_view name) {
  bool hit = false;
  Result<std::shared_ptr<store::DatagenStore>> handle = datagens_.GetOrOpen(
      std::string(name),
      [&]() -> Result<std::unique_ptr<store::DatagenStore>> {
        STRATA_RETURN_IF_ERROR(CheckRegistered(StoreKind::kDatagen, name));
        store::DatagenStoreOptions o;
        o.base = BaseOptions(StoreKind::kDatagen, name);
        return ClaimShard(store::DatagenStore::Open(objects_,
                                                    StorePrefix(StoreKind::kDatagen, name),
                                                    std::move(o), /*create_if_missing=*/false));
      },
      &hit);
  if (handle.ok()) CountCache(StoreKind::kDatagen, hit);
  return handle;
}

Result<std::shared_ptr<store::GenericStore>> ServerState::Generic(std::string_view name) {
  bool hit = false;
  Result<std::shared_ptr<store::GenericStore>> handle = generics_.GetOrOpen(
      std::string(name),
      [&]() -> Result<std::unique_ptr<store::GenericStore>> {
        STRATA_RETURN_IF_ERROR(CheckRegistered(StoreKind::kGeneric, name));
        store::GenericStoreOptions o;
        o.base = BaseOptions(StoreKind::kGeneric, name);
        return ClaimShard(store::GenericStore::OpenExisting(
            objects_, StorePrefix(StoreKind::kGeneric, name), std::move(o)));
      },
      &hit);
  if (handle.ok()) CountCache(StoreKind::kGeneric, hit);
  return handle;
}

namespace {

// Registers, runs `create`, and unregisters again when it fails.
template <typename Store>
Result<std::shared_ptr<Store>> RegisterAndCreate(
    ServerState& state, StoreKind kind, std::string_view name, HandleCache<Store>& cache,
    const std::function<Result<std::unique_ptr<Store>>()>& create) {
  STRATA_RETURN_IF_ERROR(ValidateStoreName(name));
  STRATA_RETURN_IF_ERROR(state.registry().Add(kind, name, state.StoreUri(kind, name)));
  bool hit = false;
  Result<std::shared_ptr<Store>> handle = cache.GetOrOpen(std::string(name), create, &hit);
  if (!handle.ok()) {
    Status undo = state.registry().Remove(kind, name);
    if (!undo.ok())
      spdlog::error("unregistering {} '{}': {}", KindName(kind), name, undo.ToString());
  }
  return handle;
}

}  // namespace

Result<std::shared_ptr<store::ContextStore>> ServerState::CreateContext(
    std::string_view name, store::ContextStoreOptions options) {
  options.base = BaseOptions(StoreKind::kContext, name);
  return RegisterAndCreate<store::ContextStore>(*this, StoreKind::kContext, name, contexts_, [&]() {
    return store::ContextStore::Open(objects_, StorePrefix(StoreKind::kContext, name), options,
                                     /*create_if_missing=*/true);
  });
}

Result<std::shared_ptr<store::RolloutStore>> ServerState::CreateRollout(std::string_view name) {
  return RegisterAndCreate<store::RolloutStore>(*this, StoreKind::kRollout, name, rollouts_, [&]() {
    store::RolloutStoreOptions o;
    o.base = BaseOptions(StoreKind::kRollout, name);
    return store::RolloutStore::Open(objects_, StorePrefix(StoreKind::kRollout, name), std::move(o),
                                     /*create_if_missing=*/true);
  });
}

Result<std::shared_ptr<store::DatagenStore>> ServerState::CreateDatagen(std::string_view name) {
  return RegisterAndCreate<store::DatagenStore>(*this, StoreKind::kDatagen, name, datagens_, [&]() {
    store::DatagenStoreOptions o;
    o.base = BaseOptions(StoreKind::kDatagen, name);
    return store::DatagenStore::Open(objects_, StorePrefix(StoreKind::kDatagen, name), std::move(o),
                                     /*create_if_missing=*/true);
  });
}

Result<std::shared_ptr<store::GenericStore>> ServerState::CreateGeneric(
    std::string_view name, const store::SchemaSpec& spec, bool seal_on_add) {
  return RegisterAndCreate<store::GenericStore>(*this, StoreKind::kGeneric, name, generics_, [&]() {
    store::GenericStoreOptions o;
    o.base = BaseOptions(StoreKind::kGeneric, name);
    o.seal_on_add = seal_on_add;
    return store::GenericStore::Open(objects_, StorePrefix(StoreKind::kGeneric, name), spec,
                                     std::move(o));
  });
}

Result<std::shared_ptr<void>> ServerState::OpenForDeletion(StoreKind kind, std::string_view name,
                                                           store::StorageBase** base) {
  const std::string prefix = StorePrefix(kind, name);
  auto own = [&](auto opened) -> Result<std::shared_ptr<void>> {
    STRATA_RETURN_IF_ERROR(opened.status());
    auto handle = std::shared_ptr(std::move(*opened));
    *base = &handle->base();
    return std::shared_ptr<void>(handle);
  };
  switch (kind) {
    case StoreKind::kContext:
      return own(store::ContextStore::Open(objects_, prefix, {}, /*create_if_missing=*/false));
    case StoreKind::kRollout:
      return own(store::RolloutStore::Open(objects_, prefix, {}, /*create_if_missing=*/false));
    case StoreKind::kDatagen:
      return own(store::DatagenStore::Open(objects_, prefix, {}, /*create_if_missing=*/false));
    case StoreKind::kGeneric:
      return own(store::GenericStore::OpenExisting(objects_, prefix, {}));
  }
  return Status::InvalidArgument("unknown store kind");
}

Status ServerState::Delete(StoreKind kind, std::string_view name) {
  STRATA_RETURN_IF_ERROR(ValidateStoreName(name));
  STRATA_RETURN_IF_ERROR(CheckRegistered(kind, name));
  const std::string key(name);
  // Unregister first, so no new open starts; an open already running is not cached
  // (HandleCache::Remove). Then delete the data through a handle, which waits for its merges.
  STRATA_RETURN_IF_ERROR(registry_.Remove(kind, name));
  std::shared_ptr<void> keep;
  store::StorageBase* base = nullptr;
  switch (kind) {
    case StoreKind::kContext:
      if (auto h = contexts_.Remove(key)) base = &h->base(), keep = h;
      break;
    case StoreKind::kRollout:
      if (auto h = rollouts_.Remove(key)) base = &h->base(), keep = h;
      break;
    case StoreKind::kDatagen:
      if (auto h = datagens_.Remove(key)) base = &h->base(), keep = h;
      break;
    case StoreKind::kGeneric:
      if (auto h = generics_.Remove(key)) base = &h->base(), keep = h;
      break;
  }
  Status deleted;
  if (base == nullptr) {
    Result<std::shared_ptr<void>> opened = OpenForDeletion(kind, name, &base);
    if (opened.ok()) keep = std::move(*opened);
    deleted = opened.status();
  }
  if (base != nullptr) deleted = base->DeleteData();
  if (!deleted.ok() && !deleted.IsNotFound()) {
    spdlog::warn("deleting the data of {} '{}': {}", KindName(kind), name, deleted.ToString());
  }
  return Status::OK();
}

Result<store::StorageBase*> ServerState::Base(StoreKind kind, std::string_view name,
                                              std::shared_ptr<void>* keep) {
  switch (kind) {
    case StoreKind::kContext: {
      STRATA_ASSIGN_OR_RETURN(auto h, Context(name));
      *keep = h;
      return &h->base();
    }
    case StoreKind::kRollout: {
      STRATA_ASSIGN_OR_RETURN(auto h, Rollout(name));
      *keep = h;
      return &h->base();
    }
    case StoreKind::kDatagen: {
      STRATA_ASSIGN_OR_RETURN(auto h, Datagen(name));
      *keep = h;
      return &h->base();
    }
    case StoreKind::kGeneric: {
      STRATA_ASSIGN_OR_RETURN(auto h, Generic(name));
      *keep = h;
      return &h->base();
    }
  }
  return Status::InvalidArgument("unknown store kind");
}

void ServerState::RefreshOpenHandle(StoreKind kind, std::string_view name) {
  const std::string key(name);
  // A handle pinned by a checkout stays where the client put it.
  auto refresh = [](const auto& handle) {
    return handle != nullptr && !handle->base().pinned() ? handle->RefreshLatest() : Status::OK();
  };
  Status s;
  switch (kind) {
    case StoreKind::kContext:
      s = refresh(contexts_.Peek(key));
      break;
    case StoreKind::kRollout:
      s = refresh(rollouts_.Peek(key));
      break;
    case StoreKind::kDatagen:
      s = refresh(datagens_.Peek(key));
      break;
    case StoreKind::kGeneric:
      s = refresh(generics_.Peek(key));
      break;
  }
  if (!s.ok()) spdlog::warn("refreshing {} '{}': {}", KindName(kind), name, s.ToString());
}

Status ServerState::CloseAll() {
  Status first;
  auto close_all = [&](auto& cache, StoreKind kind) {
    for (auto& [name, handle] : cache.Clear()) {
      Status s = handle->Close();
      if (!s.ok()) {
        spdlog::error("closing {} '{}': {}", KindName(kind), name, s.ToString());
        if (first.ok()) first = s;
      }
    }
  };
  close_all(contexts_, StoreKind::kContext);
  close_all(rollouts_, StoreKind::kRollout);
  close_all(datagens_, StoreKind::kDatagen);
  close_all(generics_, StoreKind::kGeneric);
  return first;
}

}  // namespace strata::server
