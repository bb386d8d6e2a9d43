#pragma once
// The next-token-prediction module (model_plan.h's NextnPlan) of a DeepSeek-V3 or GLM-4.5 checkpoint,
// run as a one-layer draft (NEXTN speculation): for a token x that follows a position whose final
// hidden state h is known, eh_proj(concat(enorm(embed(x)), hnorm(h))) goes through its own decoder
// layer at h's position, and shared_head's norm gives its hidden state (which stands in for the next
// position's h when drafts are chained) and, through shared_head's head, logits for the token after x.
#include <memory>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "model/decoder_layer.h"
#include "model/forward_batch.h"
#include "model/hidden_draft_head.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/model_plan.h"
#include "moe/moe_runner.h"
#include "moe/routing_capture.h"

namespace moe {

class Checkpoint;

class NextnLayer final : public HiddenDraftHead {
 public:
  // Reads the module `config`'s plan names from ckpt; its embedding and head are the model's
  // (`model_embedding`, `model_head`) where the checkpoint lacks its own. Its experts all run here,
  // through a runner of `backend`. A checkpoint without the module is a moe::Error naming
  // what is missing.
  NextnLayer(const Checkpoint& ckpt, const ModelConfig& config, const std::string& model_embedding,
             const std::string& model_head, MoeBackend backend);

  int64_t hidden_size() const override { return config_.hidden_size; }
  int routing_top_k() const override { return config_.num_experts_per_tok; }
  KvCache make_kv_cache(int64_t num_slots) const override;

  // The previous hidden state is the target's final-normed one (what the model's lm_head reads), or
  // this module's own output (after shared_head.norm) when chained. The MoE block's routing goes to
  // `capture` as MoE layer 0.
  void forward(const ForwardBatch& batch, const float* prev_hidden, KvCache& kv, std::vector<float>& hidden,
               std::vector<float>& logits, RoutingCapture* capture) override;

 private:
  const ModelConfig& config_;
  WeightView embed_, eh_proj_, head_;
  VectorParam enorm_, hnorm_, shared_head_norm_;
  std::unique_ptr<DecoderLayer> layer_;
  std::unique_ptr<MoeRunner> runner_;
  std::vector<float> joined_, x_, normed_, branch_, rows_;  // scratch kept from step to step
};

// Whether the checkpoint in ckpt has config's next-token-prediction module: empty when it does, else
// what a NEXTN start must say is missing.
std::string missing_nextn_tensors(const Checkpoint& ckpt, const ModelConfig& config);

}  // namespace moe
