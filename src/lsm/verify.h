// Verification of a store's LSM side (docs/format/lsm.md §10): every shard's manifest
// chain, WAL segments and pending generations, reported in the table verifier's format
// (table::VerifyReport), so that one report covers a whole store. Read only.
#pragma once

#include <memory>
#include <string>

#include "lsm/layout.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::lsm {

// Checks every registered shard of the store at `store_prefix` and adds to `report` one
// line per problem, "shard <uuid>: <key relative to the prefix>: <what> (<code>)":
// - the manifest chain: every retained version decodes and belongs to its key, versions are
//   consecutive (a gap counts while the version below it still exists: cleanup deletes
//   oldest first), and the latest-version hint names no version past the newest one found
//   (the newest would then be missing); the newest is read as every reader reads it;
// - the WAL: every segment reads end to end (record framing and checksums; a torn last
//   record is a crash's, not a problem), no segment that replay must read is missing
//   (CheckWalSegmentsComplete, closed_wal_end; judged again by a fresh head and listing
//   when a live writer moved replay_after meanwhile), and no position the newest manifest records
//   (replay_after, a generation's wal_end) lies past the end of a segment that exists;
// - the pending generations the newest manifest lists: each one's table verifies
//   (table::Table::Verify, its problems prefixed with the generation) and its bloom filter
//   decodes (envelope, probe count, size).
// Errors that stop the walk (listing the store fails) are returned; damage is reported.
Status VerifyShards(const std::shared_ptr<ObjectStore>& store, const std::string& store_prefix,
                    table::VerifyReport* report);

}  // namespace strata::lsm
