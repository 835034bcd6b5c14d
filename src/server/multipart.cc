// multipart/form-data parsing: delimiter search, part headers, Content-Disposition names.
#include "server/multipart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace strata::server {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of parameter `key` in "type; a=b; key="value"", unquoted; found = false if absent.
std::string Parameter(std::string_view header, std::string_view key, bool* found) {
  *found = false;
  size_t pos = header.find(';');
  while (pos != std::string_view::npos) {
    std::string_view rest = header.substr(pos + 1);
    const size_t next = rest.find(';');
    std::string_view item = Trim(rest.substr(0, next));
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && Lower(Trim(item.substr(0, eq))) == key) {
      std::string_view value = Trim(item.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"') {
        // A quoted string may hold ';': take up to the closing quote in the whole header.
        const size_t start = static_cast<size_t>(value.data() - header.data()) + 1;
        std::string out;
        for (size_t i = start; i < header.size(); ++i) {
          if (header[i] == '\\' && i + 1 < header.size()) {
            out.push_back(header[++i]);
          } else if (header[i] == '"') {
            *found = true;
            return out;
          } else {
            out.push_back(header[i]);
          }
        }
        return {};
      }
      *found = true;
      return std::string(value);
    }
    pos = next == std::string_view::npos ? next : pos + 1 + next;
  }
  return {};
}

}  // namespace

Result<std::string> MultipartBoundary(std::string_view content_type) {
  bool found = false;
  std::string boundary = Parameter(content_type, "boundary", &found);
  if (!found || boundary.empty() || boundary.size() > 200) {
    return Status::InvalidArgument("multipart/form-data without a boundary parameter");
  }
  return boundary;
}

Result<std::vector<MultipartPart>> ParseMultipart(std::string_view body,
                                                  std::string_view boundary) {
  const std::string delimiter = fmt::format("--{}", boundary);
  const std::string separator = fmt::format("\r\n--{}", boundary);
  // The body may start with a preamble; the first delimiter starts a line.
  size_t pos = 0;
  if (body.substr(0, delimiter.size()) != delimiter) {
    pos = body.find(separator);
    if (pos == std::string_view::npos) {
      return Status::InvalidArgument("multipart body does not contain its boundary");
    }
    pos += 2;
  }
  std::vector<MultipartPart> parts;
  while (true) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    // Transport padding, then CRLF.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") {
      return Status::InvalidArgument("malformed multipart body: expected CRLF after a boundary");
    }
    pos += 2;
    const size_t headers_end = body.find("\r\n\r\n", pos);
    const size_t empty_headers = body.substr(pos, 2) == "\r\n" ? pos : std::string_view::npos;
    MultipartPart part;
    size_t data_start = 0;
    if (empty_headers != std::string_view::npos) {
      data_start = pos + 2;
    } else {
      if (headers_end == std::string_view::npos) {
        return Status::InvalidArgument("malformed multipart body: part headers do not end");
      }
      std::string_view headers = body.substr(pos, headers_end - pos);
      data_start = headers_end + 4;
      while (!headers.empty()) {
        const size_t eol = headers.find("\r\n");
        std::string_view line = headers.substr(0, eol);
        headers = eol == std::string_view::npos ? std::string_view{} : headers.substr(eol + 2);
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string key = Lower(Trim(line.substr(0, colon)));
        std::string_view value = Trim(line.substr(colon + 1));
        if (key == "content-disposition") {
          bool found = false;
          part.name = Parameter(value, "name", &found);
          part.has_name = found;
        } else if (key == "content-type") {
          part.content_type = std::string(value);
        }
      }
    }
    const size_t end = body.find(separator, data_start);
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("malformed multipart body: no closing boundary");
    }
    part.data = body.substr(data_start, end - data_start);
    parts.push_back(std::move(part));
    pos = end + 2;
  }
}

}  // namespace strata::server
