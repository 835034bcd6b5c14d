// Replays every fuzz input kept in the repository through its target in the normal build:
// fuzz/regressions/<target>/* (past crashers: must now be read or rejected without a crash)
// and fuzz/corpus/<target>/* (valid seeds: must be read without an error).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_targets.h"

namespace strata::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzReplayTest, EveryTargetHasASeedCorpus) {
  for (const FuzzTarget& target : FuzzTargets()) {
    EXPECT_FALSE(FilesIn(fs::path(STRATA_FUZZ_DIR) / "corpus" / target.name).empty())
        << target.name;
  }
}

TEST(FuzzReplayTest, RegressionInputsAreReadOrRejectedWithoutCrashing) {
  int replayed = 0;
  for (const FuzzTarget& target : FuzzTargets()) {
    for (const fs::path& file : FilesIn(fs::path(STRATA_FUZZ_DIR) / "regressions" / target.name)) {
      std::fprintf(stderr, "replaying %s\n", file.c_str());  // names the input if it crashes
      std::vector<uint8_t> bytes = ReadBytes(file);
      target.run(bytes).IgnoreError();  // any verdict is fine; a crash fails the test binary
      ++replayed;
    }
  }
  std::printf("replayed %d regression inputs\n", replayed);
}

TEST(FuzzReplayTest, SeedCorpusFilesAreValid) {
  for (const FuzzTarget& target : FuzzTargets()) {
    for (const fs::path& file : FilesIn(fs::path(STRATA_FUZZ_DIR) / "corpus" / target.name)) {
      std::fprintf(stderr, "replaying %s\n", file.c_str());
      Status status = target.run(ReadBytes(file));
      EXPECT_TRUE(status.ok()) << file << ": " << status.ToString();
    }
  }
}

}  // namespace
}  // namespace strata::fuzz
