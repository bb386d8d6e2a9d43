#pragma once
// SGLang's /generate answer: {"text", "output_ids", "meta_info": {...}} per completion, a list of
// them for a batch or n > 1. Streaming follows SGLang's default (non-incremental) output: each
// event repeats the text, ids and logprobs so far, and carries the routing rows of the tokens it
// covers, so that the rows of all events concatenated equal those of the unstreamed answer.
#include <memory>

#include "api/response_builder.h"

namespace moe::api {

// SGLang's finish_reason: {"type": "stop", "matched": id or text} | {"type": "length", "length": n}
// | {"type": "abort", "message": why}; null while unfinished.
nlohmann::json sglang_finish_reason(const std::optional<msg::FinishReason>& reason, int32_t completion_tokens);

std::unique_ptr<ResponseBuilder> make_generate_builder(const GenerationCall& call);

}  // namespace moe::api
