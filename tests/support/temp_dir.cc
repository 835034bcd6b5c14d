// TempDir and TestSeed.
#include "support/temp_dir.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace strata::testing {

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("STRATA_TEST_TMPDIR");
  std::filesystem::path root = base && *base ? base : std::filesystem::temp_directory_path();
  std::filesystem::create_directories(root);
  std::string pattern = (root / (prefix + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + pattern);
  path_ = buf.data();
}

TempDir::~TempDir() {
  if (std::getenv("STRATA_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

unsigned long long TestSeed() {
  if (const char* s = std::getenv("STRATA_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return static_cast<unsigned long long>(
      std::chrono::steady_clock::now().time_since_epoch().count());
}

int StressScale() {
  const char* stress = std::getenv("STRATA_STRESS");
  if (stress == nullptr || std::string(stress) != "1") return 1;
  const char* scale = std::getenv("STRATA_STRESS_SCALE");
  int value = scale ? std::atoi(scale) : 20;
  return value > 0 ? value : 20;
}

}  // namespace strata::testing
