// Internals of the shard WAL (wal.h) shared by wal.cc (record framing, the writer, replay)
// and wal_file.cc (what is particular to format 2 segments, which are also Arrow IPC files).
// Byte layout of both segment formats: docs/format/lsm.md §5.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lsm/wal.h"
#include "strata/ipc.h"
#include "strata/status.h"
#include "strata/type.h"
#include "util/mutex.h"

namespace strata::lsm::internal {

// ---------------------------------------------------------------------------------------
// Records (wal.cc)

bool IsKnownKind(uint32_t kind);

// A record parsed from a segment's bytes.
struct ParsedHeader {
  uint32_t magic = 0;
  uint32_t kind = 0;
  uint64_t epoch = 0;
  uint64_t sequence = 0;
  uint32_t length = 0;
  uint32_t reserved = 0;
  // Header + payload + trailer.
  uint64_t extent() const { return kWalHeaderSize + uint64_t{length} + kWalTrailerSize; }
};

// REQUIRES: kWalHeaderSize bytes at `p`.
ParsedHeader ParseHeader(const char* p);

// True when the record whose header starts at `offset` fits in `data` and its checksum
// matches. REQUIRES: a whole header at `offset`.
bool ChecksumMatches(std::string_view data, size_t offset, const ParsedHeader& h);

// True when an intact record of `epoch` (with sequence `sequence`, when known) starts
// somewhere at or after `from`. Used to tell a record whose length field was damaged (it
// claims to run past the end, yet intact records follow) from a torn last record.
bool IntactRecordFollows(std::string_view data, size_t from, uint64_t epoch,
                         std::optional<uint64_t> sequence);

// ---------------------------------------------------------------------------------------
// Format 2 segments (wal_file.cc)

// The IPC file magic (padded to 8 bytes) that starts them, the continuation marker that
// starts every IPC message, and the end-of-stream marker that starts their footer.
inline constexpr std::string_view kFileMagic("ARROW1\0\0", 8);
inline constexpr uint32_t kIpcContinuation = 0xFFFFFFFF;
inline constexpr std::string_view kEndOfStream("\xFF\xFF\xFF\xFF\0\0\0\0", 8);

// A dictionary batch message in a kRows payload (segments that are IPC files).
struct PayloadDictionary {
  int64_t id = 0;
  int64_t length = 0;    // values in the dictionary
  ipc::FileBlock block;  // offset from the payload's start
};

// The messages of a kRows payload that a segment's footer may name.
struct ScannedPayload {
  std::vector<ipc::FileBlock> blocks;  // record batches with rows
  std::vector<PayloadDictionary> dictionaries;
};

// Checks the payloads of a writer with a file schema (WalWriterOptions::file_schema).
// Thread safe.
class FilePayloadChecker {
 public:
  // `file_schema` may be null (then Scan is never called).
  explicit FilePayloadChecker(SchemaPtr file_schema);

  // Checks a payload before it is queued (in the appender's thread, so that the group
  // leader only adds offsets) and returns the messages its footer may name.
  Result<ScannedPayload> Scan(WalRecordKind kind, std::string_view payload);

 private:
  // InvalidArgument unless the stream in `payload`, whose schema message is `message`,
  // has the file schema (metadata aside). Schema messages seen to match are remembered, so
  // the schema is decoded only when a new one turns up.
  Status CheckSchema(std::string_view message, std::string_view payload);

  const SchemaPtr file_schema_;
  // Dictionary ids of the file schema: 0 to num_dictionary_ids_ - 1.
  const int64_t num_dictionary_ids_;
  // Schema messages of payloads already checked against the file schema.
  Mutex mu_;
  std::vector<std::string> accepted_schema_messages_ STRATA_GUARDED_BY(mu_);
};

// ipc::EncodeFileHeader(schema), which must be a multiple of 8 bytes (Internal otherwise).
Result<std::string> EncodeSegmentFileHeader(const Schema& schema);

// The messages of the open segment that its footer names.
struct SegmentFileIndex {
  // Adds the messages of a payload that starts at `payload_start` in the segment.
  void Add(int64_t payload_start, const ScannedPayload& payload);
  void Clear();
  // ipc::EncodeFileFooter naming `dictionaries` and `blocks`.
  Result<std::string> EncodeFooter(const Schema& schema) const;

  // The record batch messages (with rows) written to the segment so far.
  std::vector<ipc::FileBlock> blocks;
  // Per dictionary id, the longest dictionary batch message written to the open segment
  // (block offsets absolute). Callers send dictionaries of one id that are prefixes of one
  // growing sequence of values (wal.h), so it holds every entry any batch of the segment
  // refers to: the footer names it alone.
  std::map<int64_t, PayloadDictionary> dictionaries;
};

// Where the records of a segment start: 0 for format 1; for format 2 (the IPC file magic
// first), past the magic and the schema message. std::nullopt when the header is cut short
// by the end of the object and nothing intact follows (a torn first append: no record of
// it was ever acknowledged).
Result<std::optional<uint64_t>> RecordsStart(const WalSegment& segment, std::string_view data);

// Where the footer of a format 2 segment starts when the segment ends with a complete one
// (the trailing magic, and the end-of-stream marker where the footer length puts it, after
// `records_start`): the writer then ended the segment cleanly, after every record of it was
// synced, so none of them can be torn.
std::optional<uint64_t> CompleteFooterStart(std::string_view data, uint64_t records_start);

}  // namespace strata::lsm::internal
