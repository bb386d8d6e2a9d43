// The chat templates of Mixtral (Mistral instruct) and Qwen2 (ChatML with a default system prompt),
// as published with those models, rendered through the ChatTemplate facade; and how the facade maps
// apply_chat_template's inputs to template variables.
#include <gtest/gtest.h>

#include "common/error.h"
#include "tokenizer/chat_template.h"

namespace moe::tokenizer {
namespace {

using nlohmann::ordered_json;

constexpr const char* kMixtralTemplate =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

constexpr const char* kQwen2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

std::string render_mixtral(const char* messages_json) {
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::parse(messages_json);
  inputs.bos_token = "<s>";
  inputs.eos_token = "</s>";
  return ChatTemplate::compile(kMixtralTemplate).render(inputs);
}

std::string mixtral_error(const char* messages_json) {
  try {
    render_mixtral(messages_json);
  } catch (const moe::Error& error) {
    return error.what();
  }
  return "rendered without an error";
}

std::string render_qwen2(const char* messages_json, bool add_generation_prompt) {
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::parse(messages_json);
  inputs.add_generation_prompt = add_generation_prompt;
  return ChatTemplate::compile(kQwen2Template).render(inputs);
}

TEST(ChatTemplateMixtral, AlternatingConversation) {
  EXPECT_EQ(render_mixtral(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                               {"role": "user", "content": "How are you?"}])"),
            "<s>[INST] Hi [/INST]Hello!</s>[INST] How are you? [/INST]");
}

TEST(ChatTemplateMixtral, RaiseExceptionPaths) {
  EXPECT_EQ(mixtral_error(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"),
            "Conversation roles must alternate user/assistant/user/assistant/...");
  // A system message first breaks the alternation check before the role check is reached.
  EXPECT_EQ(mixtral_error(R"([{"role": "system", "content": "s"}, {"role": "user", "content": "a"}])"),
            "Conversation roles must alternate user/assistant/user/assistant/...");
  // In an assistant's position the alternation holds, so the role check raises.
  EXPECT_EQ(mixtral_error(R"([{"role": "user", "content": "a"}, {"role": "system", "content": "s"}])"),
            "Only user and assistant roles are supported!");
}

TEST(ChatTemplateQwen2, DefaultSystemPromptWhenNoneIsGiven) {
  EXPECT_EQ(render_qwen2(R"([{"role": "user", "content": "Hi"}])", true),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen2, GivenSystemPromptReplacesTheDefault) {
  EXPECT_EQ(render_qwen2(R"([{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello."}])",
                         false),
            "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n");
}

// Which variables the facade defines, as transformers' render call does: tools is None when not
// given, enable_thinking and absent special tokens are undefined, extra kwargs pass through.
TEST(ChatTemplateFacade, VariablesMatchApplyChatTemplate) {
  const ChatTemplate probe = ChatTemplate::compile(
      "{{ tools is defined }},{{ tools is none }},{{ documents is none }},{{ enable_thinking is defined }},"
      "{{ bos_token is defined }},{{ eos_token }},{{ add_generation_prompt }},{{ custom.k }}");
  ChatTemplateInputs inputs;
  inputs.eos_token = "</s>";
  inputs.extra_variables = ordered_json::parse(R"({"custom": {"k": "v"}})");
  EXPECT_EQ(probe.render(inputs), "True,True,True,False,False,</s>,False,v");
  inputs.enable_thinking = false;
  inputs.tools = ordered_json::array();
  inputs.add_generation_prompt = true;
  EXPECT_EQ(probe.render(inputs), "True,False,True,True,False,</s>,True,v");
}

TEST(ChatTemplateFacade, ToolKeyOrderIsKept) {
  ChatTemplateInputs inputs;
  inputs.tools = ordered_json::parse(R"([{"z": 1, "a": {"y": 2, "b": 3}}])");
  EXPECT_EQ(ChatTemplate::compile("{{ tools[0] | tojson }}").render(inputs), R"({"z": 1, "a": {"y": 2, "b": 3}})");
}

TEST(ChatTemplateFacade, CompileOnceRenderMany) {
  const ChatTemplate compiled = ChatTemplate::compile(kQwen2Template);
  ChatTemplateInputs inputs;
  for (const char* content : {"one", "two"}) {
    inputs.messages = ordered_json::array({{{"role", "user"}, {"content", content}}});
    EXPECT_EQ(compiled.render(inputs), std::string("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n") +
                                           "<|im_start|>user\n" + content + "<|im_end|>\n");
  }
}

TEST(ChatTemplateFacade, RejectsMalformedInputs) {
  const ChatTemplate compiled = ChatTemplate::compile(kQwen2Template);
  ChatTemplateInputs inputs;
  inputs.messages = ordered_json::parse(R"({"role": "user"})");
  EXPECT_THROW(compiled.render(inputs), moe::Error);
  inputs.messages = ordered_json::array();
  inputs.extra_variables = ordered_json::parse(R"({"messages": []})");
  EXPECT_THROW(compiled.render(inputs), moe::Error);
  EXPECT_THROW(ChatTemplate::compile("{% if %}"), moe::Error);
}

}  // namespace
}  // namespace moe::tokenizer
