// /api/v1/{kind}/{name}/replicate/...: incremental replication over HTTP (docs/replication.md).
// A source server exports the net change since a chain state as verified bundles, kept in its
// data directory under `_bundles/<kind>/<name>/` and downloadable by key; a replica server
// applies bundles posted as the request body (creating the replica from a full export). Status
// reports both sides; trim drops what no registered consumer still needs.
#include <fmt/format.h>

#include "server/router.h"
#include "strata/json.h"
#include "strata/replication.h"

namespace strata::server {

namespace {

using namespace replication;  // NOLINT(google-build-using-namespace): this file is its client

// A replication refusal (the bundle does not continue the replica, its digest does not
// verify, ...) is the client's to act on: 409 REPLICATION_REFUSED with the refusal's message.
Result<HttpResponse> Refusal(const Status& status) {
  if (RefusalOf(status)) {
    return ErrorResponse({409, "REPLICATION_REFUSED", status.message(), 0});
  }
  return status;
}

std::string BundlePrefix(StoreKind kind, std::string_view name) {
  return fmt::format("_bundles/{}/{}/", KindName(kind), name);
}

Json StateJson(const ChainState& s) {
  return {{"cursor", s.cursor}, {"part", s.part}, {"id", ToHex(s.id)}};
}

// The store's location, once the name is known to be registered (the handle stays open in the
// cache, so writers and the export share it).
Result<StoreLocation> Location(RouteContext& ctx, StoreKind kind) {
  const std::string& name = ctx.Param("name");
  std::shared_ptr<void> keep;
  STRATA_RETURN_IF_ERROR(ctx.state.Base(kind, name, &keep).status());
  return StoreLocation{ctx.state.shared_objects(), ctx.state.StorePrefix(kind, name)};
}

RouteHandler Export(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    Json body = Json::object();
    if (!ctx.request.body.empty()) {
      STRATA_ASSIGN_OR_RETURN(body, ParseJsonBody(ctx.request));
    }
    ExportOptions options;
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> since, OptInt(body, "since"));
    if (since) {
      if (*since < 0) return Status::InvalidArgument("since must not be negative");
      options.since = static_cast<uint64_t>(*since);
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<bool> full, OptBool(body, "full"));
    options.full = full.value_or(false);
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> consumer, OptString(body, "consumer"));
    options.consumer = consumer.value_or("");
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> max_rows, OptInt(body, "max_rows"));
    if (max_rows) options.max_rows = *max_rows;
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> max_bytes, OptInt(body, "max_bytes"));
    if (max_bytes) options.max_bytes = *max_bytes;
    STRATA_ASSIGN_OR_RETURN(StoreLocation source, Location(ctx, kind));
    const std::string& name = ctx.Param("name");
    // The first export marks the store's base.
    STRATA_ASSIGN_OR_RETURN(SourceStatus status, GetSourceStatus(source));
    if (!status.marked) {
      STRATA_RETURN_IF_ERROR(MarkBase(source, name).status());
    }
    Result<ExportReport> exported =
        ExportChanges(source, ctx.state.objects(), BundlePrefix(kind, name), options);
    if (!exported.ok()) return Refusal(exported.status());
    const ExportReport& report = *exported;
    Json bundles = Json::array();
    for (const PublishedBundle& b : report.bundles) {
      bundles.push_back({{"key", b.key.substr(BundlePrefix(kind, name).size())},
                         {"bytes", b.bytes},
                         {"rows", b.header.row_count},
                         {"deletions", b.header.deletion_count},
                         {"from", StateJson(b.header.from)},
                         {"to", StateJson(b.header.to)},
                         {"digest", ToHex(b.digest)}});
    }
    return JsonResponse(200, {{"chain_id", report.chain_id},
                              {"from", StateJson(report.from)},
                              {"to", StateJson(report.to)},
                              {"rows", report.rows},
                              {"deletions", report.deletions},
                              {"bytes", report.bytes},
                              {"source_version", report.source_version},
                              {"bundles", bundles}});
  };
}

RouteHandler Bundle(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    const std::string& name = ctx.Param("name");
    STRATA_RETURN_IF_ERROR(ValidateStoreName(name));
    const std::string& key = ctx.Param("key");
    if (key.empty() || key.find('/') != std::string::npos || key.find("..") != std::string::npos) {
      return Status::InvalidArgument(fmt::format("invalid bundle key '{}'", key));
    }
    Result<Buffer> bytes = ctx.state.objects().Get(BundlePrefix(kind, name) + key);
    if (bytes.status().IsNotFound()) {
      return Status::NotFound(
          fmt::format("bundle '{}' of {} '{}' does not exist", key, KindName(kind), name));
    }
    STRATA_RETURN_IF_ERROR(bytes.status());
    HttpResponse r;
    r.content_type = "application/octet-stream";
    r.stream = std::make_shared<const std::string>(std::string(bytes->view()));
    return r;
  };
}

RouteHandler Apply(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    const std::string& name = ctx.Param("name");
    STRATA_RETURN_IF_ERROR(ValidateStoreName(name));
    if (ctx.request.body.empty()) return Status::InvalidArgument("the body must be a bundle");
    // A replica that does not exist yet is registered and created from the bundle.
    STRATA_ASSIGN_OR_RETURN(bool registered, ctx.state.registry().Contains(kind, name));
    const StoreLocation replica{ctx.state.shared_objects(), ctx.state.StorePrefix(kind, name)};
    Result<ApplyReport> applied = ApplyChanges(replica, ctx.request.body);
    if (!applied.ok()) return Refusal(applied.status());
    const ApplyReport& report = *applied;
    if (!registered) {
      Status added = ctx.state.registry().Add(kind, name, ctx.state.StoreUri(kind, name));
      if (!added.ok() && !added.IsAlreadyExists()) return added;
    }
    ctx.state.RefreshOpenHandle(kind, name);
    return JsonResponse(200, {{"from", StateJson(report.from)},
                              {"to", StateJson(report.to)},
                              {"rows", report.rows},
                              {"deletions", report.deletions},
                              {"bytes", report.bytes},
                              {"replica_version", report.replica_version}});
  };
}

RouteHandler StatusRoute(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    STRATA_ASSIGN_OR_RETURN(StoreLocation location, Location(ctx, kind));
    STRATA_ASSIGN_OR_RETURN(SourceStatus source, GetSourceStatus(location));
    STRATA_ASSIGN_OR_RETURN(ReplicaStatus replica, GetReplicaStatus(location));
    Json out;
    if (source.marked) {
      Json states = Json::array();
      for (const ChainState& s : source.states) states.push_back(StateJson(s));
      Json consumers = Json::array();
      for (const Consumer& c : source.consumers) {
        consumers.push_back({{"id", c.id},
                             {"cursor", c.cursor},
                             {"last_seen", json::FormatTimestamp(c.last_seen_micros)}});
      }
      out["source"] = {{"chain_id", source.chain_id},
                       {"base", StateJson(source.base)},
                       {"states", states},
                       {"trim_floor", source.trim_floor},
                       {"kept_bytes", source.kept_bytes},
                       {"consumers", consumers}};
    } else {
      out["source"] = nullptr;
    }
    if (replica.replica) {
      out["replica"] = {{"chain_id", replica.chain_id},
                        {"state", StateJson(replica.state)},
                        {"version", replica.version},
                        {"applied_at", json::FormatTimestamp(replica.applied_at_micros)}};
    } else {
      out["replica"] = nullptr;
    }
    return JsonResponse(200, out);
  };
}

RouteHandler TrimRoute(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    STRATA_ASSIGN_OR_RETURN(StoreLocation location, Location(ctx, kind));
    STRATA_ASSIGN_OR_RETURN(TrimReport report, Trim(location));
    return JsonResponse(200, {{"floor", report.floor},
                              {"removed", report.removed},
                              {"bytes_removed", report.bytes_removed}});
  };
}

}  // namespace

void AddReplicationRoutes(Router& router) {
  for (const KindPath& k : kKindPaths) {
    const std::string base = fmt::format("/api/v1/{}/{{name}}/replicate", k.segment);
    router.Add("POST", base + "/export", Export(k.kind));
    router.Add("GET", base + "/bundles/{key}", Bundle(k.kind));
    router.Add("POST", base + "/apply", Apply(k.kind), kRolloutBodyLimit);
    router.Add("GET", base + "/status", StatusRoute(k.kind));
    router.Add("POST", base + "/trim", TrimRoute(k.kind));
  }
}

}  // namespace strata::server
