// `strata arrow cat | from-json | inspect`: the columnar foundation from the command line.
#include "arrow_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "strata/ipc.h"
#include "strata/json.h"
#include "strata/pretty_print.h"
#include "strata/record_batch.h"
#include "strata/schema_json.h"

namespace strata::cli {
namespace {

constexpr std::string_view kFileMagic = "ARROW1";

// Batches of an Arrow IPC file or stream, optionally projected, read one at a time.
class ArrowInput {
 public:
  static Result<std::unique_ptr<ArrowInput>> Open(const std::string& path) {
    auto input = std::unique_ptr<ArrowInput>(new ArrowInput());
    Buffer whole;
    if (path == "-") {
      std::ostringstream ss;
      ss << std::cin.rdbuf();
      whole = Buffer::Copy(ss.str());
    } else {
      Result<std::shared_ptr<ipc::RandomAccessSource>> source = ipc::SourceFromFile(path);
      if (!source.ok()) return source.status();
      STRATA_ASSIGN_OR_RETURN(int64_t size, (*source)->Size());
      input->size_ = size;
      STRATA_ASSIGN_OR_RETURN(Buffer head, (*source)->ReadAt(0, kFileMagic.size()));
      if (head.view() == kFileMagic) {
        Result<std::unique_ptr<ipc::FileReader>> reader = ipc::FileReader::Open(*source);
        if (!reader.ok()) return reader.status().WithContext(path);
        input->file_ = *std::move(reader);
        input->schema_ = input->file_->schema();
        return input;
      }
      STRATA_ASSIGN_OR_RETURN(whole, (*source)->ReadAt(0, size));
    }
    input->size_ = whole.size();
    Result<std::unique_ptr<ipc::StreamReader>> reader = ipc::StreamReader::Open(whole);
    if (!reader.ok()) {
      return reader.status().WithContext(
          fmt::format("{} (neither an Arrow IPC file nor a stream)", path));
    }
    input->stream_ = *std::move(reader);
    input->schema_ = input->stream_->schema();
    return input;
  }

  const SchemaPtr& schema() const { return schema_; }
  bool is_file() const { return file_ != nullptr; }
  int64_t size() const { return size_; }
  ipc::FileReader* file() const { return file_.get(); }

  // Restricts later batches to these columns (empty: all).
  Status SetColumns(const std::vector<std::string>& names) {
    if (names.empty()) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(columns_, schema_->FieldIndices(names));
    projected_ = true;
    return Status::OK();
  }

  // Skips whole batches before `rows_to_skip` without decoding them (files only) and
  // returns the next batch; *skipped receives how many rows were skipped that way.
  Result<std::optional<RecordBatch>> Next(int64_t rows_to_skip, int64_t* skipped) {
    *skipped = 0;
    if (file_) {
      while (next_batch_ < file_->num_batches()) {
        int i = next_batch_++;
        if (rows_to_skip > 0) {
          STRATA_ASSIGN_OR_RETURN(ipc::BatchInfo info, file_->InspectBatch(i));
          if (info.num_rows <= rows_to_skip - *skipped) {
            *skipped += info.num_rows;
            continue;
          }
        }
        if (projected_) return std::optional<RecordBatch>(*file_->ReadBatch(i, columns_));
        STRATA_ASSIGN_OR_RETURN(RecordBatch batch, file_->ReadBatch(i));
        return std::optional<RecordBatch>(std::move(batch));
      }
      return std::optional<RecordBatch>();
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, stream_->Next());
    if (batch && projected_) {
      STRATA_ASSIGN_OR_RETURN(RecordBatch projected, batch->Project(columns_));
      return std::optional<RecordBatch>(std::move(projected));
    }
    return batch;
  }

 private:
  ArrowInput() = default;

  SchemaPtr schema_;
  std::unique_ptr<ipc::FileReader> file_;
  std::unique_ptr<ipc::StreamReader> stream_;
  int64_t size_ = 0;
  int next_batch_ = 0;
  bool projected_ = false;
  std::vector<int> columns_;
};

struct CatOptions {
  std::string path;
  std::string format = "jsonl";
  std::string columns;
  int64_t limit = -1;
  int64_t offset = 0;
  int max_cell_width = 40;
  bool timestamps_as_micros = false;
};

Status RunCat(const CatOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(auto input, ArrowInput::Open(opt.path));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> columns, ParseColumns(opt.columns));
  STRATA_RETURN_IF_ERROR(input->SetColumns(columns));
  const bool table = opt.format == "table";
  std::vector<RecordBatch> kept;  // table output
  json::JsonWriteOptions json_options{.timestamps_as_micros = opt.timestamps_as_micros};
  int64_t to_skip = opt.offset;
  int64_t remaining = opt.limit < 0 ? INT64_MAX : opt.limit;
  std::string out;
  while (remaining > 0) {
    int64_t skipped = 0;
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, input->Next(to_skip, &skipped));
    to_skip -= skipped;
    if (!batch) break;
    RecordBatch rows = *batch;
    if (to_skip > 0) {
      int64_t drop = std::min(to_skip, rows.num_rows());
      rows = rows.Slice(drop, rows.num_rows() - drop);
      to_skip -= drop;
    }
    if (rows.num_rows() > remaining) rows = rows.Slice(0, remaining);
    remaining -= rows.num_rows();
    if (rows.num_rows() == 0) continue;
    if (table) {
      kept.push_back(std::move(rows));
    } else {
      out.clear();
      STRATA_RETURN_IF_ERROR(json::AppendRowsToJsonLines(rows, &out, json_options));
      STRATA_RETURN_IF_ERROR(WriteStdout(out));
    }
  }
  if (table) {
    if (kept.empty())
      kept.push_back(RecordBatch::MakeEmpty(
          opt.columns.empty()
              ? input->schema()
              : *input->schema()->Project(*input->schema()->FieldIndices(columns))));
    std::string text = FormatTable(kept, {.max_cell_width = opt.max_cell_width});
    STRATA_RETURN_IF_ERROR(WriteStdout(text));
  }
  return FlushStdout();
}

struct FromJsonOptions {
  std::string schema;
  std::string input;
  std::string output;
  std::string compression = "none";
  std::string format = "file";
  int64_t batch_rows = 65536;
  bool ignore_unknown_fields = false;
};

Result<ipc::Compression> ParseCompression(const std::string& name) {
  if (name == "none") return ipc::Compression::kNone;
  if (name == "lz4" || name == "lz4_frame") return ipc::Compression::kLz4Frame;
  if (name == "zstd") return ipc::Compression::kZstd;
  return Status::InvalidArgument(
      fmt::format("unknown compression '{}' (expected none, lz4 or zstd)", name));
}

// Writes every batch of `input` to `out` in the chosen IPC format.
Status ConvertJson(JsonLinesInput& input, const FromJsonOptions& opt,
                   const ipc::WriteOptions& write_options, ipc::OutputStream* out, int64_t* rows) {
  std::unique_ptr<ipc::FileWriter> file;
  std::unique_ptr<ipc::StreamWriter> stream;
  if (opt.format == "file") {
    STRATA_ASSIGN_OR_RETURN(file, ipc::FileWriter::Make(out, input.schema(), write_options));
  } else {
    STRATA_ASSIGN_OR_RETURN(stream, ipc::StreamWriter::Make(out, input.schema(), write_options));
  }
  STRATA_RETURN_IF_ERROR(input.ForEachBatch("from-json", [&](RecordBatch batch) {
    *rows += batch.num_rows();
    return file ? file->WriteBatch(batch) : stream->WriteBatch(batch);
  }));
  STRATA_RETURN_IF_ERROR(file ? file->Close() : stream->Close());
  return out->Close();
}

Status RunFromJson(const FromJsonOptions& opt) {
  if (opt.format != "file" && opt.format != "stream") {
    return Status::InvalidArgument(
        fmt::format("unknown format '{}' (expected file or stream)", opt.format));
  }
  if (opt.batch_rows <= 0) return Status::InvalidArgument("--batch-rows must be positive");
  STRATA_ASSIGN_OR_RETURN(ipc::Compression compression, ParseCompression(opt.compression));
  std::error_code ec;
  if (std::filesystem::is_directory(opt.output, ec)) {
    return Status::InvalidArgument(fmt::format(
        "output '{}' is a directory; give the path of the Arrow file to write", opt.output));
  }
  STRATA_ASSIGN_OR_RETURN(SchemaPtr schema, LoadSchema(opt.schema));

  json::JsonReadOptions read_options{.ignore_unknown_fields = opt.ignore_unknown_fields,
                                     .batch_rows = opt.batch_rows};
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<JsonLinesInput> input,
                          JsonLinesInput::Open(opt.input, schema, read_options));

  // Write beside the destination and rename at the end, so bad input leaves nothing behind.
  std::string tmp = fmt::format("{}.tmp-{}", opt.output, ::getpid());
  STRATA_ASSIGN_OR_RETURN(auto out, ipc::OpenFileOutputStream(tmp));
  int64_t rows = 0;
  Status s =
      ConvertJson(*input, opt, ipc::WriteOptions{.compression = compression}, out.get(), &rows);
  if (!s.ok()) {
    std::filesystem::remove(tmp, ec);
    return s.WithContext(opt.input == "-" ? "stdin" : opt.input);
  }
  // An error here is the output's, not the input's.
  std::filesystem::rename(tmp, opt.output, ec);
  if (ec) {
    std::string reason = ec.message();
    std::filesystem::remove(tmp, ec);
    return Status::IOError(fmt::format("writing the output '{}' failed: renaming {} to it: {}",
                                       opt.output, tmp, reason));
  }
  std::fprintf(
      stderr, "wrote %lld rows to %s (%s)\n", static_cast<long long>(rows), opt.output.c_str(),
      FormatBytes(static_cast<int64_t>(std::filesystem::file_size(opt.output, ec))).c_str());
  return Status::OK();
}

struct InspectOptions {
  std::string path;
  int max_batches = 20;
};

Status RunInspect(const InspectOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(auto input, ArrowInput::Open(opt.path));
  const Schema& schema = *input->schema();
  std::string out = fmt::format("{}: Arrow IPC {}, {}\n", opt.path,
                                input->is_file() ? "file" : "stream", FormatBytes(input->size()));
  out += "schema:\n";
  std::istringstream lines(FormatSchema(schema));
  for (std::string line; std::getline(lines, line);) out += "  " + line + "\n";

  if (!input->is_file()) {
    int64_t batches = 0, rows = 0;
    std::string list;
    while (true) {
      int64_t skipped = 0;
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, input->Next(0, &skipped));
      if (!batch) break;
      if (batches < opt.max_batches) {
        list += fmt::format("  {:>5}  {:>10} rows\n", batches, batch->num_rows());
      }
      ++batches;
      rows += batch->num_rows();
    }
    out += fmt::format("batches: {}, rows: {}\n{}", batches, rows, list);
    return WriteStdout(out);
  }

  ipc::FileReader* file = input->file();
  std::vector<ipc::ColumnInfo> totals(schema.num_fields());
  int64_t rows = 0;
  std::string list = fmt::format("  {:>5}  {:>10}  {:>10}  {:>12}  {}\n", "batch", "rows",
                                 "metadata", "body", "compression");
  for (int i = 0; i < file->num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ipc::BatchInfo info, file->InspectBatch(i));
    rows += info.num_rows;
    for (size_t c = 0; c < info.columns.size() && c < totals.size(); ++c) {
      totals[c].stored_bytes += info.columns[c].stored_bytes;
      totals[c].uncompressed_bytes += info.columns[c].uncompressed_bytes;
    }
    if (i < opt.max_batches) {
      list += fmt::format("  {:>5}  {:>10}  {:>10}  {:>12}  {}\n", i, info.num_rows,
                          FormatBytes(info.metadata_length), FormatBytes(info.body_length),
                          ipc::CompressionName(info.compression));
    } else if (i == opt.max_batches) {
      list += fmt::format("  ... {} more batches\n", file->num_batches() - i);
    }
  }
  out += fmt::format("batches: {}, rows: {}, dictionaries: {}\n{}", file->num_batches(), rows,
                     file->num_dictionaries(), list);
  out += fmt::format("columns:\n  {:<24}  {:>12}  {:>12}  {:>6}\n", "name", "stored",
                     "uncompressed", "ratio");
  int64_t stored = 0, raw = 0;
  for (int c = 0; c < schema.num_fields(); ++c) {
    stored += totals[c].stored_bytes;
    raw += totals[c].uncompressed_bytes;
    out += fmt::format(
        "  {:<24}  {:>12}  {:>12}  {:>5.2f}x\n", schema.field(c)->name(),
        FormatBytes(totals[c].stored_bytes), FormatBytes(totals[c].uncompressed_bytes),
        totals[c].stored_bytes ? double(totals[c].uncompressed_bytes) / totals[c].stored_bytes
                               : 1.0);
  }
  out += fmt::format("  {:<24}  {:>12}  {:>12}  {:>5.2f}x\n", "(total)", FormatBytes(stored),
                     FormatBytes(raw), stored ? double(raw) / stored : 1.0);
  for (const auto& [k, v] : file->footer_metadata().entries()) {
    out += fmt::format("footer metadata: {} = {}\n", k, v);
  }
  return WriteStdout(out);
}

int Finish(const Status& s) { return s.ok() ? 0 : ReportError(s); }

}  // namespace

void AddArrowCommands(CLI::App& app, int* exit_code) {
  CLI::App* arrow = app.add_subcommand("arrow", "Read, write and inspect Arrow IPC files");
  arrow->require_subcommand(1);

  auto cat = std::make_shared<CatOptions>();
  CLI::App* cat_cmd = arrow->add_subcommand("cat", "Print the rows of an Arrow IPC file or stream");
  cat_cmd->add_option("FILE", cat->path, "Arrow IPC file or stream ('-' for stdin)")->required();
  cat_cmd->add_option("--format", cat->format, "jsonl (one JSON object per row) or table")
      ->check(CLI::IsMember({"jsonl", "table"}))
      ->capture_default_str();
  cat_cmd->add_option("--columns", cat->columns, "Comma-separated columns to print");
  cat_cmd->add_option("--limit", cat->limit, "Print at most this many rows")
      ->check(IntegerAtLeast<int64_t>(0));
  cat_cmd->add_option("--offset", cat->offset, "Skip this many rows first")
      ->check(IntegerAtLeast<int64_t>(0));
  cat_cmd->add_option("--max-cell-width", cat->max_cell_width, "Table cell width limit")
      ->check(IntegerAtLeast<int>(1))
      ->capture_default_str();
  cat_cmd->add_flag("--timestamps-as-micros", cat->timestamps_as_micros,
                    "JSON: timestamps as integer microseconds instead of RFC 3339");
  cat_cmd->callback([cat, exit_code] { *exit_code = Finish(RunCat(*cat)); });

  auto from_json = std::make_shared<FromJsonOptions>();
  CLI::App* fj = arrow->add_subcommand(
      "from-json", "Convert JSON lines to an Arrow IPC file; nothing is written on bad input");
  fj->add_option("--schema", from_json->schema, "Schema JSON file (or an inline JSON object)")
      ->required();
  fj->add_option("IN", from_json->input, "JSON lines input ('-' for stdin)")->required();
  fj->add_option("OUT", from_json->output, "Arrow IPC output path")->required();
  fj->add_option("--compression", from_json->compression, "none, lz4 or zstd")
      ->capture_default_str();
  fj->add_option("--format", from_json->format, "file (random access) or stream")
      ->capture_default_str();
  fj->add_option("--batch-rows", from_json->batch_rows, "Rows per record batch")
      ->check(IntegerAtLeast<int64_t>(1))
      ->capture_default_str();
  fj->add_flag("--ignore-unknown-fields", from_json->ignore_unknown_fields,
               "Skip JSON keys that are not in the schema");
  fj->callback([from_json, exit_code] { *exit_code = Finish(RunFromJson(*from_json)); });

  auto inspect = std::make_shared<InspectOptions>();
  CLI::App* in_cmd = arrow->add_subcommand(
      "inspect", "Show the schema, batches, sizes and compression of an Arrow IPC file");
  in_cmd->add_option("FILE", inspect->path, "Arrow IPC file or stream")->required();
  in_cmd->add_option("--max-batches", inspect->max_batches, "List at most this many batches")
      ->capture_default_str();
  in_cmd->callback([inspect, exit_code] { *exit_code = Finish(RunInspect(*inspect)); });
}

}  // namespace strata::cli
