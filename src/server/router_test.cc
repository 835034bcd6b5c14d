// The router's response helpers: the add routes' answer written without a JSON tree is the
// bytes the tree gives.
#include "server/router.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace strata::server {
namespace {

// What the add routes answered before AddedResponse: the tree, dumped.
std::string TreeBody(uint64_t version, const std::vector<std::string>& ids) {
  Json array = Json::array();
  for (const std::string& id : ids) array.push_back(id);
  return JsonResponse(201, {{"version", version}, {"ids", array}, {"count", ids.size()}}).body;
}

std::string AddedBody(uint64_t version, const std::vector<std::string>& ids) {
  const HttpResponse r =
      AddedResponse(version, std::vector<std::string_view>(ids.begin(), ids.end()));
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.content_type, "application/json");
  return r.body;
}

TEST(AddedResponseTest, IsTheBytesOfTheJsonTree) {
  std::string every_control;
  for (int c = 0; c < 0x20; ++c) every_control.push_back(static_cast<char>(c));
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"ro-000000000001"},
      {"a", "b", ""},
      {R"(quote " backslash \ slash /)", every_control, "\x7f del"},
      {"caf\xc3\xa9", "\xe2\x82\xac euro", "\xf0\x9f\x98\x80 emoji", "\xef\xbf\xbd"},
  };
  for (const uint64_t version : {uint64_t{0}, uint64_t{7}, std::numeric_limits<uint64_t>::max()}) {
    for (const std::vector<std::string>& ids : cases) {
      EXPECT_EQ(AddedBody(version, ids), TreeBody(version, ids));
    }
  }
}

TEST(AddedResponseTest, ReadsBackAsTheIdsGiven) {
  const std::vector<std::string> ids = {"x\n\"y\"", std::string("nul\0byte", 8)};
  const Json body = Json::parse(AddedBody(42, ids));
  EXPECT_EQ(body["count"], 2);
  EXPECT_EQ(body["version"], 42);
  EXPECT_EQ(body["ids"].get<std::vector<std::string>>(), ids);
}

}  // namespace
}  // namespace strata::server
