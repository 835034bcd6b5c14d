// multipart/form-data bodies (RFC 7578) as the rollout upload route takes them: the parts in
// order, each with its form name and bytes (a view into the body).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata::server {

struct MultipartPart {
  std::string name;  // from Content-Disposition: form-data; name="..."
  bool has_name = false;
  std::string content_type;
  std::string_view data;
};

// The boundary of a "multipart/form-data; boundary=..." Content-Type (quoted or not).
// InvalidArgument when there is none.
Result<std::string> MultipartBoundary(std::string_view content_type);

// Splits `body` at `boundary`. InvalidArgument for a body that does not start with the
// boundary, a part without the blank line ending its headers, or a missing closing boundary.
Result<std::vector<MultipartPart>> ParseMultipart(std::string_view body, std::string_view boundary);

}  // namespace strata::server
