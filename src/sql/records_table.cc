// The virtual table `records` over a store (records_table.h).
#include "sql/records_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sql/batch_stream.h"
#include "sql/column_values.h"
#include "sql/pushdown.h"
#include "strata/expr.h"
#include "strata/record_batch.h"

namespace strata::sql {

void QueryContext::NoteFilter(const std::string& filter) {
  if (filters_seen_.insert(filter).second) stats->pushed_filters.push_back(filter);
}

void QueryContext::NoteColumn(const std::string& column) {
  if (columns_seen_.insert(column).second) stats->columns_read.push_back(column);
}

namespace {

// GetMany's limit per call.
constexpr size_t kMaxKeysPerLookup = 1024;
// Rows assumed when the store cannot be observed.
constexpr double kDefaultRowEstimate = 1e6;

// One constraint the plan passes to xFilter.
struct PlannedTerm {
  int column = 0;
  ConstraintOp op = ConstraintOp::kEq;
  int argv = -1;         // index into xFilter's argv; -1 for IS [NOT] NULL
  bool in_list = false;  // argv holds an IN list (sqlite3_vtab_in_first / _next)
};

// What xBestIndex chose, as idxStr: space-separated integers (Encode / Decode).
struct Plan {
  int key_term = -1;         // the term that makes this a key lookup, or -1: a scan
  std::vector<int> columns;  // columns SQLite uses, ascending
  std::vector<PlannedTerm> terms;

  std::string Encode() const {
    std::string out = fmt::format("{} {}", key_term, columns.size());
    for (int c : columns) out += fmt::format(" {}", c);
    out += fmt::format(" {}", terms.size());
    for (const PlannedTerm& t : terms) {
      out +=
          fmt::format(" {} {} {} {}", t.column, static_cast<int>(t.op), t.argv, t.in_list ? 1 : 0);
    }
    return out;
  }

  static std::optional<Plan> Decode(std::string_view text) {
    size_t pos = 0;
    auto next = [&](int* out) {
      while (pos < text.size() && text[pos] == ' ') ++pos;
      auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), *out);
      if (ec != std::errc()) return false;
      pos = static_cast<size_t>(end - text.data());
      return true;
    };
    Plan plan;
    int count = 0;
    if (!next(&plan.key_term) || !next(&count) || count < 0) return std::nullopt;
    plan.columns.resize(static_cast<size_t>(count));
    for (int& c : plan.columns) {
      if (!next(&c)) return std::nullopt;
    }
    if (!next(&count) || count < 0) return std::nullopt;
    plan.terms.resize(static_cast<size_t>(count));
    for (PlannedTerm& t : plan.terms) {
      int op = 0;
      int in_list = 0;
      if (!next(&t.column) || !next(&op) || !next(&t.argv) || !next(&in_list)) return std::nullopt;
      t.op = static_cast<ConstraintOp>(op);
      t.in_list = in_list != 0;
    }
    return plan;
  }
};

struct RecordsTable : sqlite3_vtab {
  QueryContext* context = nullptr;
  SchemaPtr schema;
  int key_column = -1;
  double estimated_rows = kDefaultRowEstimate;
};

struct RecordsCursor : sqlite3_vtab_cursor {
  RecordsTable* table() const { return static_cast<RecordsTable*>(pVtab); }

  // The source of rows: a scan, or a key lookup (GetMany of the next kMaxKeysPerLookup keys
  // of `lookup_keys` whenever the previous ones are read).
  std::unique_ptr<BatchStream> stream;
  std::vector<expr::Scalar> lookup_keys;
  std::vector<std::string> lookup_columns;
  size_t next_lookup = 0;  // into lookup_keys

  std::vector<int> columns;        // the plan's columns (SQLite column numbers)
  RecordBatch batch;               // the current batch
  std::vector<ColumnCells> cells;  // per SQLite column: the current batch's values
  int64_t row = 0;                 // in `batch`
  int64_t rowid = 0;               // rows since xFilter
  bool eof = true;
  bool scan_returned_rows = false;  // the current scan made rows visible to SQLite

  void Reset() {
    stream.reset();  // stops the scan and joins its thread
    lookup_keys.clear();
    lookup_columns.clear();
    next_lookup = 0;
    batch = RecordBatch();
    cells.clear();
    row = 0;
    rowid = 0;
    eof = true;
    scan_returned_rows = false;
  }
};

// Reports `status` for the cursor's table: SQLite's message for the statement, and the
// context's first error (which the driver returns with its code).
int Fail(sqlite3_vtab* vtab, QueryContext* context, const Status& status) {
  if (context->error.ok()) context->error = status;
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", status.ToString().c_str());
  return SQLITE_ERROR;
}

std::optional<ConstraintOp> OpOf(unsigned char op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      return ConstraintOp::kEq;
    case SQLITE_INDEX_CONSTRAINT_NE:
      return ConstraintOp::kNe;
    case SQLITE_INDEX_CONSTRAINT_LT:
      return ConstraintOp::kLt;
    case SQLITE_INDEX_CONSTRAINT_LE:
      return ConstraintOp::kLe;
    case SQLITE_INDEX_CONSTRAINT_GT:
      return ConstraintOp::kGt;
    case SQLITE_INDEX_CONSTRAINT_GE:
      return ConstraintOp::kGe;
    case SQLITE_INDEX_CONSTRAINT_ISNULL:
      return ConstraintOp::kIsNull;
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL:
      return ConstraintOp::kIsNotNull;
    case SQLITE_INDEX_CONSTRAINT_LIKE:
      return ConstraintOp::kLike;
    case SQLITE_INDEX_CONSTRAINT_GLOB:
      return ConstraintOp::kGlob;
    default:
      return std::nullopt;
  }
}

// A rough share of rows a term keeps, for the planner's estimates.
double Selectivity(ConstraintOp op) {
  switch (op) {
    case ConstraintOp::kEq:
    case ConstraintOp::kIsNull:
      return 0.1;
    case ConstraintOp::kNe:
    case ConstraintOp::kIsNotNull:
      return 0.9;
    case ConstraintOp::kIn:
      return 0.2;
    case ConstraintOp::kLike:
    case ConstraintOp::kGlob:
      return 0.25;
    default:
      return 0.33;
  }
}

// Whether the key column can be looked up by GetMany from SQLite values (KeyForLookup).
bool LookupKeyType(const DataType& type) {
  return type.is_string() || type.id() == TypeId::kTimestamp ||
         (type.is_integer() && type.id() != TypeId::kUInt64);
}

Value ValueOf(sqlite3_value* value) {
  switch (sqlite3_value_type(value)) {
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_value_int64(value));
    case SQLITE_FLOAT:
      return sqlite3_value_double(value);
    case SQLITE_TEXT: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(value));
      return std::string(text == nullptr ? "" : text,
                         static_cast<size_t>(sqlite3_value_bytes(value)));
    }
    case SQLITE_BLOB: {
      const auto* bytes = static_cast<const char*>(sqlite3_value_blob(value));
      return Blob{std::string(bytes == nullptr ? "" : bytes,
                              static_cast<size_t>(sqlite3_value_bytes(value)))};
    }
    default:
      return std::monostate();
  }
}

// The values of an IN list handed over all at once.
Result<std::vector<Value>> InListValues(sqlite3_value* list) {
  std::vector<Value> values;
  sqlite3_value* value = nullptr;
  int rc = sqlite3_vtab_in_first(list, &value);
  while (rc == SQLITE_OK) {
    values.push_back(ValueOf(value));
    rc = sqlite3_vtab_in_next(list, &value);
  }
  if (rc != SQLITE_DONE) {
    return Status::Internal(fmt::format("reading an IN list failed: {}", sqlite3_errstr(rc)));
  }
  return values;
}

// --- Table ---------------------------------------------------------------------------------

int Connect(sqlite3* db, void* aux, int /*argc*/, const char* const* /*argv*/, sqlite3_vtab** out,
            char** error) {
  auto* context = static_cast<QueryContext*>(aux);
  auto table = std::make_unique<RecordsTable>();
  table->context = context;
  table->schema = context->base->schema();
  table->key_column = table->schema->GetFieldIndex(context->base->key_column());
  const std::string declaration =
      RecordsTableDeclaration(*table->schema, table->key_column, kRecordsTable);
  if (int rc = sqlite3_declare_vtab(db, declaration.c_str()); rc != SQLITE_OK) {
    *error = sqlite3_mprintf("the store's columns cannot be an SQLite table (%s): %s",
                             sqlite3_errmsg(db), declaration.c_str());
    return rc;
  }
  // Only an estimate for the planner: base rows plus pending rows (which may repeat keys).
  if (Result<store::StoreObservation> seen = context->base->Observe(); seen.ok()) {
    table->estimated_rows =
        std::max(1.0, static_cast<double>(seen->base_rows + seen->generation_rows));
  }
  *out = table.release();  // SQLite owns it until Disconnect
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  std::unique_ptr<RecordsTable> owned(static_cast<RecordsTable*>(vtab));
  sqlite3_free(owned->zErrMsg);
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  auto* table = static_cast<RecordsTable*>(vtab);
  const Schema& schema = *table->schema;
  Plan plan;
  for (int c = 0; c < schema.num_fields(); ++c) {
    const sqlite3_uint64 bit = sqlite3_uint64{1} << std::min(c, 63);
    if ((info->colUsed & bit) != 0) plan.columns.push_back(c);
  }
  double selectivity = 1;
  int argc = 0;
  int key_eq = -1;
  int key_in = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& constraint = info->aConstraint[i];
    if (!constraint.usable || constraint.iColumn < 0 || constraint.iColumn >= schema.num_fields()) {
      continue;
    }
    std::optional<ConstraintOp> op = OpOf(constraint.op);
    if (!op) continue;
    const Field& column = *schema.field(constraint.iColumn);
    if (!MayPush(column, *op)) continue;
    // Strata compares text bytewise: SQLite's BINARY collation. (Numbers ignore collations.)
    if (HasOperand(*op) && std::string_view(sqlite3_vtab_collation(info, i)) != "BINARY") {
      continue;
    }
    PlannedTerm term{.column = constraint.iColumn, .op = *op};
    if (HasOperand(*op)) {
      term.argv = argc++;
      info->aConstraintUsage[i].argvIndex = term.argv + 1;
      // An IN list comes as an = constraint; ask for all its values in one xFilter.
      term.in_list = *op == ConstraintOp::kEq && sqlite3_vtab_in(info, i, 1) != 0;
    }
    info->aConstraintUsage[i].omit = 0;
    const ConstraintOp effective = term.in_list ? ConstraintOp::kIn : term.op;
    selectivity *= Selectivity(effective);
    if (constraint.iColumn == table->key_column && term.op == ConstraintOp::kEq &&
        LookupKeyType(*column.type())) {
      int& slot = term.in_list ? key_in : key_eq;
      if (slot < 0) slot = static_cast<int>(plan.terms.size());
    }
    plan.terms.push_back(term);
  }
  const double rows = table->estimated_rows;
  plan.key_term = key_eq >= 0 ? key_eq : key_in;
  if (key_eq >= 0) {
    info->estimatedCost = 10;
    info->estimatedRows = 1;
    info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  } else if (key_in >= 0) {
    info->estimatedCost = 100;
    info->estimatedRows = 10;
  } else {
    // A scan reads the whole store; a filter saves SQLite's work and some of strata's (zone
    // maps skip batches).
    info->estimatedCost = rows * (0.5 + 0.5 * selectivity) + 10;
    info->estimatedRows = static_cast<sqlite3_int64>(std::max(1.0, rows * selectivity));
  }
  info->idxNum = plan.key_term >= 0 ? 1 : 0;
  info->idxStr = sqlite3_mprintf("%s", plan.Encode().c_str());
  if (info->idxStr == nullptr) return SQLITE_NOMEM;
  info->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

// --- Cursor --------------------------------------------------------------------------------

int Open(sqlite3_vtab* /*vtab*/, sqlite3_vtab_cursor** out) {
  auto cursor = std::make_unique<RecordsCursor>();
  *out = cursor.release();  // SQLite owns it until Close
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* cursor) {
  std::unique_ptr<RecordsCursor> owned(static_cast<RecordsCursor*>(cursor));
  owned->Reset();
  return SQLITE_OK;
}

// Makes `next` the current batch.
void SetBatch(RecordsCursor& cursor, RecordBatch next) {
  const Schema& table_schema = *cursor.table()->schema;
  cursor.batch = std::move(next);
  cursor.row = 0;
  cursor.cells.assign(static_cast<size_t>(table_schema.num_fields()), ColumnCells());
  for (int c : cursor.columns) {
    Array column = cursor.batch.GetColumnByName(table_schema.field(c)->name());
    if (column.is_valid_handle()) cursor.cells[static_cast<size_t>(c)] = ColumnCells(column);
  }
}

// Moves to the next non-empty batch; sets eof at the end. An error fails the statement.
int NextBatch(RecordsCursor& cursor) {
  RecordsTable& table = *cursor.table();
  QueryContext& context = *table.context;
  while (true) {
    if (context.cancelled != nullptr && *context.cancelled && (*context.cancelled)()) {
      return Fail(&table, &context, Status::Aborted("the SQL query was cancelled"));
    }
    if (cursor.stream == nullptr) {
      if (cursor.next_lookup >= cursor.lookup_keys.size()) {
        cursor.eof = true;
        return SQLITE_OK;
      }
      const size_t start = cursor.next_lookup;
      const size_t end = std::min(cursor.lookup_keys.size(), start + kMaxKeysPerLookup);
      cursor.next_lookup = end;
      std::vector<expr::Scalar> chunk(cursor.lookup_keys.begin() + static_cast<ptrdiff_t>(start),
                                      cursor.lookup_keys.begin() + static_cast<ptrdiff_t>(end));
      Result<RecordBatch> rows = context.base->GetMany(chunk, cursor.lookup_columns);
      if (!rows.ok()) return Fail(&table, &context, rows.status());
      context.stats->key_lookups += static_cast<int64_t>(chunk.size());
      context.stats->rows_scanned += rows->num_rows();
      if (rows->num_rows() == 0) continue;
      SetBatch(cursor, *std::move(rows));
      return SQLITE_OK;
    }
    BatchStream::Item item = cursor.stream->Next();
    switch (item.kind) {
      case BatchStream::Item::Kind::kBatch:
        if (item.batch.num_rows() == 0) continue;
        context.stats->rows_scanned += item.batch.num_rows();
        cursor.scan_returned_rows = true;
        SetBatch(cursor, std::move(item.batch));
        return SQLITE_OK;
      case BatchStream::Item::Kind::kRestart:
        // The scan delivers everything again from its first batch: harmless while SQLite has
        // seen none of it, a wrong answer otherwise.
        if (!cursor.scan_returned_rows) continue;
        context.restarted_after_rows = true;
        return Fail(&table, &context,
                    Status::Busy("the store changed under the SQL query (a merge removed files "
                                 "it was reading); run it again"));
      case BatchStream::Item::Kind::kEnd:
        cursor.stream.reset();
        cursor.eof = true;
        if (!item.status.ok()) return Fail(&table, &context, item.status);
        return SQLITE_OK;
    }
  }
}

// The keys a key-lookup plan reads, or nullopt when a value is no key (the plan scans then).
std::optional<std::vector<expr::Scalar>> LookupKeys(const Field& key_column,
                                                    const std::vector<Value>& values) {
  std::vector<expr::Scalar> keys;
  std::set<std::string> seen;
  for (const Value& value : values) {
    if (std::holds_alternative<std::monostate>(value)) continue;  // = NULL matches nothing
    std::optional<expr::Scalar> key = KeyForLookup(key_column, value);
    if (!key) return std::nullopt;
    if (seen.insert(key->ToString()).second) keys.push_back(*std::move(key));
  }
  return keys;
}

int Filter(sqlite3_vtab_cursor* base_cursor, int /*idx_num*/, const char* idx_str, int argc,
           sqlite3_value** argv) {
  auto& cursor = *static_cast<RecordsCursor*>(base_cursor);
  RecordsTable& table = *cursor.table();
  QueryContext& context = *table.context;
  const Schema& schema = *table.schema;
  cursor.Reset();
  std::optional<Plan> plan = Plan::Decode(idx_str == nullptr ? "" : idx_str);
  if (!plan) {
    return Fail(&table, &context, Status::Internal(fmt::format("bad records plan '{}'", idx_str)));
  }
  cursor.columns = plan->columns;
  std::vector<std::string> column_names;
  for (int c : plan->columns) column_names.push_back(schema.field(c)->name());
  // A statement that uses no column (count(*)) still needs its rows: read the key only.
  if (column_names.empty()) column_names.push_back(context.base->key_column());
  for (const std::string& name : column_names) context.NoteColumn(name);

  // The values of each term.
  std::vector<std::vector<Value>> values(plan->terms.size());
  for (size_t t = 0; t < plan->terms.size(); ++t) {
    const PlannedTerm& term = plan->terms[t];
    if (term.argv < 0) continue;
    if (term.argv >= argc) {
      return Fail(&table, &context, Status::Internal("records plan and arguments disagree"));
    }
    if (term.in_list) {
      Result<std::vector<Value>> list = InListValues(argv[term.argv]);
      if (!list.ok()) return Fail(&table, &context, list.status());
      values[t] = *std::move(list);
    } else {
      values[t].push_back(ValueOf(argv[term.argv]));
    }
  }

  if (plan->key_term >= 0 && static_cast<size_t>(plan->key_term) < plan->terms.size()) {
    const size_t key_term = static_cast<size_t>(plan->key_term);
    const Field& key_column = *schema.field(plan->terms[key_term].column);
    if (std::optional<std::vector<expr::Scalar>> keys = LookupKeys(key_column, values[key_term])) {
      cursor.lookup_keys = *std::move(keys);
      cursor.lookup_columns = std::move(column_names);
      cursor.eof = false;
      return NextBatch(cursor);
    }
  }

  std::string filter;
  for (size_t t = 0; t < plan->terms.size(); ++t) {
    const PlannedTerm& term = plan->terms[t];
    const Field& column = *schema.field(term.column);
    std::optional<PushedTerm> pushed;
    if (term.in_list) {
      pushed = PushIn(column, values[t]);
    } else {
      pushed = PushTerm(column, term.op, values[t].empty() ? Value() : values[t].front());
    }
    if (!pushed) continue;
    if (pushed->never_true) return SQLITE_OK;  // eof: no row can match
    if (!filter.empty()) filter += " AND ";
    filter += pushed->text;
  }
  context.stats->scans += 1;
  context.NoteFilter(filter);
  store::ScanRequest request{.source = store::ListSource::kAll,
                             .columns = std::move(column_names),
                             .filter = std::move(filter)};
  QueryContext::Scan scan = context.scan;
  if (!scan) {
    const store::StorageBase* base = context.base;
    scan = [base](const store::ScanRequest& r, const std::function<Status(RecordBatch)>& consume,
                  const std::function<Status()>& restart) {
      return base->ScanEach(r, consume, restart);
    };
  }
  cursor.stream = std::make_unique<BatchStream>(
      [scan = std::move(scan), request = std::move(request)](
          const BatchStream::Consume& consume, const BatchStream::Restart& restart) -> Status {
        Result<uint64_t> version = scan(request, consume, restart);
        if (!version.ok() && !request.filter.empty() &&
            version.status().code() == StatusCode::kInvalidArgument) {
          return version.status().WithContext(
              fmt::format("scan with the pushed filter '{}'", request.filter));
        }
        return version.status();
      });
  cursor.eof = false;
  return NextBatch(cursor);
}

int Next(sqlite3_vtab_cursor* base_cursor) {
  auto& cursor = *static_cast<RecordsCursor*>(base_cursor);
  ++cursor.rowid;
  if (++cursor.row < cursor.batch.num_rows()) return SQLITE_OK;
  return NextBatch(cursor);
}

int Eof(sqlite3_vtab_cursor* base_cursor) {
  return static_cast<RecordsCursor*>(base_cursor)->eof ? 1 : 0;
}

int Column(sqlite3_vtab_cursor* base_cursor, sqlite3_context* result, int column) {
  auto& cursor = *static_cast<RecordsCursor*>(base_cursor);
  if (column < 0 || static_cast<size_t>(column) >= cursor.cells.size() ||
      !cursor.cells[static_cast<size_t>(column)].has_values()) {
    // SQLite asks only for the columns it planned with (colUsed); a NULL here would be a
    // wrong answer, so fail loudly instead.
    RecordsTable& table = *cursor.table();
    return Fail(&table, table.context,
                Status::Internal(fmt::format("SQLite read column {} of records, which the plan "
                                             "did not read",
                                             column)));
  }
  cursor.cells[static_cast<size_t>(column)].SetResult(result, cursor.row);
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* base_cursor, sqlite3_int64* rowid) {
  *rowid = static_cast<RecordsCursor*>(base_cursor)->rowid;
  return SQLITE_OK;
}

sqlite3_module MakeModule() {
  sqlite3_module module{};
  module.iVersion = 0;
  module.xCreate = nullptr;  // eponymous-only: no CREATE VIRTUAL TABLE
  module.xConnect = Connect;
  module.xBestIndex = BestIndex;
  module.xDisconnect = Disconnect;
  module.xDestroy = Disconnect;
  module.xOpen = Open;
  module.xClose = Close;
  module.xFilter = Filter;
  module.xNext = Next;
  module.xEof = Eof;
  module.xColumn = Column;
  module.xRowid = Rowid;
  return module;
}

const sqlite3_module kRecordsModule = MakeModule();

}  // namespace

Status RegisterRecordsTable(sqlite3* db, QueryContext* context) {
  const std::string name(kRecordsTable);
  int rc = sqlite3_create_module_v2(db, name.c_str(), &kRecordsModule, context, nullptr);
  if (rc != SQLITE_OK) {
    return Status::Internal(
        fmt::format("registering the records table failed: {}", sqlite3_errmsg(db)));
  }
  return Status::OK();
}

}  // namespace strata::sql
