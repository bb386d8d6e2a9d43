#pragma once
// What the engine has produced so far for each completion of a generation call: the engine streams
// TextOutputs holding only what is new since the previous one, and answers need the whole.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/generation_call.h"
#include "api/raw_rows.h"
#include "moe/messages.h"

namespace moe::api {

// One completion: one prompt, one of its n samples.
struct CompletionState {
  std::string rid;
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> output_ids;
  std::vector<float> logprobs;
  std::optional<RawRows> routed_experts;
  std::optional<RawRows> router_weights;
  std::optional<msg::FinishReason> finish_reason;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;

  // Adds an output's new text, ids, logprobs and rows; its counts replace the previous ones.
  void append(const msg::TextOutput& output);
};

// The completions of one call, by prompt and sample index.
class CompletionGrid {
 public:
  // One row per request of `call`, of that request's `sampling.n` completions.
  explicit CompletionGrid(const GenerationCall& call);

  // Adds an output of prompt `prompt` to its completion and returns that completion. An index
  // outside 0..n-1, or an output after the completion finished, is an engine fault (std::logic_error).
  const CompletionState& record(size_t prompt, const msg::TextOutput& output);

  // Every completion has its finish reason.
  bool finished() const { return unfinished_ == 0; }
  size_t num_prompts() const { return grid_.size(); }
  const std::vector<CompletionState>& completions(size_t prompt) const { return grid_.at(prompt); }

 private:
  std::vector<std::vector<CompletionState>> grid_;
  size_t unfinished_ = 0;
};

}  // namespace moe::api
