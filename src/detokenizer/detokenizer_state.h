#pragma once
// The detokenizer actor's logic: every live completion's output, fed by the scheduler's batches.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "detokenizer/completion_output.h"

namespace moe {

class DetokenizerState {
 public:
  // draft_num_experts: an MoE STANDALONE draft's experts (its rows' dtype), 0 without one.
  // layer_axis: the model's MoE layers among its decoder layers (none: rows of MoE layers only).
  DetokenizerState(tokenizer::Tokenizer tokenizer, int num_experts, int draft_num_experts = 0,
                   RoutingLayerAxis layer_axis = {})
      : tokenizer_(std::move(tokenizer)),
        num_experts_(num_experts),
        draft_num_experts_(draft_num_experts),
        layer_axis_(std::move(layer_axis)) {}

  struct Result {
    std::vector<msg::TextOutput> outputs;
    std::vector<msg::ErrorReply> errors;                   // requests whose output cannot be built
    // Completions the detokenizer ended (a stop string, or an error it replied with): the
    // scheduler must stop generating them.
    std::vector<msg::Abort> stopped;
  };
  Result apply(const msg::DetokenizeBatch& batch);
  size_t live_completions() const { return outputs_.size(); }

 private:
  tokenizer::Tokenizer tokenizer_;
  int num_experts_;
  int draft_num_experts_;
  RoutingLayerAxis layer_axis_;
  std::map<std::pair<std::string, int32_t>, std::unique_ptr<CompletionOutput>> outputs_;
};

}  // namespace moe
