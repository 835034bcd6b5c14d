// Arrow IPC write and read throughput (uncompressed, lz4, zstd) on rollout-like rows, beside
// memcpy bandwidth measured in the same run. Prints Google Benchmark's table, then a summary
// with the ratios the foundation's goals are stated in.
//
//   build/release/bench/ipc_bench [--rows N] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "floor.h"
#include "strata/builder.h"
#include "strata/ipc.h"

namespace strata::bench {
namespace {

constexpr int kBatchRows = 4096;
int64_t g_rows = 32768;  // ~2 KiB per row: ~64 MiB uncompressed

SchemaPtr RolloutSchema() {
  return schema({field("id", utf8(), false), field("rollout_id", utf8(), false),
                 field("policy_version", dictionary(int32(), utf8())),
                 field("sequence_order", int32()), field("reward", float64()),
                 field("created_at", timestamp_us("UTC")), field("input_tokens", list(int32())),
                 field("output_tokens", list(int32())), field("text", utf8())});
}

// Deterministic rows: ~2 KiB each, text drawn from a small vocabulary (compresses like prose),
// token ids uniform (compress poorly, like real token streams).
std::vector<RecordBatch> MakeRolloutBatches(int64_t rows) {
  static const char* kWords[] = {"the",    "agent",  "called", "search", "tool",   "and",
                                 "result", "answer", "plan",   "step",   "reward", "model",
                                 "before", "after",  "check",  "value",  "error",  "retry"};
  std::mt19937_64 rng(42);
  SchemaPtr s = RolloutSchema();
  std::vector<RecordBatch> batches;
  for (int64_t start = 0; start < rows; start += kBatchRows) {
    auto builder = *RecordBatchBuilder::Make(s);
    int64_t n = std::min<int64_t>(kBatchRows, rows - start);
    for (int64_t i = start; i < start + n; ++i) {
      (void)builder->GetAs<BinaryBuilder>(0)->Append(fmt::format("r{:08d}-s{}", i / 8, i % 8));
      (void)builder->GetAs<BinaryBuilder>(1)->Append(fmt::format("r{:08d}", i / 8));
      (void)builder->GetAs<DictionaryBuilder>(2)->Append(fmt::format("v{}", (i / 8) % 4));
      builder->GetAs<Int32Builder>(3)->Append(static_cast<int32_t>(i % 8));
      if (i % 8 == 7) {
        builder->GetAs<Float64Builder>(4)->Append(std::uniform_real_distribution<>(-1, 1)(rng));
      } else {
        builder->GetAs<Float64Builder>(4)->AppendNull();
      }
      builder->GetAs<TimestampBuilder>(5)->Append(1'764'000'000'000'000 + i * 1'000'003);
      for (int col : {6, 7}) {
        auto* list_builder = builder->GetAs<ListBuilder>(col);
        list_builder->Append();
        auto* values = static_cast<Int32Builder*>(list_builder->value_builder());
        int len = col == 6 ? 64 : 128;
        for (int t = 0; t < len; ++t) values->Append(static_cast<int32_t>(rng() % 50000));
      }
      std::string text;
      while (text.size() < 1200) {
        text += kWords[rng() % std::size(kWords)];
        text += ' ';
      }
      (void)builder->GetAs<BinaryBuilder>(8)->Append(text);
    }
    batches.push_back(*builder->Finish());
  }
  return batches;
}

struct Dataset {
  std::vector<RecordBatch> batches;
  std::map<ipc::Compression, Buffer> files;  // written once, read by the read benchmarks
  std::map<ipc::Compression, Buffer> streams;
  int64_t uncompressed_bytes = 0;  // size of the uncompressed IPC file
};

Dataset& Data() {
  static Dataset* data = [] {
    auto* d = new Dataset();
    d->batches = MakeRolloutBatches(g_rows);
    for (auto c : {ipc::Compression::kNone, ipc::Compression::kLz4Frame, ipc::Compression::kZstd}) {
      ipc::WriteOptions options{.compression = c};
      d->files[c] = *ipc::WriteFileToBuffer(d->batches[0].schema(), d->batches, options);
      d->streams[c] = *ipc::WriteStreamToBuffer(d->batches[0].schema(), d->batches, options);
    }
    d->uncompressed_bytes = d->files[ipc::Compression::kNone].size();
    return d;
  }();
  return *data;
}

const ipc::Compression kCodecs[] = {ipc::Compression::kNone, ipc::Compression::kLz4Frame,
                                    ipc::Compression::kZstd};

void BM_Memcpy(benchmark::State& state) {
  const int64_t n = Data().uncompressed_bytes;
  std::unique_ptr<char[]> src(new char[n]), dst(new char[n]);
  std::memset(src.get(), 1, n);
  std::memset(dst.get(), 0, n);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), n);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n);
}

void BM_WriteFile(benchmark::State& state) {
  const auto codec = kCodecs[state.range(0)];
  const Dataset& d = Data();
  for (auto _ : state) {
    ipc::BufferOutputStream out;
    auto writer = *ipc::FileWriter::Make(&out, d.batches[0].schema(), {.compression = codec});
    for (const auto& b : d.batches) {
      if (!writer->WriteBatch(b).ok()) state.SkipWithError("write failed");
    }
    if (!writer->Close().ok()) state.SkipWithError("close failed");
    benchmark::DoNotOptimize(out.Finish());
  }
  state.SetBytesProcessed(state.iterations() * d.uncompressed_bytes);
  state.SetLabel(std::string(ipc::CompressionName(codec)));
}

// Opens the file from memory and materialises every batch (decompressing if needed).
void ReadFile(benchmark::State& state, bool validate_full) {
  const auto codec = kCodecs[state.range(0)];
  const Dataset& d = Data();
  for (auto _ : state) {
    auto reader = ipc::FileReader::Open(ipc::SourceFromBuffer(d.files.at(codec)),
                                        {.validate_full = validate_full});
    if (!reader.ok()) state.SkipWithError(reader.status().ToString().c_str());
    auto batches = (*reader)->ReadAll();
    if (!batches.ok()) state.SkipWithError(batches.status().ToString().c_str());
    benchmark::DoNotOptimize(batches);
  }
  state.SetBytesProcessed(state.iterations() * d.uncompressed_bytes);
  state.SetLabel(std::string(ipc::CompressionName(codec)));
}

void BM_ReadFile(benchmark::State& state) { ReadFile(state, false); }
void BM_ReadFileValidateUtf8(benchmark::State& state) { ReadFile(state, true); }

void BM_ReadStream(benchmark::State& state) {
  const auto codec = kCodecs[state.range(0)];
  const Dataset& d = Data();
  for (auto _ : state) {
    auto batches = ipc::ReadStream(d.streams.at(codec));
    if (!batches.ok()) state.SkipWithError(batches.status().ToString().c_str());
    benchmark::DoNotOptimize(batches);
  }
  state.SetBytesProcessed(state.iterations() * d.uncompressed_bytes);
  state.SetLabel(std::string(ipc::CompressionName(codec)));
}

// One projected column ("reward") of one batch: what a filtered scan touches.
void BM_ReadOneColumnOneBatch(benchmark::State& state) {
  const auto codec = kCodecs[state.range(0)];
  const Dataset& d = Data();
  auto reader = *ipc::FileReader::Open(ipc::SourceFromBuffer(d.files.at(codec)));
  int i = 0;
  for (auto _ : state) {
    auto batch = reader->ReadBatch(i++ % reader->num_batches(), {4});
    if (!batch.ok()) state.SkipWithError(batch.status().ToString().c_str());
    benchmark::DoNotOptimize(batch);
  }
  state.SetItemsProcessed(state.iterations() * kBatchRows);
  state.SetLabel(std::string(ipc::CompressionName(codec)));
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteFile)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadFile)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadFileValidateUtf8)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadStream)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadOneColumnOneBatch)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

// Keeps bytes/s of every run so the summary can state ratios.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      auto it = run.counters.find("bytes_per_second");
      if (it != run.counters.end()) rates[run.benchmark_name()] = it->second.value;
    }
  }
  std::map<std::string, double> rates;
};

void PrintSummary(const SummaryReporter& r) {
  const Dataset& d = Data();
  auto rate = [&](const std::string& name) {
    auto it = r.rates.find(name);
    return it == r.rates.end() ? 0.0 : it->second;
  };
  const double memcpy_bw = rate("BM_Memcpy");
  fmt::print("\n== Arrow IPC on {} rollout-like rows ({:.1f} MiB uncompressed, {} rows/batch)\n",
             g_rows, d.uncompressed_bytes / 1048576.0, kBatchRows);
  fmt::print("memcpy floor (same run): {}\n", FormatRate(memcpy_bw));
  fmt::print("{:<10} {:>10} {:>12} {:>12} {:>14} {:>12} {:>10}\n", "codec", "file", "write", "read",
             "read+utf8", "read stream", "read/memcpy");
  for (int i = 0; i < 3; ++i) {
    std::string arg = "/" + std::to_string(i);
    double read = rate("BM_ReadFile" + arg);
    fmt::print("{:<10} {:>9.1f}M {:>12} {:>12} {:>14} {:>12} {:>9.0f}%\n",
               ipc::CompressionName(kCodecs[i]), d.files.at(kCodecs[i]).size() / 1048576.0,
               FormatRate(rate("BM_WriteFile" + arg)), FormatRate(read),
               FormatRate(rate("BM_ReadFileValidateUtf8" + arg)),
               FormatRate(rate("BM_ReadStream" + arg)), memcpy_bw ? 100 * read / memcpy_bw : 0);
  }
  double none_read = rate("BM_ReadFile/0"), zstd_read = rate("BM_ReadFile/2");
  fmt::print("goal: uncompressed read >= 25% of memcpy: {:.0f}% ({})\n",
             memcpy_bw ? 100 * none_read / memcpy_bw : 0,
             none_read >= 0.25 * memcpy_bw ? "met" : "NOT met");
  fmt::print("goal: zstd read >= 500 MB/s on one core: {} ({})\n", FormatRate(zstd_read),
             zstd_read >= 500e6 ? "met" : "NOT met");
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
      strata::bench::g_rows = std::max(1L, std::atol(argv[++i]));
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  strata::bench::Data();  // build the data set before any timing
  strata::bench::SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  strata::bench::PrintSummary(reporter);
  benchmark::Shutdown();
  return 0;
}
