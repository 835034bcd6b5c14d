// FaultInjectionFileSystem's injected failures, over the posix and the memory file system.
#include "io/fault_injection_file_system.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "io/memory_file_system.h"
#include "support/temp_dir.h"

namespace strata::io {
namespace {

using ::testing::HasSubstr;

class FaultInjectionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::shared_ptr<FileSystem> base;
    if (GetParam() == "posix") {
      base = PosixFileSystem();
      root_ = temp_.str();
    } else {
      base = std::make_shared<MemoryFileSystem>();
      root_ = "/fault";
      ASSERT_TRUE(base->CreateDirs(root_).ok());
    }
    fs_ = std::make_shared<FaultInjectionFileSystem>(base);
  }

  std::string Path(const std::string& name) const { return JoinPath(root_, name); }

  std::unique_ptr<WritableFile> Open(const std::string& name) {
    auto file = fs_->NewWritableFile(Path(name), OpenMode::kCreateOrTruncate);
    EXPECT_TRUE(file.ok()) << file.status();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  std::string Contents(const std::string& name) {
    Result<Buffer> data = fs_->ReadFile(Path(name));
    return data.ok() ? std::string(data->view()) : data.status().ToString();
  }

  strata::testing::TempDir temp_{"fault"};
  std::shared_ptr<FaultInjectionFileSystem> fs_;
  std::string root_;
};

TEST_P(FaultInjectionTest, NthWriteCountedFromArmingFailsAndNothingElse) {
  auto file = Open("f");
  ASSERT_TRUE(file->Append("before-").ok());  // not counted: not armed yet
  fs_->FailNth(FaultOp::kWrite, 2);
  ASSERT_TRUE(file->Append("1-").ok());
  Status s = file->Append("2-");
  EXPECT_TRUE(s.IsIOError()) << s;
  EXPECT_THAT(s.message(), HasSubstr("injected"));
  EXPECT_THAT(s.message(), HasSubstr(Path("f")));
  ASSERT_TRUE(file->Append("3").ok());
  EXPECT_EQ(fs_->injected_faults(), 1);
  EXPECT_EQ(Contents("f"), "before-1-3");  // the failed write wrote nothing
}

TEST_P(FaultInjectionTest, NthSyncCountsFileAndDirectorySyncs) {
  auto file = Open("f");
  fs_->FailNth(FaultOp::kSync, 3);
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(fs_->SyncDir(root_).ok());
  EXPECT_TRUE(file->Sync().IsIOError());
  EXPECT_TRUE(fs_->SyncDir(root_).ok());
  fs_->FailNth(FaultOp::kSync, 1);
  EXPECT_TRUE(fs_->SyncDir(root_).IsIOError());
  EXPECT_EQ(fs_->injected_faults(), 2);
}

TEST_P(FaultInjectionTest, FailedRenameAndLinkChangeNoName) {
  ASSERT_TRUE(fs_->WriteFile(Path("a"), "A", true).ok());
  ASSERT_TRUE(fs_->WriteFile(Path("b"), "B", true).ok());
  fs_->FailNth(FaultOp::kRename, 1);
  EXPECT_TRUE(fs_->RenameFile(Path("a"), Path("b")).IsIOError());
  EXPECT_EQ(Contents("a"), "A");
  EXPECT_EQ(Contents("b"), "B");
  fs_->FailNth(FaultOp::kLink, 1);
  EXPECT_TRUE(fs_->LinkFile(Path("a"), Path("c")).IsIOError());
  EXPECT_FALSE(*fs_->Exists(Path("c")));
  // Disarmed after firing.
  EXPECT_TRUE(fs_->RenameFile(Path("a"), Path("b")).ok());
  EXPECT_TRUE(fs_->LinkFile(Path("b"), Path("c")).ok());
  EXPECT_EQ(fs_->injected_faults(), 2);
}

TEST_P(FaultInjectionTest, NoSpaceFailsEveryWriteUntilCleared) {
  auto file = Open("f");
  fs_->SetNoSpace(true);
  for (int i = 0; i < 3; ++i) {
    Status s = file->Append("x");
    EXPECT_TRUE(IsNoSpace(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(Path("f")));
  }
  EXPECT_TRUE(file->Sync().ok());  // only writes fail
  fs_->SetNoSpace(false);
  EXPECT_TRUE(file->Append("ok").ok());
  EXPECT_EQ(Contents("f"), "ok");
}

TEST_P(FaultInjectionTest, ClearFaultsDisarmsEverything) {
  auto file = Open("f");
  fs_->FailNth(FaultOp::kWrite, 1);
  fs_->FailNth(FaultOp::kSync, 1);
  fs_->SetNoSpace(true);
  fs_->ClearFaults();
  EXPECT_TRUE(file->Append("x").ok());
  EXPECT_TRUE(file->Sync().ok());
  EXPECT_EQ(fs_->injected_faults(), 0);
}

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectionTest, ::testing::Values("posix", "memory"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::io
