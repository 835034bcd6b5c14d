// strata._strata.replication_*: incremental replication (include/strata/replication.h) for
// strata.replicate (python/strata/replicate.py), which turns refusals ("refused (<Kind>): ...")
// into their exception classes. Reports are dicts; hashes are hex text.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "python/bindings.h"
#include "python/errors.h"
#include "python/gil.h"
#include "python/py_values.h"
#include "python/store_location.h"
#include "strata/bundle.h"
#include "strata/replication.h"

namespace py = pybind11;

namespace strata::python {
namespace {

namespace rep = replication;

constexpr std::string_view kNoun = "store";

// Runs `call` without the GIL and returns its value (or throws its error).
template <typename Call>
auto Unlocked(Call&& call) {
  decltype(call()) result = Status::Internal("not run");
  {
    WithoutGil without_gil;
    result = call();
  }
  return ValueOrThrow(std::move(result));
}

Result<rep::StoreLocation> Store(const std::string& uri, OpenMode mode) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation location, ResolveStore(uri, {}, "", kNoun, mode));
  return rep::StoreLocation{location.objects, location.prefix};
}

py::dict Checksum(const rep::ContentChecksum& c) {
  py::dict d;
  d["rows"] = c.rows;
  d["checksum"] = c.ToString();
  return d;
}

py::dict State(const rep::ChainState& s) {
  py::dict d;
  d["cursor"] = s.cursor;
  d["part"] = s.part;
  d["id"] = rep::ToHex(s.id);
  d["content"] = Checksum(s.content);
  return d;
}

py::dict ApplyReportDict(const rep::ApplyReport& r) {
  py::dict d;
  d["from"] = State(r.from);
  d["to"] = State(r.to);
  d["rows"] = r.rows;
  d["deletions"] = r.deletions;
  d["bytes"] = r.bytes;
  d["replica_version"] = r.replica_version;
  d["seconds"] = r.seconds;
  return d;
}

py::dict MarkBase(const std::string& uri, const std::string& token, bool replace) {
  const rep::MarkReport r = Unlocked([&]() -> Result<rep::MarkReport> {
    STRATA_ASSIGN_OR_RETURN(rep::StoreLocation source, Store(uri, OpenMode::kExisting));
    rep::MarkOptions options;
    options.replace = replace;
    return rep::MarkBase(source, token, options);
  });
  py::dict d;
  d["chain_id"] = r.chain_id;
  d["token"] = r.token;
  d["store_kind"] = r.store_kind;
  d["schema_hash"] = rep::ToHex(r.schema_hash);
  d["base"] = State(r.base);
  d["source_version"] = r.source_version;
  d["seconds"] = r.seconds;
  return d;
}

py::dict Export(const std::string& uri, const std::string& destination,
                std::optional<uint64_t> since, bool full, const std::string& consumer,
                int64_t max_rows, int64_t max_bytes, const std::string& hmac_secret) {
  if (max_rows < 1 || max_bytes < 1) ThrowInvalid("max_rows and max_bytes must be positive");
  const rep::ExportReport r = Unlocked([&]() -> Result<rep::ExportReport> {
    STRATA_ASSIGN_OR_RETURN(rep::StoreLocation source, Store(uri, OpenMode::kExisting));
    STRATA_ASSIGN_OR_RETURN(ResolvedObjects bundles,
                            ResolveObjects(destination, {}, true, "bundle directory"));
    rep::ExportOptions options;
    options.since = since;
    options.full = full;
    options.consumer = consumer;
    options.max_rows = max_rows;
    options.max_bytes = max_bytes;
    options.hmac_secret = hmac_secret;
    return rep::ExportChanges(source, *bundles.objects, "", options);
  });
  py::dict d;
  d["chain_id"] = r.chain_id;
  d["from"] = State(r.from);
  d["to"] = State(r.to);
  py::list bundles;
  for (const rep::PublishedBundle& b : r.bundles) {
    py::dict bundle;
    bundle["key"] = b.key;
    bundle["digest"] = rep::ToHex(b.digest);
    bundle["bytes"] = b.bytes;
    bundle["part"] = b.header.part;
    bundle["parts"] = b.header.parts;
    bundles.append(std::move(bundle));
  }
  d["bundles"] = std::move(bundles);
  d["rows"] = r.rows;
  d["deletions"] = r.deletions;
  d["bytes"] = r.bytes;
  d["rows_scanned"] = r.rows_scanned;
  d["source_version"] = r.source_version;
  d["seconds"] = r.seconds;
  return d;
}

py::dict Apply(const std::string& replica, py::handle bundle, const std::string& hmac_secret,
               bool create_if_missing) {
  const std::string bytes = ReadBytes(bundle, Path("bundle"));
  const rep::ApplyReport r = Unlocked([&]() -> Result<rep::ApplyReport> {
    STRATA_ASSIGN_OR_RETURN(
        rep::StoreLocation location,
        Store(replica, create_if_missing ? OpenMode::kCreateIfMissing : OpenMode::kExisting));
    rep::ApplyOptions options;
    options.hmac_secret = hmac_secret;
    options.create_if_missing = create_if_missing;
    return rep::ApplyChanges(location, bytes, options);
  });
  return ApplyReportDict(r);
}

py::dict ApplyPublished(const std::string& replica, const std::string& bundles_uri,
                        const std::string& hmac_secret, bool create_if_missing) {
  const rep::ApplyPublishedReport r = Unlocked([&]() -> Result<rep::ApplyPublishedReport> {
    STRATA_ASSIGN_OR_RETURN(
        rep::StoreLocation location,
        Store(replica, create_if_missing ? OpenMode::kCreateIfMissing : OpenMode::kExisting));
    STRATA_ASSIGN_OR_RETURN(ResolvedObjects bundles,
                            ResolveObjects(bundles_uri, {}, false, "bundle directory"));
    rep::ApplyOptions options;
    options.hmac_secret = hmac_secret;
    options.create_if_missing = create_if_missing;
    return rep::ApplyPublished(location, *bundles.objects, "", options);
  });
  py::dict d;
  py::list applied;
  for (const rep::ApplyReport& a : r.applied) applied.append(ApplyReportDict(a));
  d["applied"] = std::move(applied);
  d["rows"] = r.rows;
  d["deletions"] = r.deletions;
  d["bytes"] = r.bytes;
  d["state"] = r.state ? py::object(State(*r.state)) : py::object(py::none());
  return d;
}

py::dict Verify(const std::string& uri) {
  const rep::VerifyResult r = Unlocked([&]() -> Result<rep::VerifyResult> {
    STRATA_ASSIGN_OR_RETURN(rep::StoreLocation location, Store(uri, OpenMode::kExisting));
    return rep::Verify(location);
  });
  py::dict d;
  d["matches"] = r.matches();
  d["computed"] = Checksum(r.computed);
  d["recorded"] = r.recorded ? py::object(Checksum(*r.recorded)) : py::object(py::none());
  d["state"] = r.state ? py::object(State(*r.state)) : py::object(py::none());
  d["version"] = r.version;
  d["rows"] = r.rows;
  d["seconds"] = r.seconds;
  return d;
}

}  // namespace

void BindReplication(py::module_& m) {
  m.def("replication_mark_base", &MarkBase, py::arg("uri"), py::arg("token"),
        py::arg("replace") = false);
  m.def("replication_export", &Export, py::arg("uri"), py::arg("destination"),
        py::arg("since") = py::none(), py::arg("full") = false, py::arg("consumer") = "",
        py::arg("max_rows") = 100000, py::arg("max_bytes") = int64_t{64} << 20,
        py::arg("hmac_secret") = "");
  m.def("replication_apply", &Apply, py::arg("replica"), py::arg("bundle"),
        py::arg("hmac_secret") = "", py::arg("create_if_missing") = true);
  m.def("replication_apply_published", &ApplyPublished, py::arg("replica"), py::arg("bundles"),
        py::arg("hmac_secret") = "", py::arg("create_if_missing") = true);
  m.def("replication_verify", &Verify, py::arg("uri"));
}

}  // namespace strata::python
