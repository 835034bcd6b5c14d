// strata._strata.DatagenStoreHandle, DatagenStreamWriterHandle, DatagenItemId and the helpers
// datagen_event_id / generate_id: a datagen store (include/strata/datagen_store.h) for
// strata.DatagenStore (python/strata/datagen.py).
//
// Every rule is the engine's: item ids parse and derive in store::DatagenItemId, event and
// checkpoint ids in store::DatagenStreamWriter (whose Build calls return the events for the
// caller to append, as lance-context's client-side writer does), validation and folding in the
// store. The binding converts values (datagen_events.h) and refreshes a handle once after a
// read that found nothing, so rows another handle merged into the base meanwhile are found, as
// the HTTP API does. A writer's builds do no I/O and keep the GIL; they use only the store's
// clock, so a writer outlives the store handle that opened it.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/bindings.h"
#include "python/datagen_events.h"
#include "python/errors.h"
#include "python/rollout_records.h"
#include "python/store_handle.h"
#include "python/store_location.h"
#include "strata/datagen_store.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using store::DatagenEvent;
using store::DatagenItemId;
using store::DatagenStore;
using store::DatagenStreamWriter;

using DatagenHandle = StoreHandle<DatagenStore>;

constexpr std::string_view kNoun = "datagen store";

std::unique_ptr<DatagenHandle> Open(const std::string& uri, py::handle storage_options,
                                    const std::optional<std::string>& shard_id) {
  const std::map<std::string, std::string> options = ReadStorageOptions(storage_options);
  Result<std::unique_ptr<DatagenStore>> opened = Status::Internal("not opened");
  {
    WithoutGil without_gil;
    opened = [&]() -> Result<std::unique_ptr<DatagenStore>> {
      STRATA_ASSIGN_OR_RETURN(
          StoreLocation location,
          ResolveStore(uri, options, store::kDatagenStoreKind, kNoun, OpenMode::kCreateIfMissing));
      store::DatagenStoreOptions store_options;
      store_options.base.shard_id = shard_id.value_or("");
      store_options.base.merge_after_generations = kMergeAfterGenerations;
      Result<std::unique_ptr<DatagenStore>> store =
          DatagenStore::Open(location.objects, location.prefix, std::move(store_options));
      if (!store.ok() && location.exists && store.status().IsInvalidArgument()) {
        // The schema checks at open refuse a table of another schema.
        return store.status().WithContext(fmt::format("'{}': not a datagen store", uri));
      }
      return store;
    }();
  }
  std::unique_ptr<DatagenStore> store = ValueOrThrow(std::move(opened));
  return std::make_unique<DatagenHandle>(std::shared_ptr<DatagenStore>(std::move(store)), uri,
                                         std::string(kNoun));
}

// Reads again after refreshing the handle when `missing(result)` and no checkout pins it.
template <typename T, typename Read, typename Missing>
Result<T> RefreshingOnMiss(DatagenStore& store, const Read& read, const Missing& missing) {
  STRATA_ASSIGN_OR_RETURN(T value, read());
  if (!missing(value) || store.base().pinned()) return value;
  STRATA_RETURN_IF_ERROR(store.RefreshLatest());
  return read();
}

std::vector<DatagenEvent> EventsFromPython(py::handle events) {
  if (!PyList_Check(events.ptr())) {
    throw py::type_error(
        fmt::format("events must be a list, found {}", Py_TYPE(events.ptr())->tp_name));
  }
  const Py_ssize_t n = PyList_GET_SIZE(events.ptr());
  const int64_t now = WallMicros();
  std::vector<DatagenEvent> out;
  out.reserve(static_cast<size_t>(n));
  const Path root("events");
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Path path(root, Path::Element{static_cast<size_t>(i)});
    out.push_back(DatagenEventFromPython(PyList_GET_ITEM(events.ptr(), i), path, now));
  }
  return out;
}

uint64_t Append(const DatagenHandle& handle, py::handle events, bool checkpoint) {
  std::vector<DatagenEvent> batch = EventsFromPython(events);
  // Every append seals a generation (RunWrite merges when enough pend).
  return handle.RunWrite([&](DatagenStore& store) {
    Result<uint64_t> appended = checkpoint ? store.AppendCheckpoint(batch) : store.Append(batch);
    std::vector<DatagenEvent>().swap(batch);  // freed here, not later under the GIL
    return appended;
  });
}

py::object FoldItem(const DatagenHandle& handle, const std::string& item_id, bool load_blobs) {
  const store::DatagenFoldMode mode =
      load_blobs ? store::DatagenFoldMode::kEager : store::DatagenFoldMode::kLazy;
  using Folded = std::optional<store::DatagenFoldedItem>;
  Folded item = ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return RefreshingOnMiss<Folded>(
        store, [&] { return store.FoldItem(item_id, mode); },
        [](const Folded& f) { return !f.has_value(); });
  }));
  if (!item) return py::none();
  return DatagenFoldedItemToPython(*item);
}

py::dict RootItemStatuses(const DatagenHandle& handle, const std::vector<std::string>& ids) {
  using Statuses = std::map<std::string, std::optional<store::DatagenItemStatus>>;
  Statuses statuses = ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return RefreshingOnMiss<Statuses>(
        store, [&] { return store.RootItemStatuses(ids); },
        [](const Statuses& found) {
          for (const auto& [id, status] : found) {
            if (!status) return true;
          }
          return false;
        });
  }));
  py::dict out;
  for (const auto& [id, status] : statuses) {
    // A root that never started is left out, as the reference leaves it out.
    if (status) out[TextToPython(id)] = TextToPython(store::DatagenItemStatusName(*status));
  }
  return out;
}

py::list ItemFailures(const DatagenHandle& handle, const std::string& item_id) {
  using Failures = std::vector<store::DatagenItemFailure>;
  Failures failures = ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return RefreshingOnMiss<Failures>(
        store, [&] { return store.ItemFailures(item_id); },
        [](const Failures& found) { return found.empty(); });
  }));
  py::list out(failures.size());
  for (size_t i = 0; i < failures.size(); ++i) out[i] = DatagenItemFailureToPython(failures[i]);
  return out;
}

py::object GetBlob(const DatagenHandle& handle, const std::string& event_id) {
  using Bytes = std::optional<std::string>;
  Bytes blob = ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return RefreshingOnMiss<Bytes>(
        store, [&] { return store.GetBlob(event_id); },
        [](const Bytes& found) { return !found.has_value(); });
  }));
  if (!blob) return py::none();
  return py::bytes(*blob);
}

// lance-context's load_blob: the bytes of the field's blob event (the folded item's
// blob_event_ids), or None when the field holds no blob or its event is gone.
py::object LoadBlob(const DatagenHandle& handle, py::handle folded, const std::string& field) {
  py::dict item = MappingAsDict(folded, Path("folded"));
  if (!item.contains("blob_event_ids")) return py::none();
  py::object ids = item["blob_event_ids"];
  if (ids.is_none()) return py::none();
  py::dict by_field = MappingAsDict(ids, Path("folded.blob_event_ids"));
  if (!by_field.contains(field)) return py::none();
  const std::string event_id =
      ReadString(by_field[py::str(field)], Path(Path("folded.blob_event_ids"), field));
  return GetBlob(handle, event_id);
}

py::dict ItemTree(const DatagenHandle& handle, const std::string& root_item_id) {
  store::DatagenItemTree tree = ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return RefreshingOnMiss<store::DatagenItemTree>(
        store, [&] { return store.ItemTree(root_item_id); },
        [](const store::DatagenItemTree& found) { return found.nodes.empty(); });
  }));
  return DatagenItemTreeToPython(tree);
}

DatagenItemId ParseItemId(const std::string& text) {
  return ValueOrThrow(DatagenItemId::Parse(text));
}

DatagenStreamWriter OpenStream(const DatagenHandle& handle, const std::string& item_id,
                               const std::string& run_id, const std::string& writer_epoch,
                               const std::optional<std::string>& parent_item_id,
                               py::handle query_tags) {
  const DatagenItemId item = ParseItemId(item_id);
  std::optional<std::string> tags;
  if (!query_tags.is_none()) tags = DatagenJsonTextFromPython(query_tags, Path("query_tags"));
  return ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return store.OpenStream(item, {run_id, writer_epoch}, parent_item_id, tags);
  }));
}

std::optional<DatagenStreamWriter> ResumeStream(const DatagenHandle& handle,
                                                const std::string& item_id,
                                                const std::string& run_id,
                                                const std::string& writer_epoch) {
  const DatagenItemId item = ParseItemId(item_id);
  using Resumed = std::optional<DatagenStreamWriter>;
  return ValueOrThrow(handle.Run([&](DatagenStore& store) {
    return RefreshingOnMiss<Resumed>(
        store,
        [&] {
          return store.ResumeStream(item, {run_id, writer_epoch});
        },
        [](const Resumed& found) { return !found.has_value(); });
  }));
}

py::list EventsToPython(const std::vector<DatagenEvent>& events) {
  py::list out(events.size());
  for (size_t i = 0; i < events.size(); ++i) out[i] = DatagenEventToPython(events[i]);
  return out;
}

void BindItemId(py::module_& m) {
  py::class_<DatagenItemId>(
      m, "DatagenItemId",
      "A datagen item's id: the root item's source key, then one 'step:index' segment per "
      "fan-out (\"5/expand:0/judge:1\").")
      .def(py::init(&ParseItemId), py::arg("text"))
      .def_static(
          "from_source_key",
          [](const std::string& key) { return ValueOrThrow(DatagenItemId::FromSourceKey(key)); },
          py::arg("key"))
      .def_static("parse", &ParseItemId, py::arg("text"))
      .def(
          "child",
          [](const DatagenItemId& id, const std::string& step, int64_t index) {
            return ValueOrThrow(id.Child(step, index));
          },
          py::arg("step"), py::arg("index"))
      .def("parent", &DatagenItemId::Parent)
      .def("root", &DatagenItemId::Root)
      .def("origin_step", &DatagenItemId::OriginStep)
      .def("branch_idx", &DatagenItemId::BranchIdx)
      .def("is_root", &DatagenItemId::IsRoot)
      .def("__str__", [](const DatagenItemId& id) { return TextToPython(id.str()); })
      .def("__repr__",
           [](const DatagenItemId& id) {
             return py::str("DatagenItemId({!r})").format(TextToPython(id.str()));
           })
      // Equal to another id or to its own text, and hashed as its text, so ids and their
      // texts find each other in dicts and sets.
      .def("__eq__",
           [](const DatagenItemId& id, py::handle other) -> py::object {
             if (py::isinstance<DatagenItemId>(other)) {
               return py::bool_(id == other.cast<const DatagenItemId&>());
             }
             if (PyUnicode_Check(other.ptr())) {
               return py::bool_(TextToPython(id.str()).equal(other));
             }
             return py::reinterpret_borrow<py::object>(Py_NotImplemented);
           })
      .def("__hash__", [](const DatagenItemId& id) { return py::hash(TextToPython(id.str())); });
}

void BindWriter(py::module_& m) {
  py::class_<DatagenStreamWriter>(m, "DatagenStreamWriterHandle",
                                  "One item's stream writer; strata.DatagenStreamWriter wraps it.")
      .def_property_readonly(
          "item_id", [](const DatagenStreamWriter& w) { return TextToPython(w.item_id().str()); })
      .def_property_readonly("attempt", &DatagenStreamWriter::attempt)
      .def_property_readonly("next_seq", &DatagenStreamWriter::next_seq)
      .def(
          "step_started",
          [](DatagenStreamWriter& w, py::handle position) {
            const store::DatagenStepPosition p =
                DatagenPositionFromPython(position, Path("position"));
            return DatagenEventToPython(ValueOrThrow(w.BuildStepStarted(p)));
          },
          py::arg("position"))
      .def(
          "step_completed",
          [](DatagenStreamWriter& w, py::handle position, py::handle fields) {
            const store::DatagenStepPosition p =
                DatagenPositionFromPython(position, Path("position"));
            const std::vector<store::DatagenFieldWrite> writes =
                DatagenFieldWritesFromPython(fields, Path("fields"));
            return EventsToPython(ValueOrThrow(w.BuildStepCompleted(p, writes)));
          },
          py::arg("position"), py::arg("fields"))
      .def(
          "item_terminal",
          [](DatagenStreamWriter& w, const std::string& status) {
            const store::DatagenItemStatus parsed =
                ValueOrThrow(store::ParseDatagenItemStatus(status));
            return DatagenEventToPython(ValueOrThrow(w.BuildItemTerminal(parsed)));
          },
          py::arg("status"))
      .def(
          "item_failed",
          [](DatagenStreamWriter& w, py::handle position, std::string error_type,
             std::optional<std::string> error_dump, std::optional<std::string> traceback) {
            const store::DatagenStepPosition p =
                DatagenPositionFromPython(position, Path("position"));
            return DatagenEventToPython(ValueOrThrow(w.BuildItemFailed(
                p, std::move(error_type), std::move(error_dump), std::move(traceback))));
          },
          py::arg("position"), py::arg("error_type"), py::arg("error_dump") = py::none(),
          py::arg("traceback") = py::none());
}

}  // namespace

void BindDatagenStore(py::module_& m) {
  BindItemId(m);
  BindWriter(m);
  m.def(
      "datagen_event_id",
      [](const std::string& item_id, const std::string& checkpoint_id, py::handle ordinal) {
        const int64_t n =
            ReadInteger(ordinal, Path("ordinal"), 0, std::numeric_limits<int64_t>::max(),
                        "a non-negative integer");
        return TextToPython(
            store::DatagenEventId(item_id, checkpoint_id, static_cast<uint64_t>(n)));
      },
      py::arg("item_id"), py::arg("checkpoint_id"), py::arg("ordinal"));
  m.def("generate_id", [] { return TextToPython(store::NewTimeOrderedId()); });

  py::class_<DatagenHandle>(m, "DatagenStoreHandle",
                            "An open datagen store; strata.DatagenStore wraps it.")
      .def_static("open", &Open, py::arg("uri"), py::arg("storage_options") = py::none(),
                  py::arg("shard_id") = py::none())
      .def(
          "append",
          [](const DatagenHandle& h, py::handle events) { return Append(h, events, false); },
          py::arg("events"))
      .def(
          "append_checkpoint",
          [](const DatagenHandle& h, py::handle events) { return Append(h, events, true); },
          py::arg("events"))
      .def("fold_item", &FoldItem, py::arg("item_id"), py::arg("load_blobs") = false)
      .def("overview",
           [](const DatagenHandle& h) {
             return DatagenOverviewToPython(
                 ValueOrThrow(h.Run([](DatagenStore& s) { return s.Overview(); })));
           })
      .def("root_item_statuses", &RootItemStatuses, py::arg("ids"))
      .def("item_failures", &ItemFailures, py::arg("item_id"))
      .def("get_blob", &GetBlob, py::arg("event_id"))
      .def("load_blob", &LoadBlob, py::arg("folded"), py::arg("field_name"))
      .def("item_tree", &ItemTree, py::arg("root_item_id"))
      .def("open_stream", &OpenStream, py::arg("item_id"), py::arg("run_id"),
           py::arg("writer_epoch"), py::arg("parent_item_id") = py::none(),
           py::arg("query_tags") = py::none())
      .def("resume_stream", &ResumeStream, py::arg("item_id"), py::arg("run_id"),
           py::arg("writer_epoch"))
      .def(
          "version",
          [](const DatagenHandle& h) { return h.Run([](DatagenStore& s) { return s.version(); }); })
      .def("close", &DatagenHandle::Close)
      .def_property_readonly("closed", &DatagenHandle::closed)
      .def_property_readonly("uri", &DatagenHandle::uri);
}

}  // namespace strata::python
