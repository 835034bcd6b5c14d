// ServerStoreOptions: the StorageBase options every store handle of a server gets from its
// ServerOptions.
#include <gtest/gtest.h>

#include "strata/server.h"
#include "strata/storage_base.h"

namespace strata::server {
namespace {

TEST(ServerStoreOptionsTest, HandlesTakeTheServersStoreOptions) {
  ServerOptions o;
  o.instance_id = "pod-7";
  o.merge_after_generations = 5;
  o.context_merge_after_generations = 3;
  o.merge_max_generations = 9;
  o.merge_max_bytes = 1234;
  o.pending_generations_warn = 11;
  o.pending_generations_max = 22;
  for (const bool recode : {true, false}) {
    o.recode_linked_generations = recode;
    for (const bool context : {false, true}) {
      const store::StorageBaseOptions base = ServerStoreOptions(o, context);
      EXPECT_EQ(base.shard_id, "pod-7");
      EXPECT_EQ(base.merge_after_generations, context ? 3 : 5);
      EXPECT_EQ(base.merge_max_generations, 9);
      EXPECT_EQ(base.merge_max_bytes, 1234);
      EXPECT_EQ(base.pending_generations_warn, 11);
      EXPECT_EQ(base.pending_generations_max, 22);
      EXPECT_EQ(base.recode_linked_generations, recode);
    }
  }
  EXPECT_EQ(ServerStoreOptions(ServerOptions{}, false).shard_id, "default");
  EXPECT_TRUE(ServerStoreOptions(ServerOptions{}, false).recode_linked_generations);
}

}  // namespace
}  // namespace strata::server
