// The C++ side of bench/python/bench_python.py: the same work through the C++ API, on the
// rows and stores the Python bench made, so the two figures come from one run on the same data.
//
//   strata-python-ref rollout-add ROWS.jsonl DIR [--batch 256] [--no-sync]
//       Reads the rows (the JSON the Python bench added as dicts), decodes them into
//       RolloutRecords (not timed), then times RolloutStore::Add of `batch`-row slices into a
//       new store at DIR. Prints {"rows", "seconds", "rows_per_second"}.
//   strata-python-ref context-query DIR QUERIES.f32 [--limit 10] [--text WORD ...]
//       Opens the context store at DIR and times ContextStore::Search for every query vector
//       (QUERIES.f32: float32 vectors of the store's dimension, back to back) and
//       Retrieve(text = the i-th word cycled, vector = the i-th query). Prints p50 / p99 in
//       microseconds for each.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "strata/context_store.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(fmt::format("cannot open {}", path));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

Status RolloutAdd(const std::string& rows_path, const std::string& dir, int batch, bool sync) {
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadFile(rows_path));
  STRATA_ASSIGN_OR_RETURN(RecordBatch rows, json::RowsToBatch(store::RolloutSchema(), text));
  STRATA_ASSIGN_OR_RETURN(std::vector<store::RolloutRecord> records,
                          store::DecodeRolloutRecords(rows));
  LocalObjectStoreOptions local;
  local.sync = sync;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(dir, local));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::RolloutStore> s,
                          store::RolloutStore::Open(objects, ""));
  const auto start = Clock::now();
  for (size_t i = 0; i < records.size(); i += static_cast<size_t>(batch)) {
    const size_t end = std::min(records.size(), i + static_cast<size_t>(batch));
    const std::vector<store::RolloutRecord> slice(records.begin() + static_cast<ptrdiff_t>(i),
                                                  records.begin() + static_cast<ptrdiff_t>(end));
    STRATA_RETURN_IF_ERROR(s->Add(slice).status());
  }
  const double seconds = Since(start);
  STRATA_RETURN_IF_ERROR(s->Close());
  const nlohmann::json out = {{"rows", records.size()},
                              {"seconds", seconds},
                              {"rows_per_second", static_cast<double>(records.size()) / seconds}};
  fmt::print("{}\n", out.dump());
  return Status::OK();
}

Status ContextQuery(const std::string& dir, const std::string& queries_path, int64_t limit,
                    const std::vector<std::string>& words) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(dir, {}));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::ContextStore> s,
                          store::ContextStore::Open(objects, "", {}, false));
  STRATA_ASSIGN_OR_RETURN(std::string raw, ReadFile(queries_path));
  const size_t dim = static_cast<size_t>(s->embedding_dim());
  const size_t n = raw.size() / (dim * sizeof(float));
  if (n == 0) return Status::InvalidArgument("no query vectors");
  std::vector<std::vector<float>> queries(n, std::vector<float>(dim));
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(queries[i].data(), raw.data() + i * dim * sizeof(float), dim * sizeof(float));
  }
  std::vector<double> search_us;
  std::vector<double> retrieve_us;
  for (size_t i = 0; i < n; ++i) {
    auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(s->Search(queries[i], limit).status());
    search_us.push_back(Since(start) * 1e6);
    store::RetrieveOptions o;
    if (!words.empty()) o.text = words[i % words.size()];
    o.vector = queries[i];
    o.limit = limit;
    start = Clock::now();
    STRATA_RETURN_IF_ERROR(s->Retrieve(o).status());
    retrieve_us.push_back(Since(start) * 1e6);
  }
  const nlohmann::json out = {{"queries", n},
                              {"search_p50_us", Percentile(search_us, 0.5)},
                              {"search_p99_us", Percentile(search_us, 0.99)},
                              {"retrieve_p50_us", Percentile(retrieve_us, 0.5)},
                              {"retrieve_p99_us", Percentile(retrieve_us, 0.99)}};
  fmt::print("{}\n", out.dump());
  return Status::OK();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  CLI::App app{"strata-python-ref: the C++ side of bench/python/bench_python.py"};
  app.require_subcommand(1);
  std::string rows, dir, queries;
  int batch = 256;
  bool no_sync = false;
  int64_t limit = 10;
  std::vector<std::string> words;
  CLI::App* add = app.add_subcommand("rollout-add", "time RolloutStore::Add of the rows");
  add->add_option("rows", rows, "JSON Lines rows")->required();
  add->add_option("dir", dir, "a new store directory")->required();
  add->add_option("--batch", batch, "rows per Add")->check(CLI::PositiveNumber);
  add->add_flag("--no-sync", no_sync, "process durability (no fsync)");
  CLI::App* query = app.add_subcommand("context-query", "time Search and Retrieve");
  query->add_option("dir", dir, "the context store")->required();
  query->add_option("queries", queries, "float32 query vectors")->required();
  query->add_option("--limit", limit, "results per query");
  query->add_option("--text", words, "retrieve's text queries, cycled");
  CLI11_PARSE(app, argc, argv);
  const strata::Status status = add->parsed()
                                    ? strata::bench::RolloutAdd(rows, dir, batch, !no_sync)
                                    : strata::bench::ContextQuery(dir, queries, limit, words);
  if (!status.ok()) {
    fmt::print(stderr, "strata-python-ref: {}\n", status.ToString());
    return 1;
  }
  return 0;
}
