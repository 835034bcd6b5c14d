// Fuzz targets for the Arrow IPC readers: whatever the bytes, a reader returns valid batches
// or an error. Both stream paths (buffer and input callback) and the file reader's full and
// projected reads must agree with each other.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_targets.h"
#include "strata/ipc.h"

namespace strata::fuzz {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "IPC reader broke its contract: %s\n", what.c_str());
  std::abort();
}

ipc::ReadOptions FuzzReadOptions(std::span<const uint8_t> data) {
  ipc::ReadOptions options;
  // Legal inputs may decompress to this much; keep them well inside libFuzzer's RSS limit.
  options.max_decompressed_bytes = int64_t{64} << 20;
  // Odd and even sizes take both validation paths.
  options.validate_full = data.size() % 2 == 0;
  return options;
}

// Validates and prints a batch a reader returned; returns its text for comparisons.
std::string CheckBatch(const RecordBatch& batch, const SchemaPtr& schema,
                       const ipc::ReadOptions& options) {
  Status valid = batch.Validate();
  if (!valid.ok()) Die("returned an invalid batch: " + valid.ToString());
  Status full = batch.ValidateFull();
  if (options.validate_full && !full.ok()) Die("validate_full batch fails: " + full.ToString());
  if (!batch.schema()->Equals(*schema)) Die("batch schema differs from the reader's");
  // RecordBatch::ToString prints every row; columns elide long arrays.
  if (batch.num_rows() <= 1000) return batch.ToString();
  std::string text = std::to_string(batch.num_rows()) + " rows";
  for (const Array& column : batch.columns()) text += "\n" + column.ToString();
  return text;
}

// What one read of a stream produced: the batches' text and the final status.
struct StreamRead {
  std::vector<std::string> batches;
  Status status;
};

StreamRead ReadAll(Result<std::unique_ptr<ipc::StreamReader>> opened,
                   const ipc::ReadOptions& options) {
  StreamRead read;
  if (!opened.ok()) {
    read.status = opened.status();
    return read;
  }
  ipc::StreamReader& reader = **opened;
  while (true) {
    Result<std::optional<RecordBatch>> next = reader.Next();
    if (!next.ok()) {
      read.status = next.status();
      if (reader.Next().ok()) Die("Next() after an error succeeded");
      return read;
    }
    if (!next->has_value()) return read;
    read.batches.push_back(CheckBatch(**next, reader.schema(), options));
  }
}

}  // namespace

Status FuzzIpcStream(std::span<const uint8_t> data) {
  const ipc::ReadOptions options = FuzzReadOptions(data);
  // Unowned: ASan sees any read past the input's end.
  StreamRead from_buffer =
      ReadAll(ipc::StreamReader::Open(Buffer::Unowned(data.data(), data.size()), options), options);

  // The same bytes through the callback path, in uneven chunks.
  size_t position = 0;
  size_t chunk = 1;
  auto input = [&](uint8_t* out, int64_t max_bytes) -> Result<int64_t> {
    chunk = chunk * 7 % 4093 + 1;
    size_t n = std::min({data.size() - position, static_cast<size_t>(max_bytes), chunk});
    if (n > 0) std::memcpy(out, data.data() + position, n);
    position += n;
    return static_cast<int64_t>(n);
  };
  StreamRead from_callback = ReadAll(ipc::StreamReader::Open(input, options), options);

  if (from_buffer.status.ok() != from_callback.status.ok() ||
      from_buffer.batches != from_callback.batches) {
    Die("buffer and callback readers disagree: " + from_buffer.status.ToString() + " after " +
        std::to_string(from_buffer.batches.size()) + " batches vs " +
        from_callback.status.ToString() + " after " + std::to_string(from_callback.batches.size()));
  }
  return from_buffer.status;
}

Status FuzzIpcFile(std::span<const uint8_t> data) {
  const ipc::ReadOptions options = FuzzReadOptions(data);
  STRATA_ASSIGN_OR_RETURN(
      auto reader, ipc::FileReader::Open(
                       ipc::SourceFromBuffer(Buffer::Unowned(data.data(), data.size())), options));
  const SchemaPtr& schema = reader->schema();
  // Every other column, last first: reordered and partial.
  std::vector<int> projection;
  for (int k = schema->num_fields() - 1; k >= 0; k -= 2) projection.push_back(k);
  STRATA_ASSIGN_OR_RETURN(SchemaPtr projected_schema, schema->Project(projection));

  Status verdict;
  for (int i = 0; i < reader->num_batches(); ++i) {
    Result<ipc::BatchInfo> info = reader->InspectBatch(i);
    Result<RecordBatch> batch = reader->ReadBatch(i);
    Result<RecordBatch> projected = reader->ReadBatch(i, projection);
    if (info.ok() && info->columns.size() != static_cast<size_t>(schema->num_fields())) {
      Die("InspectBatch has " + std::to_string(info->columns.size()) + " columns");
    }
    if (!batch.ok()) {
      if (verdict.ok()) verdict = batch.status();
      if (projected.ok()) CheckBatch(*projected, projected_schema, options);
      continue;
    }
    CheckBatch(*batch, schema, options);
    if (!projected.ok())
      Die("full read succeeded, projection failed: " + projected.status().ToString());
    std::string projected_text = CheckBatch(*projected, projected_schema, options);
    Result<RecordBatch> expected = batch->Project(projection);
    if (!expected.ok()) Die("cannot project a batch the reader returned");
    if (CheckBatch(*expected, projected_schema, options) != projected_text) {
      Die("projected read differs from the projection of the full read");
    }
  }
  return verdict;
}

}  // namespace strata::fuzz
