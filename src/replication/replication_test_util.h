// Shared by the replication tests (src/replication, tests/replication): the test schema and
// the independent listing replicas are compared through.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "strata/json.h"
#include "strata/replication.h"
#include "strata/storage_base.h"
#include "strata/table.h"

namespace strata::replication::testing {

inline SchemaPtr TestSchema() {
  return std::make_shared<Schema>(std::vector<FieldPtr>{
      field("id", utf8(), /*nullable=*/false),
      field("n", int64()),
      field("text", utf8()),
  });
}

// Every logical row of the store at `location` as sorted JSON lines, read through a fresh
// StorageBase handle (the key column is the base table's primary key).
inline std::vector<std::string> Listing(const StoreLocation& location) {
  Result<std::shared_ptr<table::Table>> table = table::Table::Open(location.store, location.prefix);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return {};
  store::StorageBaseOptions options;
  options.key_column = (*table)->schema()->field(*(*table)->primary_key_column())->name();
  Result<std::unique_ptr<store::StorageBase>> s =
      store::StorageBase::Open(location.store, location.prefix, options, false);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return {};
  Result<std::vector<RecordBatch>> batches = (*s)->Scan({});
  EXPECT_TRUE(batches.ok()) << batches.status();
  if (!batches.ok()) return {};
  std::vector<std::string> lines;
  for (const RecordBatch& b : *batches) {
    const std::string text = json::BatchToJsonLines(b);
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = text.find('\n', at);
      lines.push_back(text.substr(at, end - at));
      at = end + 1;
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace strata::replication::testing
