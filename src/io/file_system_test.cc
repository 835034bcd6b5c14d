// FileSystem behaviour every implementation shares: run against the posix, in-memory and
// fault-injecting (over both) file systems.
#include "io/file_system.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/memory_file_system.h"
#include "support/temp_dir.h"

namespace strata::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Str(const Buffer& b) { return std::string(b.view()); }

class FileSystemTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& kind = GetParam();
    const bool on_posix = kind == "posix" || kind == "fault_over_posix";
    std::shared_ptr<FileSystem> base =
        on_posix ? PosixFileSystem() : std::make_shared<MemoryFileSystem>();
    fs_ = kind.starts_with("fault") ? std::make_shared<FaultInjectionFileSystem>(base) : base;
    root_ = on_posix ? temp_.str() : "/fs-test";
    ASSERT_TRUE(fs_->CreateDirs(root_).ok());
  }

  std::string Path(const std::string& name) const { return JoinPath(root_, name); }

  void Write(const std::string& name, std::string_view data) {
    ASSERT_TRUE(fs_->WriteFile(Path(name), data, /*sync=*/true).ok()) << name;
  }

  std::string Read(const std::string& name) {
    Result<Buffer> data = fs_->ReadFile(Path(name));
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() ? Str(*data) : "<error>";
  }

  strata::testing::TempDir temp_{"fs"};
  std::shared_ptr<FileSystem> fs_;
  std::string root_;
};

TEST_P(FileSystemTest, WrittenFileReadsBackWholeAndInRanges) {
  Write("f", "0123456789");
  EXPECT_EQ(Read("f"), "0123456789");
  EXPECT_EQ(Str(*fs_->ReadRange(Path("f"), 2, 3)), "234");
  EXPECT_EQ(Str(*fs_->ReadRange(Path("f"), 8, 100)), "89");  // short at the end
  EXPECT_EQ(fs_->ReadRange(Path("f"), 10, 5)->size(), 0);    // at the end: empty
  EXPECT_TRUE(fs_->ReadRange(Path("f"), 11, 1).status().IsInvalidArgument());
  EXPECT_TRUE(fs_->ReadRange(Path("f"), -1, 1).status().IsInvalidArgument());
  EXPECT_TRUE(fs_->ReadRange(Path("f"), 0, -1).status().IsInvalidArgument());
  EXPECT_EQ(*fs_->FileSize(Path("f")), 10);
}

TEST_P(FileSystemTest, MappedFileHasTheContentsAndOutlivesTheName) {
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  Write("big", big);
  Write("empty", "");
  Result<Buffer> mapped = fs_->MapFile(Path("big"));
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_TRUE(fs_->DeleteFile(Path("big")).ok());
  EXPECT_EQ(Str(*mapped), big);
  Result<Buffer> empty = fs_->MapFile(Path("empty"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->size(), 0);
}

TEST_P(FileSystemTest, OpenModesTruncateAppendOrRefuseAnExistingFile) {
  Write("f", "old");
  {
    auto file = fs_->NewWritableFile(Path("f"), OpenMode::kAppend);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Append("+more").ok());
    ASSERT_TRUE((*file)->Close().ok());
  }
  EXPECT_EQ(Read("f"), "old+more");
  EXPECT_TRUE(fs_->NewWritableFile(Path("f"), OpenMode::kCreateNew).status().IsAlreadyExists());
  EXPECT_EQ(Read("f"), "old+more");
  {
    auto file = fs_->NewWritableFile(Path("f"), OpenMode::kCreateOrTruncate);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Append("new").ok());
    ASSERT_TRUE((*file)->Sync().ok());
  }  // destructor closes
  EXPECT_EQ(Read("f"), "new");
}

TEST_P(FileSystemTest, ClosedFileRefusesFurtherCalls) {
  auto file = fs_->NewWritableFile(Path("f"), OpenMode::kCreateNew);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_FALSE((*file)->Append("x").ok());
  EXPECT_FALSE((*file)->Sync().ok());
  EXPECT_FALSE((*file)->Close().ok());
}

TEST_P(FileSystemTest, MissingFilesAreNotFoundWithThePathInTheMessage) {
  Status s = fs_->ReadFile(Path("nope")).status();
  EXPECT_TRUE(s.IsNotFound()) << s;
  EXPECT_THAT(s.message(), HasSubstr(Path("nope")));
  EXPECT_TRUE(fs_->ReadRange(Path("nope"), 0, 1).status().IsNotFound());
  EXPECT_TRUE(fs_->MapFile(Path("nope")).status().IsNotFound());
  EXPECT_TRUE(fs_->Stat(Path("nope")).status().IsNotFound());
  EXPECT_TRUE(fs_->DeleteFile(Path("nope")).IsNotFound());
  EXPECT_TRUE(fs_->RenameFile(Path("nope"), Path("x")).IsNotFound());
  EXPECT_TRUE(fs_->LinkFile(Path("nope"), Path("x")).IsNotFound());
  EXPECT_FALSE(*fs_->Exists(Path("nope")));
  Status in_missing_dir = fs_->NewWritableFile(Path("no-dir/f"), OpenMode::kCreateNew).status();
  EXPECT_TRUE(in_missing_dir.IsNotFound()) << in_missing_dir;
}

TEST_P(FileSystemTest, DirectoriesAreNotFilesForReadsSizesAndDeletes) {
  ASSERT_TRUE(fs_->CreateDirs(Path("d")).ok());
  EXPECT_TRUE(fs_->Stat(Path("d"))->is_directory);
  EXPECT_TRUE(fs_->ReadFile(Path("d")).status().IsNotFound());
  EXPECT_TRUE(fs_->FileSize(Path("d")).status().IsNotFound());
  EXPECT_TRUE(fs_->DeleteFile(Path("d")).IsNotFound());
  EXPECT_TRUE(*fs_->Exists(Path("d")));
}

TEST_P(FileSystemTest, RenameReplacesTheTargetAndRemovesTheSource) {
  Write("a", "new");
  Write("b", "old");
  ASSERT_TRUE(fs_->RenameFile(Path("a"), Path("b")).ok());
  EXPECT_EQ(Read("b"), "new");
  EXPECT_FALSE(*fs_->Exists(Path("a")));
}

TEST_P(FileSystemTest, LinkAddsANameAndRefusesAnExistingOne) {
  Write("a", "data");
  Write("taken", "other");
  ASSERT_TRUE(fs_->LinkFile(Path("a"), Path("b")).ok());
  Status s = fs_->LinkFile(Path("a"), Path("taken"));
  EXPECT_TRUE(s.IsAlreadyExists()) << s;
  EXPECT_EQ(Read("taken"), "other");
  ASSERT_TRUE(fs_->DeleteFile(Path("a")).ok());
  EXPECT_EQ(Read("b"), "data");
}

TEST_P(FileSystemTest, CreateDirsIsMkdirPAndReportsWhatItCreated) {
  std::vector<std::string> created;
  ASSERT_TRUE(fs_->CreateDirs(Path("x/y/z"), &created).ok());
  EXPECT_THAT(created, ElementsAre(Path("x"), Path("x/y"), Path("x/y/z")));
  created.clear();
  ASSERT_TRUE(fs_->CreateDirs(Path("x/y/z"), &created).ok());
  ASSERT_TRUE(fs_->CreateDirs(Path("x/y/w"), &created).ok());
  EXPECT_THAT(created, ElementsAre(Path("x/y/w")));
  Write("file", "");
  Status s = fs_->CreateDirs(Path("file/sub"));
  EXPECT_TRUE(s.IsIOError()) << s;
  EXPECT_THAT(s.message(), HasSubstr("Not a directory"));
}

TEST_P(FileSystemTest, DeleteDirRemovesOnlyEmptyDirectories) {
  ASSERT_TRUE(fs_->CreateDirs(Path("d/e")).ok());
  Status s = fs_->DeleteDir(Path("d"));
  EXPECT_TRUE(s.IsIOError()) << s;
  EXPECT_THAT(s.message(), HasSubstr("not empty"));
  ASSERT_TRUE(fs_->DeleteDir(Path("d/e")).ok());
  ASSERT_TRUE(fs_->DeleteDir(Path("d")).ok());
  EXPECT_FALSE(*fs_->Exists(Path("d")));
}

TEST_P(FileSystemTest, ListFilesIsRecursiveSortedAndSized) {
  ASSERT_TRUE(fs_->CreateDirs(Path("l/a/b")).ok());
  ASSERT_TRUE(fs_->CreateDirs(Path("l/empty")).ok());
  Write("l/z", "1");
  Write("l/a/b/c", "22");
  Write("l/a-b", "333");
  Write("l/a/x", "");
  Result<std::vector<FileEntry>> entries = fs_->ListFiles(Path("l"));
  ASSERT_TRUE(entries.ok()) << entries.status();
  std::vector<std::pair<std::string, int64_t>> got;
  for (const FileEntry& e : *entries) got.emplace_back(e.relative_path, e.size);
  EXPECT_THAT(got, ElementsAre(std::pair<std::string, int64_t>("a-b", 3),
                               std::pair<std::string, int64_t>("a/b/c", 2),
                               std::pair<std::string, int64_t>("a/x", 0),
                               std::pair<std::string, int64_t>("z", 1)));
  // A sibling sorting between "a" and "a/..." ("a-b") must not end the listing of "a".
  Result<std::vector<FileEntry>> below_a = fs_->ListFiles(Path("l/a"));
  ASSERT_TRUE(below_a.ok()) << below_a.status();
  ASSERT_EQ(below_a->size(), 2u);
  EXPECT_EQ((*below_a)[0].relative_path, "b/c");
  EXPECT_EQ((*below_a)[1].relative_path, "x");
  EXPECT_TRUE(fs_->ListFiles(Path("missing")).status().IsNotFound());
}

TEST_P(FileSystemTest, RemoveTreeRemovesEverythingBelowAndToleratesAbsence) {
  ASSERT_TRUE(fs_->CreateDirs(Path("t/a/b")).ok());
  Write("t/a/b/f", "x");
  Write("t/g", "y");
  Write("keep", "z");
  ASSERT_TRUE(fs_->RemoveTree(Path("t")).ok());
  EXPECT_FALSE(*fs_->Exists(Path("t")));
  EXPECT_EQ(Read("keep"), "z");
  EXPECT_TRUE(fs_->RemoveTree(Path("t")).ok());
  ASSERT_TRUE(fs_->RemoveTree(Path("keep")).ok());
  EXPECT_FALSE(*fs_->Exists(Path("keep")));
}

TEST_P(FileSystemTest, SyncDirOfMissingDirectoryIsNotFound) {
  EXPECT_TRUE(fs_->SyncDir(root_).ok());
  EXPECT_TRUE(fs_->SyncDir(Path("missing")).IsNotFound());
}

TEST_P(FileSystemTest, ThreadsWritingTheirOwnFilesDoNotInterfere) {
  constexpr int kThreads = 4;
  constexpr int kFiles = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kFiles; ++i) {
        std::string name = Path("t" + std::to_string(t) + "-" + std::to_string(i));
        auto file = fs_->NewWritableFile(name, OpenMode::kCreateNew);
        ASSERT_TRUE(file.ok()) << file.status();
        for (int k = 0; k < 10; ++k) ASSERT_TRUE((*file)->Append(name).ok());
        ASSERT_TRUE((*file)->Close().ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kFiles; ++i) {
      std::string name = Path("t" + std::to_string(t) + "-" + std::to_string(i));
      std::string expected;
      for (int k = 0; k < 10; ++k) expected += name;
      EXPECT_EQ(Str(*fs_->ReadFile(name)), expected);
    }
  }
}

TEST(PathTest, JoinAndParent) {
  EXPECT_EQ(JoinPath("/a", "b"), "/a/b");
  EXPECT_EQ(JoinPath("/a/", "b"), "/a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(ParentDir("/a/b"), "/a");
  EXPECT_EQ(ParentDir("/a"), "/");
  EXPECT_EQ(ParentDir("a/b"), "a");
  EXPECT_EQ(ParentDir("a"), "");
}

INSTANTIATE_TEST_SUITE_P(AllFileSystems, FileSystemTest,
                         ::testing::Values("posix", "memory", "fault_over_posix",
                                           "fault_over_memory"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::io
