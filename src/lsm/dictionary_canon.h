// Canonical dictionaries for the WAL: the dictionary columns of every put re-indexed onto
// one grow-only dictionary per column, so that within a format-2 WAL segment every batch's
// dictionary is a prefix of the largest one, which the segment's IPC footer names
// (docs/format/lsm.md §5.1). Values keep their first-seen order; a dictionary never loses or
// reorders an entry, so indices written earlier stay valid against every later dictionary.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"
#include "util/mutex.h"

namespace strata::lsm {

class DictionaryCanon {
 public:
  // The top-level dictionary columns of `schema`.
  explicit DictionaryCanon(const Schema& schema);

  // True when `schema` holds a dictionary anywhere other than a top-level column (those
  // are not canonicalized).
  static bool HasNestedDictionary(const Schema& schema);

  // No dictionary columns: Apply returns its input.
  bool empty() const { return empty_; }
  // False once a put could not be canonicalized.
  bool usable() const;

  // `batches` (in the constructor's schema) with every dictionary column re-indexed onto
  // the canonical dictionary; all returned batches share one dictionary array per column.
  // nullopt — for good: usable() is false from then on — when a dictionary would outgrow
  // its index type or holds a null entry; the caller then writes its batches unchanged.
  Result<std::optional<std::vector<RecordBatch>>> Apply(const std::vector<RecordBatch>& batches);

 private:
  struct Column {
    int index = 0;
    DataTypePtr value_type;
    int64_t capacity = 0;  // entries the index type can address
    std::vector<std::string> values;
    std::unordered_map<std::string, int64_t> position;
    ArrayDataPtr array;  // `values` as an array; rebuilt when values grow
  };
  bool empty_ = true;
  mutable Mutex mu_;
  std::vector<Column> columns_ STRATA_GUARDED_BY(mu_);
  bool usable_ STRATA_GUARDED_BY(mu_) = true;
};

}  // namespace strata::lsm
