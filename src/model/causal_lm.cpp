// The decoder-only MoE language model shared by every supported architecture: embedding, layers of
// attention + (MoE or dense) MLP with pre-RMSNorm residuals, final norm and lm_head.
#include <algorithm>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "capture/thread_copy_engine.h"
#include "common/error.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/architecture.h"
#include "model/decoder_layer.h"
#include "model/kv_row_width.h"
#include "model/model.h"
#include "model/nextn_layer.h"
#include "model/safetensors.h"
#include "model/tensor_shard.h"

namespace moe {
namespace {

// This process's part of the model: by rank and size of options.tensor_group, with options.ep_size
// expert shards among them (the whole model without a tensor group).
RankShards rank_shards_of(const ModelConfig& config, const ModelOptions& options) {
  if (!options.tensor_group) return {};
  if (options.expert_group)
    throw Error("tensor-parallel ranks split the experts over their own group: give no separate expert group");
  const RankShards shards = rank_shards(options.tensor_group->rank(), options.tensor_group->size(), options.ep_size);
  const std::string refusal = tensor_parallel_refusal(config, shards.expert.size, options.ep_size);
  if (!refusal.empty()) throw Error(refusal);
  return shards;
}

// The routed experts this process reads: an expert-parallel rank's shard (by itself or within a
// tensor-parallel group), or all of them (empty).
std::vector<int32_t> held_experts_of(const ExpertPlacement& placement, const ModelOptions& options,
                                     const RankShards& shards) {
  if (options.expert_group)
    return placement.device_expert_mapping.at(static_cast<size_t>(options.expert_group->rank()));
  if (options.tensor_group && placement.ep_size() > 1)
    return placement.device_expert_mapping.at(static_cast<size_t>(shards.expert_shard));
  return {};
}

// The routed experts' runner: one shard of several in a tensor-parallel group sums its share with the
// rest of the feed-forward block, an expert-parallel rank by itself all-reduces over expert_group.
std::unique_ptr<MoeRunner> runner_of(const ExpertPlacement& placement, const ModelOptions& options,
                                     const RankShards& shards) {
  if (options.tensor_group && placement.ep_size() > 1)
    return MoeRunner::create_for_shard(options.moe_backend, placement, shards.expert_shard);
  return MoeRunner::create(options.moe_backend, placement, options.expert_group);
}

// The checkpoint's files, or with dummy_weights_seed random weights made from the config.
Checkpoint open_checkpoint(const std::string& dir, const ModelConfig& config, const ModelOptions& options) {
  const ProjectionFormat format =
      projection_format(config.gptq, options.quantization, options.quantization_group_size, options.kernel_dtype);
  if (options.dummy_weights_seed) return Checkpoint::dummy(config, *options.dummy_weights_seed, format);
  return Checkpoint::open(dir, format);
}

class CausalLm final : public Model {
 public:
  CausalLm(const std::string& dir, const ModelOptions& options)
      : config_(load_model_config(dir)),
        checkpoint_(open_checkpoint(dir, config_, options)),
        layers_range_(options.layers.value_or(LayerRange{0, config_.num_hidden_layers})),
        moe_range_(moe_layers_of(config_.moe_layer_ids, layers_range_)),
        shards_(rank_shards_of(config_, options)),
        tensor_group_(options.tensor_group) {
    if (layers_range_.begin < 0 || layers_range_.end > config_.num_hidden_layers || layers_range_.size() < 1)
      throw Error(dir + ": layers [" + std::to_string(layers_range_.begin) + ", " + std::to_string(layers_range_.end) +
                  ") are not a stage of a model of " + std::to_string(config_.num_hidden_layers) + " layers");
    const ModelPlan plan = model_plan(config_);
    const int64_t H = config_.hidden_size;
    // Only the tensors this stage runs are read (and tiled) from the checkpoint.
    if (is_first_stage()) embed_ = checkpoint_.matrix(plan.embedding, config_.vocab_size, H);
    if (is_last_stage()) {
      // A tied lm_head is the embedding matrix: shared as it is, or quantized (or split over
      // tensor-parallel ranks by vocabulary) into a copy of its own.
      lm_head_ = checkpoint_.projection_block(plan.lm_head.empty() ? plan.embedding : plan.lm_head, config_.vocab_size,
                                              H, shards_.dense.vocab_part(config_.vocab_size), IndexRange{0, H});
      final_norm_ = checkpoint_.vector(plan.final_norm, H);
    }
    const ExpertPlacement placement = expert_placement_for(config_, options);
    const std::vector<int32_t> held_experts = held_experts_of(placement, options, shards_);
    layers_.reserve(static_cast<size_t>(layers_range_.size()));
    for (int l = layers_range_.begin; l < layers_range_.end; ++l)
      layers_.emplace_back(checkpoint_, config_, plan.layers[l], l - layers_range_.begin,
                           config_.moe_index(l) - moe_range_.begin, held_experts, shards_, tensor_group_);
    if (options.nextn) {
      if (!is_first_stage() || !is_last_stage())
        throw Error("--speculative-algorithm NEXTN runs on a whole model, not a pipeline stage");
      nextn_.emplace(checkpoint_, config_, plan.embedding, plan.lm_head.empty() ? plan.embedding : plan.lm_head,
                     options.moe_backend);
    }
    runner_ = runner_of(placement, options, shards_);
  }

  const ModelConfig& config() const override { return config_; }

  KvCache make_kv_cache(int64_t num_slots) const override {
    // A tensor-parallel rank keeps the K/V of its own KV heads only.
    return KvCache(kv_row_floats(local_attention_config(config_, shards_.dense), layers_range_), num_slots);
  }

  LayerRange layers() const override { return layers_range_; }

  void forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits,
               RoutingCapture* capture) override {
    if (!is_first_stage() || !is_last_stage())
      throw Error("a pipeline stage runs through forward_stage, not forward");
    scratch_.hidden.resize(static_cast<size_t>(batch.num_tokens() * config_.hidden_size));
    forward_stage(batch, kv, scratch_.hidden.data(), logits, capture);
  }

  void forward_with_hidden(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits,
                           RoutingCapture* capture, std::vector<float>& hidden) override {
    forward(batch, kv, logits, capture);
    const int64_t T = batch.num_tokens(), H = config_.hidden_size;
    hidden.resize(static_cast<size_t>(T * H));
    rms_norm(scratch_.hidden.data(), T, H, H, final_norm_.data(), static_cast<float>(config_.rms_norm_eps),
             hidden.data());
  }

  void forward_with_layer_inputs(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits,
                                 RoutingCapture* capture, const std::vector<int>& layers,
                                 std::vector<float>& states) override {
    if (!is_first_stage() || !is_last_stage())
      throw Error("a pipeline stage does not return the states entering its layers");
    const int64_t T = batch.num_tokens(), H = config_.hidden_size;
    for (int layer : layers)
      if (layer < 0 || layer >= config_.num_hidden_layers)
        throw Error("the model has no decoder layer " + std::to_string(layer) + " whose input to return");
    states.resize(static_cast<size_t>(T * H) * layers.size());
    scratch_.hidden.resize(static_cast<size_t>(T * H));
    const LayerTap tap = [&](int layer, const float* x) {
      const auto width = static_cast<int64_t>(layers.size()) * H;
      for (size_t i = 0; i < layers.size(); ++i)
        if (layers[i] == layer)
          for (int64_t t = 0; t < T; ++t)
            std::copy_n(x + t * H, H, states.data() + t * width + static_cast<int64_t>(i) * H);
    };
    run_stage(batch, kv, scratch_.hidden.data(), logits, capture, tap);
  }

  void embedding_row(int32_t token, float* out) const override {
    if (!is_first_stage()) throw Error("only the first pipeline stage holds the embedding");
    if (token < 0 || token >= config_.vocab_size) throw Error("token id " + std::to_string(token) + " out of range");
    embed_.row_to_float(token, out);
  }

  NextnLayer* nextn() override { return nextn_ ? &*nextn_ : nullptr; }

  void forward_stage(const ForwardBatch& batch, KvCache& kv, float* x, std::vector<float>& logits,
                     RoutingCapture* capture) override {
    run_stage(batch, kv, x, logits, capture, nullptr);
  }

 private:
  // Called with each decoder layer's (model-wide) index and the residual stream [T, H] entering it.
  using LayerTap = std::function<void(int layer, const float* x)>;

  void run_stage(const ForwardBatch& batch, KvCache& kv, float* x, std::vector<float>& logits,
                 RoutingCapture* capture, const LayerTap& tap) {
    validate_forward_batch(batch, config_.vocab_size, kv.num_slots());
    const int64_t T = batch.num_tokens(), H = config_.hidden_size;
    const size_t n = static_cast<size_t>(T * H);
    std::vector<float>& normed = scratch_.normed;
    std::vector<float>& branch = scratch_.branch;
    for (std::vector<float>* buffer : {&normed, &branch}) buffer->resize(n);
    if (is_first_stage())
      for (int64_t t = 0; t < T; ++t) embed_.row_to_float(batch.token_ids[t], x + t * H);
    // Read from the batch on every forward: the limit is part of each step's plan, never cached.
    const std::vector<uint8_t> tree_tokens = batch.tree_token_mask();
    const ExpertLimit limit{batch.max_tree_experts, tree_tokens};
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (tap) tap(layers_range_.begin + static_cast<int>(l), x);
      layers_[l].forward(x, batch, kv, *runner_, capture, limit, normed.data(), branch.data());
    }
    if (is_last_stage()) compute_logits(batch, x, logits);
  }

  // Only the tokens that need logits (the last new token of each sequence that samples, and the rows
  // of prompt logprobs) go through the final norm and lm_head.
  void compute_logits(const ForwardBatch& batch, const float* x, std::vector<float>& logits) {
    const int64_t H = config_.hidden_size;
    std::vector<float>& rows = scratch_.last_rows;
    rows.clear();
    for (int64_t t : batch.logit_tokens()) rows.insert(rows.end(), x + t * H, x + (t + 1) * H);
    const int64_t n = static_cast<int64_t>(rows.size()) / H;
    rms_norm(rows.data(), n, H, H, final_norm_.data(), static_cast<float>(config_.rms_norm_eps), rows.data());
    logits.resize(static_cast<size_t>(n * config_.vocab_size));
    if (!tensor_group_) {
      linear(rows.data(), n, lm_head_, logits.data());
      return;
    }
    // This rank's part of the vocabulary, padded to the widest part (rank 0's), gathered from every rank.
    const int64_t V = config_.vocab_size, width = shards_.dense.vocab_part(V).count;
    const int64_t part = TensorShard{0, shards_.dense.size}.vocab_part(V).count;
    std::vector<float>& local = scratch_.vocab_part;
    std::vector<float>& padded = scratch_.vocab_padded;
    std::vector<float>& all = scratch_.vocab_parts;
    local.resize(static_cast<size_t>(n * width));
    linear(rows.data(), n, lm_head_, local.data());
    padded.assign(static_cast<size_t>(n * part), 0.0f);
    for (int64_t i = 0; i < n; ++i) std::copy_n(local.data() + i * width, width, padded.data() + i * part);
    all.resize(static_cast<size_t>(shards_.dense.size * n * part));
    tensor_group_->all_gather(padded.data(), padded.size() * sizeof(float), all.data());
    for (int r = 0; r < shards_.dense.size; ++r) {
      const IndexRange vocab = TensorShard{r, shards_.dense.size}.vocab_part(V);
      for (int64_t i = 0; i < n; ++i)
        std::copy_n(all.data() + (r * n + i) * part, vocab.count, logits.data() + i * V + vocab.begin);
    }
  }

  ModelConfig config_;
  Checkpoint checkpoint_;
  LayerRange layers_range_;  // the decoder layers this model (stage) holds
  LayerRange moe_range_;     // its MoE layers, as indices among the model's MoE layers
  RankShards shards_;        // this rank's parts of the sharded tensors (the whole model without tensor_group_)
  Communicator* tensor_group_;
  WeightView embed_, lm_head_;
  VectorParam final_norm_;
  std::vector<DecoderLayer> layers_;
  std::optional<NextnLayer> nextn_;  // ModelOptions::nextn
  std::unique_ptr<MoeRunner> runner_;
  // Activations kept from step to step: allocating them anew each step let the allocator hand
  // the pages back and fault them in again, thousands of page faults per decode batch.
  struct Scratch {
    std::vector<float> hidden, normed, branch;  // [T, H]
    std::vector<float> last_rows;               // [sequences that sample, H]
    // A tensor-parallel rank's logits, padded to the widest part, and every rank's.
    std::vector<float> vocab_part, vocab_padded, vocab_parts;
  } scratch_;
};

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& model_dir, const ModelOptions& options) {
  if (options.device != Device::Cpu)
    throw Error("Model::load builds the CPU model; load_model_on_device (worker/) chooses the device");
  return std::make_unique<CausalLm>(model_dir, options);
}

void Model::forward_stage(const ForwardBatch&, KvCache&, float*, std::vector<float>&, RoutingCapture*) {
  throw Error("pipeline stages (--pp-size) run on the CPU model only");
}

void Model::forward_with_hidden(const ForwardBatch&, KvCache&, std::vector<float>&, RoutingCapture*,
                                std::vector<float>&) {
  throw Error("this model does not return its hidden states (the CPU model with a next-token-prediction layer does)");
}

void Model::forward_with_layer_inputs(const ForwardBatch&, KvCache&, std::vector<float>&, RoutingCapture*,
                                      const std::vector<int>&, std::vector<float>&) {
  throw Error("this model does not return its layers' hidden states (the CPU model does, whole)");
}

void Model::embedding_row(int32_t, float*) const {
  throw Error("this model does not hand out its embedding rows (the CPU model does)");
}

void Model::forward_greedy(const ForwardBatch&, KvCache&, GreedyPicks&, RoutingCapture*) {
  throw Error("this model does not pick greedy tokens itself; the worker samples its logits");
}

std::unique_ptr<CopyEngine> Model::make_copy_engine(const RoutingBufferShape& shape,
                                                    std::function<void()> on_ready) const {
  return std::make_unique<ThreadCopyEngine>(shape, std::move(on_ready));
}

}  // namespace moe
