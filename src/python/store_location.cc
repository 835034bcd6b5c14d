// Store URIs -> object stores (store_location.h).
#include "python/store_location.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>

#include "strata/storage_base.h"
#include "strata/table.h"

namespace strata::python {
namespace {

// memory://NAME stores of this process. Entries are never removed: a memory store lives as
// long as the process, like a file would.
class MemoryStores {
 public:
  std::shared_ptr<ObjectStore> Get(const std::string& name, bool create) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = stores_.find(name);
    if (it != stores_.end()) return it->second;
    if (!create) return nullptr;
    std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
    stores_.emplace(name, store);
    return store;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<ObjectStore>> stores_;  // guarded by mutex_
};

MemoryStores& Memory() {
  static MemoryStores* stores = new MemoryStores();  // never destroyed: see the class
  return *stores;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view text, std::string_view uri) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const int high = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return Status::InvalidArgument(fmt::format("invalid percent-escape in store URI '{}'", uri));
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

// "s3" for "s3://bucket/x"; nullopt for a plain path.
std::optional<std::string_view> Scheme(std::string_view uri) {
  const size_t colon = uri.find("://");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view scheme = uri.substr(0, colon);
  if (std::isalpha(static_cast<unsigned char>(scheme[0])) == 0) return std::nullopt;
  for (char c : scheme) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '+' && c != '-' && c != '.') {
      return std::nullopt;
    }
  }
  return scheme;
}

Result<bool> ParseBoolOption(const std::string& key, const std::string& value) {
  std::string lower = value;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "1") return true;
  if (lower == "false" || lower == "0") return false;
  return Status::InvalidArgument(
      fmt::format("storage option '{}' must be true or false, got '{}'", key, value));
}

// Refuses a table that another kind of store owns.
Status CheckKind(const std::shared_ptr<ObjectStore>& objects, const std::string& prefix,
                 std::string_view uri, std::string_view kind, std::string_view noun) {
  Result<std::shared_ptr<table::Table>> base = table::Table::Open(objects, prefix);
  if (!base.ok()) return base.status().WithContext(uri);
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                          store::OwningStoreKind(*objects, prefix, *(*base)->schema()));
  if (owner && *owner != kind && *owner != store::kUnrecordedStoreKind) {
    return Status::InvalidArgument(
        fmt::format("'{}' holds a {} store, not a {}", uri, *owner, noun));
  }
  return Status::OK();
}

}  // namespace

Result<ResolvedObjects> ResolveObjects(std::string_view uri,
                                       const std::map<std::string, std::string>& storage_options,
                                       bool create_if_missing, std::string_view noun) {
  if (uri.empty()) return Status::InvalidArgument("store URI must not be empty");
  const std::optional<std::string_view> scheme = Scheme(uri);
  ResolvedObjects out;
  if (scheme && *scheme == "memory") {
    const std::string name(uri.substr(std::string_view("memory://").size()));
    if (name.empty()) {
      return Status::InvalidArgument(fmt::format("'{}' names no store: write memory://NAME", uri));
    }
    if (!storage_options.empty()) {
      return Status::InvalidArgument(fmt::format(
          "memory:// stores take no storage options, got '{}'", storage_options.begin()->first));
    }
    out.objects = Memory().Get(name, create_if_missing);
    if (out.objects == nullptr) {
      return Status::NotFound(fmt::format("no {} at '{}'", noun, uri));
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, out.objects->List(""));
    out.empty = objects.empty();
    return out;
  }
  std::string path;
  if (scheme && *scheme == "file") {
    std::string_view rest = uri.substr(std::string_view("file://").size());
    if (rest.starts_with("localhost/")) rest.remove_prefix(std::string_view("localhost").size());
    if (!rest.starts_with("/")) {
      return Status::InvalidArgument(
          fmt::format("'{}' is not a local file URI: write file:///absolute/path", uri));
    }
    STRATA_ASSIGN_OR_RETURN(path, PercentDecode(rest, uri));
  } else if (scheme) {
    return Status::InvalidArgument(fmt::format(
        "unsupported store URI scheme '{}' in '{}': strata opens local paths, file:// and "
        "memory:// URIs",
        *scheme, uri));
  } else {
    path = std::string(uri);
  }
  LocalObjectStoreOptions local;
  for (const auto& [key, value] : storage_options) {
    if (key != "sync") {
      return Status::InvalidArgument(
          fmt::format("unsupported storage option '{}' for a local store (supported: sync)", key));
    }
    STRATA_ASSIGN_OR_RETURN(local.sync, ParseBoolOption(key, value));
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  const bool exists = std::filesystem::exists(status);
  if (exists && !std::filesystem::is_directory(status)) {
    return Status::InvalidArgument(fmt::format("'{}' is not a directory", uri));
  }
  if (!exists && !create_if_missing) {
    return Status::NotFound(fmt::format("no {} at '{}'", noun, uri));
  }
  if (exists) {
    std::filesystem::directory_iterator entries(path, ec);
    if (ec) {
      return Status::IOError(fmt::format("cannot list '{}': {}", uri, ec.message()));
    }
    out.empty = entries == std::filesystem::directory_iterator();
  }
  STRATA_ASSIGN_OR_RETURN(out.objects, OpenLocalObjectStore(path, local));
  return out;
}

Result<StoreLocation> ResolveStore(std::string_view uri,
                                   const std::map<std::string, std::string>& storage_options,
                                   std::string_view kind, std::string_view noun, OpenMode mode) {
  STRATA_ASSIGN_OR_RETURN(
      ResolvedObjects resolved,
      ResolveObjects(uri, storage_options, mode == OpenMode::kCreateIfMissing, noun));
  StoreLocation location;
  location.objects = std::move(resolved.objects);
  STRATA_ASSIGN_OR_RETURN(location.exists,
                          table::Table::Exists(*location.objects, location.prefix));
  if (location.exists) {
    if (!kind.empty()) {
      STRATA_RETURN_IF_ERROR(CheckKind(location.objects, location.prefix, uri, kind, noun));
    }
  } else if (mode == OpenMode::kExisting) {
    return Status::NotFound(fmt::format("no {} at '{}'", noun, uri));
  } else if (!resolved.empty) {
    return Status::InvalidArgument(fmt::format(
        "'{}' holds other files but no store: create a {} in a new or empty location", uri, noun));
  }
  return location;
}

}  // namespace strata::python
