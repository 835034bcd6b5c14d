// A fresh directory per test, removed afterwards unless STRATA_KEEP_TEST_DIRS is set.
#pragma once

#include <filesystem>
#include <string>

namespace strata::testing {

class TempDir {
 public:
  // Creates <base>/<prefix>-XXXXXX where base is $STRATA_TEST_TMPDIR or the system temp dir.
  explicit TempDir(const std::string& prefix = "strata");
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A seed for randomized tests: $STRATA_TEST_SEED if set, otherwise time-based. Tests print
// it (SCOPED_TRACE) so a failure can be replayed.
unsigned long long TestSeed();

// How much longer torture and stress tests run: 1 by default, $STRATA_STRESS_SCALE (or 20)
// when STRATA_STRESS=1 (`scripts/test --stress`). Tests multiply their iteration counts by it.
int StressScale();

}  // namespace strata::testing
