// strata._strata.ContextStoreHandle: a context store (include/strata/context_store.h) for
// strata.Context (python/strata/context.py), which normalises arguments and shapes results
// the reference's way; this file converts records and runs the engine without the GIL.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/bindings.h"
#include "python/context_records.h"
#include "python/errors.h"
#include "python/store_handle.h"
#include "python/store_location.h"
#include "strata/context_store.h"
#include "strata/maintenance.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using store::ContextRecord;
using store::ContextStore;

constexpr std::string_view kNoun = "context store";

// A context store and, when background compaction is on, the maintenance component that
// compacts it (declared first: it outlives the store's unregistration at close).
struct ContextHolder {
  std::shared_ptr<store::Maintenance> maintenance;
  std::unique_ptr<ContextStore> store;
  Status Close() { return store->Close(); }
  store::StorageBase& base() { return store->base(); }
};

using ContextHandle = StoreHandle<ContextHolder>;

struct OpenOptions {
  std::optional<int32_t> embedding_dim;
  std::optional<std::string> distance_metric;
  bool background_compaction = false;
  double compaction_interval_seconds = 300;
  int64_t compaction_min_fragments = 5;
  int64_t compaction_target_rows = 1'000'000;
  std::vector<std::pair<int, int>> quiet_hours;
};

Result<store::ContextStoreOptions> StoreOptions(const OpenOptions& o,
                                                std::shared_ptr<store::Maintenance>* maintenance) {
  store::ContextStoreOptions options;
  options.base.merge_after_generations = kMergeAfterGenerations;
  options.embedding_dim = o.embedding_dim;
  if (o.distance_metric) {
    STRATA_ASSIGN_OR_RETURN(options.distance_metric,
                            store::ParseDistanceMetric(*o.distance_metric));
  }
  if (o.background_compaction) {
    store::MaintenanceOptions m;
    m.flush_interval_seconds = 0;
    m.threads = 1;
    m.compaction.enabled = true;
    m.compaction.check_interval_seconds = o.compaction_interval_seconds;
    m.compaction.min_fragments = o.compaction_min_fragments;
    m.compaction.options.target_rows_per_fragment = o.compaction_target_rows;
    for (const auto& [start, end] : o.quiet_hours) {
      if (start < 0 || start > 23 || end < 0 || end > 24) {
        return Status::InvalidArgument(
            fmt::format("quiet_hours ({}, {}): hours must be in 0..23 (end in 0..24)", start, end));
      }
      m.compaction.quiet_hours.push_back({start, end});
    }
    STRATA_ASSIGN_OR_RETURN(*maintenance, store::Maintenance::Create(m));
    options.base.maintenance = *maintenance;
  }
  return options;
}

std::unique_ptr<ContextHandle> Open(const std::string& uri, py::handle storage_options,
                                    const OpenOptions& open, bool create_if_missing) {
  const std::map<std::string, std::string> options = ReadStorageOptions(storage_options);
  auto holder = std::make_shared<ContextHolder>();
  Status opened;
  {
    WithoutGil without_gil;
    opened = [&]() -> Status {
      STRATA_ASSIGN_OR_RETURN(
          StoreLocation location,
          ResolveStore(uri, options, store::kContextStoreKind, kNoun,
                       create_if_missing ? OpenMode::kCreateIfMissing : OpenMode::kExisting));
      STRATA_ASSIGN_OR_RETURN(store::ContextStoreOptions o,
                              StoreOptions(open, &holder->maintenance));
      STRATA_ASSIGN_OR_RETURN(holder->store, ContextStore::Open(location.objects, location.prefix,
                                                                std::move(o), create_if_missing));
      return Status::OK();
    }();
  }
  if (!opened.ok()) {
    // A maintenance component made before the open failed joins its threads: not under the GIL.
    WithoutGil without_gil;
    holder.reset();
  }
  ThrowIfError(opened);
  return std::make_unique<ContextHandle>(std::move(holder), uri, std::string(kNoun));
}

std::vector<ContextRecord> ReadRecords(py::handle records, const char* name) {
  if (!PyList_Check(records.ptr())) {
    throw py::type_error(
        fmt::format("{} must be a list, found {}", name, Py_TYPE(records.ptr())->tp_name));
  }
  // A snapshot of the list: reading a record may run Python code that changes it.
  const py::tuple items = ItemsSnapshot(records);
  std::vector<ContextRecord> out;
  out.reserve(items.size());
  const Path root(name);
  for (size_t i = 0; i < items.size(); ++i) {
    const Path path(root, Path::Element{i});
    out.push_back(ContextRecordFromPython(items[i], path));
  }
  return out;
}

py::list Records(std::vector<ContextRecord> records) {
  py::list out(records.size());
  for (size_t i = 0; i < records.size(); ++i) out[i] = ContextRecordToPython(std::move(records[i]));
  return out;
}

py::object OptionalRecord(std::optional<ContextRecord> record) {
  if (!record) return py::none();
  return ContextRecordToPython(std::move(*record));
}

store::RecordFilters ReadFilters(py::handle filters) {
  if (filters.is_none()) return {};
  ToJsonOptions options;
  options.datetimes = true;
  const std::string text = ToJson(filters, Path("filters"), options).dump();
  return ValueOrThrow(store::RecordFilters::FromJson(text));
}

store::LifecycleQueryOptions Lifecycle(bool include_expired, bool include_retired) {
  store::LifecycleQueryOptions o;
  o.include_expired = include_expired;
  o.include_retired = include_retired;
  return o;
}

py::dict UpsertToPython(store::UpsertResult r) {
  py::dict out;
  out["inserted"] = r.inserted;
  out["replaced_id"] =
      r.replaced_id ? py::object(TextToPython(*r.replaced_id)) : py::object(py::none());
  out["version"] = r.version;
  out["record"] = ContextRecordToPython(std::move(r.record));
  return out;
}

// `id` or `external_id`, exactly one (the reference's message otherwise).
struct Key {
  std::optional<std::string> id;
  std::optional<std::string> external_id;
};
Key ReadKey(const std::optional<std::string>& id, const std::optional<std::string>& external_id) {
  if (id.has_value() == external_id.has_value()) {
    ThrowInvalid("exactly one of id or external_id is required");
  }
  return {id, external_id};
}

}  // namespace

void BindContextStore(py::module_& m) {
  py::class_<ContextHandle>(m, "ContextStoreHandle",
                            "An open context store; strata.Context wraps it.")
      .def_static(
          "open",
          [](const std::string& uri, py::handle storage_options, std::optional<int32_t> dim,
             std::optional<std::string> metric, bool background, double interval,
             int64_t min_fragments, int64_t target_rows,
             std::vector<std::pair<int, int>> quiet_hours, bool create_if_missing) {
            OpenOptions o;
            o.embedding_dim = dim;
            o.distance_metric = std::move(metric);
            o.background_compaction = background;
            o.compaction_interval_seconds = interval;
            o.compaction_min_fragments = min_fragments;
            o.compaction_target_rows = target_rows;
            o.quiet_hours = std::move(quiet_hours);
            return Open(uri, storage_options, o, create_if_missing);
          },
          py::arg("uri"), py::arg("storage_options") = py::none(),
          py::arg("embedding_dim") = py::none(), py::arg("distance_metric") = py::none(),
          py::arg("enable_background_compaction") = false,
          py::arg("compaction_interval_secs") = 300.0, py::arg("compaction_min_fragments") = 5,
          py::arg("compaction_target_rows") = 1'000'000,
          py::arg("quiet_hours") = std::vector<std::pair<int, int>>{},
          py::arg("create_if_missing") = true)
      .def(
          "add",
          [](const ContextHandle& h, py::handle records) {
            std::vector<ContextRecord> rows = ReadRecords(records, "records");
            return h.RunWrite([&](ContextHolder& c) { return c.store->Add(std::move(rows)); });
          },
          py::arg("records"))
      .def(
          "upsert_many",
          [](const ContextHandle& h, py::handle records) {
            std::vector<ContextRecord> rows = ReadRecords(records, "records");
            std::vector<store::UpsertResult> results = h.RunWrite(
                [&](ContextHolder& c) { return c.store->UpsertManyByExternalId(std::move(rows)); });
            py::list out;
            for (store::UpsertResult& r : results) out.append(UpsertToPython(std::move(r)));
            return out;
          },
          py::arg("records"))
      .def(
          "update",
          [](const ContextHandle& h, std::optional<std::string> id,
             std::optional<std::string> external_id, py::handle fields) -> py::object {
            const Key key = ReadKey(id, external_id);
            const store::ContextPatch patch = ContextPatchFromPython(fields, Path("update"));
            std::optional<store::UpdateResult> r = h.RunWrite([&](ContextHolder& c) {
              return key.id ? c.store->UpdateById(*key.id, patch)
                            : c.store->UpdateByExternalId(*key.external_id, patch);
            });
            if (!r) return py::none();
            py::dict out;
            out["updated"] = true;
            out["replaced_id"] = TextToPython(r->replaced_id);
            out["version"] = r->version;
            out["record"] = ContextRecordToPython(std::move(r->record));
            return out;
          },
          py::arg("id"), py::arg("external_id"), py::arg("fields"))
      .def(
          "delete",
          [](const ContextHandle& h, std::optional<std::string> id,
             std::optional<std::string> external_id) {
            const Key key = ReadKey(id, external_id);
            return h.RunWrite([&](ContextHolder& c) {
              return key.id ? c.store->DeleteById(*key.id)
                            : c.store->DeleteByExternalId(*key.external_id);
            });
          },
          py::arg("id"), py::arg("external_id"))
      .def(
          "get",
          [](const ContextHandle& h, std::optional<std::string> id,
             std::optional<std::string> external_id) {
            const Key key = ReadKey(id, external_id);
            return OptionalRecord(ValueOrThrow(h.Run([&](ContextHolder& c) {
              return key.id ? c.store->GetById(*key.id)
                            : c.store->GetByExternalId(*key.external_id);
            })));
          },
          py::arg("id"), py::arg("external_id"))
      .def(
          "get_blob",
          [](const ContextHandle& h, const std::string& id) -> py::object {
            std::optional<std::string> blob =
                ValueOrThrow(h.Run([&](ContextHolder& c) { return c.store->GetBlob(id); }));
            if (!blob) return py::none();
            return py::bytes(*blob);
          },
          py::arg("id"))
      .def(
          "fetch_payload",
          [](const ContextHandle& h, const std::string& id) -> py::object {
            std::optional<std::string> payload =
                ValueOrThrow(h.Run([&](ContextHolder& c) { return c.store->FetchPayload(id); }));
            if (!payload) return py::none();
            return py::bytes(*payload);
          },
          py::arg("id"))
      .def(
          "put_payload",
          [](const ContextHandle& h, const std::string& uri, py::handle data) {
            const std::string bytes = ReadBytes(data, Path("data"));
            return ValueOrThrow(
                h.Run([&](ContextHolder& c) { return c.store->PutPayload(uri, bytes); }));
          },
          py::arg("uri"), py::arg("data"))
      .def(
          "list",
          [](const ContextHandle& h, py::handle limit, py::handle offset, py::handle filters,
             bool include_expired, bool include_retired, bool include_binary,
             bool include_embedding) {
            const std::optional<int64_t> max_rows = ReadCount(limit, "limit");
            const int64_t skip = ReadCount(offset, "offset").value_or(0);
            const store::RecordFilters f = ReadFilters(filters);
            store::ReadProjection projection;
            projection.binary = include_binary;
            projection.embedding = include_embedding;
            return Records(ValueOrThrow(h.Run([&](ContextHolder& c) {
              return c.store->ListFiltered(f, max_rows, skip,
                                           Lifecycle(include_expired, include_retired), projection);
            })));
          },
          py::arg("limit") = py::none(), py::arg("offset") = py::none(),
          py::arg("filters") = py::none(), py::arg("include_expired") = false,
          py::arg("include_retired") = false, py::arg("include_binary") = true,
          py::arg("include_embedding") = true)
      .def(
          "related",
          [](const ContextHandle& h, const std::string& target_id,
             std::optional<std::string> relation, py::handle limit) {
            const std::optional<int64_t> max_rows = ReadCount(limit, "limit");
            return Records(ValueOrThrow(h.Run([&](ContextHolder& c) {
              return c.store->ListRelated(target_id, relation, max_rows);
            })));
          },
          py::arg("target_id"), py::arg("relation") = py::none(), py::arg("limit") = py::none())
      .def(
          "search",
          [](const ContextHandle& h, py::handle query, py::handle limit, py::handle filters,
             bool include_expired, bool include_retired) {
            const std::vector<float> vector = ReadFloat32List(query, Path("query"));
            const std::optional<int64_t> max_rows = ReadCount(limit, "limit");
            const store::RecordFilters f = ReadFilters(filters);
            std::vector<store::SearchResult> results = ValueOrThrow(h.Run([&](ContextHolder& c) {
              return c.store->Search(vector, max_rows.value_or(store::kDefaultSearchLimit), f,
                                     Lifecycle(include_expired, include_retired));
            }));
            py::list out;
            for (store::SearchResult& r : results) {
              py::dict d = ContextRecordToPython(std::move(r.record));
              d["distance"] = r.distance;
              out.append(std::move(d));
            }
            return out;
          },
          py::arg("query"), py::arg("limit") = py::none(), py::arg("filters") = py::none(),
          py::arg("include_expired") = false, py::arg("include_retired") = false)
      .def(
          "retrieve",
          [](const ContextHandle& h, std::optional<std::string> text, py::handle vector,
             py::handle limit, py::handle filters, bool include_expired, bool include_retired,
             const std::string& text_scoring) {
            store::RetrieveOptions o;
            o.text = std::move(text);
            if (!vector.is_none()) o.vector = ReadFloat32List(vector, Path("vector"));
            o.limit = ReadCount(limit, "limit");
            o.filters = ReadFilters(filters);
            o.lifecycle = Lifecycle(include_expired, include_retired);
            if (text_scoring == "overlap") {
              o.text_scoring = store::TextScoring::kOverlap;
            } else if (text_scoring != "bm25") {
              ThrowInvalid(fmt::format("invalid text_scoring '{}': expected 'bm25' or 'overlap'",
                                       text_scoring));
            }
            std::vector<store::RetrieveResult> results =
                ValueOrThrow(h.Run([&](ContextHolder& c) { return c.store->Retrieve(o); }));
            py::list out;
            for (store::RetrieveResult& r : results) {
              py::dict d = ContextRecordToPython(std::move(r.record));
              d["score"] = r.score;
              d["vector_distance"] =
                  r.vector_distance ? py::object(py::float_(*r.vector_distance)) : py::none();
              d["text_score"] = r.text_score ? py::object(py::float_(*r.text_score)) : py::none();
              d["matched_channels"] = py::cast(r.matched_channels);
              out.append(std::move(d));
            }
            return out;
          },
          py::arg("text") = py::none(), py::arg("vector") = py::none(),
          py::arg("limit") = py::none(), py::arg("filters") = py::none(),
          py::arg("include_expired") = false, py::arg("include_retired") = false,
          py::arg("text_scoring") = "bm25")
      .def(
          "snapshot",
          [](const ContextHandle& h, const std::string& label) {
            const table::TagInfo tag =
                ValueOrThrow(h.Run([&](ContextHolder& c) { return c.store->Snapshot(label); }));
            return tag.version;
          },
          py::arg("label"))
      .def(
          "checkout_snapshot",
          [](const ContextHandle& h, const std::string& label) {
            ThrowIfError(h.Run([&](ContextHolder& c) { return c.store->CheckoutSnapshot(label); }));
          },
          py::arg("label"))
      .def(
          "fork",
          [](const ContextHandle& h, const std::string& name) {
            auto holder = std::make_shared<ContextHolder>();
            store::ContextStoreOptions options;
            options.base.merge_after_generations = kMergeAfterGenerations;
            holder->store =
                ValueOrThrow(h.Run([&](ContextHolder& c) { return c.store->Fork(name, options); }));
            return std::make_unique<ContextHandle>(std::move(holder), h.uri() + "#" + name,
                                                   std::string(kNoun));
          },
          py::arg("name"))
      .def(
          "checkout",
          [](const ContextHandle& h, uint64_t version) {
            ThrowIfError(h.Run([&](ContextHolder& c) { return c.store->Checkout(version); }));
          },
          py::arg("version"))
      .def("refresh_latest",
           [](const ContextHandle& h) {
             ThrowIfError(h.Run([](ContextHolder& c) { return c.store->RefreshLatest(); }));
           })
      .def("flush",
           [](const ContextHandle& h) {
             ValueOrThrow(h.Run([](ContextHolder& c) { return c.store->Flush(); }));
           })
      .def("migrate_relationships",
           [](const ContextHandle& h) {
             return ValueOrThrow(
                 h.Run([](ContextHolder& c) { return c.store->MigrateRelationshipsColumn(); }));
           })
      .def(
          "compact",
          [](const ContextHandle& h, std::optional<int64_t> target_rows,
             bool materialize_deletions) {
            table::CompactionOptions o;
            if (target_rows) {
              if (*target_rows < 1) ThrowInvalid("target_rows_per_fragment must be positive");
              o.target_rows_per_fragment = *target_rows;
            }
            o.materialize_deletions = materialize_deletions;
            const table::CompactionResult r =
                ValueOrThrow(h.Run([&](ContextHolder& c) { return c.store->base().Compact(o); }));
            py::dict out;
            out["fragments_removed"] = r.fragments_removed;
            out["fragments_added"] = r.fragments_added;
            out["files_removed"] = r.files_removed;
            out["files_added"] = r.files_added;
            return out;
          },
          py::arg("target_rows_per_fragment") = py::none(), py::arg("materialize_deletions") = true)
      .def("compaction_stats",
           [](const ContextHandle& h) {
             const store::CompactionStats s = ValueOrThrow(
                 h.Run([](ContextHolder& c) { return c.store->base().GetCompactionStats(); }));
             py::dict out;
             out["total_fragments"] = s.total_fragments;
             out["is_compacting"] = s.is_compacting;
             out["last_compaction"] = s.last_compaction_micros
                                          ? MicrosToDatetime(*s.last_compaction_micros)
                                          : py::object(py::none());
             out["last_error"] = s.last_error.ok() ? py::object(py::none())
                                                   : py::object(py::str(s.last_error.ToString()));
             out["total_compactions"] = s.total_compactions;
             return out;
           })
      .def("version",
           [](const ContextHandle& h) {
             return h.Run([](ContextHolder& c) { return c.store->version(); });
           })
      .def_property_readonly(
          "embedding_dim",
          [](const ContextHandle& h) {
            return h.Run([](ContextHolder& c) { return c.store->embedding_dim(); });
          })
      .def_property_readonly("distance_metric",
                             [](const ContextHandle& h) {
                               return std::string(store::DistanceMetricName(h.Run(
                                   [](ContextHolder& c) { return c.store->distance_metric(); })));
                             })
      .def("close", &ContextHandle::Close)
      .def_property_readonly("closed", &ContextHandle::closed)
      .def_property_readonly("uri", &ContextHandle::uri);
}

}  // namespace strata::python
