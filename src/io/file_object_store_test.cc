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

// Files outside the root that links inside it point at, and what must become of them.
class SymlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    fs::create_directories(outside() / "sub");
    Write(outside() / "precious", "keep me");
    Write(outside() / "sub" / "deep", "keep me too");
    store_ = OpenOrDie(PosixFileSystem(), root().string());
    ASSERT_TRUE(store_->Put("data/real", "r").ok());
    fs::create_directory_symlink(outside(), root() / "data" / "evil");
    fs::create_symlink(outside() / "precious", root() / "data" / "file-link");
    fs::create_directory_symlink(outside(), root() / "linked-dir");
  }
  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  void ExpectOutsideIntact() {
    std::ifstream precious(outside() / "precious");
    std::string text;
    std::getline(precious, text);
    EXPECT_EQ(text, "keep me");
    EXPECT_TRUE(std::filesystem::exists(outside() / "sub" / "deep"));
  }
  std::filesystem::path outside() const { return dir_.path() / "outside"; }
  std::filesystem::path root() const { return dir_.path() / "root"; }

  strata::testing::TempDir dir_{"fos-links"};
  std::shared_ptr<ObjectStore> store_;
};

TEST_F(SymlinkTest, ListingNeverFollowsALink) {
  Result<std::vector<ObjectMeta>> listed = store_->List("");
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> keys;
  for (const ObjectMeta& object : *listed) keys.push_back(object.key);
  EXPECT_THAT(keys, ElementsAre("data/real"));
  EXPECT_TRUE(store_->List("data/evil/")->empty());
  EXPECT_TRUE(store_->List("linked-dir/")->empty());
  EXPECT_TRUE(store_->List("linked-dir/sub/")->empty());
}

TEST_F(SymlinkTest, DeletesNeverReachThroughALink) {
  EXPECT_EQ(*store_->DeletePrefix(""), 1);  // data/real only
  for (std::string_view key : {"data/evil/precious", "linked-dir/sub/deep"}) {
    Status s = store_->Delete(key);
    EXPECT_TRUE(s.IsIOError()) << key << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("is a symbolic link"));
  }
  EXPECT_TRUE(store_->DeletePrefix("linked-dir/").ok());
  // A link that is the object itself is removed as a link, never its target.
  EXPECT_TRUE(store_->Delete("data/file-link").ok());
  EXPECT_FALSE(std::filesystem::is_symlink(root() / "data" / "file-link"));
  ExpectOutsideIntact();
}

TEST_F(SymlinkTest, ReadsAndWritesRefuseALink) {
  for (std::string_view key : {"data/evil/precious", "data/file-link", "linked-dir/sub/deep"}) {
    SCOPED_TRACE(key);
    Result<Buffer> got = store_->Get(key);
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(), HasSubstr("is a symbolic link"));
    EXPECT_FALSE(store_->GetRange(key, 0, 1).ok());
    EXPECT_FALSE(store_->Head(key).ok());
    EXPECT_FALSE(store_->Copy(key, "copied").ok());
  }
  EXPECT_FALSE(store_->Put("data/evil/new", "x").ok());
  EXPECT_FALSE(store_->PutIfAbsent("linked-dir/sub/new", "x").ok());
  EXPECT_FALSE(store_->CreateAppendable("data/evil/log").ok());
  EXPECT_FALSE(store_->Copy("data/real", "data/evil/copy").ok());
  EXPECT_FALSE(std::filesystem::exists(outside() / "new"));
  EXPECT_FALSE(std::filesystem::exists(outside() / "log"));
  EXPECT_FALSE(std::filesystem::exists(outside() / "copy"));
  EXPECT_FALSE(std::filesystem::exists(outside() / "sub" / "new"));
  ExpectOutsideIntact();
}

TEST_F(SymlinkTest, ALinkPlacedAfterReadsIsStillRefused) {
  // Reads that found the path link-free remember nothing: a directory replaced by a link
  // later is refused on the next read.
  namespace fs = std::filesystem;
  ASSERT_TRUE(store_->Put("later/precious", "inside").ok());
  EXPECT_EQ(store_->Get("later/precious")->view(), "inside");
  EXPECT_EQ(store_->Head("later/precious")->size, 6);
  fs::remove_all(root() / "later");
  fs::create_directory_symlink(outside(), root() / "later");
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<ObjectMeta> head = store_->Head("later/precious");
    ASSERT_FALSE(head.ok());
    EXPECT_THAT(head.status().message(), HasSubstr("is a symbolic link"));
    EXPECT_FALSE(store_->Get("later/precious").ok());
  }
  // A missing object is NotFound, also once a link was met.
  EXPECT_TRUE(store_->Head("data/none").status().IsNotFound());
  EXPECT_EQ(store_->Get("data/real")->view(), "r");
  ExpectOutsideIntact();
}

TEST_F(SymlinkTest, TheRootItselfMayBeALink) {
  std::filesystem::create_directory_symlink(root(), dir_.path() / "root-link");
  auto via_link = OpenOrDie(PosixFileSystem(), (dir_.path() / "root-link").string());
  // Reads through the link above the root work, the first and every later one.
  for (int attempt = 0; attempt < 3; ++attempt) {
    EXPECT_EQ(via_link->Get("data/real")->view(), "r");
    EXPECT_EQ(via_link->Head("data/real")->size, 1);
    EXPECT_TRUE(via_link->Head("data/none").status().IsNotFound());
  }
  EXPECT_FALSE(via_link->Head("data/file-link").ok());
  EXPECT_EQ(via_link->List("")->size(), 1u);
}

}  // namespace
}  // namespace strata::io
