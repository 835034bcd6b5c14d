// A Python object's hold on an engine store, and the arguments every store binding reads.
//
// The handle shares the store with the calls running on it: each call takes its own
// reference, then runs the engine without the GIL. close() seals (the store's Close) and
// releases the handle's reference, after which calls fail with InvalidRequestError ("... is
// closed"); a call already running keeps the store alive until it returns. The last holder
// destroys the store — which seals what the handle wrote, as the C++ destructor does — and
// does so without the GIL, whether it is close(), a running call or the handle's own
// destruction when Python drops it.
//
// Thread safety: the handle's fields are read and written with the GIL held, so one handle
// may be used from any number of Python threads; the engine calls themselves follow the
// store's contract (include/strata/rollout_store.h, generic_store.h), which lets every method
// run concurrently.
#pragma once

#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "python/errors.h"
#include "python/gil.h"
#include "python/py_values.h"
#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::python {

// Pending generations at which a handle of the module merges its own shard after a write
// that sealed one (StorageBase::MergeIfDue), as `strata serve` does for context stores: a
// process without a maintenance component would otherwise pile up generations, and every
// read and seal gets slower with each (a Context seals on every add).
inline constexpr int kMergeAfterGenerations = 8;

// Warns (RuntimeWarning) when the merge after a write failed: the write itself is durable,
// and the next write tries the merge again. Needs the GIL.
void WarnIfMergeFailed(const Status& merge, const std::string& uri);

template <typename Store>
class StoreHandle {
 public:
  // `noun` names the store in messages ("rollout store").
  StoreHandle(std::shared_ptr<Store> store, std::string uri, std::string noun)
      : store_(std::move(store)), uri_(std::move(uri)), noun_(std::move(noun)) {}
  ~StoreHandle() {  // NOLINT(bugprone-exception-escape): as ~WithoutGil
    if (store_ != nullptr) {
      WithoutGil without_gil;
      store_.reset();
    }
  }
  StoreHandle(const StoreHandle&) = delete;
  StoreHandle& operator=(const StoreHandle&) = delete;

  // Runs `call(Store&)` without the GIL and returns what it returns. InvalidRequestError
  // when the handle is closed.
  template <typename Call>
  auto Run(Call&& call) const {
    std::shared_ptr<Store> store = store_;
    if (store == nullptr) {
      ThrowInvalid(fmt::format("{} '{}' is closed", noun_, uri_));
    }
    WithoutGil without_gil;
    auto result = call(*store);
    store.reset();  // may be the last reference (after a concurrent close): destroy it here
    return result;
  }

  // Runs a write that may seal a generation (`write(Store&)` returns a Result), then merges
  // the own shard when kMergeAfterGenerations pend (StorageBase::MergeIfDue), all without the
  // GIL, and returns the write's value (or throws its error). A failed merge warns: the write
  // stands. Store must have base() (the engine stores do).
  template <typename Write>
  auto RunWrite(Write&& write) const {
    Status merged;
    auto result = Run([&](Store& store) {
      auto written = write(store);
      if (written.ok()) merged = store.base().MergeIfDue().status();
      return written;
    });
    WarnIfMergeFailed(merged, uri_);
    // Not ValueOrThrow(std::move(result)): g++ 12 -O3 then warns that the moved Result's
    // Status "may be used uninitialized" (a false positive).
    if (!result.ok()) throw StatusError(result.status());
    return std::move(result).value();
  }

  // Seals and releases the store; idempotent.
  void Close() {
    if (store_ == nullptr) return;
    std::shared_ptr<Store> store = std::move(store_);
    store_ = nullptr;
    Status closed;
    {
      WithoutGil without_gil;
      closed = store->Close();
      store.reset();
    }
    ThrowIfError(closed);
  }

  bool closed() const { return store_ == nullptr; }
  const std::string& uri() const { return uri_; }

 private:
  std::shared_ptr<Store> store_;  // null once closed
  std::string uri_;
  std::string noun_;
};

// storage_options: None or a mapping of str to str, bool, int or float (None values are
// skipped), as the reference's bindings take it; values become their text ("true").
std::map<std::string, std::string> ReadStorageOptions(py::handle options);

// A count argument (limit, offset): None or a non-negative integer.
std::optional<int64_t> ReadCount(py::handle value, const char* name);

}  // namespace strata::python
