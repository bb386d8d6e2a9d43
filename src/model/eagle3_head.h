#pragma once
// An EAGLE-3 draft head (SGLang's LlamaForCausalLMEagle3 checkpoint layout; docs/speculative.md) run
// over a target model. For the token x at position q, the hidden state h of position q - 1 is fc of
// the concatenated residual streams entering three target layers (project), or the head's own output
// when drafts are chained; then, at position q - 1:
//   a = attention(concat(input_layernorm(embed(x)), hidden_norm(h)))   (q/k/v read 2H columns)
//   r = h + a;  out = r + mlp(post_attention_layernorm(r))
// `out` is the head's hidden state (what a chained draft reads, before the norm) and
// lm_head(norm(out)) its logits over the draft vocabulary, draft id d standing for target id
// d + d2t[d]. It has no routing: its MLP is dense.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "model/attention_layer.h"
#include "model/dense_mlp.h"
#include "model/eagle3_config.h"
#include "model/hidden_draft_head.h"
#include "model/safetensors.h"

namespace moe {

class Eagle3Head final : public HiddenDraftHead {
 public:
  // The target's embedding row of a token, written as H floats (the head's embedding where the head
  // has the target's hidden size, as SGLang shares it).
  using EmbeddingRow = std::function<void(int32_t token, float* out)>;

  // Reads the head in `dir` for a target of config `target`. What does not fit the target (hidden
  // sizes, vocabularies, d2t, the layers it reads) is a moe::Error naming it (the caller names the
  // directory).
  Eagle3Head(const std::string& dir, const ModelConfig& target, EmbeddingRow target_embedding);

  // The target decoder layers whose inputs fc reads, in its order (eagle3_captured_layers).
  const std::vector<int>& captured_layers() const { return captured_; }
  // hidden [T, H] = fc(aux [T, 3 · target H]): the target's states as the head reads them.
  void project(const float* aux, int64_t num_tokens, std::vector<float>& hidden) const;
  // The target id of each draft id (d + d2t[d]).
  const std::vector<int32_t>& draft_to_target() const { return draft_to_target_; }

  int64_t hidden_size() const override { return config_.layer.hidden_size; }
  int routing_top_k() const override { return 0; }
  KvCache make_kv_cache(int64_t num_slots) const override;
  // Logits over the target's vocabulary: each draft id's at its target id, -infinity elsewhere.
  void forward(const ForwardBatch& batch, const float* prev_hidden, KvCache& kv, std::vector<float>& hidden,
               std::vector<float>& logits, RoutingCapture* capture) override;

 private:
  Eagle3Config config_;
  int64_t target_vocab_;
  Checkpoint ckpt_;
  std::vector<int> captured_;
  EmbeddingRow target_embedding_;
  std::optional<WeightView> embed_;  // the head's own; none: the target's
  WeightView fc_, lm_head_;
  VectorParam input_norm_, hidden_norm_, post_attention_norm_, norm_;
  std::optional<AttentionLayer> attention_;
  DenseMlp mlp_;
  std::vector<int32_t> draft_to_target_;
  std::vector<float> joined_, normed_, branch_, rows_, draft_logits_;  // scratch kept from step to step
};

}  // namespace moe
