// Key validation and the convenience methods shared by every ObjectStore.
#include "strata/object_store.h"

#include <fmt/format.h>

namespace strata {

Status ValidateObjectKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("object key is empty");
  if (key.front() == '/') {
    return Status::InvalidArgument(fmt::format("object key '{}' is absolute", key));
  }
  if (key.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("object key contains a NUL byte");
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view seg = key.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return Status::InvalidArgument(
          fmt::format("object key '{}' has an empty, '.' or '..' segment", key));
    }
    start = end + 1;
  }
  return Status::OK();
}

Status ValidateObjectPrefix(std::string_view prefix) {
  if (prefix.empty()) return Status::OK();
  if (prefix.back() == '/') prefix.remove_suffix(1);
  return ValidateObjectKey(prefix);
}

Result<int64_t> ObjectStore::Size(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(ObjectMeta meta, Head(key));
  return meta.size;
}

Result<std::unique_ptr<AppendableObject>> ObjectStore::CreateAppendable(std::string_view key) {
  return Status::NotSupported(
      fmt::format("{} cannot append to objects (key '{}')", Describe(), key));
}

Status ObjectStore::Copy(std::string_view from, std::string_view to) {
  STRATA_RETURN_IF_ERROR(ValidateObjectKey(to));
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, Get(from));
  return PutIfAbsent(to, bytes.view());
}

Status ValidateWatchPrefix(std::string_view prefix) {
  if (!prefix.empty() && prefix.back() != '/') {
    return Status::InvalidArgument(
        fmt::format("watched prefix '{}' must be a directory: empty or ending with '/'", prefix));
  }
  return ValidateObjectPrefix(prefix);
}

std::string_view WatchPrefixOf(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : key.substr(0, slash + 1);
}

Result<std::unique_ptr<ChangeWatch>> ObjectStore::Watch(std::string_view prefix) {
  STRATA_RETURN_IF_ERROR(ValidateWatchPrefix(prefix));
  return Status::NotSupported(fmt::format("{} cannot watch '{}' for changes", Describe(), prefix));
}

Result<bool> ObjectStore::Exists(std::string_view key) {
  Result<ObjectMeta> meta = Head(key);
  if (meta.ok()) return true;
  if (meta.status().IsNotFound()) return false;
  return meta.status();
}

}  // namespace strata
