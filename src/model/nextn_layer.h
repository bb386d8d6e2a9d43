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
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/model_plan.h"
#include "moe/moe_runner.h"
#include "moe/routing_capture.h"

namespace moe {

class Checkpoint;

class NextnLayer {
 public:
  // Reads the module `config`'s plan names from ckpt; its embedding and head are the model's
  // (`model_embedding`, `model_head`) where the checkpoint lacks its own. Its experts all run here,
  // through a runner of `backend`. A checkpoint without the module is a moe::Error naming
  // what is missing.
  NextnLayer(const Checkpoint& ckpt, const ModelConfig& config, const std::string& model_embedding,
             const std::string& model_head, MoeBackend backend);

  // Its own KV cache: one layer's rows for num_slots slots.
  KvCache make_kv_cache(int64_t num_slots) const;

  // Token t of `batch` follows the position whose final hidden state (what the model's lm_head reads,
  // or this module's own output when chained) is prev_hidden[t] ([T, H]), and runs at that position.
  // Writes every token's hidden state into hidden [T, H] and logits for the batch's logit rows; the
  // MoE block's routing goes to `capture` as MoE layer 0.
  void forward(const ForwardBatch& batch, const float* prev_hidden, KvCache& kv, std::vector<float>& hidden,
               std::vector<float>& logits, RoutingCapture* capture);

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
