// The front door's value checks, made once for every transport: a request each API's parser read (it
// checks only types) is refused here, naming the field as that API's client sent it.
#include "frontend/request_checks.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "common/error.h"

namespace moe {
namespace {

using nlohmann::json;

RequestLimits limits() {
  RequestLimits limits{151936, 64, 48, /*routed_experts=*/true, /*router_weights=*/false};
  limits.num_experts = 512;
  limits.max_n = 8;
  return limits;
}

void expect_refusal(const msg::GenerateRequest& request, const std::string& field, const std::string& part) {
  try {
    check_request_values(request, limits());
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("`" + field + "`"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
    return;
  }
  ADD_FAILURE() << "accepted; expected a refusal naming " << field;
}

msg::GenerateRequest generate(const json& sampling_params) {
  return api::parse_generate({{"text", "x"}, {"sampling_params", sampling_params}}).requests.at(0);
}

msg::GenerateRequest completion(json body) {
  body["model"] = "m";
  body["prompt"] = "x";
  return api::parse_completion(body, "m").requests.at(0);
}

msg::GenerateRequest chat(nlohmann::ordered_json body) {
  body["model"] = "m";
  body["messages"] = {{{"role", "user"}, {"content", "hi"}}};
  return api::parse_chat_completion(body, "m").requests.at(0);
}

TEST(RequestChecks, AcceptsEachApisDefaults) {
  check_request_values(generate(json::object()), limits());
  check_request_values(completion(json::object()), limits());
  check_request_values(chat(nlohmann::ordered_json::object()), limits());
}

TEST(RequestChecks, NameGenerateSamplingFieldsUnderSamplingParams) {
  expect_refusal(generate({{"temperature", -0.5}}), "sampling_params.temperature", ">= 0");
  expect_refusal(generate({{"top_p", 0}}), "sampling_params.top_p", "(0, 1]");
  expect_refusal(generate({{"top_p", 1.5}}), "sampling_params.top_p", "(0, 1]");
  expect_refusal(generate({{"top_k", -2}}), "sampling_params.top_k", "top_k");
  expect_refusal(generate({{"min_p", 2}}), "sampling_params.min_p", "[0, 1]");
  expect_refusal(generate({{"repetition_penalty", 3}}), "sampling_params.repetition_penalty", "(0, 2]");
  expect_refusal(generate({{"logit_bias", {{"7", 101}}}}), "sampling_params.logit_bias", "[-100, 100]");
  expect_refusal(generate({{"logit_bias", {{"151936", 1}}}}), "sampling_params.logit_bias", "outside the vocabulary");
  expect_refusal(generate({{"max_new_tokens", 0}}), "sampling_params.max_new_tokens", "at least 1");
  expect_refusal(generate({{"min_new_tokens", -1}}), "sampling_params.min_new_tokens", "at least 0");
  expect_refusal(generate({{"n", 0}}), "sampling_params.n", "at least 1");
  expect_refusal(generate({{"n", 9}}), "sampling_params.n", "at most 8 completions");
  expect_refusal(generate({{"stop", json(std::vector<std::string>(65, "a"))}}), "sampling_params.stop", "at most 64");
}

TEST(RequestChecks, NameABatchsPromptByItsIndex) {
  const api::GenerationCall call =
      api::parse_generate({{"text", {"a", "b"}},
                           {"sampling_params", {{{"n", 1}}, {{"n", -1}}}},
                           {"return_logprob", true},
                           {"logprob_start_len", {0, -3}}});
  check_request_values(call.requests[0], limits());
  expect_refusal(call.requests[1], "sampling_params[1].n", "at least 1");
  msg::GenerateRequest second = call.requests[1];
  second.sampling.n = 1;
  expect_refusal(second, "logprob_start_len[1]", "got -3");
}

TEST(RequestChecks, NameGenerateTopLevelFields) {
  const auto with = [](json fields) {
    fields["text"] = "x";
    return api::parse_generate(fields).requests.at(0);
  };
  expect_refusal(with({{"top_logprobs_num", 21}}), "top_logprobs_num", "[0, 20]");
  expect_refusal(with({{"logprob_start_len", -2}}), "logprob_start_len",
                 "must be -1 (no prompt logprobs) or a prompt position >= 0, got -2");
  expect_refusal(with({{"routed_experts_start_len", -1}}), "routed_experts_start_len", "at least 0");
  expect_refusal(with({{"return_router_weights", true}}), "return_router_weights", "--enable-return-router-weights");
  expect_refusal(with({{"return_draft_routed_experts", true}}), "return_draft_routed_experts",
                 "needs return_routed_experts");
  expect_refusal(with({{"return_routed_experts", true}, {"routed_experts_dtype", "uint8"}}), "routed_experts_dtype",
                 "512 experts");
}

TEST(RequestChecks, NameOpenAIFieldsAsOpenAIDoes) {
  expect_refusal(completion({{"max_tokens", 0}}), "max_tokens", "at least 1");
  expect_refusal(completion({{"min_tokens", -1}}), "min_tokens", "at least 0");
  expect_refusal(completion({{"temperature", -1}}), "temperature", ">= 0");
  expect_refusal(completion({{"top_p", 0}}), "top_p", "(0, 1]");
  expect_refusal(completion({{"n", 0}}), "n", "at least 1");
  expect_refusal(completion({{"presence_penalty", 2.5}}), "presence_penalty", "[-2, 2]");
  expect_refusal(completion({{"frequency_penalty", -3}}), "frequency_penalty", "[-2, 2]");
  expect_refusal(completion({{"repetition_penalty", 0}}), "repetition_penalty", "(0, 2]");
  expect_refusal(completion({{"logit_bias", {{"12", 101}}}}), "logit_bias", "[-100, 100]");
  expect_refusal(completion({{"logprobs", 21}}), "logprobs", "[0, 20]");
  expect_refusal(completion({{"logprobs", -1}}), "logprobs", "[0, 20]");
  expect_refusal(chat({{"max_completion_tokens", 0}}), "max_completion_tokens", "at least 1");
  expect_refusal(chat({{"max_tokens", 0}}), "max_tokens", "at least 1");
  expect_refusal(chat({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs", "[0, 20]");
}

}  // namespace
}  // namespace moe
