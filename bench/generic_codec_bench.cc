// generic_codec_bench: the generic store's JSON codec on one core, beside the Arrow IPC path,
// on the compare suite's rows (bench/compare/dataset.h) and schema (as a SchemaSpec):
//   json -> batch   EncodeJsonRows of each batch's JSON Lines (what GenericStore::Add parses)
//   ipc -> batch    ipc::ReadStream of each batch's Arrow IPC stream (what a client sending
//                   IPC batches to AddBatches costs)
//   batch -> json   AppendRowsAsJson of each batch (what a JSON read returns)
// Every pass runs on the calling thread; the figure is the best of --passes passes after a
// warm-up, in MB/s of the input (JSON or IPC bytes) and of logical row bytes (the numerator
// of bench/compare's MB/s). The goal: json -> batch >= 100 MB/s. The batches the codec builds
// are checked against the suite's own encoder first; a difference fails the run (exit 1).
//
//   build/release/bench/generic_codec_bench [--rows N] [--batch-rows N] [--passes N]
//                                           [--json FILE]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare/dataset.h"
#include "strata/generic_store.h"
#include "strata/ipc.h"
#include "strata/record_batch.h"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;
using compare::BenchRow;

struct Figure {
  std::string name;
  double seconds = 0;  // best pass
  int64_t input_bytes = 0;
  int64_t logical_bytes = 0;
  int64_t rows = 0;
  double input_mbps() const { return static_cast<double>(input_bytes) / 1e6 / seconds; }
  double logical_mbps() const { return static_cast<double>(logical_bytes) / 1e6 / seconds; }
};

// Best wall time of `passes` runs of `pass` after one warm-up run; the first error stops.
Result<double> BestOf(int passes, const std::function<Status()>& pass) {
  STRATA_RETURN_IF_ERROR(pass());
  double best = 0;
  for (int i = 0; i < passes; ++i) {
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(pass());
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    best = i == 0 ? s : std::min(best, s);
  }
  return std::max(best, 1e-9);
}

Status SameBatches(const RecordBatch& got, const RecordBatch& want, size_t b) {
  if (got.num_rows() != want.num_rows() || got.num_columns() != want.num_columns()) {
    return Status::Internal(fmt::format("batch {}: {} rows x {} columns, expected {} x {}", b,
                                        got.num_rows(), got.num_columns(), want.num_rows(),
                                        want.num_columns()));
  }
  for (int c = 0; c < want.num_columns(); ++c) {
    if (!got.column(c).Equals(want.column(c))) {
      return Status::Internal(fmt::format("batch {}: column '{}' differs from the suite's encoder",
                                          b, want.schema()->field(c)->name()));
    }
  }
  return Status::OK();
}

Result<std::vector<Figure>> Run(int64_t rows, int64_t batch_rows, int passes) {
  compare::DatasetSizes sizes;
  sizes.rows = rows;
  sizes.batch_rows = batch_rows;
  sizes.lookups = 0;
  sizes.get_many_batches = 0;
  sizes.puts_per_writer = 0;
  sizes.vectors = 0;
  sizes.vector_queries = 0;
  const compare::Dataset data = compare::GenerateDataset(sizes);
  STRATA_ASSIGN_OR_RETURN(store::SchemaSpec spec,
                          store::SchemaSpec::FromJson(compare::BenchSchemaSpecJson()));
  STRATA_ASSIGN_OR_RETURN(SchemaPtr schema, spec.ToArrowSchema());

  // Inputs, untimed: per batch its JSON Lines, the suite's own batch and its IPC stream.
  std::vector<std::string> json;
  std::vector<RecordBatch> expected;
  std::vector<Buffer> ipc;
  int64_t json_bytes = 0, ipc_bytes = 0;
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, batch_rows));
  for (size_t first = 0; first < data.rows.size(); first += step) {
    const size_t n = std::min(step, data.rows.size() - first);
    json.emplace_back();
    compare::AppendRowsAsJsonLines(data.rows.data() + first, n, &json.back());
    json_bytes += static_cast<int64_t>(json.back().size());
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                            compare::EncodeRows(schema, data.rows.data() + first, n));
    STRATA_ASSIGN_OR_RETURN(Buffer stream, ipc::WriteStreamToBuffer(schema, {batch}));
    ipc_bytes += stream.size();
    ipc.push_back(std::move(stream));
    expected.push_back(std::move(batch));
  }
  for (size_t b = 0; b < json.size(); ++b) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch got, store::EncodeJsonRows(schema, json[b]));
    STRATA_RETURN_IF_ERROR(SameBatches(got, expected[b], b));
  }

  const int64_t logical = data.LogicalBytes();
  const int64_t n_rows = static_cast<int64_t>(data.rows.size());
  std::vector<Figure> out;
  int64_t sink = 0;  // keeps results alive

  STRATA_ASSIGN_OR_RETURN(double json_seconds, BestOf(passes, [&]() -> Status {
                            for (const std::string& text : json) {
                              STRATA_ASSIGN_OR_RETURN(RecordBatch b,
                                                      store::EncodeJsonRows(schema, text));
                              sink += b.num_rows();
                            }
                            return Status::OK();
                          }));
  out.push_back({"json -> batch (EncodeJsonRows)", json_seconds, json_bytes, logical, n_rows});

  STRATA_ASSIGN_OR_RETURN(double ipc_seconds, BestOf(passes, [&]() -> Status {
                            for (const Buffer& stream : ipc) {
                              STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> b,
                                                      ipc::ReadStream(stream));
                              sink += static_cast<int64_t>(b.size());
                            }
                            return Status::OK();
                          }));
  out.push_back({"ipc -> batch (ipc::ReadStream)", ipc_seconds, ipc_bytes, logical, n_rows});

  int64_t written = 0;
  STRATA_ASSIGN_OR_RETURN(double write_seconds, BestOf(passes, [&]() -> Status {
                            written = 0;
                            std::string text;
                            for (const RecordBatch& b : expected) {
                              text.clear();
                              STRATA_RETURN_IF_ERROR(store::AppendRowsAsJson(b, &text));
                              written += static_cast<int64_t>(text.size());
                            }
                            return Status::OK();
                          }));
  // Input of the write direction: the logical bytes; JSON written is in the note below.
  out.push_back({"batch -> json (AppendRowsAsJson)", write_seconds, written, logical, n_rows});
  if (sink < 0) return Status::Internal("unreachable");
  return out;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  int64_t rows = 200'000;
  int64_t batch_rows = 256;
  int passes = 3;
  std::string json_path;
  CLI::App app{
      "generic_codec_bench: the generic store's JSON codec on one core beside the Arrow IPC "
      "path, on bench/compare's rows (goal: json -> batch >= 100 MB/s)"};
  app.add_option("--rows", rows, "rows (default 200,000: about 370 MB of JSON)");
  app.add_option("--batch-rows", batch_rows, "rows per batch / per Add (default 256)");
  app.add_option("--passes", passes, "timed passes after a warm-up; best counts (default 3)");
  app.add_option("--json", json_path, "also write the figures to this JSON file");
  CLI11_PARSE(app, argc, argv);
  if (rows <= 0 || batch_rows <= 0 || passes <= 0) {
    fmt::print(stderr, "generic_codec_bench: --rows, --batch-rows and --passes must be > 0\n");
    return 2;
  }
  auto figures = strata::bench::Run(rows, batch_rows, passes);
  if (!figures.ok()) {
    fmt::print(stderr, "generic_codec_bench: {}\n", figures.status().ToString());
    return 1;
  }
  fmt::print("{} rows in batches of {}, best of {} passes on one core\n", rows, batch_rows, passes);
  fmt::print("{:<36} {:>9} {:>12} {:>14} {:>12} {:>12}\n", "path", "seconds", "input MB",
             "input MB/s", "logical MB/s", "rows/s");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : *figures) {
    fmt::print("{:<36} {:>9.3f} {:>12.1f} {:>14.1f} {:>12.1f} {:>12.0f}\n", f.name, f.seconds,
               static_cast<double>(f.input_bytes) / 1e6, f.input_mbps(), f.logical_mbps(),
               static_cast<double>(f.rows) / f.seconds);
    out.push_back({{"path", f.name},
                   {"seconds", f.seconds},
                   {"input_bytes", f.input_bytes},
                   {"logical_bytes", f.logical_bytes},
                   {"rows", f.rows},
                   {"input_mb_per_s", f.input_mbps()},
                   {"logical_mb_per_s", f.logical_mbps()}});
  }
  fmt::print("(batch -> json: 'input MB' is the JSON written)\n");
  const auto& json = (*figures)[0];
  fmt::print("goal json -> batch >= 100 MB/s of JSON: {:.1f} MB/s, {}\n", json.input_mbps(),
             json.input_mbps() >= 100 ? "met" : "NOT met");
  if (!json_path.empty()) {
    std::ofstream file(json_path);
    file << out.dump(2) << "\n";
    if (!file) {
      fmt::print(stderr, "generic_codec_bench: cannot write {}\n", json_path);
      return 1;
    }
  }
  return 0;
}
