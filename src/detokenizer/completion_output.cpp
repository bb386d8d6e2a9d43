#include "detokenizer/completion_output.h"

#include <algorithm>

#include "capture/routing_encoding.h"

namespace moe {

CompletionOutput::CompletionOutput(std::string rid, int32_t index, const tokenizer::Tokenizer& tokenizer,
                                   const msg::RequestOptions& options, int num_experts)
    : tokenizer_(tokenizer),
      rid_(std::move(rid)),
      index_(index),
      options_(options),
      routing_(options.routing),
      num_experts_(num_experts),
      detokenizer_(tokenizer, options.sampling.skip_special_tokens),
      stops_(options.sampling.stop) {
  resolve_routed_experts_dtype(parse_routed_experts_dtype(routing_.dtype), num_experts_);
  parse_router_weights_dtype(routing_.weights_dtype);
}

std::optional<msg::TextOutput> CompletionOutput::apply(const msg::DetokenizeItem& item) {
  if (finished_) return std::nullopt;  // e.g. tokens still in flight after a stop string
  prompt_tokens_ = item.prompt_tokens;
  cached_tokens_ = item.cached_tokens;
  weight_version_ = item.weight_version;
  append_rows(item.routing);
  take_input_logprobs(item);
  if (held_finish_) return release_held(item.finish_reason.has_value());  // later tokens are past the stop
  for (size_t i = 0; i < item.new_token_ids.size(); ++i) {
    ids_.push_back(item.new_token_ids[i]);
    if (i < item.new_logprobs.size()) {
      logprobs_.push_back(item.new_logprobs[i]);
      token_texts_.push_back(token_text(item.new_token_ids[i]));
    }
    if (i < item.new_top_logprobs.size()) top_logprobs_.push_back(named(item.new_top_logprobs[i]));
    ++completion_tokens_;
    const tokenizer::StopScan scan = stops_.feed(detokenizer_.push(item.new_token_ids[i]));
    text_ += scan.text;
    if (scan.stopped) {
      msg::FinishReason reason;
      reason.kind = msg::FinishKind::Stop;
      reason.matched_text = options_.sampling.stop[scan.stop_index];
      return stop_here(std::move(reason));
    }
  }
  if (item.finish_reason) {
    text_ += stops_.feed(detokenizer_.finish()).text;
    text_ += stops_.finish();
    finished_ = true;
    return take_pending(item.finish_reason);
  }
  if (!options_.stream) return std::nullopt;
  return take_pending(std::nullopt);
}

std::optional<msg::TextOutput> CompletionOutput::stop_here(msg::FinishReason reason) {
  stop_unreported_ = true;
  held_finish_ = std::move(reason);
  row_limit_ = int64_t{prompt_tokens_} + completion_tokens_ - (routing_.routes_last_token() ? 0 : 1);
  return release_held(false);
}

std::optional<msg::TextOutput> CompletionOutput::release_held(bool scheduler_finished) {
  if (routing_.return_routed_experts && rows_seen_ < row_limit_ && !scheduler_finished) return std::nullopt;
  finished_ = true;
  return take_pending(std::exchange(held_finish_, std::nullopt));
}

msg::TokenAlternatives CompletionOutput::named(msg::TokenAlternatives top) const {
  top.texts.clear();
  for (int32_t id : top.ids) top.texts.push_back(token_text(id));
  return top;
}

void CompletionOutput::take_input_logprobs(const msg::DetokenizeItem& item) {
  if (item.input_token_ids.empty() || !options_.return_logprob) return;
  input_.input_token_ids = item.input_token_ids;
  input_.input_token_logprobs = item.input_logprobs;
  for (int32_t id : item.input_token_ids) input_.input_token_texts.push_back(token_text(id));
  for (const msg::TokenAlternatives& top : item.input_top_logprobs) input_.input_top_logprobs.push_back(named(top));
}

void CompletionOutput::append_rows(const msg::RoutingRows& rows) {
  // After a stop string, rows of tokens past it (in flight when it was seen) are not the reply's.
  const int64_t n = std::min(rows.num_rows(), row_limit_ - rows_seen_);
  if (n <= 0) return;
  row_layers_ = rows.num_layers;
  row_top_k_ = rows.top_k;
  const int64_t skip = std::clamp<int64_t>(routing_.start_len - rows_seen_, 0, n);
  rows_seen_ += n;
  const size_t row_size = static_cast<size_t>(rows.num_layers) * rows.top_k;
  row_ids_.insert(row_ids_.end(), rows.expert_ids.begin() + skip * row_size, rows.expert_ids.begin() + n * row_size);
  if (routing_.return_router_weights && !rows.weights.empty())
    row_weights_.insert(row_weights_.end(), rows.weights.begin() + skip * row_size, rows.weights.begin() + n * row_size);
}

msg::EncodedArray CompletionOutput::to_array(const std::string& bytes, size_t values, const char* dtype) const {
  const int64_t row_size = int64_t{row_layers_} * row_top_k_;
  const int64_t rows = row_size ? static_cast<int64_t>(values) / row_size : 0;
  return {routing_.raw ? bytes : base64_encode(bytes), routing_.raw, {rows, row_layers_, row_top_k_}, dtype};
}

std::optional<msg::EncodedArray> CompletionOutput::encode_ids() {
  if (!routing_.return_routed_experts) return std::nullopt;
  const RoutedExpertsDtype dtype = resolve_routed_experts_dtype(parse_routed_experts_dtype(routing_.dtype), num_experts_);
  msg::EncodedArray out =
      to_array(pack_routed_experts(row_ids_.data(), row_ids_.size(), dtype), row_ids_.size(), dtype_name(dtype));
  row_ids_.clear();
  return out;
}

std::optional<msg::EncodedArray> CompletionOutput::encode_weights() {
  if (!routing_.return_router_weights) return std::nullopt;
  const RouterWeightsDtype dtype = parse_router_weights_dtype(routing_.weights_dtype);
  msg::EncodedArray out = to_array(pack_router_weights(row_weights_.data(), row_weights_.size(), dtype),
                                   row_weights_.size(), dtype_name(dtype));
  row_weights_.clear();
  return out;
}

msg::TextOutput CompletionOutput::take_pending(std::optional<msg::FinishReason> finish) {
  msg::TextOutput out;
  out.rid = rid_;
  out.index = index_;
  out.text = std::move(text_);
  out.output_ids = std::move(ids_);
  if (options_.return_logprob) {
    out.output_logprobs = std::move(logprobs_);
    out.output_token_texts = std::move(token_texts_);
    out.output_top_logprobs = std::move(top_logprobs_);
    out.input_token_ids = std::move(input_.input_token_ids);
    out.input_token_logprobs = std::move(input_.input_token_logprobs);
    out.input_token_texts = std::move(input_.input_token_texts);
    out.input_top_logprobs = std::move(input_.input_top_logprobs);
    input_ = {};
  }
  out.finish_reason = std::move(finish);
  out.prompt_tokens = prompt_tokens_;
  out.completion_tokens = completion_tokens_;
  out.cached_tokens = cached_tokens_;
  out.weight_version = weight_version_;
  out.routed_experts = encode_ids();
  out.router_weights = encode_weights();
  text_.clear();
  ids_.clear();
  logprobs_.clear();
  token_texts_.clear();
  top_logprobs_.clear();
  return out;
}

}  // namespace moe
