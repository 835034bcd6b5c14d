// The ObjectStore contract (include/strata/object_store.h), checked against every store:
// local files, memory, and the file store over the in-memory file system.
#include "strata/object_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/file_object_store.h"
#include "io/file_system.h"
#include "io/inotify_watch.h"
#include "io/memory_file_system.h"
#include "io/watch_batch.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Keys(const std::vector<ObjectMeta>& objects) {
  std::vector<std::string> keys;
  for (const ObjectMeta& meta : objects) keys.push_back(meta.key);
  return keys;
}

// Binary data with NULs and every byte value.
std::string Binary(size_t size, int seed) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 7 + seed) % 256);
  return out;
}

class ObjectStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& kind = GetParam();
    if (kind == "memory") {
      store_ = NewMemoryObjectStore();
      return;
    }
    LocalObjectStoreOptions options;
    if (kind == "local_mmap_all") options.mmap_threshold = 0;
    if (kind == "local_no_sync") options.sync = false;
    Result<std::shared_ptr<ObjectStore>> store = Status::Internal("unset");
    if (kind == "file_over_memory_fs") {
      store = io::NewFileObjectStore(std::make_shared<io::MemoryFileSystem>(), "/objects", options);
    } else {
      store = OpenLocalObjectStore((temp_ / "store").string(), options);
    }
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }

  std::string GetString(std::string_view key) {
    Result<Buffer> data = store_->Get(key);
    EXPECT_TRUE(data.ok()) << key << ": " << data.status();
    return data.ok() ? std::string(data->view()) : "<error>";
  }

  strata::testing::TempDir temp_{"objects"};
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreTest, PutThenGetReturnsExactlyTheBytes) {
  const std::string big = Binary(3 << 20, 1);  // above the default mmap threshold
  ASSERT_TRUE(store_->Put("a/b/c", "hello").ok());
  ASSERT_TRUE(store_->Put("empty", "").ok());
  ASSERT_TRUE(store_->Put("bin", Binary(1000, 2)).ok());
  ASSERT_TRUE(store_->Put("big/object", big).ok());
  EXPECT_EQ(GetString("a/b/c"), "hello");
  EXPECT_EQ(GetString("empty"), "");
  EXPECT_EQ(GetString("bin"), Binary(1000, 2));
  EXPECT_EQ(GetString("big/object"), big);
  EXPECT_FALSE(store_->Describe().empty());
}

TEST_P(ObjectStoreTest, PutReplacesTheWholeObject) {
  ASSERT_TRUE(store_->Put("k", "a much longer first version").ok());
  ASSERT_TRUE(store_->Put("k", "v2").ok());
  EXPECT_EQ(GetString("k"), "v2");
  EXPECT_EQ(*store_->Size("k"), 2);
}

TEST_P(ObjectStoreTest, MissingObjectsAreNotFoundEverywhere) {
  ASSERT_TRUE(store_->Put("dir/present", "x").ok());
  for (std::string_view key : {"missing", "dir/missing", "dir", "dir/present/below"}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(store_->Get(key).status().IsNotFound()) << store_->Get(key).status();
    EXPECT_TRUE(store_->GetRange(key, 0, 1).status().IsNotFound());
    EXPECT_TRUE(store_->Head(key).status().IsNotFound());
    EXPECT_TRUE(store_->Delete(key).IsNotFound());
    EXPECT_FALSE(*store_->Exists(key));
  }
}

TEST_P(ObjectStoreTest, GetRangeReturnsTheBytesThatExist) {
  ASSERT_TRUE(store_->Put("r", "0123456789").ok());
  EXPECT_EQ(store_->GetRange("r", 3, 4)->view(), "3456");
  EXPECT_EQ(store_->GetRange("r", 7, 100)->view(), "789");
  EXPECT_EQ(store_->GetRange("r", 10, 1)->size(), 0);
  EXPECT_EQ(store_->GetRange("r", 0, 0)->size(), 0);
  EXPECT_TRUE(store_->GetRange("r", 11, 1).status().IsInvalidArgument());
  EXPECT_TRUE(store_->GetRange("r", -1, 1).status().IsInvalidArgument());
  EXPECT_TRUE(store_->GetRange("r", 0, -1).status().IsInvalidArgument());
}

TEST_P(ObjectStoreTest, HeadReportsKeyAndSize) {
  ASSERT_TRUE(store_->Put("x/y", std::string(1234, 'z')).ok());
  Result<ObjectMeta> meta = store_->Head("x/y");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->key, "x/y");
  EXPECT_EQ(meta->size, 1234);
  EXPECT_TRUE(*store_->Exists("x/y"));
}

TEST_P(ObjectStoreTest, ListReturnsSortedKeysStartingWithThePrefix) {
  for (std::string_view key : {"b", "a/2", "ab", "a/b/3", "a/1", "a-z", "c/d/e/f"}) {
    ASSERT_TRUE(store_->Put(key, std::string(key)).ok());
  }
  EXPECT_THAT(Keys(*store_->List("")),
              ElementsAre("a-z", "a/1", "a/2", "a/b/3", "ab", "b", "c/d/e/f"));
  EXPECT_THAT(Keys(*store_->List("a/")), ElementsAre("a/1", "a/2", "a/b/3"));
  EXPECT_THAT(Keys(*store_->List("a")), ElementsAre("a-z", "a/1", "a/2", "a/b/3", "ab"));
  EXPECT_THAT(Keys(*store_->List("a/b")), ElementsAre("a/b/3"));
  EXPECT_THAT(Keys(*store_->List("c/d/")), ElementsAre("c/d/e/f"));
  EXPECT_THAT(Keys(*store_->List("zzz/")), IsEmpty());
  std::vector<ObjectMeta> listed = *store_->List("a/b/");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].size, 5);
}

TEST_P(ObjectStoreTest, DeleteRemovesOnlyThatKey) {
  ASSERT_TRUE(store_->Put("d/1", "1").ok());
  ASSERT_TRUE(store_->Put("d/2", "2").ok());
  ASSERT_TRUE(store_->Delete("d/1").ok());
  EXPECT_TRUE(store_->Get("d/1").status().IsNotFound());
  EXPECT_TRUE(store_->Delete("d/1").IsNotFound());
  EXPECT_EQ(GetString("d/2"), "2");
  EXPECT_THAT(Keys(*store_->List("d/")), ElementsAre("d/2"));
}

TEST_P(ObjectStoreTest, DeletePrefixRemovesEveryKeyUnderItAndCountsThem) {
  for (std::string_view key : {"t/1", "t/a/2", "t/a/b/3", "tt", "u/1"}) {
    ASSERT_TRUE(store_->Put(key, "x").ok());
  }
  Result<int64_t> removed = store_->DeletePrefix("t/");
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 3);
  EXPECT_THAT(Keys(*store_->List("")), ElementsAre("tt", "u/1"));
  EXPECT_EQ(*store_->DeletePrefix("t/"), 0);
  // The prefix is usable again after its directories went away.
  ASSERT_TRUE(store_->Put("t/a/b/3", "back").ok());
  EXPECT_EQ(GetString("t/a/b/3"), "back");
  EXPECT_EQ(*store_->DeletePrefix(""), 3);
  EXPECT_THAT(Keys(*store_->List("")), IsEmpty());
}

TEST_P(ObjectStoreTest, PutIfAbsentCreatesOnceAndNeverOverwrites) {
  ASSERT_TRUE(store_->PutIfAbsent("m/1", "first").ok());
  Status again = store_->PutIfAbsent("m/1", "second");
  EXPECT_TRUE(again.IsAlreadyExists()) << again;
  EXPECT_EQ(GetString("m/1"), "first");
  ASSERT_TRUE(store_->Put("m/2", "put").ok());
  EXPECT_TRUE(store_->PutIfAbsent("m/2", "x").IsAlreadyExists());
  EXPECT_EQ(GetString("m/2"), "put");
  EXPECT_THAT(Keys(*store_->List("m/")), ElementsAre("m/1", "m/2"));
}

TEST_P(ObjectStoreTest, CopyMakesANewObjectWithTheSameBytes) {
  ASSERT_TRUE(store_->Put("c/src", "payload").ok());
  ASSERT_TRUE(store_->Copy("c/src", "c/sub/dir/dst").ok());
  EXPECT_EQ(GetString("c/sub/dir/dst"), "payload");
  // The copy outlives its source.
  ASSERT_TRUE(store_->Delete("c/src").ok());
  EXPECT_EQ(GetString("c/sub/dir/dst"), "payload");
  EXPECT_THAT(Keys(*store_->List("c/")), ElementsAre("c/sub/dir/dst"));
}

TEST_P(ObjectStoreTest, CopyNeverOverwritesAndNeedsItsSource) {
  ASSERT_TRUE(store_->Put("c/a", "a").ok());
  ASSERT_TRUE(store_->Put("c/b", "b").ok());
  Status exists = store_->Copy("c/a", "c/b");
  EXPECT_TRUE(exists.IsAlreadyExists()) << exists;
  EXPECT_EQ(GetString("c/b"), "b");
  Status missing = store_->Copy("c/none", "c/d");
  EXPECT_TRUE(missing.IsNotFound()) << missing;
  EXPECT_FALSE(*store_->Exists("c/d"));
  EXPECT_TRUE(store_->Copy("c/a", "../escape").IsInvalidArgument());
}

TEST_P(ObjectStoreTest, CopyOfAClosedAppendableObjectHoldsEveryAppend) {
  auto log = store_->CreateAppendable("c/log");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("one,").ok());
  ASSERT_TRUE((*log)->Append("two").ok());
  ASSERT_TRUE((*log)->Sync().ok());
  ASSERT_TRUE((*log)->Close().ok());
  ASSERT_TRUE(store_->Copy("c/log", "c/linked").ok());
  EXPECT_EQ(GetString("c/linked"), "one,two");
}

TEST_P(ObjectStoreTest, UnsafeKeysAreRejectedBeforeAnythingIsWritten) {
  const std::vector<std::string> bad = {"",
                                        "/etc/passwd",
                                        "../escape",
                                        "a/../../b",
                                        "a//b",
                                        "./a",
                                        "a/.",
                                        "trailing/",
                                        "..",
                                        ".",
                                        std::string("nul\0byte", 8)};
  for (const std::string& key : bad) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(store_->Put(key, "x").IsInvalidArgument());
    EXPECT_TRUE(store_->PutIfAbsent(key, "x").IsInvalidArgument());
    EXPECT_TRUE(store_->Get(key).status().IsInvalidArgument());
    EXPECT_TRUE(store_->GetRange(key, 0, 1).status().IsInvalidArgument());
    EXPECT_TRUE(store_->Head(key).status().IsInvalidArgument());
    EXPECT_TRUE(store_->Delete(key).IsInvalidArgument());
    EXPECT_TRUE(store_->CreateAppendable(key).status().IsInvalidArgument());
  }
  for (std::string_view prefix : {"/abs/", "../", "a//", "a/../"}) {
    SCOPED_TRACE(prefix);
    EXPECT_TRUE(store_->List(prefix).status().IsInvalidArgument());
    EXPECT_TRUE(store_->DeletePrefix(prefix).status().IsInvalidArgument());
  }
  EXPECT_THAT(Keys(*store_->List("")), IsEmpty());
  // Nothing escaped the local store's root (temp_/store) either.
  std::vector<std::string> beside_root;
  for (const auto& entry : std::filesystem::directory_iterator(temp_.path())) {
    beside_root.push_back(entry.path().filename().string());
  }
  if (GetParam().starts_with("local")) {
    EXPECT_THAT(beside_root, ElementsAre("store"));
  } else {
    EXPECT_THAT(beside_root, IsEmpty());
  }
}

TEST_P(ObjectStoreTest, AppendableObjectGrowsAndGetSeesEveryAppendWhileOpen) {
  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("logs/a/1.log");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ((*log)->size(), 0);
  EXPECT_EQ(GetString("logs/a/1.log"), "");  // the name exists at once
  std::string expected;
  for (int i = 0; i < 40; ++i) {
    // Mixed sizes, across the memory store's block growth and the mmap threshold.
    const std::string piece = Binary(i % 7 == 0 ? 70000 : static_cast<size_t>(i) * 13, i);
    ASSERT_TRUE((*log)->Append(piece).ok());
    expected += piece;
    EXPECT_EQ((*log)->size(), static_cast<int64_t>(expected.size()));
    if (i % 5 == 0) {
      ASSERT_TRUE((*log)->Sync().ok());
    }
    if (i % 9 == 0) {
      ASSERT_EQ(GetString("logs/a/1.log"), expected) << i;
    }
  }
  ASSERT_TRUE((*log)->Sync().ok());
  EXPECT_EQ(GetString("logs/a/1.log"), expected);
  EXPECT_EQ(*store_->Size("logs/a/1.log"), static_cast<int64_t>(expected.size()));
  EXPECT_EQ(store_->GetRange("logs/a/1.log", 5, 10)->view(), expected.substr(5, 10));
  EXPECT_THAT(Keys(*store_->List("logs/")), ElementsAre("logs/a/1.log"));
  ASSERT_TRUE((*log)->Close().ok());
  EXPECT_EQ(GetString("logs/a/1.log"), expected);  // closing keeps the bytes
}

TEST_P(ObjectStoreTest, BuffersFromGetDoNotChangeWhileAppendsContinue) {
  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("l");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("first").ok());
  Result<Buffer> before = store_->Get("l");
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE((*log)->Append(Binary(100000, 3)).ok());
  EXPECT_EQ(before->view(), "first");
  EXPECT_EQ(GetString("l"), "first" + Binary(100000, 3));
}

TEST_P(ObjectStoreTest, CreateAppendableOfAnExistingKeyIsAlreadyExists) {
  ASSERT_TRUE(store_->Put("p", "put").ok());
  Result<std::unique_ptr<AppendableObject>> over = store_->CreateAppendable("p");
  EXPECT_TRUE(over.status().IsAlreadyExists()) << over.status();
  EXPECT_EQ(GetString("p"), "put");

  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("w/1");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("abc").ok());
  Result<std::unique_ptr<AppendableObject>> again = store_->CreateAppendable("w/1");
  EXPECT_TRUE(again.status().IsAlreadyExists()) << again.status();
  EXPECT_TRUE(store_->PutIfAbsent("w/1", "x").IsAlreadyExists());
  ASSERT_TRUE((*log)->Append("def").ok());
  EXPECT_EQ(GetString("w/1"), "abcdef");  // the loser did not truncate it
}

TEST_P(ObjectStoreTest, OfRacingAppendableCreatorsExactlyOneWins) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race/" + std::to_string(round) + "/seg.wal";
    std::vector<Status> results(kThreads);
    std::vector<std::unique_ptr<AppendableObject>> logs(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable(key);
        results[t] = log.status();
        if (log.ok()) logs[t] = std::move(*log);
      });
    }
    for (std::thread& thread : threads) thread.join();
    int winners = 0;
    for (int t = 0; t < kThreads; ++t) {
      if (results[t].ok()) {
        ++winners;
        ASSERT_TRUE(logs[t]->Append("winner " + std::to_string(t)).ok());
        EXPECT_EQ(GetString(key), "winner " + std::to_string(t));
      } else {
        EXPECT_TRUE(results[t].IsAlreadyExists()) << results[t];
      }
    }
    EXPECT_EQ(winners, 1) << key;
  }
}

TEST_P(ObjectStoreTest, AppendableCallsAfterCloseFail) {
  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("c/log");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("data").ok());
  ASSERT_TRUE((*log)->Close().ok());
  EXPECT_TRUE((*log)->Close().ok());  // idempotent
  Status append = (*log)->Append("more");
  EXPECT_TRUE(append.IsInvalidArgument()) << append;
  EXPECT_THAT(append.message(), ::testing::HasSubstr("c/log"));
  EXPECT_TRUE((*log)->Sync().IsInvalidArgument());
  EXPECT_EQ((*log)->size(), 4);
  EXPECT_EQ(GetString("c/log"), "data");
}

// A change watch's count moves with every change directly under its prefix, and stays put
// while nothing there changes (what lets a reader skip its re-check requests).
TEST_P(ObjectStoreTest, WatchCountsEveryChangeDirectlyUnderItsPrefix) {
  EXPECT_TRUE(store_->Watch("d").status().IsInvalidArgument());
  EXPECT_TRUE(store_->Watch("../").status().IsInvalidArgument());
  ASSERT_OK(store_->Put("d/a", "1"));
  Result<std::unique_ptr<ChangeWatch>> made = store_->Watch("d/");
  if (GetParam() == "file_over_memory_fs") {  // no kernel to tell it changes
    EXPECT_TRUE(made.status().IsNotSupported()) << made.status();
    return;
  }
  if (made.status().IsNotSupported()) GTEST_SKIP() << made.status();  // e.g. NFS
  ASSERT_OK(made.status());
  ChangeWatch& watch = **made;
  ASSERT_OK_AND_ASSIGN(uint64_t count, watch.Poll());
  auto moved = [&](std::string_view what) {
    Result<uint64_t> now = watch.Poll();
    EXPECT_TRUE(now.ok()) << what << ": " << now.status();
    const bool changed = now.ok() && *now != count;
    if (now.ok()) count = *now;
    return changed;
  };
  EXPECT_FALSE(moved("nothing"));
  ASSERT_OK(store_->Put("other/x", "1"));
  EXPECT_FALSE(moved("a put elsewhere"));
  EXPECT_TRUE(store_->Watch("missing/").status().IsNotFound() || GetParam() == "memory");

  {  // a second watch on the same directory, gone again: the first one still counts
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeWatch> second, store_->Watch("d/"));
    ASSERT_OK(second->Poll().status());
  }
  ASSERT_OK(store_->Put("d/b", "1"));
  EXPECT_TRUE(moved("a put"));
  ASSERT_OK(store_->Put("d/a", "2"));
  EXPECT_TRUE(moved("a put replacing"));
  ASSERT_OK(store_->PutIfAbsent("d/c", "1"));
  EXPECT_TRUE(moved("a put-if-absent"));
  EXPECT_TRUE(store_->PutIfAbsent("d/c", "2").IsAlreadyExists());
  ASSERT_OK(store_->Copy("d/a", "d/e"));
  EXPECT_TRUE(moved("a copy"));
  ASSERT_OK(store_->Delete("d/b"));
  EXPECT_TRUE(moved("a delete"));
  ASSERT_OK_AND_ASSIGN(auto log, store_->CreateAppendable("d/log"));
  EXPECT_TRUE(moved("an appendable object"));
  ASSERT_OK(log->Append("more"));
  EXPECT_TRUE(moved("an append"));
  ASSERT_OK(log->Close());
  EXPECT_FALSE(moved("nothing again"));

  // Gone with its directory: a local watch ends, the memory one counts the deletes.
  ASSERT_OK(store_->DeletePrefix("d/").status());
  Result<uint64_t> after = watch.Poll();
  if (GetParam() == "memory") {
    ASSERT_OK(after.status());
    EXPECT_NE(*after, count);
  } else {
    EXPECT_TRUE(after.status().IsNotFound()) << after.status();
  }
}

// A watch follows the directory it was made on: one removed and made again under the same
// path (while something still holds the old one, which delays the kernel's report of its
// removal) ends the watch rather than leaving it on the old directory, silent.
TEST(LocalObjectStoreWatchTest, EndsWhenItsDirectoryIsRemovedAndMadeAgainWhileHeld) {
  strata::testing::TempDir temp("watch-replaced");
  ASSERT_OK_AND_ASSIGN(auto store, OpenLocalObjectStore((temp / "store").string()));
  ASSERT_OK(store->Put("d/a", "1"));
  Result<std::unique_ptr<ChangeWatch>> watch = store->Watch("d/");
  if (watch.status().IsNotSupported()) GTEST_SKIP() << watch.status();
  ASSERT_OK(watch.status());
  ASSERT_OK((*watch)->Poll().status());
  const std::string dir = (temp / "store" / "d").string();
  const int held = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_OK(store->DeletePrefix("d/").status());
  ASSERT_OK(store->Put("d/a", "2"));
  EXPECT_TRUE((*watch)->Poll().status().IsNotFound());
  ::close(held);
  // A new watch on the new directory counts again.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeWatch> fresh, store->Watch("d/"));
  ASSERT_OK_AND_ASSIGN(uint64_t count, fresh->Poll());
  ASSERT_OK(store->Put("d/b", "1"));
  ASSERT_OK_AND_ASSIGN(uint64_t after, fresh->Poll());
  EXPECT_NE(after, count);
}

// Whether `watch` ended (NotFound), as it must once its path names another directory.
bool Ended(ChangeWatch& watch) {
  Result<uint64_t> polled = watch.Poll();
  EXPECT_TRUE(polled.ok() || polled.status().IsNotFound()) << polled.status();
  return polled.status().IsNotFound();
}

// The ways a path can come to name another directory, each seen by a watch on it: the
// directory moved away and another made in its place, an empty one renamed over it, and a
// directory above it moved away and replaced (no event reaches the watched directory then).
TEST(LocalObjectStoreWatchTest, EndsWhenItsPathComesToNameAnotherDirectory) {
  strata::testing::TempDir temp("watch-path");
  const std::filesystem::path root = temp / "store";
  ASSERT_OK_AND_ASSIGN(auto store, OpenLocalObjectStore(root.string()));
  auto watch = [&](const std::string& prefix) -> std::unique_ptr<ChangeWatch> {
    Result<std::unique_ptr<ChangeWatch>> made = store->Watch(prefix);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return nullptr;
    EXPECT_FALSE(Ended(**made));
    return std::move(*made);
  };
  ASSERT_OK(store->Put("a/b/c/x", "1"));
  Result<std::unique_ptr<ChangeWatch>> probe = store->Watch("a/");
  if (probe.status().IsNotSupported()) GTEST_SKIP() << probe.status();

  {  // moved away, another made in its place
    std::unique_ptr<ChangeWatch> c = watch("a/b/c/");
    ASSERT_NE(c, nullptr);
    std::filesystem::rename(root / "a/b/c", root / "a/b/c-old");
    std::filesystem::create_directory(root / "a/b/c");
    EXPECT_TRUE(Ended(*c));
  }
  {  // an empty directory renamed over it
    std::filesystem::create_directory(root / "a/b/e");
    std::unique_ptr<ChangeWatch> e = watch("a/b/e/");
    ASSERT_NE(e, nullptr);
    std::filesystem::create_directory(root / "a/b/f");
    std::filesystem::rename(root / "a/b/f", root / "a/b/e");
    EXPECT_TRUE(Ended(*e));
  }
  {  // a directory two levels up moved away and replaced
    std::unique_ptr<ChangeWatch> c = watch("a/b/c/");
    ASSERT_NE(c, nullptr);
    std::filesystem::rename(root / "a", root / "a-old");
    std::filesystem::create_directories(root / "a/b/c");
    EXPECT_TRUE(Ended(*c));
  }
  {  // the store's own directory moved away and made again
    std::unique_ptr<ChangeWatch> c = watch("a/b/c/");
    ASSERT_NE(c, nullptr);
    std::filesystem::rename(root, temp / "store-old");
    std::filesystem::create_directories(root / "a/b/c");
    EXPECT_TRUE(Ended(*c));
  }
}

// Mount points other than "/" at or above `path` (from /proc/self/mountinfo).
std::vector<std::string> MountsAbove(const std::filesystem::path& path) {
  std::vector<std::string> mounts;
  std::ifstream info("/proc/self/mountinfo");
  std::string line;
  while (std::getline(info, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point;
    fields >> id >> parent >> device >> root >> mount_point;
    if (mount_point == "/") continue;
    const std::string p = path.string();
    if (p == mount_point || p.starts_with(mount_point + "/")) mounts.push_back(mount_point);
  }
  return mounts;
}

// A watch tells from events whether its path still names its directory exactly when that can
// be trusted: an absolute, plain path whose way up to "/" crosses no other mount. Otherwise
// (a path with ".." in it, a mount on the way) it stats the path on each poll.
TEST(LocalObjectStoreWatchTest, WatchesThePathByEventsWhereEventsCanTell) {
  strata::testing::TempDir temp("watch-route");
  const std::filesystem::path root = std::filesystem::canonical(temp.path()) / "store";
  std::filesystem::create_directories(root / "d");
  std::filesystem::create_directories(root / "e");
  auto posix = io::PosixFileSystem();
  Result<std::unique_ptr<ChangeWatch>> plain = posix->WatchDir((root / "d").string());
  if (plain.status().IsNotSupported()) GTEST_SKIP() << plain.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  struct statx stx {};
  const bool kernel_tells_mounts =
      ::statx(AT_FDCWD, "/", AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &stx) == 0 &&
      (stx.stx_mask & STATX_MNT_ID) != 0 && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0;
  const std::vector<std::string> mounts = MountsAbove(root);
  EXPECT_EQ(io::WatchesPathByEvents(**plain), kernel_tells_mounts && mounts.empty())
      << "mounts on the way: " << ::testing::PrintToString(mounts);
  Result<std::unique_ptr<ChangeWatch>> dotted = posix->WatchDir((root / "e" / ".." / "d").string());
  ASSERT_TRUE(dotted.ok()) << dotted.status();
  EXPECT_FALSE(io::WatchesPathByEvents(**dotted));
  ASSERT_TRUE((*dotted)->Poll().ok());
  // Either way, the path moving away ends the watch.
  std::filesystem::rename(root / "d", root / "d-old");
  std::filesystem::create_directory(root / "d");
  EXPECT_TRUE((*plain)->Poll().status().IsNotFound());
  EXPECT_TRUE((*dotted)->Poll().status().IsNotFound());
}

// Changes beside a watched directory and above it (other entries made, removed or moved in
// its parent and further up) neither end the watch nor move its count.
TEST(LocalObjectStoreWatchTest, IgnoresChangesBesideAndAboveIt) {
  strata::testing::TempDir temp("watch-beside");
  const std::filesystem::path root = temp / "store";
  ASSERT_OK_AND_ASSIGN(auto store, OpenLocalObjectStore(root.string()));
  ASSERT_OK(store->Put("a/b/x", "1"));
  Result<std::unique_ptr<ChangeWatch>> watch = store->Watch("a/b/");
  if (watch.status().IsNotSupported()) GTEST_SKIP() << watch.status();
  ASSERT_OK(watch.status());
  ASSERT_OK_AND_ASSIGN(uint64_t count, (*watch)->Poll());
  ASSERT_OK(store->Put("a/bb/x", "1"));
  ASSERT_OK(store->Put("a/y", "1"));
  ASSERT_OK(store->Delete("a/y"));
  std::filesystem::rename(root / "a/bb", root / "a/cc");
  std::filesystem::create_directory(temp / "beside");
  std::filesystem::rename(temp / "beside", temp / "moved");
  {  // another watch on a sibling, made and gone, shares the parent's watch
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeWatch> sibling, store->Watch("a/cc/"));
    ASSERT_OK(sibling->Poll().status());
  }
  ASSERT_OK_AND_ASSIGN(uint64_t after, (*watch)->Poll());
  EXPECT_EQ(after, count);
  ASSERT_OK(store->Put("a/b/z", "1"));
  ASSERT_OK_AND_ASSIGN(after, (*watch)->Poll());
  EXPECT_NE(after, count);
}

// Within a io::ChangeWatchBatch, polls answer as of the batch's start: a change made before it is
// counted by the first poll, one made during it by the first poll after it (the local store
// looks at its events once per batch, so not before). Nested batches keep the outer moment.
TEST(LocalObjectStoreWatchTest, PollsInABatchAnswerAsOfItsStart) {
  strata::testing::TempDir temp("watch-batch");
  ASSERT_OK_AND_ASSIGN(auto store, OpenLocalObjectStore((temp / "store").string()));
  ASSERT_OK(store->Put("d/a", "1"));
  ASSERT_OK(store->Put("e/a", "1"));
  Result<std::unique_ptr<ChangeWatch>> d = store->Watch("d/");
  if (d.status().IsNotSupported()) GTEST_SKIP() << d.status();
  ASSERT_OK(d.status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeWatch> e, store->Watch("e/"));
  ASSERT_OK_AND_ASSIGN(uint64_t d_count, (*d)->Poll());
  ASSERT_OK_AND_ASSIGN(uint64_t e_count, e->Poll());
  EXPECT_EQ(io::ChangeWatchBatch::Current(), 0u);
  ASSERT_OK(store->Put("d/b", "1"));
  {
    const io::ChangeWatchBatch batch;
    const uint64_t id = io::ChangeWatchBatch::Current();
    EXPECT_NE(id, 0u);
    ASSERT_OK_AND_ASSIGN(uint64_t in_batch, (*d)->Poll());
    EXPECT_NE(in_batch, d_count) << "a change before the batch";
    d_count = in_batch;
    ASSERT_OK(store->Put("d/c", "1"));
    ASSERT_OK(store->Put("e/b", "1"));
    {
      const io::ChangeWatchBatch nested;
      EXPECT_EQ(io::ChangeWatchBatch::Current(), id);
      ASSERT_OK_AND_ASSIGN(in_batch, (*d)->Poll());
      EXPECT_EQ(in_batch, d_count) << "a change during the batch, not looked at yet";
      ASSERT_OK_AND_ASSIGN(in_batch, e->Poll());
      EXPECT_EQ(in_batch, e_count) << "another watch, as of the same moment";
    }
    EXPECT_EQ(io::ChangeWatchBatch::Current(), id);
  }
  EXPECT_EQ(io::ChangeWatchBatch::Current(), 0u);
  ASSERT_OK_AND_ASSIGN(uint64_t after, (*d)->Poll());
  EXPECT_NE(after, d_count);
  ASSERT_OK_AND_ASSIGN(after, e->Poll());
  EXPECT_NE(after, e_count);
  {  // a new batch looks afresh
    const io::ChangeWatchBatch batch;
    ASSERT_OK(store->Put("e/c", "1"));
    ASSERT_OK_AND_ASSIGN(e_count, e->Poll());
    EXPECT_NE(e_count, after);
  }
}

// tmpfs (/dev/shm) is among the file systems that are watched.
TEST(LocalObjectStoreWatchTest, WatchesOnTmpfs) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const std::string root = fmt::format("/dev/shm/strata-watch-{}", ::getpid());
  struct Remove {
    std::string root;
    ~Remove() { std::filesystem::remove_all(root); }
  } remove{root};
  ASSERT_OK_AND_ASSIGN(auto store, OpenLocalObjectStore(root));
  ASSERT_OK(store->Put("d/a", "1"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeWatch> watch, store->Watch("d/"));
  ASSERT_OK_AND_ASSIGN(uint64_t count, watch->Poll());
  ASSERT_OK(store->Put("d/b", "1"));
  ASSERT_OK_AND_ASSIGN(uint64_t after, watch->Poll());
  EXPECT_NE(after, count);
}

// With watch_changes off the local store does not offer watches.
TEST(LocalObjectStoreWatchTest, OffWhenTheOptionSaysSo) {
  strata::testing::TempDir temp("watch-off");
  LocalObjectStoreOptions options;
  options.watch_changes = false;
  ASSERT_OK_AND_ASSIGN(auto store, OpenLocalObjectStore((temp / "store").string(), options));
  ASSERT_OK(store->Put("d/a", "1"));
  EXPECT_TRUE(store->Watch("d/").status().IsNotSupported());
}

INSTANTIATE_TEST_SUITE_P(AllStores, ObjectStoreTest,
                         ::testing::Values("local", "local_mmap_all", "local_no_sync", "memory",
                                           "file_over_memory_fs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata
