#include "frontend/request_preparer.h"

#include <cstdio>
#include <random>

#include "capture/routing_encoding.h"
#include "common/error.h"
#include "sampling/sampling_params.h"

namespace moe {

RequestPreparer::RequestPreparer(tokenizer::Tokenizer tokenizer, const std::string& chat_template,
                                 std::optional<std::string> bos_token, std::optional<std::string> eos_token,
                                 int64_t vocab_size, int64_t context_length)
    : tokenizer_(std::move(tokenizer)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      vocab_size_(vocab_size),
      context_length_(context_length) {
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "moe-%08x-", static_cast<unsigned>(std::random_device{}()));
  rid_prefix_ = prefix;
  if (!chat_template.empty()) chat_template_ = tokenizer::ChatTemplate::compile(chat_template);
}

std::vector<int32_t> RequestPreparer::prompt_ids(const msg::GenerateRequest& request) const {
  const int given = request.text.has_value() + request.input_ids.has_value() + request.messages.has_value();
  if (given != 1) throw Error("give exactly one of text, input_ids and messages");
  if (request.input_ids) {
    for (int32_t id : *request.input_ids)
      if (id < 0 || id >= vocab_size_)
        throw Error("input_ids: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                    std::to_string(vocab_size_) + ")");
    return *request.input_ids;
  }
  if (request.text) return tokenizer_.encode(*request.text);
  if (!chat_template_) throw Error("messages: this model's tokenizer has no chat template");
  tokenizer::ChatTemplateInputs inputs;
  for (const msg::ChatMessage& m : *request.messages)
    inputs.messages.push_back({{"role", m.role}, {"content", m.content}});
  inputs.add_generation_prompt = true;
  inputs.bos_token = bos_token_;
  inputs.eos_token = eos_token_;
  return tokenizer_.encode(chat_template_->render(inputs));
}

msg::TokenizedRequest RequestPreparer::prepare(const msg::GenerateRequest& request) {
  const msg::SamplingParams& s = request.sampling;
  validate(SamplingParams{s.temperature, s.top_p, s.top_k, s.min_p, 0});
  if (s.max_new_tokens < 1) throw Error("sampling_params.max_new_tokens must be >= 1");
  if (s.n < 1) throw Error("sampling_params.n must be >= 1");
  if (request.routing.start_len < 0) throw Error("routed_experts_start_len must be >= 0");
  parse_routed_experts_dtype(request.routing.dtype);
  parse_router_weights_dtype(request.routing.weights_dtype);

  msg::TokenizedRequest out;
  out.input_ids = prompt_ids(request);
  if (out.input_ids.empty()) throw Error("the prompt is empty");
  if (context_length_ > 0 && static_cast<int64_t>(out.input_ids.size()) >= context_length_)
    throw Error("the prompt has " + std::to_string(out.input_ids.size()) + " tokens; the model's context is " +
                std::to_string(context_length_));
  out.rid = request.rid.empty() ? rid_prefix_ + std::to_string(next_rid_++) : request.rid;
  out.sampling = request.sampling;
  out.stream = request.stream;
  out.return_logprob = request.return_logprob;
  out.routing = request.routing;
  return out;
}

}  // namespace moe
