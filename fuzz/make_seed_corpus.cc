// Writes the fuzz seed corpus: small valid Arrow IPC streams and files covering every type,
// nulls, slices, dictionaries across batches, empty batches and each compression.
//   make_seed_corpus OUT_DIR   (the committed corpus: make_seed_corpus fuzz/corpus)
// Writes OUT_DIR/ipc_stream_fuzz/<seed>.arrows and OUT_DIR/ipc_file_fuzz/<seed>.arrow, and
// replication bundles OUT_DIR/bundle_fuzz/<seed>.bundle.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "strata/bundle.h"
#include "strata/ipc.h"
#include "strata/json.h"
#include "strata/schema_json.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct Seed {
  std::string name;
  // A struct type whose fields are the schema, in DataType::ToString() syntax.
  std::string schema;
  // Each batch as JSON Lines; an empty string is an empty batch.
  std::vector<std::string> batches;
  // Also write the seed with each body compression.
  bool compressed_too = false;
};

const std::vector<Seed>& Seeds() {
  static const auto* seeds = new std::vector<Seed>{
      {"primitives",
       "struct<b: bool, i8: int8, i16: int16, i32: int32 not null, i64: int64, u8: uint8, "
       "u16: uint16, u32: uint32, u64: uint64, f32: float32, f64: float64, ts: timestamp[us], "
       "tz: timestamp[us, tz=UTC]>",
       {R"({"b": true, "i8": -128, "i16": 32767, "i32": -2147483648, "i64": -9223372036854775808, "u8": 255, "u16": 0, "u32": 4294967295, "u64": 18446744073709551615, "f32": 1.5, "f64": "NaN", "ts": 0, "tz": "2024-05-01T12:00:00Z"}
{"i32": 7}
{"b": false, "i8": 1, "i16": -1, "i32": 0, "i64": 42, "u8": 1, "u16": 65535, "u32": 7, "u64": 9, "f32": "-Infinity", "f64": -0.0, "ts": -1, "tz": 1700000000000000})"},
       true},
      {"strings",
       "struct<s: utf8, ls: large_utf8, bin: binary, lbin: large_binary>",
       {R"({"s": "ünïcödé 🙂", "ls": "", "bin": "AAEC/w==", "lbin": ""}
{}
{"s": "", "ls": "large", "bin": "", "lbin": "3q2+7w=="})"},
       true},
      {"nested",
       "struct<emb: fixed_size_list<float32>[3], li: list<int32>, lls: large_list<utf8>, "
       "st: struct<a: int32 not null, c: list<struct<x: int64, y: bool>>>>",
       {R"({"emb": [1, null, 3], "li": [1, 2], "lls": ["a", null], "st": {"a": 1, "c": [{"x": 5, "y": true}, null]}}
{"li": [], "lls": [], "st": null}
{"emb": [4, 5, 6], "li": [null], "lls": ["z"], "st": {"a": 2, "c": null}})"},
       true},
      {"dictionary",
       "struct<d: dictionary<values=utf8, indices=int32>, "
       "d8: dictionary<values=utf8, indices=int8>>",
       {R"({"d": "red", "d8": "x"}
{"d": "blue"}
{"d": "red", "d8": "y"})",
        R"({"d": "green", "d8": "y"}
{"d": "red", "d8": "w"})"},
       true},
      {"multi_batch",
       "struct<id: int64 not null, name: utf8, tags: list<utf8>>",
       {R"({"id": 1, "name": "a", "tags": ["x"]})", "",
        R"({"id": 2, "tags": []}
{"id": 3, "name": "c", "tags": null})"},
       false},
      {"schema_only", "struct<id: int64, v: fixed_size_list<float32>[2]>", {}, false},
  };
  return *seeds;
}

Result<std::vector<RecordBatch>> SeedBatches(const Seed& seed, SchemaPtr* schema) {
  STRATA_ASSIGN_OR_RETURN(DataTypePtr type, ParseDataType(seed.schema));
  *schema = strata::schema(type->fields(), KeyValueMetadata(KeyValues{{"seed", seed.name}}));
  std::vector<RecordBatch> batches;
  for (const std::string& rows : seed.batches) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, json::RowsToBatch(*schema, rows));
    batches.push_back(std::move(batch));
  }
  return batches;
}

Status WriteBytes(const fs::path& path, const Buffer& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  out.close();
  if (!out) return Status::IOError("cannot write " + path.string());
  return Status::OK();
}

Status WriteSeed(const fs::path& out, const std::string& name, const SchemaPtr& schema,
                 const std::vector<RecordBatch>& batches, const ipc::WriteOptions& options) {
  STRATA_ASSIGN_OR_RETURN(Buffer stream, ipc::WriteStreamToBuffer(schema, batches, options));
  STRATA_RETURN_IF_ERROR(WriteBytes(out / "ipc_stream_fuzz" / (name + ".arrows"), stream));
  STRATA_ASSIGN_OR_RETURN(Buffer file, ipc::WriteFileToBuffer(schema, batches, options));
  return WriteBytes(out / "ipc_file_fuzz" / (name + ".arrow"), file);
}

Status WriteString(const fs::path& path, const std::string& bytes) {
  return WriteBytes(path, Buffer::Copy(bytes));
}

// Bundles: rows of the "nested" and "strings" seeds keyed by an id, with and without
// deletions, one part of a split export, and an empty one.
Status WriteBundleSeeds(const fs::path& out) {
  fs::create_directories(out / "bundle_fuzz");
  STRATA_ASSIGN_OR_RETURN(DataTypePtr type,
                          ParseDataType("struct<id: utf8 not null, s: utf8, bin: large_binary, "
                                        "emb: fixed_size_list<float32>[3], tags: list<utf8>>"));
  const SchemaPtr schema = strata::schema(type->fields());
  STRATA_ASSIGN_OR_RETURN(
      RecordBatch rows,
      json::RowsToBatch(
          schema, R"({"id": "a", "s": "x", "bin": "AAE=", "emb": [1, 2, 3], "tags": ["t", null]}
{"id": "b"})"));
  const SchemaPtr key_schema = strata::schema({schema->field(0)});
  STRATA_ASSIGN_OR_RETURN(RecordBatch keys, json::RowsToBatch(key_schema, "{\"id\": \"gone\"}"));
  replication::BundleHeader h;
  h.store_id = "00000000-0000-4000-8000-000000000001";
  h.store_kind = "generic";
  h.key_column = "id";
  h.token = "seed";
  h.from.content = replication::ContentChecksum{.rows = 1, .lo = 1, .hi = 2};
  h.from.id = replication::BaseStateId(h.store_id, h.token, h.schema_hash, h.from.content);
  h.to.cursor = 1;
  h.to.content = replication::ContentChecksum{.rows = 2, .lo = 3, .hi = 4};
  STRATA_ASSIGN_OR_RETURN(std::string full, replication::EncodeBundle(h, schema, {rows}, keys));
  STRATA_RETURN_IF_ERROR(WriteString(out / "bundle_fuzz" / "rows_and_deletions.bundle", full));
  STRATA_ASSIGN_OR_RETURN(std::string empty, replication::EncodeBundle(h, schema, {}, {}));
  STRATA_RETURN_IF_ERROR(WriteString(out / "bundle_fuzz" / "empty.bundle", empty));
  replication::BundleHeader part = h;
  part.parts = 2;
  part.to.part = 1;
  STRATA_ASSIGN_OR_RETURN(std::string first,
                          replication::EncodeBundle(part, schema, {rows.Slice(0, 1)}, {}));
  STRATA_RETURN_IF_ERROR(WriteString(out / "bundle_fuzz" / "part_1_of_2.bundle", first));
  STRATA_ASSIGN_OR_RETURN(
      std::string keyed,
      replication::EncodeBundle(h, schema, {}, keys, {.hmac_secret = "seed-secret"}));
  return WriteString(out / "bundle_fuzz" / "keyed.bundle", keyed);
}

Status WriteCorpus(const fs::path& out) {
  STRATA_RETURN_IF_ERROR(WriteBundleSeeds(out));
  fs::create_directories(out / "ipc_stream_fuzz");
  fs::create_directories(out / "ipc_file_fuzz");
  for (const Seed& seed : Seeds()) {
    SchemaPtr schema;
    STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, SeedBatches(seed, &schema));
    ipc::WriteOptions options;
    options.alignment = 8;  // smaller inputs mutate faster
    STRATA_RETURN_IF_ERROR(WriteSeed(out, seed.name, schema, batches, options));
    if (!seed.compressed_too) continue;
    for (auto compression : {ipc::Compression::kLz4Frame, ipc::Compression::kZstd}) {
      options.compression = compression;
      std::string name = fmt::format("{}_{}", seed.name, ipc::CompressionName(compression));
      STRATA_RETURN_IF_ERROR(WriteSeed(out, name, schema, batches, options));
    }
    // Slices at an odd offset: the writer must rebase offsets and shift bitmaps.
    std::vector<RecordBatch> sliced;
    for (const RecordBatch& batch : batches) sliced.push_back(batch.Slice(1, batch.num_rows()));
    options.compression = ipc::Compression::kNone;
    STRATA_RETURN_IF_ERROR(WriteSeed(out, seed.name + "_sliced", schema, sliced, options));
  }
  return Status::OK();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seed_corpus OUT_DIR\n");
    return 2;
  }
  strata::Status status = strata::WriteCorpus(argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "make_seed_corpus: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
