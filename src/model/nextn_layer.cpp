#include "model/nextn_layer.h"

#include <cstring>

#include "common/error.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/architecture.h"
#include "model/kv_row_width.h"
#include "model/safetensors.h"

namespace moe {
namespace {

// The module's plan, or a moe::Error saying why the config has none.
NextnPlan nextn_plan_of(const ModelConfig& config) {
  std::optional<NextnPlan> plan = model_plan(config).nextn;
  if (!plan)
    throw Error("--speculative-algorithm NEXTN drafts with the checkpoint's next-token-prediction layer, and this " +
                config.architecture +
                " config.json names none (num_nextn_predict_layers; DeepSeek-V3 and GLM-4.5 checkpoints ship one)");
  return *plan;
}

}  // namespace

std::string missing_nextn_tensors(const Checkpoint& ckpt, const ModelConfig& config) {
  const NextnPlan plan = nextn_plan_of(config);
  std::string missing;
  for (const std::string* name : {&plan.enorm, &plan.hnorm, &plan.eh_proj, &plan.layer.input_norm,
                                  &plan.layer.moe.router, &plan.shared_head_norm})
    if (!ckpt.has(*name)) missing += (missing.empty() ? "" : ", ") + *name;
  return missing;
}

NextnLayer::NextnLayer(const Checkpoint& ckpt, const ModelConfig& config, const std::string& model_embedding,
                       const std::string& model_head, MoeBackend backend)
    : config_(config) {
  const NextnPlan plan = nextn_plan_of(config);
  if (const std::string missing = missing_nextn_tensors(ckpt, config); !missing.empty())
    throw Error("--speculative-algorithm NEXTN: the checkpoint has no next-token-prediction layer (config.json's "
                "num_nextn_predict_layers is " + std::to_string(config.num_nextn_predict_layers) +
                "): it lacks " + missing);
  const int64_t H = config.hidden_size, V = config.vocab_size;
  embed_ = ckpt.matrix(ckpt.has(plan.embedding) ? plan.embedding : model_embedding, V, H);
  head_ = ckpt.projection(ckpt.has(plan.shared_head) ? plan.shared_head : model_head, V, H);
  eh_proj_ = ckpt.projection(plan.eh_proj, H, 2 * H);
  enorm_ = ckpt.vector(plan.enorm, H);
  hnorm_ = ckpt.vector(plan.hnorm, H);
  shared_head_norm_ = ckpt.vector(plan.shared_head_norm, H);
  layer_ = std::make_unique<DecoderLayer>(ckpt, config, plan.layer, 0, 0, std::span<const int32_t>{});
  runner_ = MoeRunner::create(backend, ExpertPlacement::uniform(config.num_experts, 1));
}

KvCache NextnLayer::make_kv_cache(int64_t num_slots) const {
  return KvCache({kv_row_floats(config_, nextn_plan_of(config_).layer.attention)}, num_slots);
}

void NextnLayer::forward(const ForwardBatch& batch, const float* prev_hidden, KvCache& kv,
                         std::vector<float>& hidden, std::vector<float>& logits, RoutingCapture* capture) {
  validate_forward_batch(batch, config_.vocab_size, kv.num_slots());
  const int64_t T = batch.num_tokens(), H = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const size_t n = static_cast<size_t>(T * H);
  joined_.resize(2 * n);
  x_.resize(n);
  normed_.resize(n);
  branch_.resize(n);
  // joined [T, 2H]: enorm(embedding) then hnorm(previous hidden state), eh_proj's input order.
  for (int64_t t = 0; t < T; ++t) embed_.row_to_float(batch.token_ids[t], normed_.data() + t * H);
  rms_norm(normed_.data(), T, H, H, enorm_.data(), eps, branch_.data());
  rms_norm(prev_hidden, T, H, H, hnorm_.data(), eps, normed_.data());
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(joined_.data() + 2 * t * H, branch_.data() + t * H, sizeof(float) * H);
    std::memcpy(joined_.data() + (2 * t + 1) * H, normed_.data() + t * H, sizeof(float) * H);
  }
  linear(joined_.data(), T, eh_proj_, x_.data());
  layer_->forward(x_.data(), batch, kv, *runner_, capture, {}, normed_.data(), branch_.data());
  hidden.resize(n);
  rms_norm(x_.data(), T, H, H, shared_head_norm_.data(), eps, hidden.data());
  rows_.clear();
  for (int64_t t : batch.logit_tokens()) rows_.insert(rows_.end(), hidden.data() + t * H, hidden.data() + (t + 1) * H);
  const int64_t rows = static_cast<int64_t>(rows_.size()) / H;
  logits.resize(static_cast<size_t>(rows * config_.vocab_size));
  if (rows > 0) linear(rows_.data(), rows, head_, logits.data());
}

}  // namespace moe
