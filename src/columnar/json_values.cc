// The public single-value text forms of the JSON codec (strata/json.h): thin wrappers over the
// engine's Base64 and RFC 3339 codecs and the codec's string quoting, so layers above the
// engine share them.
#include "columnar/json_text.h"
#include "strata/json.h"
#include "util/text_codec.h"

namespace strata::json {

std::string Base64Encode(std::string_view bytes) { return strata::Base64Encode(bytes); }
Result<std::string> Base64Decode(std::string_view text) { return strata::Base64Decode(text); }
void AppendQuotedString(std::string_view text, std::string* out) {
  internal::AppendQuoted(text, /*replace_invalid=*/true, out);
}
std::string FormatTimestamp(int64_t micros_since_epoch) {
  return FormatTimestampMicros(micros_since_epoch);
}
Result<int64_t> ParseTimestamp(std::string_view text) { return ParseTimestampMicros(text); }

}  // namespace strata::json
