// Helper process for ObjectStoreRaceTest: races PutIfAbsent on RaceKey(0..n) of a local
// object store and writes the indices it won, one per line.
//
// Usage: put_race_helper <root> <writer> <key-count> <wins-file> <sync|nosync>
// Starts when its stdin reaches end of file (the parent's starting gun). Exit 0 on success,
// 2 on any outcome other than OK or AlreadyExists (printed to stderr).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "io/put_race_payload.h"
#include "strata/object_store.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <root> <writer> <key-count> <wins-file> <sync|nosync>\n",
                 argv[0]);
    return 1;
  }
  const std::string writer = argv[2];
  const int count = std::atoi(argv[3]);
  strata::LocalObjectStoreOptions options;
  options.sync = std::string(argv[5]) == "sync";
  auto store = strata::OpenLocalObjectStore(argv[1], options);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 2;
  }
  char byte;
  while (::read(STDIN_FILENO, &byte, 1) > 0) {
  }
  std::vector<int> wins;
  for (int i = 0; i < count; ++i) {
    strata::Status s =
        (*store)->PutIfAbsent(strata::testing::RaceKey(i), strata::testing::RacePayload(writer, i));
    if (s.ok()) {
      wins.push_back(i);
    } else if (!s.IsAlreadyExists()) {
      std::fprintf(stderr, "put-if-absent %d: %s\n", i, s.ToString().c_str());
      return 2;
    }
  }
  std::ofstream out(argv[4]);
  for (int i : wins) out << i << '\n';
  out.close();
  return out ? 0 : 2;
}
