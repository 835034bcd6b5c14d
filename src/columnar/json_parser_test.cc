// Differential test of JsonParser, the decoder's fast path, against nlohmann: on random and
// mutated JSON texts both must accept the same texts and report the same events.
#include "columnar/json_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>

#include "support/temp_dir.h"

namespace strata::json::internal {
namespace {

// Records the events of either parser as text (strings length-prefixed).
struct EventRecorder {
  void Add(char tag, std::string_view text) {
    events.push_back(tag);
    events += std::to_string(text.size());
    events.push_back(':');
    events.append(text);
  }
  // Both interfaces.
  bool null() { return Add('n', ""), true; }
  bool boolean(bool value) { return Add('b', value ? "1" : "0"), true; }
  bool number_integer(int64_t value) { return Add('i', std::to_string(value)), true; }
  bool number_unsigned(uint64_t value) { return Add('u', std::to_string(value)), true; }
  bool end_object() { return Add('}', ""), true; }
  bool end_array() { return Add(']', ""), true; }
  // JsonParser.
  bool number_float(std::string_view text) { return Add('d', text), true; }
  bool string(std::string_view value) { return Add('s', value), true; }
  bool key(std::string_view name) { return Add('k', name), true; }
  bool start_object() { return Add('{', ""), true; }
  bool start_array() { return Add('[', ""), true; }
  // nlohmann.
  bool number_float(double /*value*/, const std::string& text) { return number_float(text); }
  bool string(std::string& value) { return string(std::string_view(value)); }
  bool key(std::string& name) { return key(std::string_view(name)); }
  bool binary(nlohmann::json::binary_t& /*value*/) { return false; }
  bool start_object(std::size_t /*size*/) { return start_object(); }
  bool start_array(std::size_t /*size*/) { return start_array(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*ex*/) {
    return false;
  }

  std::string events;
};

const char* const kStringPieces[] = {"a",
                                     " ",
                                     "\\n",
                                     "\\\"",
                                     "\\\\",
                                     "\\/",
                                     "\\b",
                                     "\\f",
                                     "\\r",
                                     "\\t",
                                     "\\u00e9",
                                     "\\u0000",
                                     "\\uD83D\\uDE00",
                                     "\\ud800",
                                     "\\udc00",
                                     "\\uD83Dx",
                                     "\\u12",
                                     "\\x",
                                     "\xC3\xA9",
                                     "\xE6\xBC\xA2",
                                     "\xF0\x9F\x98\x80",
                                     "\x01",
                                     "\x7F",
                                     "\xC3\x28",
                                     "\xC0\xAF",
                                     "\xED\xA0\x80",
                                     "\xF4\x90\x80\x80",
                                     "\xE0\x80\x80",
                                     "\xFF",
                                     "\xF0\x9F\x98"};
const char* const kNumbers[] = {"0",
                                "-0",
                                "7",
                                "-7",
                                "123",
                                "-9223372036854775808",
                                "-9223372036854775809",
                                "18446744073709551615",
                                "18446744073709551616",
                                "123456789012345678901234567890",
                                "1.5",
                                "-0.0",
                                "1e5",
                                "1E+5",
                                "2.5e-3",
                                "1e400",
                                "-1e400",
                                "1e-400",
                                "1e308",
                                "1.8e308",
                                "01",
                                "1.",
                                ".5",
                                "+1",
                                "-",
                                "1e",
                                "1e+",
                                "0x1F",
                                "1.5e3.2",
                                "-a",
                                "00",
                                "0.0e-0"};
const char* const kWhitespace[] = {"", "", "", " ", "\n", "\t", "\r\n ", "\x0B", "\xC2\xA0"};

void GenerateJson(std::mt19937_64& rng, int depth, std::string* out) {
  *out += kWhitespace[rng() % std::size(kWhitespace)];
  switch (rng() % (depth > 3 ? 3 : 5)) {
    case 0: {
      out->push_back('"');
      const size_t n = rng() % 5;
      for (size_t i = 0; i < n; ++i) *out += kStringPieces[rng() % std::size(kStringPieces)];
      out->push_back('"');
      break;
    }
    case 1:
      *out += kNumbers[rng() % std::size(kNumbers)];
      break;
    case 2: {
      const char* const kLiterals[] = {"true", "false", "null", "tru", "nul", "True", "nulll"};
      *out += kLiterals[rng() % std::size(kLiterals)];
      break;
    }
    case 3: {
      out->push_back('[');
      const size_t n = rng() % 4;
      for (size_t i = 0; i < n; ++i) {
        if (i > 0) out->push_back(',');
        GenerateJson(rng, depth + 1, out);
      }
      *out += kWhitespace[rng() % std::size(kWhitespace)];
      out->push_back(']');
      break;
    }
    default: {
      out->push_back('{');
      const size_t n = rng() % 4;
      for (size_t i = 0; i < n; ++i) {
        if (i > 0) out->push_back(',');
        *out += kWhitespace[rng() % std::size(kWhitespace)];
        *out += "\"k" + std::to_string(rng() % 3) + "\"";
        *out += kWhitespace[rng() % std::size(kWhitespace)];
        out->push_back(':');
        GenerateJson(rng, depth + 1, out);
      }
      *out += kWhitespace[rng() % std::size(kWhitespace)];
      out->push_back('}');
    }
  }
  *out += kWhitespace[rng() % std::size(kWhitespace)];
}

TEST(JsonParserTest, AcceptsExactlyWhatNlohmannAccepts) {
  const auto seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  JsonParser parser;
  int accepted = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string text = rng() % 50 == 0 ? "\xEF\xBB\xBF" : "";
    GenerateJson(rng, 0, &text);
    // Mutate some texts: delete, insert or truncate.
    const char kNoise[] = " {}[]:,\"\\0-e.ax\x01\xFF";
    for (int m = static_cast<int>(rng() % 4) - 1; m > 0 && !text.empty(); --m) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text.erase(at, 1);
          break;
        case 1:
          text.insert(at, 1, kNoise[rng() % (sizeof(kNoise) - 1)]);
          break;
        default:
          text.resize(at);
      }
    }
    EventRecorder ours;
    const ParseOutcome outcome = parser.Parse(text, &ours);
    EventRecorder theirs;
    const bool nlohmann_ok = nlohmann::json::sax_parse(text.begin(), text.end(), &theirs);
    ASSERT_EQ(outcome == ParseOutcome::kOk, nlohmann_ok) << ::testing::PrintToString(text);
    if (nlohmann_ok) {
      ++accepted;
      ASSERT_EQ(ours.events, theirs.events) << ::testing::PrintToString(text);
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(accepted, 1000);
  EXPECT_LT(accepted, 19000);
}

}  // namespace
}  // namespace strata::json::internal
