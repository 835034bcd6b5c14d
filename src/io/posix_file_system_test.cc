// What only the real file system can show: ENOSPC, errno text, close-on-exec, mappings.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

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

TEST(PosixFileSystemTest, ReadFileWithoutLinksReadsOrMapsOnlyLinkFreeRegularFiles) {
  namespace fs = std::filesystem;
  strata::testing::TempDir dir("posix-nolinks-read");
  const fs::path root = fs::canonical(dir.path());
  fs::create_directories(root / "a" / "b");
  std::ofstream(root / "a" / "b" / "file") << "12345";
  std::ofstream(root / "a" / "b" / "empty");
  fs::create_directory_symlink(root / "a", root / "a-link");
  fs::create_symlink(root / "a" / "b" / "file", root / "a" / "file-link");
  auto posix = PosixFileSystem();
  const std::string file = (root / "a/b/file").string();
  Result<std::optional<Buffer>> read = posix->ReadFileWithoutLinks(file, 1 << 20);
  ASSERT_TRUE(read.ok()) << read.status();
  if (!read->has_value()) GTEST_SKIP() << "openat2 is not available here";
  EXPECT_EQ((*read)->view(), "12345");
  EXPECT_FALSE(IsMapped(file));
  {
    // Above the threshold: mapped, for as long as the buffer lives.
    Result<std::optional<Buffer>> mapped = posix->ReadFileWithoutLinks(file, 4);
    ASSERT_TRUE(mapped.ok() && mapped->has_value()) << mapped.status();
    EXPECT_EQ((*mapped)->view(), "12345");
    EXPECT_TRUE(IsMapped(file));
  }
  EXPECT_FALSE(IsMapped(file));
  for (int64_t threshold : {0, 1 << 20}) {
    Result<std::optional<Buffer>> empty =
        posix->ReadFileWithoutLinks((root / "a/b/empty").string(), threshold);
    ASSERT_TRUE(empty.ok() && empty->has_value()) << empty.status();
    EXPECT_EQ((*empty)->size(), 0);
  }
  for (const char* missing : {"a/none", "none/file", "a/b/file/under-a-file", "a/b"}) {
    Status s = posix->ReadFileWithoutLinks((root / missing).string(), 1 << 20).status();
    EXPECT_TRUE(s.IsNotFound()) << missing << ": " << s;
  }
  for (const char* through_link : {"a-link/b/file", "a/file-link"}) {
    Result<std::optional<Buffer>> through =
        posix->ReadFileWithoutLinks((root / through_link).string(), 1 << 20);
    ASSERT_TRUE(through.ok()) << through_link << ": " << through.status();
    EXPECT_FALSE(through->has_value()) << through_link;
  }
  // A FIFO is opened without blocking and is not a file to read, here or through ReadFile.
  const std::string fifo = (root / "a/fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status from_fifo = posix->ReadFileWithoutLinks(fifo, 1 << 20).status();
  EXPECT_TRUE(from_fifo.IsNotFound()) << from_fifo;
  EXPECT_TRUE(posix->ReadFile(fifo).status().IsNotFound());
  // A directory that cannot be read is an error, not a reason to walk the path.
  if (::geteuid() != 0) {
    fs::create_directories(root / "locked");
    fs::permissions(root / "locked", fs::perms::owner_exec);
    Status locked = posix->ListFilesWithoutLinks((root / "locked").string()).status();
    EXPECT_TRUE(locked.IsIOError()) << locked;
    fs::permissions(root / "locked", fs::perms::owner_all);
  }
}

TEST(PosixFileSystemTest, ListFilesWithoutLinksListsOnlyThroughLinkFreePaths) {
  namespace fs = std::filesystem;
  strata::testing::TempDir dir("posix-nolinks-list");
  const fs::path root = fs::canonical(dir.path());
  fs::create_directories(root / "a" / "b" / "c");
  fs::create_directories(root / "elsewhere");
  std::ofstream(root / "elsewhere" / "secret") << "s";
  // More entries than one getdents64 buffer (8 KiB) holds.
  std::vector<std::string> expected;
  for (int i = 0; i < 300; ++i) {
    std::string name = fmt::format("file-with-a-rather-long-name-to-fill-the-buffer-{:04}", i);
    std::ofstream(root / "a" / "b" / name) << std::string(static_cast<size_t>(i % 7), 'x');
    expected.push_back("b/" + name);
  }
  std::ofstream(root / "a" / "b" / "c" / "deep") << "d";
  expected.push_back("b/c/deep");
  std::sort(expected.begin(), expected.end());
  fs::create_directory_symlink(root / "elsewhere", root / "a" / "b" / "dir-link");
  fs::create_symlink(root / "elsewhere" / "secret", root / "a" / "file-link");
  fs::create_directory_symlink(root / "a", root / "a-link");
  auto posix = PosixFileSystem();

  Result<std::optional<std::vector<FileEntry>>> listed =
      posix->ListFilesWithoutLinks((root / "a").string());
  ASSERT_TRUE(listed.ok()) << listed.status();
  if (!listed->has_value()) GTEST_SKIP() << "openat2 is not available here";
  std::vector<std::string> names;
  for (const FileEntry& entry : **listed) {
    names.push_back(entry.relative_path);
    if (entry.relative_path.starts_with("b/file-")) {
      EXPECT_EQ(entry.size,
                std::stoi(entry.relative_path.substr(entry.relative_path.size() - 4)) % 7)
          << entry.relative_path;
    }
  }
  EXPECT_EQ(names, expected) << "links below are neither listed nor followed";
  Result<std::vector<FileEntry>> plain = posix->ListFiles((root / "a").string());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->size(), expected.size());

  // The directory itself, or one on the way to it, a link: not answered.
  for (const char* through_link : {"a-link", "a-link/b", "a/b/dir-link"}) {
    Result<std::optional<std::vector<FileEntry>>> through =
        posix->ListFilesWithoutLinks((root / through_link).string());
    ASSERT_TRUE(through.ok()) << through_link << ": " << through.status();
    EXPECT_FALSE(through->has_value()) << through_link;
  }
  for (const char* missing : {"none", "a/none/b", "elsewhere/secret"}) {
    Status s = posix->ListFilesWithoutLinks((root / missing).string()).status();
    EXPECT_TRUE(s.IsNotFound()) << missing << ": " << s;
  }
  // Nesting past the limit is an error rather than a descriptor per level without end.
  fs::path deep = root / "deep";
  for (int i = 0; i < 70; ++i) deep /= "d";
  fs::create_directories(deep);
  Status too_deep = posix->ListFiles((root / "deep").string()).status();
  EXPECT_TRUE(too_deep.IsIOError()) << too_deep;
  EXPECT_NE(too_deep.message().find("nested more than"), std::string::npos) << too_deep;
}

// A watch made by a relative path cannot learn from events above it which directory the path
// names later (that depends on the working directory): each poll checks the path itself. A
// directory removed while something holds it and made again ends the watch, and so does a
// change of working directory.
TEST(PosixFileSystemTest, AWatchByARelativePathChecksThePathOnEachPoll) {
  namespace fs = std::filesystem;
  strata::testing::TempDir dir("posix-watch-relative");
  const fs::path root = fs::canonical(dir.path());
  fs::create_directories(root / "d");
  const fs::path cwd = fs::current_path();
  fs::current_path(root);
  struct Restore {
    fs::path cwd;
    ~Restore() { fs::current_path(cwd); }
  } restore{cwd};
  auto posix = PosixFileSystem();
  Result<std::unique_ptr<ChangeWatch>> watch = posix->WatchDir("d");
  if (watch.status().IsNotSupported()) GTEST_SKIP() << watch.status();
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE((*watch)->Poll().ok());
  const int held = ::open("d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  fs::remove(root / "d");
  fs::create_directory(root / "d");
  EXPECT_TRUE((*watch)->Poll().status().IsNotFound());
  ::close(held);

  // Another working directory, with its own "d": the path names that one now.
  fs::create_directories(root / "other" / "d");
  Result<std::unique_ptr<ChangeWatch>> again = posix->WatchDir("d");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE((*again)->Poll().ok());
  fs::current_path(root / "other");
  EXPECT_TRUE((*again)->Poll().status().IsNotFound());
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

// AdviseWillNeed is advice (its effect, pages read ahead, is not observable without waiting
// for the disk): the kernel takes any non-empty range of a mapping, page-aligned or not, and
// no range of a mapping or of heap memory changes the bytes.
TEST(PosixFileSystemTest, AdviseWillNeedTakesAnyRangeOfAMappingOrOfHeapMemory) {
  strata::testing::TempDir dir("posix");
  std::string path = std::filesystem::canonical(dir.path()).string() + "/advised";
  std::string bytes(size_t{5} << 14, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(PosixFileSystem()->WriteFile(path, bytes, true).ok());
  Result<Buffer> mapped = PosixFileSystem()->MapFile(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  const Buffer heap = Buffer::Copy(bytes);
  const int64_t size = static_cast<int64_t>(bytes.size());
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 1}, {1, 4095}, {4095, 2}, {5000, 7000}, {12287, 1}};
  for (const Buffer& buffer : {*mapped, mapped->Slice(4097, 3 * 4096)}) {
    for (auto [offset, length] : ranges) {
      EXPECT_TRUE(AdviseWillNeed(buffer, offset, length)) << offset << "+" << length;
    }
    EXPECT_TRUE(AdviseWillNeed(buffer, 0, buffer.size()));
    EXPECT_FALSE(AdviseWillNeed(buffer, buffer.size(), 0)) << "an empty range asks nothing";
  }
  for (auto [offset, length] : ranges) AdviseWillNeed(heap, offset, length);
  EXPECT_FALSE(AdviseWillNeed(*mapped, size, 0));
  EXPECT_TRUE(mapped->view() == bytes);
  EXPECT_TRUE(heap.view() == bytes);
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
