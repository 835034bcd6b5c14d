// What the context store's columnar reads (search, retrieve) share: the columns the
// visibility rules and the record filters read, and the validity test of an embedding's items.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/array.h"
#include "strata/buffer.h"
#include "strata/context_store.h"
#include "strata/type.h"

namespace strata::store::internal {

// id, created_at, the columns of rules 1-4, the columns `filters` read, then `extra`: of those
// `schema` has, in that order.
inline std::vector<std::string> VisibilityColumns(const Schema& schema,
                                                  const RecordFilters& filters,
                                                  std::vector<std::string> extra) {
  std::vector<std::string> wanted = {
      "id",         "created_at",       "content_type", "expires_at", "lifecycle_status",
      "retired_at", "superseded_by_id", "supersedes_id"};
  if (filters.bot_id) wanted.emplace_back("bot_id");
  if (filters.session_id) wanted.emplace_back("session_id");
  if (filters.role) wanted.emplace_back("role");
  if (filters.tenant) wanted.emplace_back("tenant");
  if (filters.source) wanted.emplace_back("source");
  if (!filters.metadata.empty()) wanted.emplace_back("metadata");
  for (std::string& c : extra) wanted.push_back(std::move(c));
  std::vector<std::string> out;
  for (std::string& c : wanted) {
    if (schema.GetFieldIndex(c) >= 0) out.push_back(std::move(c));
  }
  return out;
}

// Whether items [begin, end) of `values` are all valid.
inline bool ItemsValid(const Array& values, int64_t begin, int64_t end) {
  const Buffer& validity = values.data()->buffers[0];
  if (values.null_count() == 0 || validity.is_null()) return true;
  const int64_t set = bit_util::CountSetBits(validity.data(), values.offset() + begin, end - begin);
  return set == end - begin;
}

}  // namespace strata::store::internal
