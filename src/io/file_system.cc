// The FileSystem conveniences shared by every implementation, and path helpers.
#include "io/file_system.h"

#include <fmt/format.h>

namespace strata::io {

bool IsNoSpace(const Status& status) {
  return status.IsIOError() && status.message().find(kNoSpaceMessage) != std::string::npos;
}

Result<int64_t> FileSystem::FileSize(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(FileStatus st, Stat(path));
  if (st.is_directory) return Status::NotFound(fmt::format("'{}' is a directory", path));
  return st.size;
}

Result<bool> FileSystem::Exists(const std::string& path) {
  Result<FileStatus> st = Stat(path);
  if (st.ok()) return true;
  if (st.status().IsNotFound()) return false;
  return st.status();
}

Status FileSystem::WriteFile(const std::string& path, std::string_view data, bool sync) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                          NewWritableFile(path, OpenMode::kCreateOrTruncate));
  STRATA_RETURN_IF_ERROR(file->Append(data));
  if (sync) STRATA_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/' && !name.empty()) out.push_back('/');
  out.append(name);
  return out;
}

std::string_view ParentDir(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {};
  if (slash == 0) return path.substr(0, 1);
  return path.substr(0, slash);
}

}  // namespace strata::io
