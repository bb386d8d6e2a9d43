// The chat output parsers (--reasoning-parser qwen3, --tool-call-parser qwen25): what they take out of
// whole outputs, and that feeding an output in pieces (split at every byte, or byte by byte) gives
// exactly the one-shot result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/chat_output_parser.h"
#include "common/error.h"

namespace moe::api {
namespace {

struct Parsed {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
  bool operator==(const Parsed&) const = default;
};

Parsed parse_pieces(const std::vector<std::string>& pieces, bool reasoning = true, bool tools = true,
                    std::string_view continued = {}) {
  ChatOutputParser parser(reasoning, tools, continued);
  ChatOutputDelta all;
  for (const std::string& piece : pieces) all.append(parser.feed(piece));
  all.append(parser.finish());
  return {all.reasoning, all.content, all.calls};
}

Parsed parse_whole(const std::string& text, bool reasoning = true, bool tools = true) {
  return parse_pieces({text}, reasoning, tools);
}

// Every split into two pieces at each byte and the byte-by-byte feed give the one-shot result.
void expect_same_in_pieces(const std::string& text, bool reasoning = true, bool tools = true) {
  const Parsed whole = parse_whole(text, reasoning, tools);
  for (size_t at = 0; at <= text.size(); ++at) {
    EXPECT_EQ(parse_pieces({text.substr(0, at), text.substr(at)}, reasoning, tools), whole) << "split at " << at;
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(parse_pieces(bytes, reasoning, tools), whole) << "byte by byte";
}

const std::string kCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>";

TEST(ReasoningParser, ThinkBlockIsReasoningAndTheRestContent) {
  const Parsed parsed = parse_whole("<think>\nPlan it.\n</think>\n\nThe answer.", true, false);
  EXPECT_EQ(parsed.reasoning, "\nPlan it.\n");
  EXPECT_EQ(parsed.content, "\n\nThe answer.");
  expect_same_in_pieces("<think>\nPlan it.\n</think>\n\nThe answer.", true, false);
}

TEST(ReasoningParser, NoThinkBlockIsAllContent) {
  // enable_thinking false: the prompt holds the empty think block, the output has none.
  EXPECT_EQ(parse_whole("Just <think> the answer </think>.", true, false),
            (Parsed{"", "Just <think> the answer </think>.", {}}));
  EXPECT_EQ(parse_whole("<thin", true, false), (Parsed{"", "<thin", {}}));
  expect_same_in_pieces("Just <think> the answer </think>.", true, false);
  expect_same_in_pieces("<thinking>", true, false);
}

TEST(ReasoningParser, AnUnclosedThinkBlockIsAllReasoning) {
  EXPECT_EQ(parse_whole("<think>\ncut short </thi", true, false), (Parsed{"\ncut short </thi", "", {}}));
  expect_same_in_pieces("<think>\ncut short </thi", true, false);
  EXPECT_EQ(parse_whole("", true, false), Parsed{});
}

TEST(ToolCallParser, BlocksBecomeCallsAndTheRestStaysContent) {
  const std::string text = "Let me check.\n" + kCall + "\n" + kCall;
  const Parsed parsed = parse_whole(text, false, true);
  const ToolCall call{"get_weather", R"({"city":"Paris","unit":"c"})"};
  EXPECT_EQ(parsed, (Parsed{"", "Let me check.\n\n", {call, call}}));
  expect_same_in_pieces(text, false, true);
}

TEST(ToolCallParser, ArgumentsKeepTheModelsKeyOrder) {
  const auto call = parse_tool_call(R"( {"name": "f", "arguments": {"z": 1, "a": {"y": [2, "é"], "b": null}}} )");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments, R"({"z":1,"a":{"y":[2,"é"],"b":null}})");
}

TEST(ToolCallParser, MalformedBlocksStayInTheContent) {
  for (const std::string inside : {"{\"name\": \"f\", \"arguments\": {\"a\": }", "not json", "[1]",
                                   "{\"arguments\": {}}", "{\"name\": \"\", \"arguments\": {}}",
                                   "{\"name\": 3, \"arguments\": {}}", "{\"name\": \"f\", \"arguments\": \"{}\"}",
                                   "{\"name\": \"f\"}", "\xff\xfe"}) {
    const std::string block = "<tool_call>" + inside + "</tool_call>";
    const std::string text = "a" + block + kCall + "b";
    EXPECT_EQ(parse_whole(text, false, true),
              (Parsed{"", "a" + block + "b", {ToolCall{"get_weather", R"({"city":"Paris","unit":"c"})"}}}))
        << inside;
    expect_same_in_pieces(text, false, true);
  }
}

TEST(ToolCallParser, AnUnclosedBlockStaysInTheContent) {
  const std::string text = "x<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_c";
  EXPECT_EQ(parse_whole(text, false, true), (Parsed{"", text, {}}));
  expect_same_in_pieces(text, false, true);
  EXPECT_EQ(parse_whole("x<tool_ca", false, true), (Parsed{"", "x<tool_ca", {}}));
}

TEST(ChatOutputParser, ReasoningThenToolCalls) {
  const std::string text = "<think>\nI need the weather tool. <tool_call>{}</tool_call>\n</think>\n\n" + kCall;
  const Parsed parsed = parse_whole(text);
  // A tool call written inside the reasoning is reasoning, not a call.
  EXPECT_EQ(parsed.reasoning, "\nI need the weather tool. <tool_call>{}</tool_call>\n");
  EXPECT_EQ(parsed.content, "\n\n");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].name, "get_weather");
  expect_same_in_pieces(text);
}

// continue_final_message: the continued text is read first and answered never; a block it opens
// is parsed whole once the output closes it, and stays content whole when malformed.
TEST(ChatOutputParser, ContinuedTextOpensBlocksTheOutputCloses) {
  const std::string open_call = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";
  EXPECT_EQ(parse_pieces({"</tool_call>", " done"}, true, true, open_call),
            (Parsed{"", " done", {ToolCall{"get_weather", R"({"city":"Paris"})"}}}));
  EXPECT_EQ(parse_pieces({"}</tool_call>"}, false, true, "<tool_call>{\"name\": "),
            (Parsed{"", "<tool_call>{\"name\": }</tool_call>", {}}));
  EXPECT_EQ(parse_pieces({"more thought</think>answer"}, true, false, "<think>\nplan "),
            (Parsed{"more thought", "answer", {}}));
}

TEST(ChatOutputParser, WithoutParsersTheTextIsContent) {
  const std::string text = "<think>a</think>" + kCall;
  EXPECT_EQ(parse_whole(text, false, false), (Parsed{"", text, {}}));
}

TEST(ChatOutputParser, UnknownParserNamesAreRefusedNamingTheFlag) {
  EXPECT_NO_THROW(output_parsers_named("", ""));
  const OutputParsers both = output_parsers_named("qwen25", "qwen3");
  EXPECT_TRUE(both.qwen25_tool_calls);
  EXPECT_TRUE(both.qwen3_reasoning);
  try {
    output_parsers_named("hermes", "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tool-call-parser"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hermes"), std::string::npos) << e.what();
  }
  try {
    output_parsers_named("", "deepseek_r1");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--reasoning-parser"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::api
