#include "model/eagle3_head.h"

#include <cstring>
#include <limits>

#include "common/error.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/architectures/llama_eagle3.h"
#include "model/kv_row_width.h"

namespace moe {
namespace {

// d + d2t[d] for every draft id d, each a distinct target id; without d2t (a head over the whole
// vocabulary) the identity.
std::vector<int32_t> read_draft_to_target(const Checkpoint& ckpt, const Eagle3Plan& plan, int64_t draft_vocab,
                                     int64_t target_vocab) {
  std::vector<int32_t> map(static_cast<size_t>(draft_vocab));
  if (!ckpt.has(plan.d2t)) {
    if (draft_vocab != target_vocab)
      throw Error("its draft vocabulary (" + std::to_string(draft_vocab) +
                                      ") is not the target's, and it has no d2t table mapping it");
    for (int64_t d = 0; d < draft_vocab; ++d) map[static_cast<size_t>(d)] = static_cast<int32_t>(d);
    return map;
  }
  const std::vector<int64_t> d2t = ckpt.int64s(plan.d2t, draft_vocab);
  std::vector<int64_t> owner(static_cast<size_t>(target_vocab), -1);
  for (int64_t d = 0; d < draft_vocab; ++d) {
    const int64_t offset = d2t[static_cast<size_t>(d)];
    const bool in_range = offset >= -d && offset < target_vocab - d;  // no overflow: |d| < 2^24
    if (!in_range)
      throw Error("d2t[" + std::to_string(d) + "] = " + std::to_string(offset) +
                                      " maps outside the target's vocabulary of " + std::to_string(target_vocab));
    const int64_t target = d + offset;
    if (owner[static_cast<size_t>(target)] >= 0)
      throw Error("d2t maps draft ids " + std::to_string(owner[static_cast<size_t>(target)]) +
                                      " and " + std::to_string(d) + " both to target id " + std::to_string(target));
    owner[static_cast<size_t>(target)] = d;
    map[static_cast<size_t>(d)] = static_cast<int32_t>(target);
  }
  return map;
}

}  // namespace

Eagle3Head::Eagle3Head(const std::string& dir, const ModelConfig& target, EmbeddingRow target_embedding)
    : config_(load_eagle3_config(dir)),
      target_vocab_(target.vocab_size),
      ckpt_(Checkpoint::open(dir)),
      target_embedding_(std::move(target_embedding)) {
  const Eagle3Plan plan = eagle3_plan();
  const ModelConfig& c = config_.layer;
  const int64_t H = c.hidden_size;
  if (config_.target_hidden_size != target.hidden_size)
    throw Error("it reads target hidden states of " + std::to_string(config_.target_hidden_size) +
                                    " (target_hidden_size) but the target's hidden_size is " +
                                    std::to_string(target.hidden_size));
  if (c.vocab_size != target.vocab_size)
    throw Error("its vocab_size " + std::to_string(c.vocab_size) + " is not the target's " +
                                    std::to_string(target.vocab_size));
  if (config_.draft_vocab_size > target.vocab_size)
    throw Error("its draft_vocab_size " + std::to_string(config_.draft_vocab_size) +
                                    " exceeds the target's vocabulary of " + std::to_string(target.vocab_size));
  captured_ = eagle3_captured_layers(config_, target.num_hidden_layers);
  // SGLang gives the head the target's embedding whenever their hidden sizes agree.
  if (H != target.hidden_size) {
    if (!ckpt_.has(plan.embedding))
      throw Error("its hidden_size " + std::to_string(H) + " differs from the target's " +
                                      std::to_string(target.hidden_size) + " and it has no " + plan.embedding);
    embed_ = ckpt_.matrix(plan.embedding, c.vocab_size, H);
  }
  fc_ = ckpt_.projection(plan.fc, H, 3 * config_.target_hidden_size);
  input_norm_ = ckpt_.vector(plan.input_norm, H);
  hidden_norm_ = ckpt_.vector(plan.hidden_norm, H);
  post_attention_norm_ = ckpt_.vector(plan.post_attention_norm, H);
  norm_ = ckpt_.vector(plan.norm, H);
  attention_.emplace(ckpt_, c, plan.attention, 0, TensorShard{}, 2 * H);
  mlp_ = DenseMlp::load(ckpt_, plan.mlp, H, c.intermediate_size);
  const std::string head = c.tie_word_embeddings ? plan.embedding : plan.lm_head;
  if (c.tie_word_embeddings && config_.draft_vocab_size != c.vocab_size)
    throw Error("tie_word_embeddings needs draft_vocab_size equal to vocab_size");
  if (!ckpt_.has(head))
    throw Error("it has no " + head + " (a head without its own lm_head is not supported)");
  lm_head_ = ckpt_.projection(head, config_.draft_vocab_size, H);
  draft_to_target_ = read_draft_to_target(ckpt_, plan, config_.draft_vocab_size, target.vocab_size);
}

KvCache Eagle3Head::make_kv_cache(int64_t num_slots) const {
  return KvCache({kv_row_floats(config_.layer, AttentionKind::Gqa)}, num_slots);
}

void Eagle3Head::project(const float* aux, int64_t num_tokens, std::vector<float>& hidden) const {
  hidden.resize(static_cast<size_t>(num_tokens * hidden_size()));
  if (num_tokens > 0) linear(aux, num_tokens, fc_, hidden.data());
}

void Eagle3Head::forward(const ForwardBatch& batch, const float* prev_hidden, KvCache& kv, std::vector<float>& hidden,
                         std::vector<float>& logits, RoutingCapture* /*capture: no routing*/) {
  validate_forward_batch(batch, target_vocab_, kv.num_slots());
  const int64_t T = batch.num_tokens(), H = hidden_size();
  const float eps = static_cast<float>(config_.layer.rms_norm_eps);
  const size_t n = static_cast<size_t>(T * H);
  joined_.resize(2 * n);
  normed_.resize(n);
  branch_.resize(n);
  hidden.resize(n);
  // joined [T, 2H]: input_layernorm(embedding), then hidden_norm(previous hidden state).
  for (int64_t t = 0; t < T; ++t) {
    if (embed_)
      embed_->row_to_float(batch.token_ids[t], normed_.data() + t * H);
    else
      target_embedding_(batch.token_ids[t], normed_.data() + t * H);
  }
  rms_norm(normed_.data(), T, H, H, input_norm_.data(), eps, branch_.data());
  rms_norm(prev_hidden, T, H, H, hidden_norm_.data(), eps, normed_.data());
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(joined_.data() + 2 * t * H, branch_.data() + t * H, sizeof(float) * H);
    std::memcpy(joined_.data() + (2 * t + 1) * H, normed_.data() + t * H, sizeof(float) * H);
  }
  attention_->forward(joined_.data(), batch, kv, branch_.data());
  // The residual stream starts at the hidden state, not at the embedding.
  for (size_t i = 0; i < n; ++i) hidden[i] = prev_hidden[i] + branch_[i];
  rms_norm(hidden.data(), T, H, H, post_attention_norm_.data(), eps, normed_.data());
  mlp_.forward(normed_.data(), T, branch_.data());
  for (size_t i = 0; i < n; ++i) hidden[i] += branch_[i];
  rows_.clear();
  for (int64_t t : batch.logit_tokens()) rows_.insert(rows_.end(), hidden.data() + t * H, hidden.data() + (t + 1) * H);
  const int64_t rows = static_cast<int64_t>(rows_.size()) / H;
  rms_norm(rows_.data(), rows, H, H, norm_.data(), eps, rows_.data());
  const int64_t draft_vocab = config_.draft_vocab_size;
  draft_logits_.resize(static_cast<size_t>(rows * draft_vocab));
  if (rows > 0) linear(rows_.data(), rows, lm_head_, draft_logits_.data());
  // Target ids outside the draft vocabulary are never proposed.
  logits.assign(static_cast<size_t>(rows * target_vocab_), -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < draft_vocab; ++d)
      logits[static_cast<size_t>(r * target_vocab_ + draft_to_target_[static_cast<size_t>(d)])] =
          draft_logits_[static_cast<size_t>(r * draft_vocab + d)];
}

}  // namespace moe
