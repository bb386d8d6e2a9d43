// Qwen3's chat template (tests/data/qwen3-tokenizer/tokenizer_config.json) rendered through the
// ChatTemplate facade: every golden case made by transformers, and conversations with tools,
// reasoning, tool calls and tool responses whose expected text is derived below from the template.
#include <gtest/gtest.h>

#include "common/error.h"
#include "qwen3_fixture.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_config.h"

namespace moe::tokenizer {
namespace {

using nlohmann::ordered_json;

const ChatTemplate& qwen3_template() {
  static const ChatTemplate compiled = ChatTemplate::compile(load_tokenizer_config(testing::qwen3_dir()).chat_template);
  return compiled;
}

ChatTemplateInputs inputs_for(const char* messages_json) {
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::parse(messages_json);
  inputs.eos_token = "<|im_end|>";
  return inputs;
}

// A query answered through a tool: reasoning, a tool call, two tool responses, a final answer.
constexpr const char* kToolExchange = R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "<think>\nThe user wants weather; call the tool.\n</think>\n\nLet me check.",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "{\"temperature\": 21}"},
    {"role": "tool", "content": "{\"sky\": \"clear\"}"},
    {"role": "assistant", "content": "<think>\nBoth results are in.\n</think>\n\nIt is 21 \u00b0C and clear."}])";

TEST(ChatTemplateQwen3, EveryGoldenCaseRendersExactlyAndEncodesToItsIds) {
  const auto& cases = testing::qwen3_golden().at("chat_template");
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    ChatTemplateInputs inputs;
    // The golden messages hold only role and content, so key order cannot change the text.
    inputs.messages = ordered_json(c.at("messages"));
    inputs.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    inputs.enable_thinking = c.at("enable_thinking").get<bool>();
    inputs.eos_token = "<|im_end|>";
    const std::string rendered = qwen3_template().render(inputs);
    EXPECT_EQ(rendered, c.at("rendered").get<std::string>()) << c.dump();
    EXPECT_EQ(testing::qwen3_tokenizer().encode(rendered), c.at("ids").get<std::vector<int32_t>>());
  }
}

TEST(ChatTemplateQwen3, EnableThinkingUndefinedAddsNoEmptyThinkBlock) {
  ChatTemplateInputs inputs = inputs_for(R"([{"role": "user", "content": "Hi"}])");
  inputs.add_generation_prompt = true;
  EXPECT_EQ(qwen3_template().render(inputs), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// With tools, the template opens one system turn holding the system message, then "# Tools" and
// one `tool | tojson` line per tool inside <tools></tools>, then the <tool_call> format reminder.
// The system message is not repeated in the message loop (it is messages[0] and loop.first).
// tojson writes json.dumps(tool) with ", " and ": " separators, keys in their given order.
TEST(ChatTemplateQwen3, ToolsGoIntoTheSystemTurn) {
  ChatTemplateInputs inputs = inputs_for(R"([
    {"role": "system", "content": "You are a weather bot."},
    {"role": "user", "content": "Weather in Paris?"}])");
  inputs.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Get the current weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  inputs.add_generation_prompt = true;
  EXPECT_EQ(qwen3_template().render(inputs),
            "<|im_start|>system\nYou are a weather bot.\n\n"
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            R"({"type": "function", "function": {"name": "get_weather", "description": "Get the current weather", )"
            R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"
            "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n"
            R"({"name": <function-name>, "arguments": <args-json-object>})"
            "\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

// A multi-turn exchange after the last user query (ns.last_query_index = 0, found by the reversed
// scan: the user message at index 0 is the last one not wrapped in <tool_response>):
// - each assistant message's content is split at </think>: the answer is the part after it with
//   leading newlines removed, the reasoning the part between <think> and </think>, trimmed of
//   newlines; since loop.index0 > 0 and the reasoning is non-empty, it is written back as
//   "<think>\n" + reasoning + "\n</think>\n\n" + answer;
// - tool calls follow the content, each on its own line ("\n" before the first because the content
//   is non-empty), with `arguments | tojson` for a mapping;
// - consecutive tool messages share one user turn: "<|im_start|>user" only before the first and
//   "<|im_end|>\n" only after the last, each wrapped in "\n<tool_response>\n...\n</tool_response>".
TEST(ChatTemplateQwen3, ReasoningToolCallsAndToolResponsesAfterTheLastQuery) {
  const ChatTemplateInputs inputs = inputs_for(kToolExchange);
  EXPECT_EQ(qwen3_template().render(inputs),
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nThe user wants weather; call the tool.\n</think>\n\nLet me check.\n"
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"temperature\": 21}\n</tool_response>\n"
            "<tool_response>\n{\"sky\": \"clear\"}\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\nBoth results are in.\n</think>\n\nIt is 21 \u00b0C and clear.<|im_end|>\n");
}

// The same exchange followed by a new user query moves ns.last_query_index to 5, so the earlier
// assistant turns (index0 1 and 4, not > 5) keep only their answers: reasoning is dropped. With
// enable_thinking false, the generation prompt ends with an empty think block.
TEST(ChatTemplateQwen3, EarlierReasoningIsDroppedOnceANewQueryArrives) {
  ChatTemplateInputs inputs = inputs_for(kToolExchange);
  inputs.messages.push_back({{"role", "user"}, {"content", "Thanks! And Berlin?"}});
  inputs.add_generation_prompt = true;
  inputs.enable_thinking = false;
  EXPECT_EQ(qwen3_template().render(inputs),
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\nLet me check.\n"
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"temperature\": 21}\n</tool_response>\n"
            "<tool_response>\n{\"sky\": \"clear\"}\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\nIt is 21 \u00b0C and clear.<|im_end|>\n"
            "<|im_start|>user\nThanks! And Berlin?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

// reasoning_content, when present, is used instead of splitting the content. Here the content is
// empty, so no "\n" precedes the first tool call; a tool call without a "function" wrapper is used
// as is, and string arguments are written verbatim (not through tojson). Without tools, the
// leading system message gets its own turn before the loop.
TEST(ChatTemplateQwen3, ReasoningContentFieldAndStringArguments) {
  ChatTemplateInputs inputs = inputs_for(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What time is it in UTC?"},
    {"role": "assistant", "content": "", "reasoning_content": "\nNeed the clock.\n",
     "tool_calls": [{"name": "get_time", "arguments": "{\"tz\": \"UTC\"}"},
                    {"type": "function", "function": {"name": "get_date", "arguments": {}}}]},
    {"role": "tool", "content": "12:00"}])");
  inputs.add_generation_prompt = true;
  inputs.enable_thinking = true;
  EXPECT_EQ(qwen3_template().render(inputs),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nWhat time is it in UTC?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nNeed the clock.\n</think>\n\n"
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"get_date\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n12:00\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen3, MalformedInputsFailClearly) {
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::object();
  EXPECT_THROW(qwen3_template().render(inputs), moe::Error);
  inputs = inputs_for(R"([{"role": "user"}])");
  try {
    qwen3_template().render(inputs);
    FAIL() << "a message without content rendered";
  } catch (const moe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'dict object' has no attribute 'content'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::tokenizer
