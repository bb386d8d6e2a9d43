// Request bodies that are JSON text the parser cannot hold: a number beyond a double is a 400
// naming its field (it was a 500), wherever the field sits.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api/json_error_path.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using test::expect_api_error;

TEST(JsonBody, NumberTooLargeNamesItsField) {
  expect_api_error([] { parse_json_body(R"({"text": "x", "sampling_params": {"temperature": 1e999}})"); }, 400,
                   "sampling_params.temperature", "too large");
  expect_api_error([] { parse_json_body(R"({"input_ids": [[1, 2], [3, -1e999]]})"); }, 400, "input_ids[1][1]",
                   "too large");
  expect_api_error([] { parse_json_body(R"({"messages": [{"role": "user"}, {"content": [{"n": 9e400}]}]})"); },
                   400, "messages[1].content[0].n", "too large");
  expect_api_error([] { parse_json_body("1e999"); }, 400, "", "too large");
}

TEST(JsonBody, ErrorPathFollowsTheParse) {
  EXPECT_EQ(json_error_path(R"({"a": [1, {"b": [], "c": {"d": 1e999}}]})"), "a[1].c.d");
  EXPECT_EQ(json_error_path(R"([[], 2, 1e999])"), "[2]");
  EXPECT_EQ(json_error_path(R"({"a": 1})"), "");
}

TEST(JsonBody, LargeButRepresentableNumbersParse) {
  EXPECT_EQ(parse_json_body(R"({"x": 1e300})")["x"].get<double>(), 1e300);
}

}  // namespace
}  // namespace moe::api
