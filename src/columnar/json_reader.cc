// JSON input: splitting text into lines for RowDecoder, in one piece or streamed in chunks
// (JsonLinesReader), so inputs larger than memory convert batch by batch.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "columnar/json_decoder.h"
#include "strata/json.h"

namespace strata::json {
namespace {

constexpr size_t kReadChunk = size_t{1} << 20;

bool IsBlank(std::string_view line) { return line.find_first_not_of(" \t\r") == line.npos; }

}  // namespace

Result<RecordBatch> RowsToBatch(const SchemaPtr& schema, std::string_view json_lines,
                                const JsonReadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto decoder, internal::RowDecoder::Make(schema, options));
  int64_t line_number = 0;
  size_t pos = 0;
  while (pos < json_lines.size()) {
    const void* newline = std::memchr(json_lines.data() + pos, '\n', json_lines.size() - pos);
    const size_t end =
        newline == nullptr
            ? json_lines.size()
            : static_cast<size_t>(static_cast<const char*>(newline) - json_lines.data());
    const std::string_view line = json_lines.substr(pos, end - pos);
    ++line_number;
    if (!IsBlank(line)) STRATA_RETURN_IF_ERROR(decoder->AppendLine(line, line_number));
    pos = end + 1;
  }
  return decoder->Finish();
}

Result<RecordBatch> ArrayOfRowsToBatch(const SchemaPtr& schema, std::string_view json_array_text,
                                       const JsonReadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto decoder, internal::RowDecoder::Make(schema, options));
  STRATA_RETURN_IF_ERROR(decoder->AppendArrayOfRows(json_array_text));
  return decoder->Finish();
}

class JsonLinesReader::Impl {
 public:
  Impl(SchemaPtr schema, ChunkSource source, const JsonReadOptions& options,
       std::unique_ptr<internal::RowDecoder> decoder)
      : schema_(std::move(schema)),
        source_(std::move(source)),
        batch_rows_(options.batch_rows),
        decoder_(std::move(decoder)) {}

  Result<std::optional<RecordBatch>> Next() {
    if (!error_.ok()) return error_;
    while (decoder_->num_rows() < batch_rows_) {
      std::string_view line;
      bool have_line = false;
      error_ = NextLine(&line, &have_line);
      if (!error_.ok()) return error_;
      if (!have_line) break;
      ++lines_read_;
      if (IsBlank(line)) continue;
      error_ = decoder_->AppendLine(line, lines_read_);
      if (!error_.ok()) return error_;
    }
    if (decoder_->num_rows() == 0) return std::optional<RecordBatch>();
    auto batch = decoder_->Finish();
    if (!batch.ok()) {
      error_ = batch.status();
      return error_;
    }
    return std::optional<RecordBatch>(std::move(batch).value());
  }

  const SchemaPtr& schema() const { return schema_; }
  int64_t lines_read() const { return lines_read_; }

 private:
  // The next line (without its '\n') in *line, valid until the next call; *have_line is false
  // at the end of the input.
  Status NextLine(std::string_view* line, bool* have_line) {
    while (true) {
      const void* newline = std::memchr(buffer_.data() + scan_, '\n', end_ - scan_);
      if (newline != nullptr) {
        const auto at = static_cast<size_t>(static_cast<const char*>(newline) - buffer_.data());
        *line = std::string_view(buffer_.data() + begin_, at - begin_);
        begin_ = scan_ = at + 1;
        *have_line = true;
        return Status::OK();
      }
      scan_ = end_;
      if (eof_) {
        *have_line = begin_ < end_;
        *line = std::string_view(buffer_.data() + begin_, end_ - begin_);
        begin_ = end_;
        return Status::OK();
      }
      STRATA_RETURN_IF_ERROR(Fill());
    }
  }

  // Moves the unfinished line to the front of the buffer and reads more after it.
  Status Fill() {
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      scan_ -= begin_;
      begin_ = 0;
    }
    if (buffer_.size() - end_ < kReadChunk / 2) {
      buffer_.resize(std::max(buffer_.size() * 2, end_ + kReadChunk));
    }
    STRATA_ASSIGN_OR_RETURN(const size_t n, source_(buffer_.data() + end_, buffer_.size() - end_));
    if (n > buffer_.size() - end_) {
      return Status::Internal("JSON Lines source returned more bytes than asked for");
    }
    end_ += n;
    if (n == 0) eof_ = true;
    return Status::OK();
  }

  SchemaPtr schema_;
  ChunkSource source_;
  int64_t batch_rows_;
  std::unique_ptr<internal::RowDecoder> decoder_;
  Status error_;  // sticky
  int64_t lines_read_ = 0;

  // buffer_[begin_, end_) holds unconsumed input; [begin_, scan_) is known to hold no '\n'.
  std::string buffer_;
  size_t begin_ = 0;
  size_t scan_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
};

JsonLinesReader::JsonLinesReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JsonLinesReader::~JsonLinesReader() = default;

Result<std::unique_ptr<JsonLinesReader>> JsonLinesReader::Make(SchemaPtr schema,
                                                               std::istream* input,
                                                               const JsonReadOptions& options) {
  if (input == nullptr) return Status::InvalidArgument("JsonLinesReader: no input stream");
  ChunkSource source = [input](char* dst, size_t capacity) -> Result<size_t> {
    input->read(dst, static_cast<std::streamsize>(capacity));
    if (input->bad()) return Status::IOError("JsonLinesReader: reading the input stream failed");
    return static_cast<size_t>(input->gcount());
  };
  return Make(std::move(schema), std::move(source), options);
}

Result<std::unique_ptr<JsonLinesReader>> JsonLinesReader::Make(SchemaPtr schema, ChunkSource source,
                                                               const JsonReadOptions& options) {
  if (!source) return Status::InvalidArgument("JsonLinesReader: no input source");
  if (options.batch_rows <= 0) {
    return Status::InvalidArgument(
        fmt::format("JsonLinesReader: batch_rows must be positive, got {}", options.batch_rows));
  }
  STRATA_ASSIGN_OR_RETURN(auto decoder, internal::RowDecoder::Make(schema, options));
  auto impl =
      std::make_unique<Impl>(std::move(schema), std::move(source), options, std::move(decoder));
  return std::make_unique<JsonLinesReader>(std::move(impl));
}

Result<std::optional<RecordBatch>> JsonLinesReader::Next() { return impl_->Next(); }

const SchemaPtr& JsonLinesReader::schema() const { return impl_->schema(); }

int64_t JsonLinesReader::lines_read() const { return impl_->lines_read(); }

}  // namespace strata::json
