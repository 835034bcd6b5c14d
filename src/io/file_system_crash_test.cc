// The crash model shared by MemoryFileSystem::SimulateCrash and
// FaultInjectionFileSystem::SimulateCrash (over posix and over memory): what was synced
// survives, what was not is rolled back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "io/fault_injection_file_system.h"
#include "io/file_system.h"
#include "io/memory_file_system.h"
#include "support/temp_dir.h"

namespace strata::io {
namespace {

class FileSystemCrashTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& kind = GetParam();
    if (kind == "memory") {
      auto memory = std::make_shared<MemoryFileSystem>();
      crash_ = [memory] {
        memory->SimulateCrash();
        return Status::OK();
      };
      fs_ = memory;
      root_ = "/crash";
      // The root must be durable itself, like a directory that existed before the test.
      ASSERT_TRUE(fs_->CreateDirs(root_).ok());
      ASSERT_TRUE(fs_->SyncDir("/").ok());
    } else {
      std::shared_ptr<FileSystem> base;
      if (kind == "fault_over_posix") {
        base = PosixFileSystem();
        root_ = temp_.str();  // existed before the wrapper: durable
      } else {
        base = std::make_shared<MemoryFileSystem>();
        root_ = "/crash";
        ASSERT_TRUE(base->CreateDirs(root_).ok());
      }
      auto fault = std::make_shared<FaultInjectionFileSystem>(base);
      crash_ = [fault] { return fault->SimulateCrash(); };
      fs_ = fault;
    }
  }

  std::string Path(const std::string& name) const { return JoinPath(root_, name); }

  // Writes and syncs a file and its directory entry: durable.
  void WriteDurable(const std::string& name, std::string_view data) {
    ASSERT_TRUE(fs_->WriteFile(Path(name), data, /*sync=*/true).ok());
    ASSERT_TRUE(fs_->SyncDir(std::string(ParentDir(Path(name)))).ok());
  }

  void Crash() { ASSERT_TRUE(crash_().ok()); }

  // Contents after the crash, or "<missing>".
  std::string Contents(const std::string& name) {
    Result<Buffer> data = fs_->ReadFile(Path(name));
    if (data.status().IsNotFound()) return "<missing>";
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() ? std::string(data->view()) : "<error>";
  }

  strata::testing::TempDir temp_{"crash"};
  std::shared_ptr<FileSystem> fs_;
  std::function<Status()> crash_;
  std::string root_;
};

TEST_P(FileSystemCrashTest, SyncedDataUnderSyncedEntriesSurvives) {
  std::vector<std::string> created;
  ASSERT_TRUE(fs_->CreateDirs(Path("d/e"), &created).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  ASSERT_TRUE(fs_->SyncDir(Path("d")).ok());
  WriteDurable("d/e/f", "durable");
  WriteDurable("top", "also durable");
  Crash();
  EXPECT_EQ(Contents("d/e/f"), "durable");
  EXPECT_EQ(Contents("top"), "also durable");
}

TEST_P(FileSystemCrashTest, BytesAppendedAfterTheLastSyncAreDropped) {
  auto file = fs_->NewWritableFile(Path("log"), OpenMode::kCreateNew);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("synced|").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("not synced").ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  EXPECT_EQ(Contents("log"), "synced|not synced");
  file->reset();
  Crash();
  EXPECT_EQ(Contents("log"), "synced|");
}

TEST_P(FileSystemCrashTest, FileWithDurableNameButNoSyncComesBackEmpty) {
  ASSERT_TRUE(fs_->WriteFile(Path("f"), "never synced", /*sync=*/false).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  Crash();
  EXPECT_EQ(Contents("f"), "");
}

TEST_P(FileSystemCrashTest, NewFileWithoutDirectorySyncDisappears) {
  ASSERT_TRUE(fs_->WriteFile(Path("f"), "synced data", /*sync=*/true).ok());
  Crash();
  EXPECT_EQ(Contents("f"), "<missing>");
}

TEST_P(FileSystemCrashTest, RenameWithoutDirectorySyncIsUndone) {
  WriteDurable("obj", "old");
  ASSERT_TRUE(fs_->WriteFile(Path("tmp"), "new", /*sync=*/true).ok());
  ASSERT_TRUE(fs_->RenameFile(Path("tmp"), Path("obj")).ok());
  EXPECT_EQ(Contents("obj"), "new");
  Crash();
  EXPECT_EQ(Contents("obj"), "old");
  EXPECT_EQ(Contents("tmp"), "<missing>");
}

TEST_P(FileSystemCrashTest, RenameFollowedByDirectorySyncSurvives) {
  WriteDurable("obj", "old");
  ASSERT_TRUE(fs_->WriteFile(Path("tmp"), "new", /*sync=*/true).ok());
  ASSERT_TRUE(fs_->RenameFile(Path("tmp"), Path("obj")).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  Crash();
  EXPECT_EQ(Contents("obj"), "new");
  EXPECT_EQ(Contents("tmp"), "<missing>");
}

TEST_P(FileSystemCrashTest, RenamedButUnsyncedDataIsLostEvenWithDirectorySync) {
  // The bug fsync-before-rename prevents: a durable name for data that never was.
  WriteDurable("obj", "old");
  ASSERT_TRUE(fs_->WriteFile(Path("tmp"), "new", /*sync=*/false).ok());
  ASSERT_TRUE(fs_->RenameFile(Path("tmp"), Path("obj")).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  Crash();
  EXPECT_EQ(Contents("obj"), "");
}

TEST_P(FileSystemCrashTest, UnlinkWithoutDirectorySyncIsUndone) {
  WriteDurable("obj", "still here");
  WriteDurable("gone", "bye");
  ASSERT_TRUE(fs_->DeleteFile(Path("obj")).ok());
  ASSERT_TRUE(fs_->DeleteFile(Path("gone")).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());  // makes both unlinks durable...
  WriteDurable("obj", "recreated");
  ASSERT_TRUE(fs_->DeleteFile(Path("obj")).ok());  // ...but not this one
  Crash();
  EXPECT_EQ(Contents("obj"), "recreated");
  EXPECT_EQ(Contents("gone"), "<missing>");
}

TEST_P(FileSystemCrashTest, LinkIsDurableOnlyAfterDirectorySync) {
  ASSERT_TRUE(fs_->CreateDirs(Path("a")).ok());
  ASSERT_TRUE(fs_->CreateDirs(Path("b")).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  WriteDurable("a/src", "payload");
  ASSERT_TRUE(fs_->LinkFile(Path("a/src"), Path("a/synced")).ok());
  ASSERT_TRUE(fs_->LinkFile(Path("a/src"), Path("b/unsynced")).ok());
  ASSERT_TRUE(fs_->SyncDir(Path("a")).ok());
  Crash();
  EXPECT_EQ(Contents("a/synced"), "payload");
  EXPECT_EQ(Contents("b/unsynced"), "<missing>");
}

TEST_P(FileSystemCrashTest, FilesInADirectoryWhoseOwnEntryIsNotDurableAreLost) {
  ASSERT_TRUE(fs_->CreateDirs(Path("new/sub")).ok());
  ASSERT_TRUE(fs_->SyncDir(Path("new")).ok());
  WriteDurable("new/sub/f", "x");  // synced file and entry, but "new" itself is not
  Crash();
  EXPECT_EQ(Contents("new/sub/f"), "<missing>");
  EXPECT_FALSE(*fs_->Exists(Path("new")));
}

TEST_P(FileSystemCrashTest, DirectoryRemovalWithoutParentSyncIsUndone) {
  ASSERT_TRUE(fs_->CreateDirs(Path("d")).ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  ASSERT_TRUE(fs_->DeleteDir(Path("d")).ok());
  Crash();
  ASSERT_TRUE(*fs_->Exists(Path("d")));
  EXPECT_TRUE(fs_->Stat(Path("d"))->is_directory);
}

TEST_P(FileSystemCrashTest, CrashWithNothingPendingChangesNothing) {
  WriteDurable("f", "x");
  Crash();
  Crash();
  EXPECT_EQ(Contents("f"), "x");
}

INSTANTIATE_TEST_SUITE_P(CrashModels, FileSystemCrashTest,
                         ::testing::Values("memory", "fault_over_posix", "fault_over_memory"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::io
