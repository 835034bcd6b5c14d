// What is particular to the shard WAL's format 2 segments, which are also Arrow IPC files
// (wal.h): the checks of the payloads they take, their file header, the messages their
// footers name, and, for replay, where their records start and their footer begins.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "lsm/wal_internal.h"
#include "util/little_endian.h"

namespace strata::lsm::internal {
namespace {

// The dictionary-encoded types in `type` and its children: IPC writers give them the
// dictionary ids 0, 1, ... in this pre-order over a schema's fields.
int64_t CountDictionaries(const DataType& type) {
  if (type.id() == TypeId::kDictionary) return 1;  // its values hold no dictionaries
  int64_t n = 0;
  for (const FieldPtr& child : type.fields()) n += CountDictionaries(*child->type());
  return n;
}

int64_t CountDictionaries(const SchemaPtr& schema) {
  if (schema == nullptr) return 0;
  int64_t n = 0;
  for (const FieldPtr& field : schema->fields()) n += CountDictionaries(*field->type());
  return n;
}

std::string_view KindName(WalRecordKind kind) {
  return kind == WalRecordKind::kRows ? "rows" : "tombstones";
}

}  // namespace

FilePayloadChecker::FilePayloadChecker(SchemaPtr file_schema)
    : file_schema_(std::move(file_schema)), num_dictionary_ids_(CountDictionaries(file_schema_)) {}

Result<ScannedPayload> FilePayloadChecker::Scan(WalRecordKind kind, std::string_view payload) {
  ScannedPayload out;
  // Records then keep starting at multiples of 8, and so do the messages in them, as the
  // footer requires.
  if (payload.size() % 8 != 0) {
    return Status::InvalidArgument(fmt::format(
        "WAL {} payload of {} bytes: segments that are IPC files need payload lengths that "
        "are multiples of 8",
        KindName(kind), payload.size()));
  }
  if (kind != WalRecordKind::kRows) return out;
  Result<std::vector<ipc::MessageLayout>> scanned = ipc::ScanStreamLayout(payload);
  if (!scanned.ok()) {
    return Status::InvalidArgument(
        fmt::format("WAL rows payload is not an IPC stream: {}", scanned.status().ToString()));
  }
  const std::vector<ipc::MessageLayout>& messages = *scanned;
  if (messages.empty() || messages[0].kind != ipc::MessageLayout::Kind::kSchema) {
    return Status::InvalidArgument("WAL rows payload does not start with an IPC schema message");
  }
  STRATA_RETURN_IF_ERROR(
      CheckSchema(payload.substr(0, static_cast<size_t>(messages[0].metadata_length)), payload));
  // Dictionary ids sent so far; every one must come before the first batch with rows, as
  // a stream writer sends them, so that the footer has a dictionary for each id.
  std::vector<bool> sent(static_cast<size_t>(num_dictionary_ids_), false);
  int64_t missing = num_dictionary_ids_;
  for (size_t i = 1; i < messages.size(); ++i) {
    const ipc::MessageLayout& m = messages[i];
    if (m.kind == ipc::MessageLayout::Kind::kSchema) {
      return Status::InvalidArgument(
          fmt::format("WAL rows payload has a second schema message at offset {}", m.offset));
    }
    const bool dictionary = m.kind == ipc::MessageLayout::Kind::kDictionaryBatch;
    const char* what = dictionary ? "dictionary batch" : "record batch";
    if (m.offset % 8 != 0) {
      return Status::InvalidArgument(fmt::format(
          "WAL rows payload has a {} message at offset {}, not a multiple of 8", what, m.offset));
    }
    if (dictionary) {
      // The footer names one whole dictionary per id; a delta means nothing without the
      // dictionary before it in its own payload.
      if (m.is_delta) {
        return Status::InvalidArgument(fmt::format(
            "WAL rows payload has a delta dictionary batch for dictionary {} at offset {}; "
            "segments that are IPC files need every dictionary sent whole",
            m.dictionary_id, m.offset));
      }
      if (m.dictionary_id < 0 || m.dictionary_id >= num_dictionary_ids_) {
        return Status::InvalidArgument(fmt::format(
            "WAL rows payload has a dictionary batch for dictionary {} at offset {}; the file "
            "schema has dictionaries 0 to {}",
            m.dictionary_id, m.offset, num_dictionary_ids_ - 1));
      }
      if (!sent[static_cast<size_t>(m.dictionary_id)]) {
        sent[static_cast<size_t>(m.dictionary_id)] = true;
        --missing;
      }
      out.dictionaries.push_back(
          {m.dictionary_id, m.num_rows, {m.offset, m.metadata_length, m.body_length}});
      continue;
    }
    if (m.num_rows == 0) continue;  // nothing for a file reader to return
    if (missing > 0) {
      const auto first_missing = std::find(sent.begin(), sent.end(), false) - sent.begin();
      return Status::InvalidArgument(fmt::format(
          "WAL rows payload has a record batch at offset {} before any dictionary batch for "
          "dictionary {}",
          m.offset, first_missing));
    }
    out.blocks.push_back({m.offset, m.metadata_length, m.body_length});
  }
  return out;
}

Status FilePayloadChecker::CheckSchema(std::string_view message, std::string_view payload) {
  {
    MutexLock lock(mu_);
    for (const std::string& accepted : accepted_schema_messages_) {
      if (accepted == message) return Status::OK();
    }
  }
  Result<std::unique_ptr<ipc::StreamReader>> reader = ipc::StreamReader::Open(
      Buffer::Unowned(payload.data(), static_cast<int64_t>(payload.size())));
  if (!reader.ok()) {
    return Status::InvalidArgument(
        fmt::format("WAL rows payload's schema does not decode: {}", reader.status().ToString()));
  }
  const SchemaPtr& schema = (*reader)->schema();
  if (!schema->Equals(*file_schema_, /*check_metadata=*/false)) {
    return Status::InvalidArgument(
        fmt::format("WAL rows payload's schema\n{}\ndiffers from the segments' file schema\n{}",
                    schema->ToString(), file_schema_->ToString()));
  }
  MutexLock lock(mu_);
  if (accepted_schema_messages_.size() < 8) accepted_schema_messages_.emplace_back(message);
  return Status::OK();
}

Result<std::string> EncodeSegmentFileHeader(const Schema& schema) {
  STRATA_ASSIGN_OR_RETURN(std::string file_header, ipc::EncodeFileHeader(schema));
  if (file_header.size() % 8 != 0) {
    return Status::Internal(
        fmt::format("IPC file header of {} bytes is not a multiple of 8", file_header.size()));
  }
  return file_header;
}

void SegmentFileIndex::Add(int64_t payload_start, const ScannedPayload& payload) {
  for (const ipc::FileBlock& block : payload.blocks) {
    blocks.push_back({payload_start + block.offset, block.metadata_length, block.body_length});
  }
  for (const PayloadDictionary& d : payload.dictionaries) {
    auto [it, inserted] = dictionaries.try_emplace(d.id);
    if (inserted || d.length > it->second.length) {
      it->second = {d.id,
                    d.length,
                    {payload_start + d.block.offset, d.block.metadata_length, d.block.body_length}};
    }
  }
}

void SegmentFileIndex::Clear() {
  blocks.clear();
  dictionaries.clear();
}

Result<std::string> SegmentFileIndex::EncodeFooter(const Schema& schema) const {
  std::vector<ipc::FileBlock> dictionary_blocks;
  dictionary_blocks.reserve(dictionaries.size());
  for (const auto& [id, longest] : dictionaries) dictionary_blocks.push_back(longest.block);
  return ipc::EncodeFileFooter(schema, dictionary_blocks, blocks);
}

Result<std::optional<uint64_t>> RecordsStart(const WalSegment& segment, std::string_view data) {
  if (data.size() < kFileMagic.size() || data.substr(0, kFileMagic.size()) != kFileMagic) {
    return std::optional<uint64_t>(0);
  }
  const uint64_t at = kFileMagic.size();  // the schema message
  auto corruption = [&](std::string_view what) {
    return Status::Corruption(
        fmt::format("WAL segment '{}': IPC file header: schema message at offset {}: {}",
                    segment.key, at, what));
  };
  if (data.size() < at + 8) {
    if (IntactRecordFollows(data, at, segment.epoch, 0)) {
      return corruption("cut short, yet intact records follow");
    }
    return std::optional<uint64_t>();
  }
  const uint32_t marker = DecodeFixed32(data.data() + at);
  const int32_t length = static_cast<int32_t>(DecodeFixed32(data.data() + at + 4));
  if (marker != kIpcContinuation) {
    return corruption(fmt::format("continuation marker {:#010x}, not 0xffffffff", marker));
  }
  if (length <= 0 || length % 8 != 0) {
    return corruption(fmt::format("metadata length {} is not a positive multiple of 8", length));
  }
  const uint64_t end = at + 8 + static_cast<uint64_t>(length);
  if (end > data.size()) {
    if (IntactRecordFollows(data, at + 8, segment.epoch, 0)) {
      return corruption(
          fmt::format("its length {} runs past the end ({} bytes), yet intact records follow",
                      length, data.size()));
    }
    return std::optional<uint64_t>();
  }
  return std::optional<uint64_t>(end);
}

std::optional<uint64_t> CompleteFooterStart(std::string_view data, uint64_t records_start) {
  constexpr std::string_view kTrailerMagic("ARROW1", 6);
  constexpr uint64_t kTrailer = 4 + kTrailerMagic.size();  // footer length + magic
  if (data.size() < records_start + kEndOfStream.size() + kTrailer ||
      data.substr(data.size() - kTrailerMagic.size()) != kTrailerMagic) {
    return std::nullopt;
  }
  const int32_t footer_length =
      static_cast<int32_t>(DecodeFixed32(data.data() + data.size() - kTrailer));
  if (footer_length <= 0) return std::nullopt;
  const uint64_t tail = kEndOfStream.size() + static_cast<uint64_t>(footer_length) + kTrailer;
  if (tail > data.size() - records_start) return std::nullopt;
  const uint64_t start = data.size() - tail;
  if (start % 8 != 0 || data.substr(start, kEndOfStream.size()) != kEndOfStream) {
    return std::nullopt;
  }
  return start;
}

}  // namespace strata::lsm::internal
