// What only the real file system can show: ENOSPC, errno text, close-on-exec, mappings.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "io/file_system.h"
#include "support/temp_dir.h"

namespace strata::io {
namespace {

using ::testing::HasSubstr;

// The descriptor this process has open on `path`, or -1.
int FindOpenDescriptor(const std::string& path) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::filesystem::path target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target == path) return std::stoi(entry.path().filename().string());
  }
  return -1;
}

// True when /proc/self/maps shows a mapping of `path`.
bool IsMapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() >= path.size() &&
        line.compare(line.size() - path.size(), path.size(), path) == 0) {
      return true;
    }
  }
  return false;
}

TEST(PosixFileSystemTest, FullDeviceReportsNoSpaceLeftOnDevice) {
  auto file = PosixFileSystem()->NewWritableFile("/dev/full", OpenMode::kAppend);
  ASSERT_TRUE(file.ok()) << file.status();
  Status s = (*file)->Append(std::string(4096, 'x'));
  EXPECT_TRUE(s.IsIOError()) << s;
  EXPECT_TRUE(IsNoSpace(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("/dev/full"));
  EXPECT_THAT(s.message(), HasSubstr("no space left on device"));
}

TEST(PosixFileSystemTest, ErrorsNameTheOperationPathAndErrnoText) {
  strata::testing::TempDir dir("posix");
  std::string missing = (dir / "missing").string();
  Status s = PosixFileSystem()->ReadFile(missing).status();
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_THAT(s.message(), HasSubstr(missing));
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
  Status rename = PosixFileSystem()->RenameFile(missing, (dir / "b").string());
  EXPECT_THAT(rename.message(), HasSubstr("rename '" + missing + "' to '"));
  EXPECT_FALSE(IsNoSpace(s));
}

TEST(PosixFileSystemTest, StatWithoutLinksAnswersOnlyForLinkFreePaths) {
  namespace fs = std::filesystem;
  strata::testing::TempDir dir("posix-nolinks");
  fs::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "file") << "12345";
  fs::create_directory_symlink(dir / "a", dir / "a-link");
  fs::create_symlink(dir / "a" / "b" / "file", dir / "a" / "file-link");
  auto posix = PosixFileSystem();
  Result<std::optional<FileStatus>> file = posix->StatWithoutLinks((dir / "a/b/file").string());
  ASSERT_TRUE(file.ok()) << file.status();
  // openat2 exists on every kernel strata supports (5.6+); a sandbox may refuse it.
  if (!file->has_value()) GTEST_SKIP() << "openat2 is not available here";
  EXPECT_FALSE((*file)->is_directory);
  EXPECT_EQ((*file)->size, 5);
  Result<std::optional<FileStatus>> directory = posix->StatWithoutLinks((dir / "a/b").string());
  ASSERT_TRUE(directory.ok() && directory->has_value()) << directory.status();
  EXPECT_TRUE((*directory)->is_directory);
  for (const char* missing : {"a/none", "none/file", "a/b/file/under-a-file"}) {
    Status s = posix->StatWithoutLinks((dir / missing).string()).status();
    EXPECT_TRUE(s.IsNotFound()) << missing << ": " << s;
  }
  // A link anywhere on the path, the last component included: not answered.
  for (const char* through_link : {"a-link/b/file", "a/file-link", "a-link"}) {
    Result<std::optional<FileStatus>> st = posix->StatWithoutLinks((dir / through_link).string());
    ASSERT_TRUE(st.ok()) << through_link << ": " << st.status();
    EXPECT_FALSE(st->has_value()) << through_link;
  }
}

TEST(PosixFileSystemTest, WritableFilesAreOpenedCloseOnExec) {
  strata::testing::TempDir dir("posix");
  std::string path = std::filesystem::canonical(dir.path()).string() + "/f";
  auto file = PosixFileSystem()->NewWritableFile(path, OpenMode::kCreateNew);
  ASSERT_TRUE(file.ok()) << file.status();
  int fd = FindOpenDescriptor(path);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(FindOpenDescriptor(path), -1);
}

TEST(PosixFileSystemTest, MapFileKeepsTheMappingExactlyAsLongAsTheBuffer) {
  strata::testing::TempDir dir("posix");
  std::string path = std::filesystem::canonical(dir.path()).string() + "/mapped";
  ASSERT_TRUE(PosixFileSystem()->WriteFile(path, std::string(1 << 16, 'm'), true).ok());
  {
    Result<Buffer> mapped = PosixFileSystem()->MapFile(path);
    ASSERT_TRUE(mapped.ok()) << mapped.status();
    EXPECT_TRUE(IsMapped(path));
    Buffer copy = *mapped;  // shares the owner
    mapped = Status::Internal("drop the first reference");
    EXPECT_TRUE(IsMapped(path));
    EXPECT_EQ(copy.view(), std::string(1 << 16, 'm'));
  }
  EXPECT_FALSE(IsMapped(path));
}

TEST(PosixFileSystemTest, LargeAppendsArriveWholeAndInOrder) {
  // Appends past the writeback chunk (8 MiB) go out in chunks; every byte must land in
  // order, including after a small unaligned append.
  strata::testing::TempDir dir("posix");
  std::string path = std::filesystem::canonical(dir.path()).string() + "/large";
  std::string big(size_t{19} << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131 + i / 4099) & 0xFF);
  auto file = PosixFileSystem()->NewWritableFile(path, OpenMode::kCreateNew);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("head").ok());
  ASSERT_TRUE((*file)->Append(big).ok());
  ASSERT_TRUE((*file)->Append("tail").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  Result<Buffer> read = PosixFileSystem()->ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), static_cast<int64_t>(big.size() + 8));
  EXPECT_TRUE(read->view() == "head" + big + "tail");
  Result<Buffer> range = PosixFileSystem()->ReadRange(path, 4 + (size_t{8} << 20) - 3, 6);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->view(), std::string_view(big).substr((size_t{8} << 20) - 3, 6));
}

}  // namespace
}  // namespace strata::io
