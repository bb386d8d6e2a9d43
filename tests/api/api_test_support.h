#pragma once
// Helpers shared by the API tests: checking a refused request, and building engine outputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "moe/messages.h"

namespace moe::api::test {

// Runs `call` and checks it throws an ApiError of `status` naming `param` (empty: no param) and
// whose message contains `needle`.
void expect_api_error(const std::function<void()>& call, int status, const std::string& param,
                      const std::string& needle = {});

// A raw int32 routing array of `rows` rows of [layers, top_k] whose element e (flat) is first + e.
msg::EncodedArray int32_rows(int64_t rows, int64_t layers, int64_t top_k, int32_t first);

// The little-endian int32 values of `bytes`.
std::vector<int32_t> int32_values(const std::string& bytes);

// A TextOutput of request `rid`, completion `index`, with new `text` and ids.
msg::TextOutput text_output(const std::string& rid, int32_t index, const std::string& text,
                            std::vector<int32_t> ids, int32_t prompt_tokens, int32_t completion_tokens);

// The finished reply of request "r" to prompt "AB" (tokens 7, 8) that generated "c" (token 9), with
// one top alternative per token and the prompt's logprobs from position 0: token 7 has none (NaN,
// no alternatives), token 8 has -2 (itself its one alternative); "c" has -1.
msg::TextOutput output_with_prompt_logprobs();
// The same reply streamed in two chunks: that output unfinished, then a final one adding `text`,
// token `id` at logprob -0.5 (itself its one alternative).
std::vector<msg::TextOutput> chunks_with_prompt_logprobs(const std::string& text, int32_t id);

// A finish reason of `kind`, matching `matched_token` when it is not negative.
msg::FinishReason finish(msg::FinishKind kind, int32_t matched_token = -1);

// An engine error of HTTP `code`.
msg::ErrorReply error_reply(int32_t code, const std::string& message);

}  // namespace moe::api::test
