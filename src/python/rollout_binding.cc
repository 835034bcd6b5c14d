// strata._strata.RolloutStoreHandle: a rollout store (include/strata/rollout_store.h) for
// strata.RolloutStore (python/strata/rollout.py).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/bindings.h"
#include "python/errors.h"
#include "python/rollout_records.h"
#include "python/store_handle.h"
#include "python/store_location.h"
#include "strata/rollout_store.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using store::RolloutRecord;
using store::RolloutStore;

using RolloutHandle = StoreHandle<RolloutStore>;

constexpr std::string_view kNoun = "rollout store";

std::unique_ptr<RolloutHandle> Open(const std::string& uri, py::handle storage_options,
                                    bool create_if_missing) {
  const std::map<std::string, std::string> options = ReadStorageOptions(storage_options);
  Result<std::unique_ptr<RolloutStore>> opened = Status::Internal("not opened");
  {
    WithoutGil without_gil;
    opened = [&]() -> Result<std::unique_ptr<RolloutStore>> {
      STRATA_ASSIGN_OR_RETURN(
          StoreLocation location,
          ResolveStore(uri, options, store::kRolloutStoreKind, kNoun,
                       create_if_missing ? OpenMode::kCreateIfMissing : OpenMode::kExisting));
      store::RolloutStoreOptions options;
      options.base.merge_after_generations = kMergeAfterGenerations;
      Result<std::unique_ptr<RolloutStore>> store =
          RolloutStore::Open(location.objects, location.prefix, options, create_if_missing);
      if (!store.ok() && location.exists && store.status().IsInvalidArgument()) {
        // The schema checks at open refuse a table of another schema.
        return store.status().WithContext(fmt::format("'{}': not a rollout store", uri));
      }
      return store;
    }();
  }
  std::unique_ptr<RolloutStore> store = ValueOrThrow(std::move(opened));
  return std::make_unique<RolloutHandle>(std::shared_ptr<RolloutStore>(std::move(store)), uri,
                                         std::string(kNoun));
}

py::dict Add(const RolloutHandle& handle, py::handle records) {
  if (!PyList_Check(records.ptr())) {
    throw py::type_error(
        fmt::format("records must be a list, found {}", Py_TYPE(records.ptr())->tp_name));
  }
  const py::tuple items = ItemsSnapshot(records);
  const auto n = static_cast<Py_ssize_t>(items.size());
  if (n == 0) ThrowInvalid("records array must not be empty");
  const int64_t now = WallMicros();
  std::vector<RolloutRecord> rows;
  rows.reserve(static_cast<size_t>(n));
  py::list ids(n);
  const Path root("records");
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Path path(root, Path::Element{static_cast<size_t>(i)});
    rows.push_back(RolloutRecordFromPython(PyTuple_GET_ITEM(items.ptr(), i), path, now));
    ids[static_cast<size_t>(i)] = TextToPython(rows.back().id);
  }
  const uint64_t version = ValueOrThrow(handle.Run([&](RolloutStore& store) {
    Result<uint64_t> added = store.Add(rows);
    std::vector<RolloutRecord>().swap(rows);  // freed here, not later under the GIL
    return added;
  }));
  py::dict out;
  out["version"] = version;
  out["ids"] = std::move(ids);
  out["count"] = n;
  return out;
}

void Flush(const RolloutHandle& handle) {
  const store::FlushOutcome outcome =
      handle.RunWrite([](RolloutStore& store) { return store.Flush(); });
  if (outcome == store::FlushOutcome::kFenced) {
    throw StatusError(Status::Fenced(fmt::format(
        "rollout store '{}': another writer claimed this handle's shard while it flushed; "
        "the rows it had acknowledged are published by the new writer",
        handle.uri())));
  }
}

py::list Records(const std::vector<RolloutRecord>& records) {
  py::list out(records.size());
  for (size_t i = 0; i < records.size(); ++i) out[i] = RolloutRecordToPython(records[i]);
  return out;
}

py::list List(const RolloutHandle& handle, py::handle limit, py::handle offset,
              py::handle filters) {
  const std::optional<int64_t> max_rows = ReadCount(limit, "limit");
  const int64_t skip = ReadCount(offset, "offset").value_or(0);
  store::RolloutFilters parsed;
  if (!filters.is_none()) {
    // The engine's parser, so the filter rules and messages are the HTTP API's.
    const std::string text = ToJson(filters, Path("filters")).dump();
    Result<store::RolloutFilters> read = store::RolloutFilters::FromJson(text);
    if (!read.ok()) {
      ThrowInvalid(fmt::format("invalid rollout filters: {}", read.status().message()));
    }
    parsed = std::move(read).value();
  }
  std::vector<RolloutRecord> records = ValueOrThrow(
      handle.Run([&](RolloutStore& store) { return store.List(max_rows, skip, parsed); }));
  return Records(records);
}

py::list GetTrajectory(const RolloutHandle& handle, const std::string& rollout_id) {
  std::vector<RolloutRecord> records = ValueOrThrow(
      handle.Run([&](RolloutStore& store) { return store.GetTrajectory(rollout_id); }));
  return Records(records);
}

// A point read that refreshes the handle once after a miss (unless a checkout pins it), so
// rows another handle merged into the base meanwhile are found, as the HTTP API does.
template <typename T, typename Read>
Result<std::optional<T>> ReadRefreshingOnMiss(RolloutStore& store, const Read& read) {
  STRATA_ASSIGN_OR_RETURN(std::optional<T> found, read());
  if (found || store.pinned()) return found;
  STRATA_RETURN_IF_ERROR(store.RefreshLatest());
  return read();
}

py::object Get(const RolloutHandle& handle, const std::string& id) {
  std::optional<RolloutRecord> record = ValueOrThrow(handle.Run([&](RolloutStore& store) {
    return ReadRefreshingOnMiss<RolloutRecord>(store, [&] { return store.GetById(id); });
  }));
  if (!record) return py::none();
  return RolloutRecordToPython(*record);
}

py::object GetBlob(const RolloutHandle& handle, const std::string& id) {
  std::optional<std::string> blob = ValueOrThrow(handle.Run([&](RolloutStore& store) {
    return ReadRefreshingOnMiss<std::string>(store, [&] { return store.GetBlob(id); });
  }));
  if (!blob) return py::none();
  return py::bytes(*blob);
}

}  // namespace

void BindRolloutStore(py::module_& m) {
  py::class_<RolloutHandle>(m, "RolloutStoreHandle",
                            "An open rollout store; strata.RolloutStore wraps it.")
      .def_static("open", &Open, py::arg("uri"), py::arg("storage_options") = py::none(),
                  py::arg("create_if_missing") = true)
      .def("add", &Add, py::arg("records"))
      .def("flush", &Flush)
      .def("list", &List, py::arg("limit") = py::none(), py::arg("offset") = py::none(),
           py::arg("filters") = py::none())
      .def("get_trajectory", &GetTrajectory, py::arg("rollout_id"))
      .def("get", &Get, py::arg("id"))
      .def("get_blob", &GetBlob, py::arg("id"))
      .def(
          "checkout",
          [](const RolloutHandle& h, uint64_t version) {
            ThrowIfError(h.Run([&](RolloutStore& s) { return s.Checkout(version); }));
          },
          py::arg("version"))
      .def("refresh_latest",
           [](const RolloutHandle& h) {
             ThrowIfError(h.Run([](RolloutStore& s) { return s.RefreshLatest(); }));
           })
      .def(
          "version",
          [](const RolloutHandle& h) { return h.Run([](RolloutStore& s) { return s.version(); }); })
      .def("close", &RolloutHandle::Close)
      .def_property_readonly("closed", &RolloutHandle::closed)
      .def_property_readonly("uri", &RolloutHandle::uri);
}

}  // namespace strata::python
