#include "api_test_support.h"

#include <cstring>
#include <limits>

namespace moe::api::test {

void expect_api_error(const std::function<void()>& call, int status, const std::string& param,
                      const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "accepted a request that should fail on `" << param << "`";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message was: " << e.what();
  }
}

msg::EncodedArray int32_rows(int64_t rows, int64_t layers, int64_t top_k, int32_t first) {
  msg::EncodedArray array;
  array.raw = true;
  array.dtype = "int32";
  array.shape = {rows, layers, top_k};
  for (int64_t e = 0; e < rows * layers * top_k; ++e) {
    const int32_t value = first + static_cast<int32_t>(e);
    array.data.append(reinterpret_cast<const char*>(&value), 4);
  }
  return array;
}

std::vector<int32_t> int32_values(const std::string& bytes) {
  std::vector<int32_t> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

msg::TextOutput text_output(const std::string& rid, int32_t index, const std::string& text,
                            std::vector<int32_t> ids, int32_t prompt_tokens, int32_t completion_tokens) {
  msg::TextOutput output;
  output.rid = rid;
  output.index = index;
  output.text = text;
  output.output_ids = std::move(ids);
  output.prompt_tokens = prompt_tokens;
  output.completion_tokens = completion_tokens;
  return output;
}

msg::TextOutput output_with_prompt_logprobs() {
  msg::TextOutput output = text_output("r", 0, "c", {9}, 2, 1);
  output.output_logprobs = {-1.0f};
  output.output_token_texts = {"c"};
  output.output_top_logprobs = {{{9}, {-1.0f}, {"c"}}};
  output.input_token_ids = {7, 8};
  output.input_token_logprobs = {std::numeric_limits<float>::quiet_NaN(), -2.0f};
  output.input_token_texts = {"A", "B"};
  output.input_top_logprobs = {{}, {{8}, {-2.0f}, {"B"}}};
  output.finish_reason = finish(msg::FinishKind::Length);
  return output;
}

std::vector<msg::TextOutput> chunks_with_prompt_logprobs(const std::string& text, int32_t id) {
  msg::TextOutput first = output_with_prompt_logprobs();
  first.finish_reason.reset();
  msg::TextOutput last = text_output("r", 0, text, {id}, 2, 2);
  last.output_logprobs = {-0.5f};
  last.output_token_texts = {text};
  last.output_top_logprobs = {{{id}, {-0.5f}, {text}}};
  last.finish_reason = finish(msg::FinishKind::Length);
  return {first, last};
}

msg::FinishReason finish(msg::FinishKind kind, int32_t matched_token) {
  msg::FinishReason reason;
  reason.kind = kind;
  if (matched_token >= 0) reason.matched_token = matched_token;
  return reason;
}

msg::ErrorReply error_reply(int32_t code, const std::string& message) {
  msg::ErrorReply reply;
  reply.code = code;
  reply.message = message;
  return reply;
}

}  // namespace moe::api::test
