// Error reporting, column parsing, progress display, JSON lines input and the new-directory
// check for the CLI.
#include "cli_common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <utility>

#include "strata/schema_json.h"

namespace strata::cli {

namespace {

// InvalidArgument when `path` names a directory (which fopen and ifstream open without
// complaint, failing only at the first read with a vague error).
Status CheckNotDirectory(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' is a directory", path));
  }
  return Status::OK();
}

}  // namespace

Result<std::string> ReadTextFile(const std::string& path) {
  STRATA_RETURN_IF_ERROR(CheckNotDirectory(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot open '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IOError(fmt::format("error reading '{}'", path));
  return ss.str();
}

Result<std::string> ReadTextFileOrStdin(const std::string& path) {
  if (path != "-") return ReadTextFile(path);
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  if (std::cin.bad()) return Status::IOError("error reading stdin");
  return ss.str();
}

Result<SchemaPtr> LoadSchema(const std::string& spec) {
  if (!spec.empty() && spec.front() == '{') return SchemaFromJson(spec);
  STRATA_ASSIGN_OR_RETURN(std::string text, ReadTextFile(spec));
  Result<SchemaPtr> schema = SchemaFromJson(text);
  if (!schema.ok()) return schema.status().WithContext(spec);
  return schema;
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "strata: error: %s\n", status.ToString().c_str());
  return 1;
}

void ReportWarning(std::string_view where, std::string_view message) {
  std::fprintf(stderr, "%s", fmt::format("strata: warning: {}: {}\n", where, message).c_str());
}

namespace {

// The output error state of this process (one command runs per process).
int output_errno = 0;                // errno of the first failed write or flush of stdout
bool output_error_returned = false;  // a command got an OutputError status
std::string output_failure_note;

Status OutputError(int err) {
  if (output_errno == 0) output_errno = err;
  output_error_returned = true;
  std::string message = fmt::format("writing the output failed: {}", std::strerror(err));
  if (!output_failure_note.empty()) message += "; " + output_failure_note;
  return Status::IOError(std::move(message));
}

}  // namespace

Status WriteStdout(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    return OutputError(errno != 0 ? errno : EIO);
  }
  return Status::OK();
}

Status FlushStdout() {
  if (std::fflush(stdout) != 0) return OutputError(errno != 0 ? errno : EIO);
  return Status::OK();
}

void SetOutputFailureNote(std::string note) { output_failure_note = std::move(note); }

int FinishOutput(int exit_code) {
  int err = 0;
  errno = 0;
  if (std::fflush(stdout) != 0) err = errno;
  // A write that failed earlier (its data dropped) leaves the error flag set, even when
  // nothing is left to flush.
  if (err == 0 && std::ferror(stdout)) err = output_errno;
  if (err == 0 && std::ferror(stdout)) err = EIO;
  if (err == 0) return exit_code;
  if (exit_code != 0 && output_error_returned) return exit_code;  // reported by the command
  ReportError(OutputError(err));
  return exit_code != 0 ? exit_code : 1;
}

std::vector<std::string> SplitColumns(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    start = end + 1;
  }
  return out;
}

Result<std::vector<std::string>> ParseColumns(const std::string& text) {
  std::vector<std::string> names = SplitColumns(text);
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (names[i] == names[j]) {
        return Status::InvalidArgument(
            fmt::format("--columns: column '{}' is given twice", names[i]));
      }
    }
  }
  return names;
}

std::string FormatBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

Progress::Progress(std::string what, int64_t total_bytes)
    : what_(std::move(what)),
      total_bytes_(total_bytes),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::Update(int64_t rows, int64_t bytes) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  std::string pct =
      total_bytes_ > 0 ? fmt::format(" {:3.0f}%", 100.0 * bytes / total_bytes_) : std::string();
  std::fprintf(stderr, "\r%s%s  %lld rows  %s  %.1f MB/s   ", what_.c_str(), pct.c_str(),
               static_cast<long long>(rows), FormatBytes(bytes).c_str(),
               secs > 0 ? bytes / secs / 1e6 : 0.0);
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

Result<std::unique_ptr<JsonLinesInput>> JsonLinesInput::Open(const std::string& path,
                                                             SchemaPtr schema,
                                                             const json::JsonReadOptions& options) {
  if (path != "-") STRATA_RETURN_IF_ERROR(CheckNotDirectory(path));
  std::FILE* file = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) return Status::NotFound(fmt::format("cannot open '{}'", path));
  std::error_code ec;
  int64_t total = path == "-" ? -1 : static_cast<int64_t>(std::filesystem::file_size(path, ec));
  std::unique_ptr<JsonLinesInput> input(new JsonLinesInput(file, total));
  JsonLinesInput* self = input.get();
  json::JsonLinesReader::ChunkSource source = [self](char* dst, size_t cap) -> Result<size_t> {
    size_t n = std::fread(dst, 1, cap, self->file_);
    if (n == 0 && std::ferror(self->file_)) {
      return Status::IOError("reading the JSON input failed");
    }
    self->bytes_read_ += static_cast<int64_t>(n);
    return n;
  };
  STRATA_ASSIGN_OR_RETURN(input->reader_,
                          json::JsonLinesReader::Make(std::move(schema), source, options));
  return input;
}

JsonLinesInput::JsonLinesInput(std::FILE* file, int64_t total_bytes)
    : file_(file), total_bytes_(total_bytes) {}

JsonLinesInput::~JsonLinesInput() {
  reader_.reset();
  if (file_ != stdin) std::fclose(file_);
}

Status JsonLinesInput::ForEachBatch(std::string what,
                                    const std::function<Status(RecordBatch batch)>& each) {
  Progress progress(std::move(what), total_bytes_);
  int64_t rows = 0;
  Status status = [&]() -> Status {
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, reader_->Next());
      if (!batch) return Status::OK();
      rows += batch->num_rows();
      STRATA_RETURN_IF_ERROR(each(*std::move(batch)));
      progress.Update(rows, bytes_read_);
    }
  }();
  progress.Finish();
  return status;
}

Status CheckNewOrEmptyDirectory(const std::string& dir, std::string_view what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::OK();
  if (!fs::is_directory(dir, ec)) {
    return Status::AlreadyExists(fmt::format(
        "'{}' exists and is not a directory; a {} is only made in a new or empty directory", dir,
        what));
  }
  if (!fs::is_empty(dir, ec)) {
    return Status::AlreadyExists(fmt::format(
        "'{}' is not empty (and holds no {}); a {} is only made in a new or empty directory", dir,
        what, what));
  }
  return Status::OK();
}

}  // namespace strata::cli
