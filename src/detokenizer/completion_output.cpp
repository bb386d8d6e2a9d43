#include "detokenizer/completion_output.h"

#include <algorithm>
#include <stdexcept>

#include "capture/routing_encoding.h"
#include "moe/enum_names.h"

namespace moe {

CompletionOutput::CompletionOutput(std::string rid, int32_t index, const tokenizer::Tokenizer& tokenizer,
                                   const msg::RequestOptions& options, int num_experts, int draft_num_experts,
                                   const RoutingLayerAxis& layer_axis)
    : tokenizer_(tokenizer),
      rid_(std::move(rid)),
      index_(index),
      options_(options),
      routing_(options.routing),
      num_experts_(num_experts),
      draft_num_experts_(draft_num_experts),
      layer_axis_(layer_axis),
      detokenizer_(tokenizer, options.sampling.skip_special_tokens),
      stops_(options.sampling.stop) {}

std::optional<msg::TextOutput> CompletionOutput::apply(const msg::DetokenizeItem& item) {
  if (finished_) return std::nullopt;  // e.g. tokens still in flight after a stop string
  pending_.prompt_tokens = item.prompt_tokens;
  pending_.cached_tokens = item.cached_tokens;
  pending_.weight_version = item.weight_version;
  append_rows(item);
  take_input_logprobs(item);
  if (held_finish_) return release_held(item.finish_reason.has_value());  // later tokens are past the stop
  for (size_t i = 0; i < item.output_ids.size(); ++i) {
    pending_.output_ids.push_back(item.output_ids[i]);
    if (i < item.output_logprobs.size()) {
      pending_.output_logprobs.push_back(item.output_logprobs[i]);
      pending_.output_token_texts.push_back(token_text(item.output_ids[i]));
    }
    if (i < item.output_top_logprobs.size()) pending_.output_top_logprobs.push_back(named(item.output_top_logprobs[i]));
    ++completion_tokens_;
    const tokenizer::StopScan scan = stops_.feed(detokenizer_.push(item.output_ids[i]));
    pending_.text += scan.text;
    if (scan.stopped) {
      msg::FinishReason reason;
      reason.kind = msg::FinishKind::Stop;
      reason.matched_text = options_.sampling.stop[scan.stop_index];
      return stop_here(std::move(reason));
    }
  }
  if (item.finish_reason) {
    pending_.text += stops_.feed(detokenizer_.finish()).text;
    pending_.text += stops_.finish();
    finished_ = true;
    return take_pending(item.finish_reason);
  }
  if (!options_.stream) return std::nullopt;
  return take_pending(std::nullopt);
}

std::optional<msg::TextOutput> CompletionOutput::stop_here(msg::FinishReason reason) {
  stop_unreported_ = true;
  held_finish_ = std::move(reason);
  row_limit_ = int64_t{pending_.prompt_tokens} + completion_tokens_ - (routing_.routes_last_token() ? 0 : 1);
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
  pending_.input_token_ids = item.input_token_ids;
  pending_.input_token_logprobs = item.input_token_logprobs;
  for (int32_t id : item.input_token_ids) pending_.input_token_texts.push_back(token_text(id));
  for (const msg::TokenAlternatives& top : item.input_top_logprobs) pending_.input_top_logprobs.push_back(named(top));
}

namespace {

// Rows [skip, n) of `rows`' values (`values` is its expert_ids or weights) appended to `out`.
template <class T>
void append_range(const msg::RoutingRows& rows, const std::vector<T>& values, int64_t skip, int64_t n,
                  std::vector<T>& out) {
  const auto row_size = static_cast<int64_t>(rows.num_layers) * rows.top_k;
  out.insert(out.end(), values.begin() + skip * row_size, values.begin() + n * row_size);
}

}  // namespace

void CompletionOutput::append_rows(const msg::DetokenizeItem& item) {
  const msg::RoutingRows& rows = item.routed_experts;
  // After a stop string, rows of tokens past it (in flight when it was seen) are not the reply's.
  const int64_t n = std::min(rows.num_rows(), row_limit_ - rows_seen_);
  if (n <= 0) return;
  row_layers_ = rows.num_layers;
  row_top_k_ = rows.top_k;
  const int64_t skip = std::clamp<int64_t>(routing_.start_len - rows_seen_, 0, n);
  rows_seen_ += n;
  append_range(rows, rows.expert_ids, skip, n, row_ids_);
  if (routing_.return_router_weights && !rows.weights.empty()) append_range(rows, rows.weights, skip, n, row_weights_);
  if (!routing_.return_draft_routed_experts) return;
  const msg::RoutingRows& draft = item.draft_routed_experts;
  if (draft.num_rows() != rows.num_rows())
    throw std::logic_error("an item's draft routing rows do not cover its routing rows' positions");
  draft_layers_ = draft.num_layers;
  draft_top_k_ = draft.top_k;
  append_range(draft, draft.expert_ids, skip, n, draft_ids_);
}

msg::EncodedArray CompletionOutput::to_array(const std::string& bytes, size_t values, std::string_view dtype,
                                             int32_t layers, int32_t top_k) const {
  const int64_t row_size = int64_t{layers} * top_k;
  const int64_t rows = row_size ? static_cast<int64_t>(values) / row_size : 0;
  return {routing_.raw ? bytes : base64_encode(bytes), routing_.raw, {rows, layers, top_k}, std::string(dtype)};
}

msg::EncodedArray CompletionOutput::encode_ids(std::vector<int16_t>& ids, int experts, int32_t layers,
                                               int32_t top_k) const {
  const RoutedExpertsDtype dtype = resolve_routed_experts_dtype(routing_.dtype, experts);
  msg::EncodedArray out =
      to_array(pack_routed_experts(ids.data(), ids.size(), dtype), ids.size(), msg::name_of(dtype), layers, top_k);
  ids.clear();
  return out;
}

bool CompletionOutput::spreads_layers() const {
  return routing_.layers.value_or(msg::RoutedExpertsLayers::Moe) == msg::RoutedExpertsLayers::All &&
         layer_axis_.has_dense_layers() && row_layers_ == static_cast<int32_t>(layer_axis_.moe_layer_ids.size());
}

std::optional<msg::EncodedArray> CompletionOutput::encode_ids() {
  if (!routing_.return_routed_experts) return std::nullopt;
  if (!spreads_layers()) return encode_ids(row_ids_, num_experts_, row_layers_, row_top_k_);
  // As SGLang's rows: its capture buffer is zeroed and no router writes a dense layer's entries.
  std::vector<int16_t> all_layers = spread_to_all_layers(row_ids_, layer_axis_, row_top_k_, int16_t{0});
  row_ids_.clear();
  return encode_ids(all_layers, num_experts_, layer_axis_.num_hidden_layers, row_top_k_);
}

std::optional<msg::EncodedArray> CompletionOutput::encode_draft_ids() {
  if (!routing_.return_draft_routed_experts) return std::nullopt;
  return encode_ids(draft_ids_, draft_num_experts_, draft_layers_, draft_top_k_);
}

std::optional<msg::EncodedArray> CompletionOutput::encode_weights() {
  if (!routing_.return_router_weights) return std::nullopt;
  const RouterWeightsDtype dtype = routing_.weights_dtype;
  int32_t layers = row_layers_;
  if (spreads_layers()) {
    row_weights_ = spread_to_all_layers(row_weights_, layer_axis_, row_top_k_, 0.0f);
    layers = layer_axis_.num_hidden_layers;
  }
  msg::EncodedArray out = to_array(pack_router_weights(row_weights_.data(), row_weights_.size(), dtype),
                                   row_weights_.size(), msg::name_of(dtype), layers, row_top_k_);
  row_weights_.clear();
  return out;
}

msg::TextOutput CompletionOutput::take_pending(std::optional<msg::FinishReason> finish) {
  msg::TextOutput out = std::exchange(pending_, {});
  pending_.prompt_tokens = out.prompt_tokens;
  pending_.cached_tokens = out.cached_tokens;
  pending_.weight_version = out.weight_version;
  out.rid = rid_;
  out.index = index_;
  out.finish_reason = std::move(finish);
  out.completion_tokens = completion_tokens_;
  out.routed_experts = encode_ids();
  out.router_weights = encode_weights();
  out.draft_routed_experts = encode_draft_ids();
  return out;
}

}  // namespace moe
