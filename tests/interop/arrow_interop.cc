// strata's side of the Arrow interop check (README.md):
//   arrow_interop write DIR            every case as DIR/<case>.arrows (stream) and .arrow (file)
//   arrow_interop check DIR [CASE...]  read those files (written by anyone) and compare them
//                                      with the spec; all cases unless some are named
// Exits 1 on any mismatch, naming the file, batch, column and row.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "interop/interop_spec.h"
#include "strata/ipc.h"

namespace strata::interop {
namespace {

namespace fs = std::filesystem;

Result<ipc::Compression> CompressionOf(const Case& c) {
  if (c.compression == "none") return ipc::Compression::kNone;
  if (c.compression == "lz4") return ipc::Compression::kLz4Frame;
  if (c.compression == "zstd") return ipc::Compression::kZstd;
  return Status::InvalidArgument("unknown compression " + c.compression);
}

Status WriteBytes(const fs::path& path, const Buffer& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  out.close();
  if (!out) return Status::IOError("cannot write " + path.string());
  return Status::OK();
}

Result<Buffer> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path.string());
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return Buffer::Copy(bytes);
}

Status Write(const fs::path& dir) {
  fs::create_directories(dir);
  for (const Case& c : Cases()) {
    STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, CaseBatches(c));
    ipc::WriteOptions options;
    STRATA_ASSIGN_OR_RETURN(options.compression, CompressionOf(c));
    options.alignment = c.alignment;
    STRATA_ASSIGN_OR_RETURN(Buffer stream,
                            ipc::WriteStreamToBuffer(SpecSchema(), batches, options));
    STRATA_RETURN_IF_ERROR(WriteBytes(dir / (c.name + ".arrows"), stream));
    STRATA_ASSIGN_OR_RETURN(Buffer file, ipc::WriteFileToBuffer(SpecSchema(), batches, options));
    STRATA_RETURN_IF_ERROR(WriteBytes(dir / (c.name + ".arrow"), file));
  }
  std::printf("wrote %s\n", dir.c_str());
  return Status::OK();
}

// Compares the batches read from one file with the case's expected batches; returns the
// number of mismatches (each printed).
int CheckBatches(const std::string& where, const Case& c, const SchemaPtr& schema,
                 const std::vector<RecordBatch>& got) {
  int mismatches = 0;
  auto mismatch = [&](const std::string& what) {
    ++mismatches;
    std::fprintf(stderr, "MISMATCH %s: %s\n", where.c_str(), what.c_str());
  };
  if (!schema->Equals(*SpecSchema(), /*check_metadata=*/true)) {
    mismatch(
        fmt::format("schema\n{}\ninstead of\n{}", schema->ToString(), SpecSchema()->ToString()));
  }
  if (got.size() != c.batch_rows.size()) {
    mismatch(fmt::format("{} batches instead of {}", got.size(), c.batch_rows.size()));
    return mismatches;
  }
  int64_t first = c.first_row;
  for (size_t b = 0; b < got.size(); ++b) {
    Result<RecordBatch> want = BuildBatch(first, c.batch_rows[b]);
    if (!want.ok()) {
      mismatch("cannot build the expected batch: " + want.status().ToString());
      return mismatches;
    }
    if (got[b].num_rows() != want->num_rows()) {
      mismatch(
          fmt::format("batch {}: {} rows instead of {}", b, got[b].num_rows(), want->num_rows()));
    } else if (Status valid = got[b].ValidateFull(); !valid.ok()) {
      mismatch(fmt::format("batch {}: {}", b, valid.ToString()));
    } else {
      for (int k = 0; k < want->num_columns(); ++k) {
        std::string diff = DiffArrays(want->column(k), got[b].column(k), first);
        if (!diff.empty()) {
          mismatch(
              fmt::format("batch {} column {}: {}", b, want->schema()->field(k)->name(), diff));
        }
      }
    }
    first += c.batch_rows[b];
  }
  return mismatches;
}

int CheckStream(const fs::path& dir, const Case& c) {
  std::string where = c.name + ".arrows";
  Result<Buffer> bytes = ReadBytes(dir / where);
  if (!bytes.ok()) {
    std::fprintf(stderr, "MISMATCH %s: %s\n", where.c_str(), bytes.status().ToString().c_str());
    return 1;
  }
  std::vector<RecordBatch> batches;
  Result<std::unique_ptr<ipc::StreamReader>> reader = ipc::StreamReader::Open(*bytes);
  Status status = reader.status();
  while (status.ok()) {
    Result<std::optional<RecordBatch>> next = (*reader)->Next();
    if (!next.ok()) {
      status = next.status();
    } else if (!next->has_value()) {
      break;
    } else {
      batches.push_back(std::move(**next));
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "MISMATCH %s: strata cannot read it: %s\n", where.c_str(),
                 status.ToString().c_str());
    return 1;
  }
  return CheckBatches(where, c, (*reader)->schema(), batches);
}

int CheckFile(const fs::path& dir, const Case& c) {
  std::string where = c.name + ".arrow";
  Result<Buffer> bytes = ReadBytes(dir / where);
  if (!bytes.ok()) {
    std::fprintf(stderr, "MISMATCH %s: %s\n", where.c_str(), bytes.status().ToString().c_str());
    return 1;
  }
  Result<std::unique_ptr<ipc::FileReader>> reader =
      ipc::FileReader::Open(ipc::SourceFromBuffer(*bytes));
  Result<std::vector<RecordBatch>> batches =
      reader.ok() ? (*reader)->ReadAll() : Result<std::vector<RecordBatch>>(reader.status());
  if (!batches.ok()) {
    std::fprintf(stderr, "MISMATCH %s: strata cannot read it: %s\n", where.c_str(),
                 batches.status().ToString().c_str());
    return 1;
  }
  int mismatches = CheckBatches(where, c, (*reader)->schema(), *batches);
  // Columns read alone (the projection path) must match too: last column first.
  for (int i = 0; i < (*reader)->num_batches() && mismatches == 0; ++i) {
    for (int k = (*reader)->schema()->num_fields() - 1; k >= 0; --k) {
      Result<RecordBatch> column = (*reader)->ReadBatch(i, {k});
      std::string diff = column.ok() ? DiffArrays((*batches)[i].column(k), column->column(0))
                                     : column.status().ToString();
      if (!diff.empty()) {
        ++mismatches;
        std::fprintf(stderr, "MISMATCH %s: batch %d column %d read alone: %s\n", where.c_str(), i,
                     k, diff.c_str());
      }
    }
  }
  return mismatches;
}

int Check(const fs::path& dir, const std::vector<std::string>& names) {
  int mismatches = 0;
  int checked = 0;
  for (const Case& c : Cases()) {
    if (!names.empty() && std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    mismatches += CheckStream(dir, c) + CheckFile(dir, c);
    ++checked;
  }
  if (checked != static_cast<int>(names.empty() ? Cases().size() : names.size())) {
    std::fprintf(stderr, "unknown case name among the arguments\n");
    return 2;
  }
  if (mismatches > 0) {
    std::fprintf(stderr, "%d mismatches\n", mismatches);
    return 1;
  }
  std::printf("strata read %d cases in %s: all match\n", checked, dir.c_str());
  return 0;
}

}  // namespace
}  // namespace strata::interop

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "write") {
    strata::Status status = strata::interop::Write(args[1]);
    if (!status.ok()) {
      std::fprintf(stderr, "write failed: %s\n", status.ToString().c_str());
      return 1;
    }
    return 0;
  }
  if (args.size() >= 2 && args[0] == "check") {
    return strata::interop::Check(args[1], {args.begin() + 2, args.end()});
  }
  std::fprintf(stderr, "usage: arrow_interop write DIR | check DIR [CASE...]\n");
  return 2;
}
