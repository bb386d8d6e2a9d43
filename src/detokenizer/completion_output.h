#pragma once
// One completion's reply being assembled by the detokenizer: incremental text, stop strings,
// logprobs and routed-experts rows (with start_len, dtype and base64 or raw bytes), emitted as
// stream chunks or as one final reply.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/routing_layer_axis.h"
#include "moe/messages.h"
#include "tokenizer/streaming.h"

namespace moe {

class CompletionOutput {
 public:
  // `options` passed the front door's checks: its routing dtype fits the model's num_experts (and,
  // for its rows, the STANDALONE draft's draft_num_experts). `layer_axis` places
  // the model's MoE layers among its decoder layers, for rows of every layer.
  CompletionOutput(std::string rid, int32_t index, const tokenizer::Tokenizer& tokenizer,
                   const msg::RequestOptions& options, int num_experts, int draft_num_experts = 0,
                   const RoutingLayerAxis& layer_axis = {});

  // Applies the scheduler's next item; returns what to send now (a stream chunk, or the final reply).
  std::optional<msg::TextOutput> apply(const msg::DetokenizeItem& item);
  bool finished() const { return finished_; }
  // True once, right after a stop string ended the reply: the scheduler must be told to stop
  // generating it, keeping completion_tokens() tokens.
  bool take_stop_report() { return std::exchange(stop_unreported_, false); }
  int32_t completion_tokens() const { return completion_tokens_; }

 private:
  // A stop string ended the reply: sent now, or, with include_last, once the row of the last kept
  // token (fed after the stop was seen) has arrived.
  std::optional<msg::TextOutput> stop_here(msg::FinishReason reason);
  // The held reply, when its rows are complete or the scheduler ended the completion.
  std::optional<msg::TextOutput> release_held(bool scheduler_finished);
  // Text, ids, logprobs and rows gathered since the last emission, as one TextOutput.
  msg::TextOutput take_pending(std::optional<msg::FinishReason> finish);
  // The item's rows (and the draft's rows of the same positions) the reply keeps.
  void append_rows(const msg::DetokenizeItem& item);
  // `values` packed into `bytes` as [rows, layers, K], base64 unless the client asked for raw bytes.
  msg::EncodedArray to_array(const std::string& bytes, size_t values, std::string_view dtype, int32_t layers,
                             int32_t top_k) const;
  // `ids` packed in the request's dtype resolved for `experts`, and cleared.
  msg::EncodedArray encode_ids(std::vector<int16_t>& ids, int experts, int32_t layers, int32_t top_k) const;
  std::optional<msg::EncodedArray> encode_ids();
  // Whether the target's rows go out with an entry per decoder layer (dense ones filled).
  bool spreads_layers() const;
  std::optional<msg::EncodedArray> encode_draft_ids();
  std::optional<msg::EncodedArray> encode_weights();
  // A token decoded alone (U+FFFD for a part of a UTF-8 character), as logprobs name tokens.
  std::string token_text(int32_t id) const { return tokenizer_.decode({id}); }
  // `top` with each alternative's text.
  msg::TokenAlternatives named(msg::TokenAlternatives top) const;
  // Keeps an item's prompt logprobs, with their tokens' texts, for the next output.
  void take_input_logprobs(const msg::DetokenizeItem& item);

  const tokenizer::Tokenizer& tokenizer_;
  std::string rid_;
  int32_t index_;
  msg::RequestOptions options_;
  msg::RoutingOptions routing_;
  int num_experts_;
  int draft_num_experts_;
  RoutingLayerAxis layer_axis_;
  tokenizer::IncrementalDetokenizer detokenizer_;
  tokenizer::StopStringMatcher stops_;
  bool finished_ = false;
  bool stop_unreported_ = false;
  std::optional<msg::FinishReason> held_finish_;  // a stop string's reply waiting for its last row
  int64_t row_limit_ = INT64_MAX;                 // after a stop string: the rows the reply has
  int32_t completion_tokens_ = 0;
  int64_t rows_seen_ = 0;  // routing rows received so far, counting those start_len skips

  // Not yet emitted: the next TextOutput's tokens, text and logprobs (routing rows below, encoded
  // when it is sent).
  msg::TextOutput pending_;
  int32_t row_layers_ = 0, row_top_k_ = 0;
  std::vector<int16_t> row_ids_;
  std::vector<float> row_weights_;
  int32_t draft_layers_ = 0, draft_top_k_ = 0;
  std::vector<int16_t> draft_ids_;
};

}  // namespace moe
