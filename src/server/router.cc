// Route matching and the request / response helpers of the handlers.
#include "server/router.h"

#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <limits>

#include "strata/json.h"

namespace strata::server {

namespace {

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) out.push_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

bool IsParam(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

std::string JsonText(const Json& body) {
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

const QueryParam* RouteContext::Query(std::string_view name) const {
  const QueryParam* found = nullptr;
  for (const QueryParam& p : query) {
    if (p.name == name) found = &p;
  }
  return found;
}

void Router::Add(std::string method, std::string pattern, RouteHandler handler, uint64_t body_limit,
                 bool open, bool blob_admission) {
  Route route;
  route.method = std::move(method);
  for (std::string_view s : Split(pattern)) route.segments.emplace_back(s);
  route.pattern = std::move(pattern);
  route.body_limit = body_limit;
  route.open = open;
  route.blob_admission = blob_admission;
  route.handler = std::move(handler);
  route.index = routes_.size();
  routes_.push_back(std::move(route));
}

const Route* Router::Match(std::string_view method, std::string_view path,
                           std::map<std::string, std::string>* params, bool* other_method) const {
  *other_method = false;
  const std::vector<std::string_view> parts = Split(path);
  for (const Route& route : routes_) {
    if (route.segments.size() != parts.size()) continue;
    std::map<std::string, std::string> found;
    bool match = true;
    for (size_t i = 0; i < parts.size() && match; ++i) {
      const std::string& segment = route.segments[i];
      if (IsParam(segment)) {
        Result<std::string> decoded = UrlDecode(parts[i], /*plus_is_space=*/false);
        if (!decoded.ok()) {
          match = false;
        } else {
          found[segment.substr(1, segment.size() - 2)] = std::move(*decoded);
        }
      } else {
        match = segment == parts[i];
      }
    }
    if (!match) continue;
    if (route.method != method) {
      *other_method = true;
      continue;
    }
    *params = std::move(found);
    return &route;
  }
  return nullptr;
}

HttpResponse JsonResponse(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.body = JsonText(body);
  return r;
}

HttpResponse AddedResponse(uint64_t version, std::span<const std::string_view> ids) {
  HttpResponse r;
  r.status = 201;
  size_t size = 72;  // the keys, two 20-digit numbers and the punctuation
  for (std::string_view id : ids) size += id.size() + 3;
  r.body.reserve(size);
  fmt::format_to(std::back_inserter(r.body), R"({{"count":{},"ids":[)", ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) r.body.push_back(',');
    json::AppendQuotedString(ids[i], &r.body);
  }
  fmt::format_to(std::back_inserter(r.body), R"(],"version":{}}})", version);
  return r;
}

HttpResponse EmptyResponse(int status) {
  HttpResponse r;
  r.status = status;
  r.content_type.clear();
  return r;
}

HttpResponse ErrorResponse(const HttpError& error) {
  HttpResponse r;
  r.status = error.status;
  r.body = ErrorBody(error);
  if (error.retry_after_seconds > 0) {
    r.headers.emplace_back("Retry-After", std::to_string(error.retry_after_seconds));
  }
  return r;
}

HttpResponse StatusResponse(const Status& status) { return ErrorResponse(ErrorFromStatus(status)); }

Result<Json> ParseJsonBody(const HttpRequest& request) {
  try {
    Json body = Json::parse(request.body);
    if (!body.is_object()) {
      return Status::InvalidArgument("invalid JSON body: expected an object");
    }
    return body;
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(fmt::format("invalid JSON body: {}", e.what()));
  }
}

Result<bool> QueryBool(const RouteContext& ctx, std::string_view name, bool fallback) {
  const QueryParam* p = ctx.Query(name);
  if (p == nullptr) return fallback;
  if (!p->has_value) return true;
  std::string v = p->value;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  return Status::InvalidArgument(
      fmt::format("invalid query parameter {}='{}': expected true or false", name, p->value));
}

Result<std::optional<int64_t>> QueryInt(const RouteContext& ctx, std::string_view name) {
  const QueryParam* p = ctx.Query(name);
  if (p == nullptr) return std::optional<int64_t>{};
  int64_t value = 0;
  const char* end = p->value.data() + p->value.size();
  auto [ptr, ec] = std::from_chars(p->value.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    return Status::InvalidArgument(fmt::format(
        "invalid query parameter {}='{}': expected a non-negative integer", name, p->value));
  }
  return std::optional<int64_t>(value);
}

std::vector<std::string> SplitCommaList(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

namespace {

std::string TypeName(const Json& v) { return v.type_name(); }

}  // namespace

Result<std::optional<std::string>> OptString(const Json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<std::string>{};
  if (!it->is_string()) {
    return Status::InvalidArgument(
        fmt::format("{}: expected a string, found {}", key, TypeName(*it)));
  }
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::optional<int64_t>> OptInt(const Json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<int64_t>{};
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() &&
       it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return Status::InvalidArgument(
        fmt::format("{}: expected a 64-bit integer, found {}", key, it->dump()));
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

Result<std::optional<bool>> OptBool(const Json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<bool>{};
  if (!it->is_boolean()) {
    return Status::InvalidArgument(
        fmt::format("{}: expected a boolean, found {}", key, TypeName(*it)));
  }
  return std::optional<bool>(it->get<bool>());
}

}  // namespace strata::server
