#include "api/response_builder.h"

#include <cmath>

#include "api/raw_rows.h"

namespace moe::api {
namespace {

using nlohmann::json;

// One of SGLang's logprob triples: [logprob, token id, token text or null]; a NaN logprob (the
// prompt's first token, which has no context) is null.
json triple(float logprob, int32_t id, const std::string& text, bool with_text) {
  return {std::isnan(logprob) ? json() : json(logprob), id, with_text ? json(text) : json()};
}

// SGLang's <kind>_token_logprobs ([logprob, id, text] per token) and, when `tops` has any,
// <kind>_top_logprobs (per token, a list of such triples, most probable first; null for a position
// without alternatives, the prompt's first token).
void put_logprobs(json& meta, const std::string& kind, const std::vector<float>& logprobs,
                  const std::vector<int32_t>& ids, const std::vector<std::string>& texts,
                  const std::vector<msg::TokenAlternatives>& tops, bool with_text) {
  json triples = json::array();
  for (size_t i = 0; i < logprobs.size(); ++i) triples.push_back(triple(logprobs[i], ids.at(i), texts.at(i), with_text));
  meta[kind + "_token_logprobs"] = std::move(triples);
  if (tops.empty()) return;
  json top_lists = json::array();
  for (const msg::TokenAlternatives& top : tops) {
    if (top.ids.empty()) {
      top_lists.push_back(nullptr);
      continue;
    }
    json list = json::array();
    for (size_t k = 0; k < top.ids.size(); ++k)
      list.push_back(triple(top.logprobs.at(k), top.ids[k], top.texts.at(k), with_text));
    top_lists.push_back(std::move(list));
  }
  meta[kind + "_top_logprobs"] = std::move(top_lists);
}

// The prompt's logprobs (logprob_start_len >= 0: input_token_logprobs, input_top_logprobs), then the
// output's (output_token_logprobs, output_top_logprobs).
void put_logprobs(json& meta, const CompletionState& completion, bool prompt_logprobs, bool with_text) {
  if (prompt_logprobs)
    put_logprobs(meta, "input", completion.input_token_logprobs, completion.input_token_ids,
                 completion.input_token_texts, completion.input_top_logprobs, with_text);
  put_logprobs(meta, "output", completion.output_logprobs, completion.output_ids, completion.output_token_texts,
               completion.output_top_logprobs, with_text);
}

// The routing arrays of one /generate object: all of a completion's, one chunk's, or none.
struct ObjectRows {
  const RawRows* experts = nullptr;
  const RawRows* weights = nullptr;
  const RawRows* draft_experts = nullptr;
};

ObjectRows all_rows(const CompletionState& completion) {
  const auto rows = [](const std::optional<RawRows>& r) { return r ? &*r : nullptr; };
  return {rows(completion.routed_experts), rows(completion.router_weights), rows(completion.draft_routed_experts)};
}

// One completion's object with `rows`.
// `with_text`: false on a server without a tokenizer, whose answers are ids only (as SGLang's).
json generate_object(const CompletionState& completion, const msg::RequestOptions& options, bool text_in_logprobs,
                     bool with_text, const ObjectRows& rows) {
  json meta = {{"id", completion.rid},
               {"index", completion.index},
               {"finish_reason", sglang_finish_reason(completion.finish_reason, completion.completion_tokens)},
               {"prompt_tokens", completion.prompt_tokens},
               {"completion_tokens", completion.completion_tokens},
               {"cached_tokens", completion.cached_tokens},
               {"weight_version", completion.weight_version}};
  if (options.return_logprob) put_logprobs(meta, completion, options.logprob_start_len >= 0, text_in_logprobs);
  if (rows.experts != nullptr) put_base64(meta, "routed_experts", *rows.experts);
  if (rows.weights != nullptr) put_base64(meta, "router_weights", *rows.weights);
  if (rows.draft_experts != nullptr) put_base64(meta, "draft_routed_experts", *rows.draft_experts);
  json object = {{"output_ids", completion.output_ids}, {"meta_info", std::move(meta)}};
  if (with_text) object["text"] = completion.text;
  return object;
}

// Gathers the outputs of a /generate call into SGLang objects.
class GenerateResponseBuilder final : public ResponseBuilder {
 public:
  explicit GenerateResponseBuilder(const GenerationCall& call)
      : ResponseBuilder(call),
        batched_(call.batched),
        text_in_logprobs_(call.text_in_logprobs),
        with_text_(!call.ids_only),
        routing_delta_(call.stream_routing_delta) {
    for (const msg::GenerateRequest& request : call.requests) {
      options_.push_back(request);
      completions_ += static_cast<size_t>(request.sampling.n);
    }
  }

  std::vector<json> add(size_t prompt, const msg::TextOutput& output) override {
    const CompletionState& completion = grid_.record(prompt, output);
    if (!stream_) return {};
    if (!routing_delta_) {
      // As SGLang: text and ids are cumulative, and the final chunk carries the whole request's rows.
      const bool last = completion.finish_reason.has_value();
      return {generate_object(completion, options_[prompt], text_in_logprobs_, with_text_,
                              last ? all_rows(completion) : ObjectRows{})};
    }
    const std::optional<RawRows> experts = chunk_rows(output.routed_experts);
    const std::optional<RawRows> weights = chunk_rows(output.router_weights);
    const std::optional<RawRows> draft_experts = chunk_rows(output.draft_routed_experts);
    return {generate_object(completion, options_[prompt], text_in_logprobs_, with_text_,
                            {experts ? &*experts : nullptr, weights ? &*weights : nullptr,
                             draft_experts ? &*draft_experts : nullptr})};
  }

  json response() const override {
    json list = json::array();
    for (size_t prompt = 0; prompt < grid_.num_prompts(); ++prompt) {
      for (const CompletionState& completion : grid_.completions(prompt)) {
        list.push_back(generate_object(completion, options_[prompt], text_in_logprobs_, with_text_, all_rows(completion)));
      }
    }
    // As SGLang: one object for one prompt sampled once, a list otherwise.
    return batched_ || completions_ > 1 ? list : list.front();
  }

 private:
  static std::optional<RawRows> chunk_rows(const std::optional<msg::EncodedArray>& array) {
    if (!array) return std::nullopt;
    return RawRows::from(*array);
  }

  bool batched_;
  bool text_in_logprobs_;
  bool with_text_;
  bool routing_delta_;
  std::vector<msg::RequestOptions> options_;  // per prompt
  size_t completions_ = 0;
};

}  // namespace

json sglang_finish_reason(const std::optional<msg::FinishReason>& reason, int32_t completion_tokens) {
  if (!reason) return nullptr;
  switch (reason->kind) {
    case msg::FinishKind::Stop: {
      json stop = {{"type", "stop"}};
      if (reason->matched_token) stop["matched"] = *reason->matched_token;
      if (reason->matched_text) stop["matched"] = *reason->matched_text;
      return stop;
    }
    case msg::FinishKind::Length: return {{"type", "length"}, {"length", completion_tokens}};
    case msg::FinishKind::Abort: return {{"type", "abort"}, {"message", reason->message}};
  }
  return nullptr;
}

std::unique_ptr<ResponseBuilder> make_generate_builder(const GenerationCall& call) {
  return std::make_unique<GenerateResponseBuilder>(call);
}

}  // namespace moe::api
