#pragma once
// OpenAI's completion and chat completion answers: objects, streamed chunks and the usage chunk,
// with vLLM's routing split: `prompt_routed_experts` once per prompt (response level; a list
// aligned with the prompts when several were sent) and `routed_experts` per choice, holding only
// that completion's own rows. Each completion's engine rows start at position 0, so its first
// prompt_tokens rows are the prompt's. Choice i of prompt p has index p * n + i.
// Logprobs name tokens as "token_id:<id>" (vLLM's return_tokens_as_token_ids form): the engine
// does not send per-token text.
#include <memory>
#include <string>

#include "api/response_builder.h"

namespace moe::api {

// The response model list of GET /v1/models.
nlohmann::json model_list(const std::string& model, int64_t created);

std::unique_ptr<ResponseBuilder> make_openai_builder(const GenerationCall& call, const std::string& response_id,
                                                     int64_t created);

}  // namespace moe::api
