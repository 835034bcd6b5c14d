// Catching a replica up through published bundles, and continuous replication rounds
// (ApplyPublished, FollowOnce in include/strata/replication.h).
#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "replication/bundle_internal.h"
#include "replication/store_access.h"
#include "strata/replication.h"
#include "strata/table.h"
#include "util/clock.h"

namespace strata::replication {
namespace {

struct BundleName {
  std::string key;
  bool full = false;
  uint64_t from_cursor = 0;
  uint32_t from_part = 0;
  uint64_t to_cursor = 0;
  uint32_t to_part = 0;
};

// "[full-]<20 digits>.<part>-<20 digits>.<part>.bundle" (BundleKey); nullopt for other names.
std::optional<BundleName> ParseName(std::string key, std::string_view name) {
  BundleName out;
  out.key = std::move(key);
  if (name.starts_with("full-")) {
    out.full = true;
    name.remove_prefix(5);
  }
  if (!name.ends_with(".bundle")) return std::nullopt;
  name.remove_suffix(7);
  auto number = [&name](auto* value, char end) {
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), *value);
    if (ec != std::errc()) return false;
    name.remove_prefix(static_cast<size_t>(ptr - name.data()));
    if (end == '\0') return name.empty();
    if (name.empty() || name.front() != end) return false;
    name.remove_prefix(1);
    return true;
  };
  if (!number(&out.from_cursor, '.') || !number(&out.from_part, '-') ||
      !number(&out.to_cursor, '.') || !number(&out.to_part, '\0')) {
    return std::nullopt;
  }
  return out;
}

// The bundle under `prefix` to apply next to a replica at `state` (nullopt: no state yet).
Result<std::optional<BundleName>> NextBundle(ObjectStore& bundles, std::string_view prefix,
                                             const std::optional<ChainState>& state) {
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> listed, bundles.List(prefix));
  std::optional<BundleName> best;
  for (const ObjectMeta& meta : listed) {
    std::string_view name = std::string_view(meta.key).substr(prefix.size());
    if (name.find('/') != std::string_view::npos) continue;
    std::optional<BundleName> parsed = ParseName(meta.key, name);
    if (!parsed) continue;
    if (state) {
      // Later parts of a full export continue its first part like any other bundle.
      if (parsed->from_cursor != state->cursor || parsed->from_part != state->part) {
        continue;
      }
    } else if (parsed->from_cursor != 0 || parsed->from_part != 0) {
      continue;
    }
    // A full export first for a replica without state; then the one reaching furthest.
    auto rank = [&](const BundleName& b) {
      return std::pair(b.full, internal::StateOrder(b.to_cursor, b.to_part));
    };
    if (!best || rank(*parsed) > rank(*best)) best = std::move(parsed);
  }
  return best;
}

Result<std::optional<ChainState>> StateOf(const StoreLocation& replica) {
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*replica.store, replica.prefix));
  if (!exists) return std::optional<ChainState>();
  STRATA_ASSIGN_OR_RETURN(ReplicaStatus status, GetReplicaStatus(replica));
  if (!status.replica) return std::optional<ChainState>();
  return std::optional<ChainState>(status.state);
}

}  // namespace

Result<ApplyPublishedReport> ApplyPublished(const StoreLocation& replica, ObjectStore& bundles,
                                            std::string_view prefix, const ApplyOptions& options) {
  STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(prefix));
  ApplyPublishedReport report;
  STRATA_ASSIGN_OR_RETURN(report.state, StateOf(replica));
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<BundleName> next,
                            NextBundle(bundles, prefix, report.state));
    if (!next) return report;
    STRATA_ASSIGN_OR_RETURN(Buffer bytes, bundles.Get(next->key));
    Result<ApplyReport> applied = ApplyChanges(replica, bytes.view(), options);
    if (!applied.ok()) return applied.status().WithContext(next->key);
    report.rows += applied->rows;
    report.deletions += applied->deletions;
    report.bytes += applied->bytes;
    report.state = applied->to;
    report.applied.push_back(*applied);
  }
}

Result<FollowReport> FollowOnce(const StoreLocation& source, const StoreLocation& replica,
                                ObjectStore& bundles, std::string_view prefix,
                                const FollowOptions& options) {
  Clock* clock =
      options.export_options.clock != nullptr ? options.export_options.clock : SystemClock();
  const int64_t start = clock->MonotonicNanos();
  FollowReport report;
  // What an earlier round published but did not apply (it was killed) goes first.
  STRATA_ASSIGN_OR_RETURN(ApplyPublishedReport earlier,
                          ApplyPublished(replica, bundles, prefix, options.apply_options));

  ExportOptions export_options = options.export_options;
  export_options.consumer = options.consumer.empty() ? "follower" : options.consumer;
  export_options.full = !earlier.state.has_value();
  export_options.since.reset();
  if (earlier.state) export_options.since = earlier.state->cursor;
  if (earlier.state && earlier.state->part != 0) {
    return Status::Aborted(fmt::format(
        "the replica stopped inside export {} (after part {}) and its remaining parts are not "
        "published; re-seed it from a full export",
        earlier.state->cursor, earlier.state->part));
  }
  const int64_t export_start = clock->MonotonicNanos();
  STRATA_ASSIGN_OR_RETURN(report.exported, ExportChanges(source, bundles, prefix, export_options));
  STRATA_ASSIGN_OR_RETURN(report.applied,
                          ApplyPublished(replica, bundles, prefix, options.apply_options));
  report.applied.applied.insert(report.applied.applied.begin(), earlier.applied.begin(),
                                earlier.applied.end());
  report.rows_behind = report.exported.rows + report.exported.deletions;
  report.lag_seconds =
      report.exported.bundles.empty() ? 0 : internal::SecondsSince(*clock, export_start);
  if (options.trim) STRATA_RETURN_IF_ERROR(Trim(source).status());

  MetricsRegistry& metrics = options.metrics != nullptr ? *options.metrics : DefaultMetrics();
  const MetricLabels labels = {{"replica", export_options.consumer}};
  if (Result<Gauge*> g = metrics.GetGauge("strata_replication_lag_seconds",
                                          "Seconds from an export's read of the source to the "
                                          "end of its apply on the replica",
                                          labels);
      g.ok()) {
    (*g)->Set(report.lag_seconds);
  }
  if (Result<Gauge*> g = metrics.GetGauge(
          "strata_replication_lag_rows",
          "Rows and deletions the replica was behind at the last follow round", labels);
      g.ok()) {
    (*g)->Set(static_cast<double>(report.rows_behind));
  }
  report.seconds = internal::SecondsSince(*clock, start);
  return report;
}

}  // namespace strata::replication
