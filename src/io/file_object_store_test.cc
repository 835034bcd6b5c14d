// What FileObjectStore adds to the ObjectStore contract: temp files, fsync discipline,
// mmap reads, directories, and its own keys' limits.
#include "io/file_object_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "io/memory_file_system.h"
#include "support/temp_dir.h"

namespace strata::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

bool IsMapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(path) != std::string::npos) return true;
  }
  return false;
}

std::shared_ptr<ObjectStore> OpenOrDie(std::shared_ptr<FileSystem> fs, const std::string& root,
                                       LocalObjectStoreOptions options = {}) {
  Result<std::shared_ptr<ObjectStore>> store = NewFileObjectStore(std::move(fs), root, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *store : nullptr;
}

TEST(FileObjectStoreTest, TempFilesAreNeverListedAndTheirNamesAreReserved) {
  auto fs = std::make_shared<MemoryFileSystem>();
  auto store = OpenOrDie(fs, "/s");
  ASSERT_TRUE(store->Put("d/real", "x").ok());
  // What a crash between writing and renaming leaves behind.
  ASSERT_TRUE(fs->WriteFile("/s/d/.strata-tmp-deadbeef-1-1", "partial", true).ok());
  EXPECT_EQ(store->List("")->size(), 1u);
  EXPECT_EQ((*store->List("d/"))[0].key, "d/real");
  for (std::string_view key : {".strata-tmp-x", "d/.strata-tmp-1", ".strata-tmp-dir/k"}) {
    Status s = store->Put(key, "x");
    EXPECT_TRUE(s.IsInvalidArgument()) << key << ": " << s;
  }
  EXPECT_TRUE(store->Get("d/.strata-tmp-deadbeef-1-1").status().IsInvalidArgument());
}

TEST(FileObjectStoreTest, SuccessfulPutsLeaveNoTempFiles) {
  auto fs = std::make_shared<MemoryFileSystem>();
  auto store = OpenOrDie(fs, "/s");
  ASSERT_TRUE(store->Put("a/b", "1").ok());
  ASSERT_TRUE(store->Put("a/b", "2").ok());
  ASSERT_TRUE(store->PutIfAbsent("a/c", "3").ok());
  ASSERT_TRUE(store->PutIfAbsent("a/c", "4").IsAlreadyExists());
  std::vector<std::string> files;
  Result<std::vector<FileEntry>> entries = fs->ListFiles("/s");
  ASSERT_TRUE(entries.ok()) << entries.status();
  for (const FileEntry& e : *entries) files.push_back(e.relative_path);
  EXPECT_THAT(files, ElementsAre("a/b", "a/c"));
}

TEST(FileObjectStoreTest, SyncedPutSyncsTheFileAndItsDirectoryUnsyncedPutSyncsNothing) {
  auto fs = std::make_shared<MemoryFileSystem>();
  auto synced = OpenOrDie(fs, "/s");
  ASSERT_TRUE(synced->Put("a/b/c", "x").ok());  // first put into new directories
  int64_t file_syncs = fs->file_syncs();
  int64_t dir_syncs = fs->dir_syncs();
  ASSERT_TRUE(synced->Put("a/b/d", "y").ok());  // directories known durable now
  EXPECT_EQ(fs->file_syncs() - file_syncs, 1);
  EXPECT_EQ(fs->dir_syncs() - dir_syncs, 1);

  LocalObjectStoreOptions no_sync;
  no_sync.sync = false;
  auto unsynced = OpenOrDie(fs, "/s", no_sync);
  file_syncs = fs->file_syncs();
  dir_syncs = fs->dir_syncs();
  ASSERT_TRUE(unsynced->Put("a/b/e", "z").ok());
  ASSERT_TRUE(unsynced->PutIfAbsent("new/dir/f", "z").ok());
  ASSERT_TRUE(unsynced->Delete("a/b/e").ok());
  EXPECT_EQ(fs->file_syncs(), file_syncs);
  EXPECT_EQ(fs->dir_syncs(), dir_syncs);
}

TEST(FileObjectStoreTest, ObjectsAboveTheThresholdAreMappedNotCopied) {
  strata::testing::TempDir dir("fos");
  std::string root = std::filesystem::canonical(dir.path()).string();
  LocalObjectStoreOptions options;
  options.mmap_threshold = 4096;
  auto store = OpenOrDie(PosixFileSystem(), root, options);
  ASSERT_TRUE(store->Put("small", std::string(4096, 's')).ok());
  ASSERT_TRUE(store->Put("large", std::string(4097, 'l')).ok());
  {
    Result<Buffer> small = store->Get("small");
    Result<Buffer> large = store->Get("large");
    ASSERT_TRUE(small.ok() && large.ok());
    EXPECT_FALSE(IsMapped(root + "/small"));
    EXPECT_TRUE(IsMapped(root + "/large"));
    // Replacing the object does not disturb a reader holding the old mapping.
    ASSERT_TRUE(store->Put("large", std::string(10000, 'n')).ok());
    EXPECT_EQ(large->view(), std::string(4097, 'l'));
  }
  EXPECT_FALSE(IsMapped(root + "/large"));
}

TEST(FileObjectStoreTest, OpeningCreatesTheRootAndDeletePrefixRemovesEmptiedDirectories) {
  strata::testing::TempDir dir("fos");
  std::string root = (dir / "deep/er/root").string();
  Result<std::shared_ptr<ObjectStore>> store = OpenLocalObjectStore(root);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(std::filesystem::is_directory(root));
  EXPECT_EQ((*store)->Describe(), "file://" + root);
  ASSERT_TRUE((*store)->Put("t/a/b/1", "x").ok());
  ASSERT_TRUE((*store)->Put("t/a/2", "x").ok());
  ASSERT_TRUE((*store)->Put("keep/1", "x").ok());
  EXPECT_EQ(*(*store)->DeletePrefix("t/"), 2);
  EXPECT_FALSE(std::filesystem::exists(root + "/t"));
  EXPECT_TRUE(std::filesystem::exists(root + "/keep/1"));
  EXPECT_EQ(*(*store)->DeletePrefix(""), 1);
  EXPECT_TRUE(std::filesystem::is_directory(root));  // the root itself stays
  EXPECT_FALSE(std::filesystem::exists(root + "/keep"));
}

TEST(FileObjectStoreTest, AKeyCannotAlsoBeADirectoryOfKeys) {
  auto store = OpenOrDie(std::make_shared<MemoryFileSystem>(), "/s");
  ASSERT_TRUE(store->Put("a", "file").ok());
  Status s = store->Put("a/b", "below a file");
  EXPECT_TRUE(s.IsIOError()) << s;
  EXPECT_THAT(s.message(), HasSubstr("a/b"));
  EXPECT_EQ(store->Get("a")->view(), "file");
  EXPECT_TRUE(store->Get("a/b").status().IsNotFound());
}

TEST(FileObjectStoreTest, EmptyRootIsRejected) {
  EXPECT_TRUE(NewFileObjectStore(std::make_shared<MemoryFileSystem>(), "", {})
                  .status()
                  .IsInvalidArgument());
}

}  // namespace
}  // namespace strata::io
