// strata._strata.GenericStoreHandle: a generic store (include/strata/generic_store.h) for
// strata.GenericStore (python/strata/generic.py).
//
// Rows go in through the store's JSON codec (GenericStore::Add), so the value rules and their
// messages ("row 0: column 'score' expects a number, got ...") are the HTTP API's: the binding
// only turns Python values into JSON (bytes-like values into base64 strings, datetimes into
// RFC 3339 strings, numpy arrays into arrays). Rows come out as batch_rows.h describes.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/batch_rows.h"
#include "python/bindings.h"
#include "python/errors.h"
#include "python/store_handle.h"
#include "python/store_location.h"
#include "strata/generic_store.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using store::GenericStore;
using store::SchemaSpec;

using GenericHandle = StoreHandle<GenericStore>;

constexpr std::string_view kNoun = "generic store";

// `spec_json` null: open an existing store with its persisted spec, never creating one.
std::unique_ptr<GenericHandle> Open(const std::string& uri,
                                    const std::optional<std::string>& spec_json,
                                    py::handle storage_options, bool seal_on_add) {
  const std::map<std::string, std::string> options = ReadStorageOptions(storage_options);
  std::optional<SchemaSpec> spec;
  if (spec_json) {
    // Checked before the location is touched: a bad schema creates nothing.
    spec = ValueOrThrow(SchemaSpec::FromJson(*spec_json));
    ThrowIfError(spec->Validate());
  }
  Result<std::unique_ptr<GenericStore>> opened = Status::Internal("not opened");
  {
    WithoutGil without_gil;
    opened = [&]() -> Result<std::unique_ptr<GenericStore>> {
      STRATA_ASSIGN_OR_RETURN(
          StoreLocation location,
          ResolveStore(uri, options, store::kGenericStoreKind, kNoun,
                       spec ? OpenMode::kCreateIfMissing : OpenMode::kExisting));
      store::GenericStoreOptions store_options;
      store_options.seal_on_add = seal_on_add;
      store_options.base.merge_after_generations = kMergeAfterGenerations;
      if (!spec) {
        return GenericStore::OpenExisting(location.objects, location.prefix,
                                          std::move(store_options));
      }
      return GenericStore::Open(location.objects, location.prefix, spec, std::move(store_options));
    }();
  }
  std::unique_ptr<GenericStore> store = ValueOrThrow(std::move(opened));
  return std::make_unique<GenericHandle>(std::shared_ptr<GenericStore>(std::move(store)), uri,
                                         std::string(kNoun));
}

uint64_t Add(const GenericHandle& handle, py::handle rows) {
  if (!PyList_Check(rows.ptr())) {
    throw py::type_error(
        fmt::format("rows must be a list, found {}", Py_TYPE(rows.ptr())->tp_name));
  }
  const py::tuple items = ItemsSnapshot(rows);
  const auto n = static_cast<Py_ssize_t>(items.size());
  if (n == 0) ThrowInvalid("rows array must not be empty");
  ToJsonOptions options;
  options.bytes_as_base64 = true;
  options.datetimes = true;
  options.non_finite_as_strings = true;
  nlohmann::json array = nlohmann::json::array();
  const Path root("rows");
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Path path(root, Path::Element{static_cast<size_t>(i)});
    py::handle row = PyTuple_GET_ITEM(items.ptr(), i);
    array.push_back(ToJson(MappingAsDict(row, path), path, options));
  }
  std::string text = array.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  array = nlohmann::json();
  // With seal_on_add, every add seals a generation (RunWrite merges when enough pend).
  return handle.RunWrite([&](GenericStore& store) { return store.Add(text); });
}

py::list List(const GenericHandle& handle, py::handle limit, py::handle offset, py::handle filter,
              py::handle vectors) {
  store::GenericListRequest request;
  request.limit = ReadCount(limit, "limit");
  request.offset = ReadCount(offset, "offset").value_or(0);
  if (!filter.is_none()) request.filter = ReadString(filter, Path("filter"));
  const VectorFormat format = ReadVectorFormat(vectors);
  std::vector<RecordBatch> batches =
      ValueOrThrow(handle.Run([&](GenericStore& store) { return store.List(request); }));
  return RowsToPython(batches, format);
}

py::object Get(const GenericHandle& handle, const std::string& id, py::handle columns,
               py::handle vectors) {
  std::vector<std::string> names;
  if (!columns.is_none()) {
    const Path root("columns");
    if (!PyList_Check(columns.ptr()) && !PyTuple_Check(columns.ptr())) {
      throw py::type_error(fmt::format("columns must be a list of column names, found {}",
                                       Py_TYPE(columns.ptr())->tp_name));
    }
    size_t i = 0;
    for (py::handle name : columns) {
      names.push_back(ReadString(name, Path(root, Path::Element{i++})));
    }
    if (names.empty()) names.push_back("id");  // an existence check, as the HTTP API does
  }
  const VectorFormat format = ReadVectorFormat(vectors);
  RecordBatch row = ValueOrThrow(handle.Run([&](GenericStore& store) -> Result<RecordBatch> {
    STRATA_ASSIGN_OR_RETURN(RecordBatch found, store.Get(id, names));
    if (found.num_rows() > 0 || store.base().pinned()) return found;
    // A miss refreshes the handle once, so rows another handle merged are found.
    STRATA_RETURN_IF_ERROR(store.RefreshLatest());
    return store.Get(id, names);
  }));
  if (row.num_rows() == 0) return py::none();
  py::list rows = RowsToPython({row}, format);
  return rows[0];
}

void Flush(const GenericHandle& handle) {
  const store::FlushOutcome outcome =
      handle.RunWrite([](GenericStore& store) { return store.Flush(); });
  if (outcome == store::FlushOutcome::kFenced) {
    throw StatusError(Status::Fenced(fmt::format(
        "generic store '{}': another writer claimed this handle's shard while it flushed; "
        "the rows it had acknowledged are published by the new writer",
        handle.uri())));
  }
}

int CleanupWal(const GenericHandle& handle) {
  const store::MergeReport report =
      ValueOrThrow(handle.Run([](GenericStore& store) { return store.Cleanup(); }));
  // A merge whose base commit succeeded reports OK; a later step that failed (its drain) is
  // finished by the next merge, so the reclaimed count stands.
  return report.generations_reclaimed;
}

}  // namespace

void BindGenericStore(py::module_& m) {
  py::class_<GenericHandle>(m, "GenericStoreHandle",
                            "An open generic store; strata.GenericStore wraps it.")
      .def_static("open", &Open, py::arg("uri"), py::arg("spec_json"),
                  py::arg("storage_options") = py::none(), py::arg("seal_on_add") = false)
      .def("add", &Add, py::arg("rows"))
      .def("list", &List, py::arg("limit") = py::none(), py::arg("offset") = py::none(),
           py::arg("filter") = py::none(), py::arg("vectors") = "list")
      .def("get", &Get, py::arg("id"), py::arg("columns") = py::none(), py::arg("vectors") = "list")
      .def("flush", &Flush)
      .def("cleanup_wal", &CleanupWal)
      .def("schema",
           [](const GenericHandle& h) {
             const std::string spec = h.Run([](GenericStore& s) { return s.spec().ToJson(); });
             return StoredJsonToPython(spec);
           })
      .def("seal_on_add",
           [](const GenericHandle& h) {
             return h.Run([](GenericStore& s) { return s.seal_on_add(); });
           })
      .def(
          "checkout",
          [](const GenericHandle& h, uint64_t version) {
            ThrowIfError(h.Run([&](GenericStore& s) { return s.Checkout(version); }));
          },
          py::arg("version"))
      .def("refresh_latest",
           [](const GenericHandle& h) {
             ThrowIfError(h.Run([](GenericStore& s) { return s.RefreshLatest(); }));
           })
      .def(
          "version",
          [](const GenericHandle& h) { return h.Run([](GenericStore& s) { return s.version(); }); })
      .def("close", &GenericHandle::Close)
      .def_property_readonly("closed", &GenericHandle::closed)
      .def_property_readonly("uri", &GenericHandle::uri);
}

}  // namespace strata::python
