#include "cuda/cuda_model.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <fmt/format.h>
#include <utility>

#include "common/error.h"
#include "cuda/cuda_copy_engine.h"
#include "cuda/kernels.h"
#include "cuda/weight_source.h"
#include "model/architecture.h"
#include "model/safetensors.h"

namespace moe::cuda {
namespace {

// A step of a group waits this long for the other ranks' collectives (they compute the same step at
// once) before the group is taken for failed.
constexpr std::chrono::seconds kGroupStepTimeout(60);

static_assert(DecodeGraphs::kMaxBatch <= CudaMoeBlock::kGroupedOnDeviceTokens,
              "a captured step's MoE layers must find their experts' rows on the device");

// Whether the model's layers attend through latent attention (DeepSeek-V3): the K/V pool's rows are
// then a latent and a rotary key each. A model mixing it with grouped-query attention, whose pool rows
// would differ in width by layer, is refused.
bool uses_latent_attention(const std::string& model_dir, const ModelConfig& config) {
  const ModelPlan plan = model_plan(config);
  const auto mla = std::count_if(plan.layers.begin(), plan.layers.end(),
                                 [](const LayerPlan& layer) { return layer.attention == AttentionKind::Mla; });
  if (mla > 0 && mla < static_cast<std::ptrdiff_t>(plan.layers.size()))
    throw Error(model_dir + ": the CUDA model runs latent attention in every layer or in none");
  return mla > 0;
}

ModelConfig checked_config(const std::string& model_dir, const ModelOptions& options) {
  if (options.moe_backend == MoeBackend::Reference || options.moe_backend == MoeBackend::Grouped)
    throw Error("--moe-runner-backend " + std::string(options.moe_backend == MoeBackend::Reference ? "reference" : "grouped") +
                " runs on the CPU only; --device cuda runs the cuda backend (auto or cuda)");
  ModelConfig config = load_model_config(model_dir);
  if (!uses_latent_attention(model_dir, config) && config.head_dim > kMaxHeadDim)
    throw Error(model_dir + ": head_dim " + std::to_string(config.head_dim) + " exceeds the CUDA attention's " +
                std::to_string(kMaxHeadDim));
  if (device_count() == 0) throw Error("--device cuda: no CUDA device is visible to this process");
  return config;
}

// A GPU rank's part of the model (the whole of it without a group of ranks).
RankShards rank_shards_of(const std::string& model_dir, const ModelConfig& config, const ModelOptions& options) {
  if (!options.tensor_group) return {};
  if (!options.join_device_group)
    throw Error("GPU ranks need a device group (NCCL): this program was built without NCCL");
  if (config.mla)
    throw Error(model_dir + ": latent attention (DeepSeek-V3) is not split over GPU ranks yet; serve it on one GPU "
                "(--ep-size runs its expert shards there) or over CPU ranks");
  const RankShards shards = rank_shards(options.tensor_group->rank(), options.tensor_group->size(), options.ep_size);
  const std::string refusal = tensor_parallel_refusal(config, shards.expert.size, options.ep_size);
  if (!refusal.empty()) throw Error(refusal);
  if (shards.dense.vocab_part(config.vocab_size).count == 0)
    throw Error(model_dir + ": a vocabulary of " + std::to_string(config.vocab_size) + " leaves GPU rank " +
                std::to_string(shards.dense.rank) + " no part of lm_head");
  return shards;
}

// The CPU's placement rules and errors, and at most as many shards in this process as the all-reduce takes.
ExpertPlacement checked_placement(const ModelConfig& config, const ModelOptions& options) {
  ExpertPlacement placement = expert_placement_for(config, options);
  if (!options.tensor_group && placement.ep_size() > kMaxExpertShards)
    throw Error("--device cuda runs at most " + std::to_string(kMaxExpertShards) + " expert-parallel shards, not " +
                std::to_string(placement.ep_size()));
  return placement;
}

}  // namespace

// The options are checked before the stream and cuBLAS handle exist: a refused load allocates nothing.
CudaModel::CudaModel(const std::string& model_dir, const ModelOptions& options)
    : config_(checked_config(model_dir, options)),
      shards_(rank_shards_of(model_dir, config_, options)),
      placement_(checked_placement(config_, options)),
      blas_(stream_.get(), options.kernel_dtype),
      use_graphs_(options.cuda_graphs),
      kv_element_bytes_(kv_cache_element_bytes(Device::Cuda, options.kernel_dtype, config_)),
      join_device_group_(options.tensor_group ? options.join_device_group : nullptr) {
  // The checkpoint is read here and unmapped when the constructor returns: the device holds the weights.
  std::optional<Checkpoint> checkpoint;
  if (!options.dummy_weights_seed) checkpoint = Checkpoint::open(model_dir);
  const WeightSource weights =
      checkpoint ? WeightSource(*checkpoint) : WeightSource(config_, *options.dummy_weights_seed);
  const ModelPlan plan = model_plan(config_);
  const int64_t H = config_.hidden_size, V = config_.vocab_size;
  embed_ = weights.matrix(plan.embedding, V, H);
  if (options.kernel_dtype == KernelDType::BF16 && !embed_.is_bf16())
    throw Error("--kernel-dtype bf16 multiplies bf16 weights; " + model_dir + " does not store bf16");
  // A rank of several holds its vocabulary part of lm_head, the embedding's when tied.
  if (!plan.lm_head.empty() || !shards_.dense.whole())
    untied_lm_head_ = weights.matrix(plan.lm_head.empty() ? plan.embedding : plan.lm_head, V, H,
                                     shards_.dense.vocab_part(V));
  final_norm_ = weights.vector(plan.final_norm, H);
  layers_.resize(config_.num_hidden_layers);
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    const LayerPlan& names = plan.layers[l];
    DecoderLayer& layer = layers_[l];
    layer.input_norm = weights.vector(names.input_norm, H);
    layer.post_attention_norm = weights.vector(names.post_attention_norm, H);
    switch (names.attention) {
      case AttentionKind::Gqa: layer.attention.emplace(weights, config_, names.gqa, l, shards_.dense); break;
      case AttentionKind::Mla: layer.mla.emplace(weights, config_, names.mla, l); break;
    }
    switch (names.ffn) {
      case FfnKind::Moe:
        layer.moe.emplace(weights, config_, names.moe, l, placement_, shards_);
        last_moe_layer_ = l;
        break;
      case FfnKind::Dense:
        layer.mlp = CudaMlp::load(weights, names.mlp, H, config_.intermediate_size,
                                  shards_.dense.even_part(config_.intermediate_size));
        break;
    }
  }
}

namespace {

std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30)); }

// What the device holds and has free now, for an allocation's error.
std::string memory_now() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return "the device's memory could not be read";
  }
  return gib(static_cast<int64_t>(free)) + " of the device's " + gib(static_cast<int64_t>(total)) + " were free";
}

}  // namespace

// Latent attention's row is in the key pool (every layer's, checked at load); its values go unused.
int64_t CudaModel::kv_row_size() const {
  return config_.mla ? CudaMlaAttention::row_floats(config_)
                     : static_cast<int64_t>(local_attention_config(config_, shards_.dense).num_key_value_heads) *
                           config_.head_dim;
}

KvCache CudaModel::make_kv_cache(int64_t num_slots) const {
  const int64_t row_size = kv_row_size();
  kv_pool_ = DeviceKvPool();  // free the old pool before allocating the new one
  try {
    kv_pool_ = DeviceKvPool(config_.num_hidden_layers, num_slots, row_size, kv_element_bytes_);
  } catch (const Error&) {
    cudaGetLastError();
    throw Error(fmt::format("a KV pool of {} token slots ({} in {}) does not fit on the device: {} after loading the "
                            "weights; lower --max-total-tokens or --mem-fraction-static",
                            num_slots,
                            gib(DeviceKvPool::bytes_for(config_.num_hidden_layers, num_slots, row_size, kv_element_bytes_)),
                            kv_element_bytes_ == 2 ? "bf16" : "float32", memory_now()));
  }
  return KvCache::placeholder(num_slots);
}

void CudaModel::reserve_step_workspace(int64_t max_tokens) {
  const int64_t T = std::max<int64_t>(max_tokens, DecodeGraphs::kMaxBatch), H = config_.hidden_size,
                V = config_.vocab_size;
  try {
    for (DeviceArray<float>* activation : {&scratch_.hidden, &scratch_.normed, &scratch_.branch, &scratch_.last_rows})
      activation->reserve(static_cast<size_t>(T * H));
    scratch_.logits.reserve(static_cast<size_t>(T * V));
    if (!shards_.dense.whole()) {
      const int64_t part = TensorShard{0, shards_.dense.size}.vocab_part(V).count;
      scratch_.vocab_part.reserve(static_cast<size_t>(T * part));
      scratch_.vocab_parts.reserve(static_cast<size_t>(shards_.dense.size * T * part));
    }
    scratch_.pick_ids.reserve(static_cast<size_t>(T));
    scratch_.pick_logprobs.reserve(static_cast<size_t>(T));
    scratch_.pick_partials.reserve(greedy_pick_scratch_bytes(T, V));
    for (const DecoderLayer& layer : layers_) {
      if (layer.attention) layer.attention->reserve(scratch_.attention, T);
      if (layer.mla) layer.mla->reserve(scratch_.mla, T);
      if (layer.moe) layer.moe->reserve(scratch_.moe, scratch_.mlp, T, blas_);
      if (layer.mlp) layer.mlp->reserve(scratch_.mlp, T);
    }
    // A linear's rows are at most the step's tokens (one expert's rows too: a token picks an expert
    // once); its inputs are as wide as the widest matrix's columns.
    const int64_t latent_widths =
        config_.mla ? std::max({config_.mla->q_lora_rank, config_.mla->kv_lora_rank,
                                int64_t{config_.num_attention_heads} * config_.mla->v_head_dim})
                    : 0;
    blas_.reserve(T, std::max({H, static_cast<int64_t>(config_.num_attention_heads) * config_.head_dim,
                               config_.intermediate_size, config_.moe_intermediate_size,
                               config_.shared_expert_intermediate_size, latent_widths}));
    batch_.reserve(T, kv_pool_.num_slots);
  } catch (const Error& e) {
    cudaGetLastError();
    throw Error(fmt::format("the workspace of a {}-token step (--chunked-prefill-size) does not fit on the device "
                            "beside the weights and the KV pool of {} token slots: {} ({}); lower "
                            "--chunked-prefill-size, --max-total-tokens or --mem-fraction-static",
                            max_tokens, kv_pool_.num_slots, memory_now(), e.what()));
  }
}

std::optional<DeviceMemoryUse> CudaModel::device_memory() const {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return DeviceMemoryUse{static_cast<int64_t>(total), static_cast<int64_t>(total - free),
                         DeviceKvPool::bytes_per_slot(config_.num_hidden_layers, kv_row_size(), kv_element_bytes_)};
}

void CudaModel::forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits, RoutingCapture* capture) {
  run_step(batch, kv, capture, false);
  const auto n = static_cast<size_t>(batch.num_logit_rows() * config_.vocab_size);
  queue_copy_out(scratch_.logits.data(), n, staging_.logits);
  finish_step();
  logits.assign(staging_.logits.data(), staging_.logits.data() + n);
}

void CudaModel::forward_greedy(const ForwardBatch& batch, KvCache& kv, GreedyPicks& picks, RoutingCapture* capture) {
  run_step(batch, kv, capture, true);
  const auto n = static_cast<size_t>(batch.num_logit_rows());
  queue_copy_out(scratch_.pick_ids.data(), n, staging_.pick_ids);
  queue_copy_out(scratch_.pick_logprobs.data(), n, staging_.pick_logprobs);
  finish_step();
  picks.ids.assign(staging_.pick_ids.data(), staging_.pick_ids.data() + n);
  picks.logprobs.assign(staging_.pick_logprobs.data(), staging_.pick_logprobs.data() + n);
}

void CudaModel::join_group() {
  if (!join_device_group_ || group_) return;
  group_ = join_device_group_(stream_.get());
}

void CudaModel::run_step(const ForwardBatch& batch, KvCache& kv, RoutingCapture* capture, bool greedy_picks) {
  join_group();
  if (kv.num_slots() != kv_pool_.num_slots)
    throw Error("CUDA forward: the KV cache is not this model's device pool (make_kv_cache made a pool of " +
                std::to_string(kv_pool_.num_slots) + " slots)");
  validate_forward_batch(batch, config_.vocab_size, kv.num_slots());
  if (batch.max_tree_experts > 0 && batch.max_tree_experts < config_.num_experts_per_tok &&
      !batch.tree_token_mask().empty())
    throw Error("CUDA forward: an expert limit of " + std::to_string(batch.max_tree_experts) +
                " needs at least top_k = " + std::to_string(config_.num_experts_per_tok) + " experts");
  const bool host_rows = capture && capture->takes_host_rows();
  host_rows_.begin(host_rows ? capture : nullptr, config_.num_moe_layers(), batch.num_tokens(),
                   config_.num_experts_per_tok);
  if (batch.num_tokens() == 0) return;
  cudaStream_t stream = stream_.get();
  const int64_t padded = host_rows ? 0 : graph_batch_size(batch, capture);
  if (padded == 0) {
    batch_.upload(batch, stream);
    queue_step(host_rows ? &host_rows_ : capture, true, greedy_picks);
    if (host_rows) host_rows_.queue_copy(stream);
    return;
  }
  batch_.upload_padded(batch, padded, kv_pool_.pad_slot(), stream);
  const DeviceRoutingRows rows = capture ? capture->device_rows(0) : DeviceRoutingRows{};
  graphs_.run({padded, rows.ids, rows.weights, greedy_picks}, stream,
              [&] { queue_step(capture, false, greedy_picks); });
  // After the graph rather than after the last MoE layer inside it: the copy then also waits for
  // lm_head, and still overlaps the next step.
  if (capture) capture->device_rows_queued();
}

int64_t CudaModel::graph_batch_size(const ForwardBatch& batch, RoutingCapture* capture) const {
  if (!use_graphs_ || config_.num_moe_layers() == 0) return 0;
  for (const BatchSequence& seq : batch.sequences)
    if (seq.num_new_tokens != 1 || !seq.needs_logits || seq.is_tree()) return 0;  // not a decode batch
  const int64_t padded = DecodeGraphs::padded_batch(batch.num_tokens());
  if (capture && padded > capture->device_rows(0).capacity) return 0;
  return padded;
}

void CudaModel::queue_step(RoutingCapture* capture, bool notify_rows_queued, bool greedy_picks) {
  const int64_t T = batch_.num_tokens(), H = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  cudaStream_t stream = stream_.get();
  const StepContext step{stream, blas_, batch_};
  float* x = scratch_.hidden.reserve(static_cast<size_t>(T * H));
  float* normed = scratch_.normed.reserve(static_cast<size_t>(T * H));
  float* branch = scratch_.branch.reserve(static_cast<size_t>(T * H));
  gather_weight_rows(embed_.ref(), batch_.token_ids(), T, x, stream);
  rms_norm(x, T, H, layers_[0].input_norm.data(), eps, normed, stream);
  // Each residual add is fused into the norm that follows it (the next layer's input norm).
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    const DecoderLayer& layer = layers_[l];
    if (layer.attention)
      layer.attention->forward(normed, step, kv_pool_, scratch_.attention, branch);
    else
      layer.mla->forward(normed, step, kv_pool_, scratch_.mla, branch);
    if (group_) group_->all_reduce_sum(branch, T * H);  // each rank's heads' part of o_proj
    add_rms_norm(x, branch, T, H, layer.post_attention_norm.data(), eps, normed, stream);
    if (layer.moe)
      layer.moe->forward(normed, step, capture, scratch_.moe, scratch_.mlp, branch);
    else
      layer.mlp->forward(normed, T, blas_, stream, scratch_.mlp, branch);
    if (group_) group_->all_reduce_sum(branch, T * H);  // each rank's widths' and experts' part
    if (capture && notify_rows_queued && l == last_moe_layer_) capture->device_rows_queued();
    if (l + 1 < config_.num_hidden_layers)
      add_rms_norm(x, branch, T, H, layers_[l + 1].input_norm.data(), eps, normed, stream);
    else
      add_in_place(x, branch, T * H, stream);
  }
  const int64_t n = batch_.num_logit_rows(), V = config_.vocab_size;
  if (n == 0) return;
  float* rows = scratch_.last_rows.reserve(static_cast<size_t>(n * H));
  float* out = scratch_.logits.reserve(static_cast<size_t>(n * V));
  gather_rows(x, batch_.logit_tokens(), 1, n, H, rows, stream);
  rms_norm(rows, n, H, final_norm_.data(), eps, rows, stream);
  if (group_)
    vocab_parallel_logits(rows, n, out);
  else
    blas_.linear(rows, n, untied_lm_head_ ? *untied_lm_head_ : embed_, out);
  if (greedy_picks)
    greedy_pick(out, n, V, scratch_.pick_partials.reserve(greedy_pick_scratch_bytes(n, V)),
                scratch_.pick_ids.reserve(static_cast<size_t>(n)),
                scratch_.pick_logprobs.reserve(static_cast<size_t>(n)), stream);
}

void CudaModel::vocab_parallel_logits(const float* rows, int64_t n, float* logits) {
  const int ranks = shards_.dense.size;
  const int64_t V = config_.vocab_size, width = untied_lm_head_->rows;
  const int64_t part = TensorShard{0, ranks}.vocab_part(V).count;  // the widest part: every rank's, padded
  cudaStream_t stream = stream_.get();
  float* mine = scratch_.vocab_part.reserve(static_cast<size_t>(n * part));
  float* every = scratch_.vocab_parts.reserve(static_cast<size_t>(ranks * n * part));
  if (width == part) {
    blas_.linear(rows, n, *untied_lm_head_, mine);
  } else {
    // The narrower last part: its rows spread to the padded width through the gathered buffer's end,
    // which the gather overwrites only after reading `mine`.
    float* narrow = every + (ranks - 1) * n * part;
    blas_.linear(rows, n, *untied_lm_head_, narrow);
    check(cudaMemcpy2DAsync(mine, part * sizeof(float), narrow, width * sizeof(float), width * sizeof(float), n,
                            cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpy2DAsync (vocabulary part)");
  }
  group_->all_gather(mine, static_cast<size_t>(n * part) * sizeof(float), every);
  for (int r = 0; r < ranks; ++r) {
    const IndexRange vocab = TensorShard{r, ranks}.vocab_part(V);
    check(cudaMemcpy2DAsync(logits + vocab.begin, V * sizeof(float), every + r * n * part, part * sizeof(float),
                            vocab.count * sizeof(float), n, cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpy2DAsync (gathered logits)");
  }
}

template <typename T>
void CudaModel::queue_copy_out(const T* device, size_t count, PinnedArray<T>& staging) {
  if (count > 0)
    check(cudaMemcpyAsync(staging.reserve(count), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream_.get()),
          "cudaMemcpyAsync (step results)");
}

void CudaModel::finish_step() {
  // Results or not, the step ends here: they must be on the host when forward returns, and a fault
  // of any of the step's kernels surfaces in this call rather than in a later one.
  if (group_)
    group_->wait(kGroupStepTimeout);
  else
    check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize (step)");
  host_rows_.deliver();
}

std::unique_ptr<CopyEngine> CudaModel::make_copy_engine(const RoutingBufferShape& shape,
                                                        std::function<void()> on_ready) const {
  return std::make_unique<CudaCopyEngine>(stream_.get(), shape, std::move(on_ready));
}

std::unique_ptr<Model> load_cuda_model(const std::string& model_dir, const ModelOptions& options) {
  return std::make_unique<CudaModel>(model_dir, options);
}

}  // namespace moe::cuda
