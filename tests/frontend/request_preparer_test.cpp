// The front door: every refusal a request can meet is made here, once, with a message naming what
// is wrong; what passes is handed on unchanged but for its tokens and rid.
#include "frontend/request_preparer.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/error.h"
#include "common/json_file.h"
#include "tokenizer/tokenizer_config.h"

namespace moe {
namespace {

class RequestPreparerTest : public ::testing::Test {
 protected:
  // A KV pool of 48 slots under a context of 64: prompts longer than 48 tokens cannot run.
  static const tokenizer::Tokenizer& qwen3() {
    static const tokenizer::Tokenizer tokenizer =
        tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer");
    return tokenizer;
  }
  RequestPreparer make(bool routed_experts = true, bool router_weights = false) {
    return RequestPreparer(qwen3(), {}, RequestLimits{151936, 64, 48, routed_experts, router_weights});
  }
  // The same with routed-experts capture on, for a model (and a STANDALONE MoE draft) of these many experts.
  static RequestPreparer with_experts(int32_t num_experts, int32_t draft_num_experts = 0) {
    RequestLimits limits{151936, 64, 48, true, false};
    limits.num_experts = num_experts;
    limits.draft_num_experts = draft_num_experts;
    return RequestPreparer(qwen3(), {}, limits);
  }

  static msg::GenerateRequest with_ids(std::vector<int32_t> ids, int max_new_tokens = 4) {
    msg::GenerateRequest request;
    request.input_ids = std::move(ids);
    request.sampling.max_new_tokens = max_new_tokens;
    return request;
  }

  // The message of the refusal of `request`, failing the test if it was accepted.
  std::string refusal(const msg::GenerateRequest& request, RequestPreparer preparer) {
    try {
      preparer.prepare(request);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return {};
  }
};

TEST_F(RequestPreparerTest, NeedsExactlyOnePrompt) {
  msg::GenerateRequest none;
  EXPECT_NE(refusal(none, make()).find("exactly one of text, input_ids and messages"), std::string::npos);
  msg::GenerateRequest two = with_ids({1, 2});
  two.text = "a";
  EXPECT_NE(refusal(two, make()).find("exactly one of text, input_ids and messages"), std::string::npos);
}

TEST_F(RequestPreparerTest, RejectsBadRequestsWithAClearError) {
  EXPECT_NE(refusal(with_ids({}), make()).find("empty"), std::string::npos);
  EXPECT_NE(refusal(with_ids(std::vector<int32_t>(49, 5)), make()).find("49 tokens"), std::string::npos);
  EXPECT_NE(refusal(with_ids({1, 2, 3}, 0), make()).find("max_new_tokens"), std::string::npos);
  msg::GenerateRequest negative_min = with_ids({1, 2, 3});
  negative_min.sampling.min_new_tokens = -1;
  EXPECT_NE(refusal(negative_min, make()).find("`sampling_params.min_new_tokens` must be at least 0"), std::string::npos);
  msg::GenerateRequest no_n = with_ids({1, 2, 3});
  no_n.sampling.n = 0;
  EXPECT_NE(refusal(no_n, make()).find("`sampling_params.n` must be at least 1"), std::string::npos);
  msg::GenerateRequest huge_n = with_ids({1, 2, 3});
  huge_n.sampling.n = 300000;
  EXPECT_NE(refusal(huge_n, make()).find("--max-running-requests"), std::string::npos);
  msg::GenerateRequest bad_sampling = with_ids({1, 2, 3});
  bad_sampling.sampling.temperature = -1.0f;
  EXPECT_NE(refusal(bad_sampling, make()).find("temperature"), std::string::npos);
  EXPECT_NE(refusal(with_ids({1, 151936}), make()).find("outside the vocabulary"), std::string::npos);
}

// A limit the client named must fit beside the prompt (context 64, pool 48: 48 positions); the
// endpoint's default, named by no field, is left for the scheduler to clamp.
TEST_F(RequestPreparerTest, AGivenLimitBeyondTheContextIsRefusedWithItsNumbers) {
  msg::GenerateRequest request = with_ids({1, 2, 3}, 46);
  request.field_names.max_new_tokens = "max_tokens";
  EXPECT_EQ(refusal(request, make()),
            "`max_tokens` is 46, but the prompt has 3 tokens and the context holds 48 (max_model_len): at most 45 can be "
            "generated");
  request.sampling.max_new_tokens = 45;
  EXPECT_NO_THROW(make().prepare(request));
  request.sampling.max_new_tokens = 100000;
  request.field_names.max_new_tokens.clear();
  EXPECT_NO_THROW(make().prepare(request));
}

// logprob_start_len must name a prompt position (SGLang's rule); ZeroMQ clients reach this check
// with whatever they sent.
TEST_F(RequestPreparerTest, PromptLogprobsMustStartInsideThePrompt) {
  msg::GenerateRequest request = with_ids({1, 2, 3});
  request.return_logprob = true;
  request.logprob_start_len = 3;
  EXPECT_EQ(refusal(request, make()), "`logprob_start_len` is 3, but the prompt has 3 tokens: it must be below that");
  request.logprob_start_len = -2;
  EXPECT_EQ(refusal(request, make()), "`logprob_start_len` must be -1 (no prompt logprobs) or a prompt position >= 0, got -2");
  for (const int32_t start : {-1, 0, 2}) {
    request.logprob_start_len = start;
    EXPECT_EQ(make().prepare(request).logprob_start_len, start);
  }
  request.return_logprob = false;  // without logprobs the start is not used, as SGLang
  request.logprob_start_len = 9;
  EXPECT_NO_THROW(make().prepare(request));
}

// Stops are checked on every generated token, so one request may bring only so many.
TEST_F(RequestPreparerTest, StopListsAreBounded) {
  msg::GenerateRequest many = with_ids({1, 2, 3});
  many.sampling.stop.assign(64, "x");
  EXPECT_NO_THROW(make().prepare(many));
  many.sampling.stop.push_back("y");
  EXPECT_NE(refusal(many, make()).find("`sampling_params.stop` has 65 strings; at most 64"), std::string::npos);
  msg::GenerateRequest long_stop = with_ids({1, 2, 3});
  long_stop.sampling.stop = {std::string(1025, 'z')};
  EXPECT_NE(refusal(long_stop, make()).find("1025 bytes"), std::string::npos);
  msg::GenerateRequest ids = with_ids({1, 2, 3});
  ids.sampling.stop_token_ids.assign(1025, 7);
  EXPECT_NE(refusal(ids, make()).find("`sampling_params.stop_token_ids` has 1025 ids"), std::string::npos);
}

TEST_F(RequestPreparerTest, RoutingNeedsTheServerFlags) {
  msg::GenerateRequest routed = with_ids({1, 2, 3});
  routed.routing.return_routed_experts = true;
  EXPECT_NE(refusal(routed, make(false)).find("--enable-return-routed-experts"), std::string::npos);
  routed.routing.return_router_weights = true;
  EXPECT_NE(refusal(routed, make(true, false)).find("--enable-return-router-weights"), std::string::npos);
  EXPECT_NO_THROW(make(true, true).prepare(routed));
}

// The detokenizer packs the rows after the request ran: a dtype that cannot hold the ids is refused
// here, naming the field, the value and the model's expert count.
TEST_F(RequestPreparerTest, Uint8ForAModelOfMoreThan256ExpertsIsRefusedBeforeItRuns) {
  msg::GenerateRequest routed = with_ids({1, 2, 3});
  routed.routing.return_routed_experts = true;
  routed.routing.dtype = msg::RoutedExpertsDtype::Uint8;
  const std::string why = refusal(routed, with_experts(512));
  EXPECT_NE(why.find("`routed_experts_dtype` uint8"), std::string::npos) << why;
  EXPECT_NE(why.find("512 experts"), std::string::npos) << why;
  EXPECT_NO_THROW(with_experts(256).prepare(routed));
  routed.routing.return_routed_experts = false;  // nothing to pack
  EXPECT_NO_THROW(with_experts(512).prepare(routed));
  routed.routing.return_routed_experts = true;
  for (const auto dtype : {msg::RoutedExpertsDtype::Auto, msg::RoutedExpertsDtype::Int16, msg::RoutedExpertsDtype::Int32}) {
    routed.routing.dtype = dtype;
    EXPECT_NO_THROW(with_experts(512).prepare(routed));
  }
}

TEST_F(RequestPreparerTest, Uint8MustHoldTheDraftsExpertsTooWhenItsRowsAreAsked) {
  msg::GenerateRequest routed = with_ids({1, 2, 3});
  routed.routing.return_routed_experts = true;
  routed.routing.dtype = msg::RoutedExpertsDtype::Uint8;
  EXPECT_NO_THROW(with_experts(64, 512).prepare(routed));
  routed.routing.return_draft_routed_experts = true;
  const std::string why = refusal(routed, with_experts(64, 512));
  EXPECT_NE(why.find("512 experts"), std::string::npos) << why;
  EXPECT_NE(why.find("return_draft_routed_experts"), std::string::npos) << why;
  routed.routing.dtype = msg::RoutedExpertsDtype::Auto;
  EXPECT_NO_THROW(with_experts(64, 512).prepare(routed));
}

TEST_F(RequestPreparerTest, APromptThatFillsThePoolLeavesNoRoomForTheLastTokensRow) {
  msg::GenerateRequest full = with_ids(std::vector<int32_t>(48, 5));
  EXPECT_NO_THROW(make().prepare(full));  // the last output token is never fed
  full.routing.return_routed_experts = true;
  full.routing.include_last = true;
  EXPECT_NE(refusal(full, make()).find("no room"), std::string::npos);
}

TEST_F(RequestPreparerTest, MintsDistinctRidsAndKeepsEverythingElse) {
  RequestPreparer preparer = make();
  msg::GenerateRequest request = with_ids({1, 2, 3}, 7);
  request.stream = true;
  request.sampling.temperature = 0.5f;
  request.routing.return_routed_experts = true;
  const msg::TokenizedRequest a = preparer.prepare(request);
  const msg::TokenizedRequest b = preparer.prepare(request);
  EXPECT_FALSE(a.rid.empty());
  EXPECT_NE(a.rid, b.rid);
  // Everything is kept, the layer axis of the rows filled in with the server's (every decoder layer).
  msg::RequestOptions expected = request;
  expected.routing.layers = msg::RoutedExpertsLayers::All;
  EXPECT_EQ(static_cast<const msg::RequestOptions&>(a), expected);
  EXPECT_EQ(a.input_ids, *request.input_ids);
  request.rid = "mine";
  EXPECT_EQ(preparer.prepare(request).rid, "mine");
  request.routing.layers = msg::RoutedExpertsLayers::Moe;
  EXPECT_EQ(preparer.prepare(request).routing.layers, msg::RoutedExpertsLayers::Moe);
}

// --skip-tokenizer-init: token ids pass; what needs a tokenizer is a FieldError naming the flag.
TEST_F(RequestPreparerTest, WithoutATokenizerOnlyTokenIdsPass) {
  RequestLimits limits{4096, 64, 48, true, false};
  limits.skip_tokenizer = true;
  RequestPreparer preparer(tokenizer::Tokenizer::without_vocabulary(4096), {}, limits);
  EXPECT_EQ(preparer.prepare(with_ids({1, 2, 3})).input_ids, (std::vector<int32_t>{1, 2, 3}));
  msg::GenerateRequest text;
  text.text = "hello";
  msg::GenerateRequest chat;
  chat.messages = std::vector<msg::ChatMessage>{{"user", "hello"}};
  msg::GenerateRequest stop = with_ids({1, 2, 3});
  stop.sampling.stop = {"x"};
  for (const auto& [request, field] : {std::pair{text, "text"}, std::pair{chat, "messages"},
                                       std::pair{stop, "sampling_params.stop"}}) {
    try {
      preparer.prepare(request);
      ADD_FAILURE() << field << " was accepted";
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), field);
      EXPECT_NE(std::string(e.what()).find("--skip-tokenizer-init"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(preparer.tokenize("hello"), FieldError);
  EXPECT_THROW(preparer.detokenize({1}, "ids"), FieldError);
}

TEST_F(RequestPreparerTest, AHugeTextIsRefusedBeforeItIsTokenized) {
  msg::GenerateRequest huge;
  huge.text = std::string();
  for (int i = 0; i < 48 * 128; ++i) huge.text->append(" x");  // one short word after another: quick to tokenize
  huge.text->push_back('x');
  EXPECT_NE(refusal(huge, make()).find("bytes"), std::string::npos);
  huge.text->pop_back();  // at the byte limit it is tokenized, then refused for its token count
  EXPECT_NE(refusal(huge, make()).find("tokens"), std::string::npos);
}

TEST_F(RequestPreparerTest, TextIsTokenized) {
  msg::GenerateRequest request;
  request.text = "Hello, world!";
  const msg::TokenizedRequest prepared = make().prepare(request);
  EXPECT_EQ(prepared.input_ids, make().tokenizer().encode("Hello, world!"));
}

// chat_template_kwargs reach the template: Qwen3's enable_thinking = false closes an empty thinking
// block after the generation prompt. The expected ids are transformers' apply_chat_template(...,
// enable_thinking=...) of the same chats (tests/data/qwen3-tokenizer/golden.json).
TEST_F(RequestPreparerTest, ChatTemplateKwargsRenderAsTransformersDoes) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
  const tokenizer::TokenizerConfig config = tokenizer::load_tokenizer_config(dir);
  RequestPreparer preparer(make().tokenizer(), PromptFormat{config.chat_template, std::nullopt, std::nullopt},
                           RequestLimits{151936, 64, 48, false, false});
  const nlohmann::json goldens = read_json_file(dir + "/golden.json");
  int checked = 0;
  for (const auto& golden : goldens["chat_template"]) {
    if (!golden["add_generation_prompt"].get<bool>()) continue;
    msg::GenerateRequest request;
    request.sampling.max_new_tokens = 4;
    request.messages.emplace();
    for (const auto& m : golden["messages"]) request.messages->push_back({m["role"], m["content"]});
    request.chat_template_kwargs = nlohmann::json{{"enable_thinking", golden["enable_thinking"]}}.dump();
    EXPECT_EQ(preparer.prepare(request).input_ids, golden["ids"].get<std::vector<int32_t>>())
        << golden["rendered"].get<std::string>();
    ++checked;
  }
  EXPECT_EQ(checked, 4);  // two chats, thinking on and off
}

TEST_F(RequestPreparerTest, BadChatTemplateKwargsAreRefused) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
  RequestPreparer preparer(make().tokenizer(),
                           PromptFormat{tokenizer::load_tokenizer_config(dir).chat_template, std::nullopt, std::nullopt},
                           RequestLimits{151936, 64, 48, false, false});
  msg::GenerateRequest request;
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi"}};
  request.chat_template_kwargs = "[1]";
  EXPECT_NE(refusal(request, preparer).find("chat_template_kwargs"), std::string::npos);
  request.chat_template_kwargs = R"({"messages": []})";
  EXPECT_NE(refusal(request, preparer).find("clashes"), std::string::npos);
}

// A preparer with the Qwen3 chat template and room for long prompts.
RequestPreparer qwen3_chat_preparer(const tokenizer::Tokenizer& tokenizer) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
  return RequestPreparer(tokenizer,
                         PromptFormat{tokenizer::load_tokenizer_config(dir).chat_template, std::nullopt, std::nullopt},
                         RequestLimits{151936, 4096, 4096, false, false});
}

// tools and the turns' tool fields reach the template as transformers passes them: the expected
// text follows the Qwen3 template (tests/tokenizer/chat_template_qwen3_test.cpp derives each part):
// tools in the system turn, the assistant's call after its empty content, the tool result wrapped
// in <tool_response> inside a user turn.
TEST_F(RequestPreparerTest, ToolsAndToolTurnsRenderThroughTheTemplate) {
  RequestPreparer preparer = qwen3_chat_preparer(make().tokenizer());
  msg::GenerateRequest request;
  request.sampling.max_new_tokens = 4;
  request.messages = std::vector<msg::ChatMessage>{
      {"system", "You are a weather bot."},
      {"user", "Weather in Paris?"},
      {"assistant", "", R"({"tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]})"},
      {"tool", "21 C", R"({"tool_call_id":"call_1"})"}};
  request.tools = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";
  const std::string expected =
      "<|im_start|>system\nYou are a weather bot.\n\n"
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})"
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n"
      R"({"name": <function-name>, "arguments": <args-json-object>})"
      "\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n21 C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(preparer.prepare(request).input_ids, preparer.tokenize(expected));
}

// continue_final_message: the prompt ends where the assistant's partial answer ends (its trailing
// space kept, as transformers keeps it when the rendering does), with no <|im_end|> after it.
TEST_F(RequestPreparerTest, ContinueFinalMessageEndsThePromptInsideTheLastTurn) {
  RequestPreparer preparer = qwen3_chat_preparer(make().tokenizer());
  msg::GenerateRequest request;
  request.sampling.max_new_tokens = 4;
  request.messages = std::vector<msg::ChatMessage>{{"user", "Hi"}, {"assistant", "<tool_call>\n{\"name\": \"f\", "}};
  request.continue_final_message = true;
  EXPECT_EQ(preparer.prepare(request).input_ids,
            preparer.tokenize("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
                              "<tool_call>\n{\"name\": \"f\", "));
  request.messages->pop_back();
  EXPECT_NE(refusal(request, preparer).find("continue_final_message"), std::string::npos);
}

TEST_F(RequestPreparerTest, MalformedToolTextIsRefused) {
  RequestPreparer preparer = qwen3_chat_preparer(make().tokenizer());
  msg::GenerateRequest request;
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi", R"({"content": "x"})"}};
  EXPECT_NE(refusal(request, preparer).find("messages[0].extra_fields"), std::string::npos);
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi", "[1]"}};
  EXPECT_NE(refusal(request, preparer).find("messages[0].extra_fields"), std::string::npos);
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi"}};
  request.tools = R"({"type": "function"})";
  EXPECT_NE(refusal(request, preparer).find("tools"), std::string::npos);
}

// A JSON text whose value nests `levels` objects deep inside `{"a": ...}`: as deep as a client can
// make it in a few kilobytes.
std::string nested_object(size_t levels) {
  std::string text;
  for (size_t i = 0; i < levels; ++i) text += "{\"a\":";
  text += "1";
  text.append(levels, '}');
  return text;
}

// The JSON texts a request carries for the template (ZeroMQ clients send them as they are) are refused
// at any depth beyond the limit, naming the field and the limit; converting them recursed once per
// level and 20,000 levels overflowed the tokenizer thread's stack.
TEST_F(RequestPreparerTest, DeeplyNestedTemplateJsonIsRefusedNamingTheField) {
  RequestPreparer preparer = qwen3_chat_preparer(make().tokenizer());
  const std::string deep = nested_object(50000);
  msg::GenerateRequest request;
  request.sampling.max_new_tokens = 4;
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi", deep}};
  std::string refused = refusal(request, preparer);
  EXPECT_NE(refused.find("messages[0].extra_fields.a.a.a.a..."), std::string::npos) << refused;
  EXPECT_NE(refused.find("deeper than 128 levels"), std::string::npos) << refused;
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi"}};
  request.tools = "[" + deep + "]";
  refused = refusal(request, preparer);
  EXPECT_NE(refused.find("tools[0].a.a"), std::string::npos) << refused;
  request.tools.clear();
  request.chat_template_kwargs = deep;
  refused = refusal(request, preparer);
  EXPECT_NE(refused.find("chat_template_kwargs.a.a"), std::string::npos) << refused;
  EXPECT_NE(refused.find("128"), std::string::npos) << refused;
  // Nesting within the limit reaches the template.
  request.chat_template_kwargs = nested_object(100);
  EXPECT_FALSE(preparer.prepare(request).input_ids.empty());
}

// Every text that becomes a prompt has the byte limit `text` has (256 bytes a position: 48 positions,
// 12288 bytes), checked before it is parsed, rendered or tokenized.
TEST_F(RequestPreparerTest, ChatAndTokenizeTextsHaveThePromptByteLimit) {
  const std::string dir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
  RequestPreparer preparer(make().tokenizer(),
                           PromptFormat{tokenizer::load_tokenizer_config(dir).chat_template, std::nullopt, std::nullopt},
                           RequestLimits{151936, 64, 48, false, false});
  EXPECT_EQ(preparer.max_prompt_bytes(), 12288u);
  const std::string huge(12289, 'x');
  msg::GenerateRequest request;
  request.sampling.max_new_tokens = 4;
  request.messages = std::vector<msg::ChatMessage>{{"user", huge}};
  std::string refused = refusal(request, preparer);
  EXPECT_NE(refused.find("the chat (messages, tools and chat_template_kwargs) is 12293 bytes"), std::string::npos)
      << refused;
  EXPECT_NE(refused.find("at most 12288 bytes"), std::string::npos) << refused;
  request.messages = std::vector<msg::ChatMessage>{{"user", "hi"}};
  request.tools = "[\"" + huge + "\"]";
  EXPECT_NE(refusal(request, preparer).find("bytes"), std::string::npos);
  try {
    preparer.tokenize(huge, "text[1]");
    ADD_FAILURE() << "tokenized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text[1] is 12289 bytes"), std::string::npos) << e.what();
  }
  std::string at_limit;
  for (int i = 0; i < 6144; ++i) at_limit += " x";  // short words: quick to tokenize
  EXPECT_FALSE(preparer.tokenize(at_limit, "text").empty());
}

}  // namespace
}  // namespace moe
