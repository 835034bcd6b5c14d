// Fuzz target for the HTTP server's request bodies (src/server/dto.h, multipart.h): the first
// byte picks the body kind, the rest is the body. JSON bodies go through the write routes'
// parsers (context add and patch, rollout add, datagen events); whatever parses must write
// back to JSON that parses to the same JSON again. Every JSON body also goes through the rollout
// upload's fast path (FastRolloutRecords), which may take it only when the tree path gives the
// very same records. Multipart bodies are split at a fixed boundary and every part must lie
// inside the body.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_targets.h"
#include "server/dto.h"
#include "server/multipart.h"

namespace strata::fuzz {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "server body parser broke its contract: %s\n", what);
  std::abort();
}

constexpr int64_t kNow = 1700000000000000;

// from(to(from(json))) writes the same JSON as to(from(json)).
template <typename Parse, typename Write>
Status RoundTrip(const server::Json& body, const Parse& parse, const Write& write) {
  auto first = parse(body);
  if (!first.ok()) return first.status();
  const server::Json written = write(*first);
  auto second = parse(written);
  if (!second.ok()) Die("a written body does not parse again");
  const server::Json rewritten = write(*second);
  const auto replace = server::Json::error_handler_t::replace;
  if (written.dump(-1, ' ', false, replace) != rewritten.dump(-1, ' ', false, replace)) {
    Die("a body does not round-trip");
  }
  return Status::OK();
}

// FastRolloutRecords takes a body only when parsing it as a tree and RolloutRecordFromJson on
// each element of its "records" gives the very same records (and so the same JSON).
void CheckFastRollout(std::string_view text) {
  std::optional<std::vector<store::RolloutRecord>> fast = server::FastRolloutRecords(text, kNow);
  if (!fast) return;
  const server::Json body = server::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) Die("the rollout fast path took a body that is not JSON");
  const auto it = body.find("records");
  if (it == body.end() || !it->is_array() || it->size() != fast->size()) {
    Die("the rollout fast path read other records than the body holds");
  }
  const auto replace = server::Json::error_handler_t::replace;
  for (size_t i = 0; i < fast->size(); ++i) {
    Result<store::RolloutRecord> slow = server::RolloutRecordFromJson((*it)[i], kNow, "records");
    if (!slow.ok()) Die("the rollout fast path took a record the tree path refuses");
    if (!(*slow == (*fast)[i]) ||
        server::RolloutRecordToJson(*slow).dump(-1, ' ', false, replace) !=
            server::RolloutRecordToJson((*fast)[i]).dump(-1, ' ', false, replace)) {
      Die("the rollout fast path and the tree path read different records");
    }
  }
}

Status CheckJson(uint8_t kind, std::string_view text) {
  CheckFastRollout(text);
  server::Json body = server::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArgument("not JSON");
  switch (kind % 4) {
    case 0:
      return RoundTrip(
          body, [](const server::Json& j) { return server::ContextRecordFromJson(j, "record"); },
          [](const store::ContextRecord& r) { return server::ContextRecordToJson(r); });
    case 1: {
      Result<store::ContextPatch> patch = server::ContextPatchFromJson(body, "patch");
      return patch.status();
    }
    case 2:
      return RoundTrip(
          body,
          [](const server::Json& j) { return server::RolloutRecordFromJson(j, kNow, "record"); },
          [](const store::RolloutRecord& r) { return server::RolloutRecordToJson(r); });
    default:
      return RoundTrip(
          body,
          [](const server::Json& j) { return server::DatagenEventFromJson(j, kNow, "event"); },
          [](const store::DatagenEvent& e) { return server::DatagenEventToJson(e); });
  }
}

Status CheckMultipart(std::string_view body) {
  Result<std::vector<server::MultipartPart>> parts = server::ParseMultipart(body, "b0undary");
  if (!parts.ok()) return parts.status();
  for (const server::MultipartPart& p : *parts) {
    if (p.data.data() < body.data() || p.data.data() + p.data.size() > body.data() + body.size()) {
      Die("a multipart part lies outside the body");
    }
  }
  return Status::OK();
}

}  // namespace

Status FuzzServerBody(std::span<const uint8_t> data) {
  if (data.empty()) return Status::InvalidArgument("empty input");
  const std::string_view rest(reinterpret_cast<const char*>(data.data()) + 1, data.size() - 1);
  if (data[0] >= 0xf0) return CheckMultipart(rest);
  return CheckJson(data[0], rest);
}

}  // namespace strata::fuzz
