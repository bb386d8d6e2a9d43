// Request bodies that are JSON text the parser cannot hold: a number beyond a double is a 400
// naming its field (it was a 500), wherever the field sits.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api/json_error_path.h"
#include "api_test_support.h"
#include "common/bounded_json.h"

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

// Nesting beyond the limit is refused while the body is parsed, naming the field and the limit:
// copying, dump() and the chat template's converter recurse once per level, and 20,000 levels in
// `tools` (40 KB) overflowed the tokenizer thread's stack.
TEST(JsonBody, NestingDeeperThanTheLimitIsRefusedNamingTheField) {
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  const std::string tools = R"({"messages": [{"role": "user", "content": "hi"}], "tools": )" + deep + "}";
  expect_api_error([&] { parse_ordered_json_body(tools); }, 400, "tools[0][0][0]...", "deeper than 128 levels");
  expect_api_error([&] { parse_json_body(R"({"chat_template_kwargs": {"x": )" + deep + "}}"); }, 400,
                   "chat_template_kwargs.x[0][0]...", "deeper than 128 levels");
  expect_api_error([&] { parse_json_body(deep); }, 400, "[0][0][0][0]...", "128");
  // 128 levels (the body's own object among them) parse.
  const std::string at_limit = "{\"x\": " + std::string(127, '[') + std::string(127, ']') + "}";
  EXPECT_TRUE(parse_json_body(at_limit).is_object());
}

// The depth is checked as the text is read: megabytes of unclosed '[' are refused at level 129, not
// after the parser has allocated an array for each (60 MB of them held 4 GB for 30 s).
TEST(JsonBody, UnclosedNestingIsRefusedAtTheLimit) {
  const std::string unclosed = "{\"input_ids\": " + std::string(1 << 20, '[');
  expect_api_error([&] { parse_json_body(unclosed); }, 400, "input_ids[0][0][0]...", "deeper than 128 levels");
}

// Every object, array and string is an allocation of its own: a body of millions of them is refused
// as soon as it passes the bound, before the parser has allocated the rest (12 million "[1]" held the
// front door for 40 s and left 1.4 GB resident).
TEST(JsonBody, MoreStringsAndContainersThanTheLimitAreRefused) {
  std::string lists = R"({"input_ids": [)";
  for (size_t i = 0; i < kMaxJsonStringsAndContainers; ++i) lists += "[1],";
  lists += "[1]]}";
  expect_api_error([&] { parse_json_body(lists); }, 400, "input_ids[262141]", "is past 262144 objects, arrays and strings");
  std::string strings = R"({"text": [)";
  for (size_t i = 0; i < kMaxJsonStringsAndContainers; ++i) strings += R"("hi",)";
  strings += R"("hi"]})";
  expect_api_error([&] { parse_json_body(strings); }, 400, "text[262141]", "262144");
  // Numbers are not counted: a batch of long token-id prompts parses.
  std::string ids = R"({"input_ids": [)";
  for (size_t i = 0; i < kMaxJsonStringsAndContainers; ++i) ids += "1,";
  ids += "1]}";
  EXPECT_EQ(parse_json_body(ids)["input_ids"].size(), kMaxJsonStringsAndContainers + 1);
}

TEST(BoundedJson, NamesTheTextAndItsFirstLevels) {
  try {
    parse_bounded_json<nlohmann::ordered_json>(R"({"function": {"parameters": )" + std::string(200, '[') + "}}",
                                                "tools[2]");
    ADD_FAILURE() << "accepted";
  } catch (const JsonTooDeep& e) {
    EXPECT_EQ(e.path(), "tools[2].function.parameters[0][0]...");
    EXPECT_EQ(std::string(e.what()), "tools[2].function.parameters[0][0]... nests objects and arrays deeper than "
                                     "128 levels (the most this server accepts)");
  }
  // A malformed text within the limit is what it was: a parse error, or a discarded value.
  EXPECT_THROW(parse_bounded_json<nlohmann::json>("[[1", "x"), nlohmann::json::parse_error);
  EXPECT_TRUE(parse_bounded_json<nlohmann::json>("[[1", "x", /*allow_exceptions=*/false).is_discarded());
}

}  // namespace
}  // namespace moe::api
