// Fuzz target for the predicate parser and binder: any bytes either fail with InvalidArgument
// or give an expression whose text reads back as itself, which binds to a fixed schema or
// fails cleanly, and which evaluates, selects and prunes consistently on a fixed batch.
//
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_targets.h"
#include "strata/expr.h"
#include "strata/json.h"

namespace strata::fuzz {
namespace {

using expr::BoundExpr;
using expr::ColumnStatistics;
using expr::PruneResult;
using expr::Scalar;

[[noreturn]] void Die(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "expr broke its contract: %s\ninput: %.*s\n", what.c_str(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

const SchemaPtr& FuzzSchema() {
  static const SchemaPtr kSchema = schema({
      field("id", int64()),
      field("name", utf8()),
      field("tag", dictionary(int32(), utf8())),
      field("reward", float64()),
      field("level", int8()),
      field("u", uint64()),
      field("done", boolean()),
      field("ts", timestamp_us()),
      field("tags", list(utf8())),
      field("usage", struct_({field("prompt_tokens", int64()), field("model", utf8())})),
      field("blob", binary()),
  });
  return kSchema;
}

const RecordBatch& FuzzBatch() {
  static const RecordBatch kBatch = [] {
    Result<RecordBatch> batch = json::RowsToBatch(FuzzSchema(), R"(
{"id": 1, "name": "apple", "tag": "red", "reward": 0.5, "level": 1, "u": 1, "done": true, "ts": "2024-05-01T12:00:00Z", "tags": ["a", "b"], "usage": {"prompt_tokens": 10, "model": "m1"}, "blob": "YQ=="}
{"id": -9223372036854775808, "name": "", "tag": "", "reward": "NaN", "level": -128, "u": 18446744073709551615, "done": false, "ts": 0, "tags": [], "usage": {"prompt_tokens": null, "model": "m2"}, "blob": ""}
{"id": null, "name": null, "tag": null, "reward": null, "level": null, "u": null, "done": null, "ts": null, "tags": null, "usage": null, "blob": null}
{"id": 9223372036854775807, "name": "a%b_c", "tag": "red", "reward": "-Infinity", "level": 127, "u": 0, "done": true, "ts": "1969-12-31T23:59:59Z", "tags": [null, "c"], "usage": {"prompt_tokens": 7, "model": null}, "blob": "/w=="}
{"id": 3, "name": "banana", "tag": "green", "reward": -0.0, "level": 0, "u": 9223372036854775808, "done": false, "ts": "2030-01-01", "tags": ["b"], "usage": {"prompt_tokens": 3, "model": "m1"}, "blob": "YWI="}
)");
    if (!batch.ok()) Die("fixed batch: " + batch.status().ToString(), "");
    return *batch;
  }();
  return kBatch;
}

void CheckEvaluation(const BoundExpr& bound, std::string_view input) {
  const RecordBatch& batch = FuzzBatch();
  for (const RecordBatch& part : {batch, batch.Slice(1, 3)}) {
    Result<Array> values = expr::Evaluate(bound, part);
    if (!values.ok()) Die("Evaluate failed: " + values.status().ToString(), input);
    if (!values->Validate().ok() || values->length() != part.num_rows()) {
      Die("Evaluate returned a bad array", input);
    }
    Result<std::vector<int64_t>> rows = expr::Select(bound, part);
    if (!rows.ok()) Die("Select failed: " + rows.status().ToString(), input);
    std::vector<int64_t> expected;
    for (int64_t i = 0; i < values->length(); ++i) {
      if (!values->IsNull(i) && values->BoolValue(i)) expected.push_back(i);
    }
    if (*rows != expected) Die("Select disagrees with Evaluate", input);

    std::vector<ColumnStatistics> stats;
    for (const Array& column : part.columns()) {
      Result<ColumnStatistics> s = expr::ComputeStatistics(column);
      if (!s.ok()) Die("ComputeStatistics failed: " + s.status().ToString(), input);
      stats.push_back(*s);
    }
    const PruneResult verdict = expr::CanMatch(bound, [&](int c) { return &stats[c]; });
    if (verdict == PruneResult::kNone && !rows->empty()) Die("kNone but rows match", input);
    if (verdict == PruneResult::kAll && static_cast<int64_t>(rows->size()) != part.num_rows()) {
      Die("kAll but some rows do not match", input);
    }
    std::optional<std::vector<Scalar>> keys = expr::ExtractKeyEqualities(bound, 0);
    if (keys.has_value()) {
      for (int64_t r : *rows) {
        const Array& id = part.column(0);
        if (id.IsNull(r)) Die("a row with a null key matched a key equality", input);
        const Scalar key = Scalar::Int64(id.Value<int64_t>(r));
        bool found = false;
        for (const Scalar& k : *keys) found = found || k == key;
        if (!found) Die("matching key " + key.ToString() + " was not extracted", input);
      }
    }
  }
}

}  // namespace

Status FuzzExprParse(std::span<const uint8_t> data) {
  const std::string_view input(reinterpret_cast<const char*>(data.data()), data.size());
  Result<expr::Expr> parsed = expr::Parse(input);
  if (!parsed.ok()) {
    if (!parsed.status().IsInvalidArgument()) Die("Parse: " + parsed.status().ToString(), input);
    return parsed.status();
  }
  const std::string text = parsed->ToString();
  Result<expr::Expr> again = expr::Parse(text);
  if (!again.ok()) {
    // Printing adds parentheses (e.g. around a BETWEEN's AND), so the text of an expression
    // at the nesting limit may exceed it.
    if (again.status().message().find("nested deeper") == std::string::npos) {
      Die("ToString does not parse: " + again.status().ToString() + "\ntext: " + text, input);
    }
  } else if (!again->Equals(*parsed) || again->ToString() != text) {
    Die("ToString does not round-trip: " + text + " vs " + again->ToString(), input);
  }
  Result<expr::BoundExpr> bound = expr::Bind(*parsed, FuzzSchema());
  if (!bound.ok()) {
    if (!bound.status().IsInvalidArgument()) Die("Bind: " + bound.status().ToString(), input);
    return bound.status();
  }
  (void)bound->ToString();
  CheckEvaluation(*bound, input);
  return Status::OK();
}

}  // namespace strata::fuzz
