// Shared by the store tests: rollout fixtures, a store on a fresh local directory, and
// helpers that look at a shard's manifest and generation directories directly.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lsm/layout.h"
#include "lsm/shard_manifest.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::store::testing {

// A typical "assistant" turn: tokens, logprobs, loss mask, rewards, policy version, one
// relationship and JSON metadata.
inline RolloutRecord AssistantRecord(std::string id, std::string rollout_id = "r1",
                                     int32_t sequence_order = 0) {
  RolloutRecord r;
  r.id = std::move(id);
  r.rollout_id = std::move(rollout_id);
  r.problem_id = "p-" + r.rollout_id;
  r.dataset = "gsm8k";
  r.sequence_order = sequence_order;
  r.role = std::string(kRoleAssistant);
  r.created_at_micros = 1'700'000'000'000'000 + sequence_order;
  r.content = "the answer is 42";
  r.input_tokens = std::vector<int32_t>{1, 2, 3};
  r.output_tokens = std::vector<int32_t>{4, 5};
  r.num_input_tokens = 3;
  r.num_output_tokens = 2;
  r.output_logprobs = std::vector<float>{-0.5f, -0.25f};
  r.loss_mask = std::vector<int8_t>{1, 1};
  r.reward = 1.0f;
  r.advantage = 0.5f;
  r.policy_version = "v3";
  r.include_in_training = true;
  r.relationships = std::vector<RolloutRelationship>{{"prev", "follows", 1.0f}};
  r.metadata = R"({"harness":"unit"})";
  return r;
}

inline RolloutRecord ArtifactRecord(std::string id, std::string payload,
                                    std::string rollout_id = "r1") {
  RolloutRecord r;
  r.id = std::move(id);
  r.rollout_id = std::move(rollout_id);
  r.problem_id = "p-" + r.rollout_id;
  r.role = std::string(kRoleArtifact);
  r.created_at_micros = 1'700'000'000'000'000;
  r.content_type = "application/octet-stream";
  r.payload_size = static_cast<int64_t>(payload.size());
  r.payload_checksum = "crc-" + std::to_string(payload.size());
  r.artifact_type = "image";
  r.binary_payload = std::move(payload);
  return r;
}

// The record as list reads return it (no blob).
inline RolloutRecord WithoutBlob(RolloutRecord r) {
  r.binary_payload.reset();
  return r;
}

inline std::vector<std::string> IdsOf(const std::vector<RolloutRecord>& records) {
  std::vector<std::string> ids;
  for (const RolloutRecord& r : records) ids.push_back(r.id);
  return ids;
}

// A local object store on a fresh directory with a store prefix inside it.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = OpenLocalObjectStore(dir_.str());
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *opened;
  }

  Result<std::unique_ptr<RolloutStore>> OpenRollout(std::string shard = "solo",
                                                    RolloutStoreOptions options = {}) {
    options.base.shard_id = std::move(shard);
    // Merged generations are deleted soon (the default delay protects slow readers).
    options.base.generation_delete_delay_seconds = 0.1;
    return RolloutStore::Open(store_, prefix_, std::move(options));
  }

  // The latest manifest of `shard`'s shard.
  lsm::pb::ShardManifest Manifest(const std::string& shard = "solo") {
    lsm::ShardManifestStore manifests(store_, prefix_, lsm::DeriveShardId(shard));
    auto latest = manifests.ReadLatest();
    EXPECT_TRUE(latest.ok()) << latest.status();
    return latest.ok() ? *latest : lsm::pb::ShardManifest();
  }

  // Generation directories of `shard` on disk.
  int GenerationDirs(const std::string& shard = "solo") {
    std::filesystem::path gen =
        dir_.path() / (lsm::ShardDir(prefix_, lsm::DeriveShardId(shard)) + "gen");
    if (!std::filesystem::exists(gen)) return 0;
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(gen)) {
      if (entry.is_directory()) ++n;
    }
    return n;
  }

  // Once `store`'s delayed deletions of merged generations have run, the generation
  // directories on disk of `shard` number `want`.
  void ExpectGenerationDirsAfterDeletions(const StorageBase& store, int want,
                                          const std::string& shard = "solo") {
    store.WaitForPendingDeletions();
    EXPECT_EQ(GenerationDirs(shard), want);
  }

  strata::testing::TempDir dir_{"store"};
  std::shared_ptr<ObjectStore> store_;
  std::string prefix_ = "rollouts/";
};

}  // namespace strata::store::testing
