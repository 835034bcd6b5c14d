// Routes every store kind shares — version, checkout, compaction and its stats, observation
// (/stats) — plus the health check, the metrics exposition and the rollout merge-wal route the
// reference's master calls on each worker.
#include <fmt/format.h>

#include "server/clock.h"
#include "server/router.h"
#include "strata/json.h"

namespace strata::server {

namespace {

Json TimestampOrNull(const std::optional<int64_t>& micros) {
  return micros ? Json(json::FormatTimestamp(*micros)) : Json(nullptr);
}

RouteHandler Version(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    std::shared_ptr<void> keep;
    STRATA_ASSIGN_OR_RETURN(store::StorageBase * base,
                            ctx.state.Base(kind, ctx.Param("name"), &keep));
    return JsonResponse(200, {{"version", base->version()}});
  };
}

RouteHandler Checkout(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> version, OptInt(body, "version"));
    if (!version || *version < 1) {
      return Status::InvalidArgument("version is required (a positive integer)");
    }
    std::shared_ptr<void> keep;
    STRATA_ASSIGN_OR_RETURN(store::StorageBase * base,
                            ctx.state.Base(kind, ctx.Param("name"), &keep));
    STRATA_RETURN_IF_ERROR(base->Checkout(static_cast<uint64_t>(*version)));
    return JsonResponse(200, {{"version", base->version()}});
  };
}

RouteHandler Compact(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    table::CompactionOptions options;
    if (!ctx.request.body.empty()) {
      STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
      STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> target,
                              OptInt(body, "target_rows_per_fragment"));
      if (target) {
        if (*target < 1)
          return Status::InvalidArgument("target_rows_per_fragment must be positive");
        options.target_rows_per_fragment = *target;
      }
      STRATA_ASSIGN_OR_RETURN(std::optional<bool> materialize,
                              OptBool(body, "materialize_deletions"));
      if (materialize) options.materialize_deletions = *materialize;
    }
    std::shared_ptr<void> keep;
    STRATA_ASSIGN_OR_RETURN(store::StorageBase * base,
                            ctx.state.Base(kind, ctx.Param("name"), &keep));
    const double start = MonotonicSeconds();
    Result<table::CompactionResult> result = base->Compact(options);
    const char* outcome = result.ok()                                      ? "success"
                          : store::IsCompactionInProgress(result.status()) ? "busy"
                                                                           : "failed";
    Result<Counter*> c = ctx.state.metrics().GetCounter(
        "strata_http_compactions_total", "Compactions requested over HTTP, by result",
        {{"kind", std::string(KindName(kind))}, {"result", outcome}});
    if (c.ok()) (*c)->Increment();
    Result<Histogram*> h = ctx.state.metrics().GetHistogram(
        "strata_http_compaction_duration_seconds", "Compactions requested over HTTP",
        DefaultLatencyBuckets(), {{"kind", std::string(KindName(kind))}});
    if (h.ok()) (*h)->Observe(MonotonicSeconds() - start);
    STRATA_RETURN_IF_ERROR(result.status());
    return JsonResponse(200, {{"fragments_removed", result->fragments_removed},
                              {"fragments_added", result->fragments_added},
                              {"files_removed", result->files_removed},
                              {"files_added", result->files_added}});
  };
}

RouteHandler CompactStats(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    std::shared_ptr<void> keep;
    STRATA_ASSIGN_OR_RETURN(store::StorageBase * base,
                            ctx.state.Base(kind, ctx.Param("name"), &keep));
    STRATA_ASSIGN_OR_RETURN(store::CompactionStats stats, base->GetCompactionStats());
    return JsonResponse(
        200,
        {{"total_fragments", stats.total_fragments},
         {"is_compacting", stats.is_compacting},
         {"last_compaction", TimestampOrNull(stats.last_compaction_micros)},
         {"last_error", stats.last_error.ok() ? Json(nullptr) : Json(stats.last_error.ToString())},
         {"total_compactions", stats.total_compactions}});
  };
}

RouteHandler Stats(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    std::shared_ptr<void> keep;
    STRATA_ASSIGN_OR_RETURN(store::StorageBase * base,
                            ctx.state.Base(kind, ctx.Param("name"), &keep));
    STRATA_ASSIGN_OR_RETURN(store::StoreObservation o, base->Observe());
    STRATA_ASSIGN_OR_RETURN(store::CompactionStats c, base->GetCompactionStats());
    return JsonResponse(200, {{"kind", KindName(kind)},
                              {"name", ctx.Param("name")},
                              {"version", o.version},
                              {"rows", o.base_rows + o.generation_rows},
                              {"base_rows", o.base_rows},
                              {"generation_rows", o.generation_rows},
                              {"unflushed_rows", o.unflushed_rows},
                              {"fragments", o.fragments},
                              {"pending_generations", o.pending_generations},
                              {"last_updated", json::FormatTimestamp(o.last_updated_micros)},
                              {"last_compaction", TimestampOrNull(c.last_compaction_micros)},
                              {"total_compactions", c.total_compactions}});
  };
}

Result<HttpResponse> MergeWal(RouteContext& ctx) {
  std::shared_ptr<void> slot = ctx.state.merge_limit().TryAcquire();
  if (slot == nullptr) {
    return Status::Unavailable("too many concurrent merge-wal requests; retry shortly");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<store::RolloutStore> s,
                          ctx.state.Rollout(ctx.Param("name")));
  const double start = MonotonicSeconds();
  Result<store::MergeReport> report = s->Cleanup();
  const char* outcome = !report.ok()                        ? "failed"
                        : report->generations_reclaimed > 0 ? "merged"
                                                            : "noop";
  Result<Counter*> c =
      ctx.state.metrics().GetCounter("strata_rollout_wal_cleanup_requests_total",
                                     "merge-wal requests, by result", {{"result", outcome}});
  if (c.ok()) (*c)->Increment();
  Result<Histogram*> h =
      ctx.state.metrics().GetHistogram("strata_rollout_wal_merge_request_duration_seconds",
                                       "merge-wal request time", DefaultLatencyBuckets());
  if (h.ok()) (*h)->Observe(MonotonicSeconds() - start);
  STRATA_RETURN_IF_ERROR(report.status());
  return JsonResponse(200, {{"reclaimed", report->generations_reclaimed}});
}

}  // namespace

void AddHealthRoutes(Router& router) {
  auto health = [](RouteContext&) -> Result<HttpResponse> {
    return JsonResponse(200, {{"status", "ok"}});
  };
  router.Add("GET", "/health", health, kDefaultBodyLimit, /*open=*/true);
  router.Add("GET", "/api/v1/health", health, kDefaultBodyLimit, /*open=*/true);
  router.Add("GET", "/metrics", [](RouteContext& ctx) -> Result<HttpResponse> {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = ctx.state.metrics().ExposePrometheus();
    return r;
  });
}

void AddStoreAdminRoutes(Router& router) {
  for (const KindPath& k : kKindPaths) {
    const std::string base = fmt::format("/api/v1/{}/{{name}}", k.segment);
    router.Add("GET", base + "/version", Version(k.kind));
    router.Add("POST", base + "/checkout", Checkout(k.kind));
    router.Add("POST", base + "/compact", Compact(k.kind));
    router.Add("GET", base + "/compact/stats", CompactStats(k.kind));
    router.Add("GET", base + "/stats", Stats(k.kind));
  }
  router.Add("POST", "/api/v1/internal/merge-wal/{name}", MergeWal);
}

}  // namespace strata::server
