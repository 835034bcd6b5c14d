// Test schema, JSON row helpers, predicate oracle and workload operations for the table
// torture tests (see torture_util.h).
#include "table/torture_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "strata/json.h"

namespace strata::table::torture {

SchemaPtr BaseSchema(bool int_key) {
  KeyValueMetadata pk({{std::string(kPrimaryKeyMetadata), "true"}});
  return schema({field("id", int_key ? int64() : utf8(), /*nullable=*/false, pk),
                 field("v", int64()), field("f", float64()), field("tag", utf8())});
}

TableOptions SmallOptions() {
  TableOptions options;
  options.max_rows_per_batch = 16;
  options.max_rows_per_fragment = 64;
  return options;
}

std::string IdKey(const Row& id) {
  if (id.is_number_integer()) return fmt::format("{:020}", id.get<int64_t>());
  if (id.is_string()) return "s" + id.get<std::string>();
  return "?" + id.dump();
}

expr::Scalar IdScalar(const Row& id) {
  if (id.is_number_integer()) return expr::Scalar::Int64(id.get<int64_t>());
  return expr::Scalar::String(id.get<std::string>());
}

Result<RecordBatch> MakeBatch(const SchemaPtr& schema, const std::vector<Row>& rows) {
  std::string lines;
  for (const Row& row : rows) {
    lines += row.dump();
    lines += '\n';
  }
  return json::RowsToBatch(schema, lines);
}

Result<std::vector<Row>> BatchesToRows(const std::vector<RecordBatch>& batches) {
  std::vector<Row> rows;
  for (const RecordBatch& batch : batches) {
    std::istringstream lines(json::BatchToJsonLines(batch));
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      Row row = Row::parse(line, nullptr, /*allow_exceptions=*/false);
      if (row.is_discarded()) return Status::Corruption("scan produced bad JSON: " + line);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

Result<Rows> IndexRows(const std::vector<Row>& rows) {
  Rows out;
  for (const Row& row : rows) {
    if (!row.contains("id")) return Status::Corruption("row without id: " + row.dump());
    auto [it, inserted] = out.emplace(IdKey(row["id"]), row);
    if (!inserted) {
      return Status::Corruption(fmt::format("id {} appears twice: {} and {}", row["id"].dump(),
                                            it->second.dump(), row.dump()));
    }
  }
  return out;
}

Result<Rows> ScanRows(const Table& table) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BatchIterator> it, table.Scan());
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, it->ToBatches());
  for (const RecordBatch& batch : batches) {
    if (batch.num_rows() == 0) return Status::Corruption("scan returned an empty batch");
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<Row> rows, BatchesToRows(batches));
  return IndexRows(rows);
}

std::string DiffRows(const Rows& expected, const Rows& actual) {
  std::string out;
  int shown = 0;
  auto note = [&](const std::string& text) {
    if (shown++ < 5) out += "\n  " + text;
  };
  for (const auto& [key, row] : expected) {
    auto it = actual.find(key);
    if (it == actual.end()) {
      note("missing " + row.dump());
    } else if (it->second != row) {
      note("expected " + row.dump() + "\n       got " + it->second.dump());
    }
  }
  for (const auto& [key, row] : actual) {
    if (!expected.count(key)) note("unexpected " + row.dump());
  }
  if (out.empty()) return out;
  return fmt::format("{} rows expected, {} found; {} differences:{}", expected.size(),
                     actual.size(), shown, out);
}

namespace {

std::string Literal(const Row& value) {
  if (value.is_string()) {
    std::string text = "'";
    for (char c : value.get<std::string>()) {
      text += c;
      if (c == '\'') text += '\'';
    }
    return text + "'";
  }
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());
  return value.dump();
}

// <0, 0, >0; both values non-null and of one family.
int Compare(const Row& a, const Row& b) {
  if (a.is_string()) return a.get<std::string>().compare(b.get<std::string>());
  double x = a.get<double>();
  double y = b.get<double>();
  return x < y ? -1 : (x > y ? 1 : 0);
}

std::optional<bool> EvaluateClause(const Clause& clause, const Row& row) {
  Row value = row.contains(clause.column) ? row[clause.column] : Row();
  std::optional<bool> result;
  if (clause.op == "IS NULL") {
    result = value.is_null();
  } else if (clause.op == "IS NOT NULL") {
    result = !value.is_null();
  } else if (value.is_null()) {
    result = std::nullopt;
  } else if (clause.op == "IN") {
    result = std::any_of(clause.literals.begin(), clause.literals.end(),
                         [&](const Row& literal) { return Compare(value, literal) == 0; });
  } else {
    int c = Compare(value, clause.literals.at(0));
    const std::string& op = clause.op;
    result = op == "="    ? c == 0
             : op == "!=" ? c != 0
             : op == "<"  ? c < 0
             : op == "<=" ? c <= 0
             : op == ">"  ? c > 0
                          : c >= 0;
  }
  if (clause.negated && result) result = !*result;
  return result;
}

std::string ClauseText(const Clause& clause) {
  std::string text;
  if (clause.op == "IS NULL" || clause.op == "IS NOT NULL") {
    text = clause.column + " " + clause.op;
  } else if (clause.op == "IN") {
    std::vector<std::string> literals;
    for (const Row& literal : clause.literals) literals.push_back(Literal(literal));
    text = fmt::format("{} IN ({})", clause.column, fmt::join(literals, ", "));
  } else {
    text = fmt::format("{} {} {}", clause.column, clause.op, Literal(clause.literals.at(0)));
  }
  return clause.negated ? "NOT (" + text + ")" : text;
}

const std::vector<std::string> kTags = {"a", "b", "c", "d", "it's"};

Row RandomTag(std::mt19937_64& rng) { return kTags[rng() % kTags.size()]; }
Row RandomV(std::mt19937_64& rng) { return static_cast<int64_t>(rng() % 100); }
Row RandomF(std::mt19937_64& rng) { return static_cast<double>(int(rng() % 81) - 40) * 0.25; }

}  // namespace

bool Predicate::Matches(const Row& row) const {
  bool unknown = false;
  for (const Clause& clause : clauses) {
    std::optional<bool> r = EvaluateClause(clause, row);
    if (!r) {
      unknown = true;
    } else if (*r != conjunction) {
      return !conjunction;  // a FALSE in an AND, a TRUE in an OR decides
    }
  }
  return conjunction && !unknown;
}

Predicate RandomPredicate(std::mt19937_64& rng, bool int_key, const std::vector<Row>& ids) {
  static const std::vector<std::string> kOps = {"=", "!=", "<", "<=", ">", ">="};
  Predicate p;
  p.conjunction = rng() % 10 < 7;
  const int n = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) {
    Clause c;
    switch (rng() % 8) {
      case 0:
      case 1:
        c.column = "v";
        c.op = kOps[rng() % kOps.size()];
        c.literals = {static_cast<int64_t>(rng() % 110) - 5};
        break;
      case 2:
        c.column = "f";
        c.op = kOps[rng() % kOps.size()];
        c.literals = {RandomF(rng)};
        break;
      case 3:
        c.column = "tag";
        if (rng() % 3 == 0) {
          c.op = "IN";
          c.literals = {RandomTag(rng), RandomTag(rng)};
        } else {
          c.op = kOps[rng() % kOps.size()];
          c.literals = {RandomTag(rng)};
        }
        break;
      case 4: {
        static const std::vector<std::string> kNullable = {"v", "f", "tag"};
        c.column = kNullable[rng() % 3];
        c.op = rng() % 2 ? "IS NULL" : "IS NOT NULL";
        break;
      }
      default:
        c.column = "id";
        if (!ids.empty() && rng() % 3 != 0) {
          c.op = rng() % 4 == 0 ? "=" : "IN";
          const int k = c.op == "=" ? 1 : 1 + static_cast<int>(rng() % 4);
          for (int j = 0; j < k; ++j) c.literals.push_back(ids[rng() % ids.size()]);
        } else if (!ids.empty()) {
          c.op = kOps[2 + rng() % 4];
          c.literals = {ids[rng() % ids.size()]};
        } else {
          c.op = kOps[2 + rng() % 4];
          c.literals = {int_key ? Row(static_cast<int64_t>(rng() % 1000))
                                : Row(fmt::format("k{:05}", rng() % 1000))};
        }
        break;
    }
    c.negated = rng() % 8 == 0;
    p.clauses.push_back(std::move(c));
  }
  std::vector<std::string> texts;
  for (const Clause& c : p.clauses) texts.push_back(ClauseText(c));
  p.text = fmt::format("{}", fmt::join(texts, p.conjunction ? " AND " : " OR "));
  return p;
}

Row RandomRow(std::mt19937_64& rng, Row id, const std::vector<std::string>& extra_columns) {
  Row row = Row::object();
  row["id"] = std::move(id);
  row["v"] = rng() % 10 == 0 ? Row() : RandomV(rng);
  row["f"] = rng() % 10 == 0 ? Row() : RandomF(rng);
  row["tag"] = rng() % 10 == 0 ? Row() : RandomTag(rng);
  for (const std::string& name : extra_columns) {
    row[name] = rng() % 3 == 0 ? Row() : Row(static_cast<int64_t>(rng() % 1000));
  }
  return row;
}

std::string Op::Describe() const {
  switch (kind) {
    case Kind::kAppend:
      return fmt::format("op {}: append {} rows", id, rows.size());
    case Kind::kDelete:
      return fmt::format("op {}: delete where {}", id, predicate.text);
    case Kind::kDeleteKeys: {
      std::vector<std::string> texts;
      for (const Row& key : keys) texts.push_back(key.dump());
      return fmt::format("op {}: delete keys {}", id, fmt::join(texts, ", "));
    }
    case Kind::kCompact:
      return fmt::format("op {}: compact target {} max sources {}", id,
                         compaction.target_rows_per_fragment, compaction.max_source_fragments);
  }
  return "?";
}

namespace {
std::string CrashId(int64_t op, int64_t j) { return fmt::format("c{:05}-{:02}", op, j); }
}  // namespace

Op MakeOp(uint64_t seed, int64_t op_id) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(op_id), 0x7ab1eu};
  std::mt19937_64 rng(seq);
  Op op;
  op.id = op_id;
  const int roll = static_cast<int>(rng() % 100);
  // Ids of earlier appends (they may have been deleted or never existed).
  std::vector<Row> candidates;
  if (op_id > 0) {
    for (int i = 0; i < 4; ++i) {
      int64_t earlier = op_id - 1 - static_cast<int64_t>(rng() % std::min<int64_t>(op_id, 30));
      candidates.push_back(CrashId(earlier, static_cast<int64_t>(rng() % 30)));
    }
  }
  if (roll < 50 || op_id == 0) {
    op.kind = Op::Kind::kAppend;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int j = 0; j < n; ++j) op.rows.push_back(RandomRow(rng, CrashId(op_id, j), {}));
    std::shuffle(op.rows.begin(), op.rows.end(), rng);
  } else if (roll < 70) {
    op.kind = Op::Kind::kDelete;
    op.predicate = RandomPredicate(rng, /*int_key=*/false, candidates);
    // Keep most deletes narrow, or the table drains.
    if (op.predicate.clauses.size() == 1 && rng() % 2 == 0) {
      op.predicate = RandomPredicate(rng, false, candidates);
    }
  } else if (roll < 85) {
    op.kind = Op::Kind::kDeleteKeys;
    op.keys.assign(candidates.begin(), candidates.begin() + 1 + rng() % candidates.size());
  } else {
    op.kind = Op::Kind::kCompact;
    static const int64_t kTargets[] = {32, 64, 128};
    static const int kSources[] = {0, 4, 32};
    op.compaction.target_rows_per_fragment = kTargets[rng() % 3];
    op.compaction.max_source_fragments = kSources[rng() % 3];
    op.compaction.materialize_deletions_threshold = rng() % 2 ? 0.1 : 0.3;
  }
  return op;
}

int64_t ApplyOp(const Op& op, Rows* rows) {
  int64_t deleted = 0;
  switch (op.kind) {
    case Op::Kind::kAppend:
      for (const Row& row : op.rows) (*rows)[IdKey(row["id"])] = row;
      break;
    case Op::Kind::kDelete:
      for (auto it = rows->begin(); it != rows->end();) {
        if (op.predicate.Matches(it->second)) {
          it = rows->erase(it);
          ++deleted;
        } else {
          ++it;
        }
      }
      break;
    case Op::Kind::kDeleteKeys:
      for (const Row& key : op.keys) deleted += static_cast<int64_t>(rows->erase(IdKey(key)));
      break;
    case Op::Kind::kCompact:
      break;
  }
  return deleted;
}

Status RunOp(Table& table, const Op& op, std::optional<int64_t> expected_deleted) {
  std::optional<int64_t> deleted;
  switch (op.kind) {
    case Op::Kind::kAppend: {
      // Two batches when there are enough rows, so appends of several batches happen too.
      std::vector<RecordBatch> batches;
      size_t half = op.rows.size() > 8 ? op.rows.size() / 2 : op.rows.size();
      std::vector<Row> first(op.rows.begin(), op.rows.begin() + half);
      std::vector<Row> second(op.rows.begin() + half, op.rows.end());
      for (const auto* part : {&first, &second}) {
        if (part->empty()) continue;
        STRATA_ASSIGN_OR_RETURN(RecordBatch batch, MakeBatch(table.schema(), *part));
        batches.push_back(std::move(batch));
      }
      STRATA_ASSIGN_OR_RETURN(AppendResult result, table.Append(batches));
      if (result.rows != static_cast<int64_t>(op.rows.size())) {
        return Status::Corruption(
            fmt::format("{}: Append reported {} rows", op.Describe(), result.rows));
      }
      break;
    }
    case Op::Kind::kDelete: {
      STRATA_ASSIGN_OR_RETURN(DeleteResult result, table.Delete(op.predicate.text));
      deleted = result.rows_deleted;
      break;
    }
    case Op::Kind::kDeleteKeys: {
      std::vector<expr::Scalar> keys;
      for (const Row& key : op.keys) keys.push_back(IdScalar(key));
      STRATA_ASSIGN_OR_RETURN(DeleteResult result, table.DeleteKeys(keys));
      deleted = result.rows_deleted;
      break;
    }
    case Op::Kind::kCompact: {
      STRATA_ASSIGN_OR_RETURN(CompactionResult result, table.Compact(op.compaction));
      (void)result;
      break;
    }
  }
  if (expected_deleted && deleted && *deleted != *expected_deleted) {
    return Status::Corruption(fmt::format("{}: deleted {} rows, the oracle deletes {}",
                                          op.Describe(), *deleted, *expected_deleted));
  }
  return Status::OK();
}

}  // namespace strata::table::torture
