#include "cuda/cuda_moe_block.h"

#include <array>
#include <string>

#include "common/error.h"
#include "cuda/kernels.h"

namespace moe::cuda {

CudaMoeBlock::CudaMoeBlock(const WeightSource& weights, const ModelConfig& config, const MoeTensorNames& names,
                           int layer, const ExpertPlacement& placement, const RankShards& rank)
    : moe_index_(config.moe_index(layer)),
      num_experts_(config.num_experts),
      top_k_(config.num_experts_per_tok),
      normalize_top_k_(config.norm_topk_prob),
      hidden_(config.hidden_size),
      expert_width_(rank.expert.even_part(config.moe_intermediate_size).count) {
  if (rank.dense.size > 1 && placement.ep_size() > 1) own_shard_ = rank.expert_shard;
  const std::vector<int32_t> owners = placement.expert_owners();
  const IndexRange width = rank.expert.even_part(config.moe_intermediate_size);
  router_ = weights.matrix(names.router, num_experts_, hidden_);
  first_held_ = -1;
  for (int e = 0; e < num_experts_; ++e) {
    const bool held = own_shard_ < 0 || owners[e] == own_shard_;
    experts_.push_back(held ? CudaMlp::load(weights, names.experts[e], hidden_, config.moe_intermediate_size, width)
                            : CudaMlp{});
    if (held && first_held_ < 0) first_held_ = e;
  }
  if (first_held_ < 0)
    throw Error("CUDA MoE layer " + std::to_string(layer) + ": expert shard " + std::to_string(own_shard_) +
                " holds no experts");
  const bool bf16 = experts_[first_held_].gate.is_bf16();
  std::vector<const void*> gates, ups, downs;
  for (const CudaMlp& expert : experts_) {
    const bool held = expert.gate.rows > 0;
    if (held && (expert.gate.is_bf16() != bf16 || expert.up.is_bf16() != bf16 || expert.down.is_bf16() != bf16))
      throw Error("CUDA MoE layer " + std::to_string(layer) + ": the experts' matrices differ in dtype");
    gates.push_back(held ? expert.gate.ref().data : nullptr);
    ups.push_back(held ? expert.up.ref().data : nullptr);
    downs.push_back(held ? expert.down.ref().data : nullptr);
  }
  gate_table_ = DeviceArray<const void*>::from_host(gates);
  up_table_ = DeviceArray<const void*>::from_host(ups);
  down_table_ = DeviceArray<const void*>::from_host(downs);
  tables_ = {gate_table_.data(), up_table_.data(), down_table_.data(), bf16, num_experts_, hidden_, expert_width_};
  shard_experts_ = placement.device_expert_mapping;
  if (placement.ep_size() > 1) {
    expert_owner_ = DeviceArray<int32_t>::from_host(placement.expert_owners());
    shard_tables_ = tables_;
    shard_tables_.num_experts = num_experts_ / placement.ep_size();
  }
  if (names.shared_expert) {
    shared_expert_ = CudaMlp::load(weights, *names.shared_expert, hidden_, config.shared_expert_intermediate_size,
                                   rank.dense.even_part(config.shared_expert_intermediate_size));
    if (!names.shared_gate.empty()) shared_gate_ = weights.matrix(names.shared_gate, 1, hidden_);
  }
  if (config.routing == RoutingKind::SigmoidGrouped) {
    correction_bias_ = weights.vector(names.correction_bias, num_experts_);
    grouped_sigmoid_ = GroupedSigmoidRouting{correction_bias_.data(), config.n_group, config.topk_group,
                                             config.norm_topk_prob, static_cast<float>(config.routed_scaling_factor)};
    check_grouped_sigmoid_shape(num_experts_, top_k_, *grouped_sigmoid_);
  }
}

CudaMoeBlock::Path CudaMoeBlock::path_for(int64_t tokens, const Blas& blas) const {
  if (tokens <= kGroupedOnDeviceTokens) return Path::Grouped;
  return blas.bf16_products(tokens) && grouped_mma_fits(tables_) ? Path::Tiled : Path::PerExpert;
}

void CudaMoeBlock::reserve_for(Scratch& scratch, CudaMlp::Scratch& mlp_scratch, int64_t tokens, Path path) const {
  const auto T = static_cast<size_t>(tokens), pairs = T * static_cast<size_t>(top_k_);
  const auto E = static_cast<size_t>(num_experts_), H = static_cast<size_t>(hidden_),
             width = static_cast<size_t>(expert_width_);
  scratch.router_logits.reserve(T * E);
  scratch.ids.reserve(pairs);
  scratch.weights.reserve(pairs);
  scratch.offsets.reserve(E + 2);
  scratch.cursor.reserve(E);
  scratch.active.reserve(E);
  scratch.order.reserve(pairs);
  scratch.slot_of_pair.reserve(pairs);
  scratch.expert_out.reserve(pairs * H);
  switch (path) {
    case Path::Grouped: mlp_scratch.gate.reserve(pairs * width); break;
    case Path::Tiled:
      scratch.x_bf16.reserve(T * H);
      scratch.act_bf16.reserve(pairs * width);
      scratch.tiles.reserve(2 * static_cast<size_t>(grouped_tiles_capacity(static_cast<int64_t>(pairs), num_experts_)));
      break;
    case Path::PerExpert:
      // At most every pair through one expert.
      scratch.gathered.reserve(pairs * H);
      experts_[first_held_].reserve(mlp_scratch, static_cast<int64_t>(pairs));
      break;
  }
  if (shard_experts_.size() > 1) {
    scratch.shard_active.reserve(E);
    if (own_shard_ < 0) scratch.partials.reserve((shard_experts_.size() - 1) * T * H);
  }
  if (shared_expert_) {
    scratch.shared.reserve(T * H);
    scratch.shared_gate.reserve(T);
    shared_expert_->reserve(mlp_scratch, tokens);
  }
}

void CudaMoeBlock::reserve(Scratch& scratch, CudaMlp::Scratch& mlp_scratch, int64_t max_tokens,
                           const Blas& blas) const {
  reserve_for(scratch, mlp_scratch, max_tokens, path_for(max_tokens, blas));
  if (max_tokens > kGroupedOnDeviceTokens) reserve_for(scratch, mlp_scratch, kGroupedOnDeviceTokens, Path::Grouped);
}

void CudaMoeBlock::forward(const float* x, const StepContext& step, RoutingCapture* capture, Scratch& scratch,
                           CudaMlp::Scratch& mlp_scratch, float* out) const {
  const int64_t T = step.batch.num_tokens(), pairs = T * top_k_, H = hidden_;
  cudaStream_t stream = step.stream;
  const Path path = path_for(T, step.blas);
  reserve_for(scratch, mlp_scratch, T, path);
  float* logits = scratch.router_logits.data();
  int32_t* ids = scratch.ids.data();
  float* weights = scratch.weights.data();
  int32_t* offsets = scratch.offsets.data();
  int32_t* cursor = scratch.cursor.data();
  int32_t* active = scratch.active.data();
  int32_t* order = scratch.order.data();
  int32_t* slot_of_pair = scratch.slot_of_pair.data();

  const DeviceRoutingRows captured = capture_rows(capture, T);
  step.blas.linear(x, T, router_, logits);
  const ExpertLimitRef limit = grouped_sigmoid_ ? ExpertLimitRef{} : expert_limit(logits, step, scratch);
  if (grouped_sigmoid_) {
    route_grouped_sigmoid_and_group(logits, step, captured, scratch);
  } else if (T <= kFusedRoutingTokens) {
    route_and_group(logits, T, num_experts_, top_k_, normalize_top_k_, limit, ids, weights, captured.ids,
                    captured.weights, offsets, order, slot_of_pair, active, stream);
  } else if (T <= kGroupedOnDeviceTokens) {
    route_and_group_spread(logits, T, num_experts_, top_k_, normalize_top_k_, limit, ids, weights, captured.ids,
                           captured.weights, offsets, cursor, order, slot_of_pair, active, stream);
  } else {
    route_top_k(logits, T, num_experts_, top_k_, normalize_top_k_, limit, ids, weights, captured.ids,
                captured.weights, stream);
    group_by_expert(ids, pairs, num_experts_, offsets, cursor, order, slot_of_pair, active, stream);
  }
  if (path == Path::Tiled) round_to_bf16(x, T * H, scratch.x_bf16.data(), stream);
  if (path == Path::PerExpert) {
    gather_rows(x, order, top_k_, pairs, H, scratch.gathered.data(), stream);
    scratch.host_offsets.resize(static_cast<size_t>(num_experts_ + 1));
    check(cudaMemcpyAsync(scratch.host_offsets.data(), offsets, scratch.host_offsets.size() * sizeof(int32_t),
                          cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (expert offsets)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (expert offsets)");
  }
  if (shard_experts_.size() > 1) {
    run_shards(x, step, path, scratch, mlp_scratch, out);
  } else {
    run_experts(x, step, path, scratch, active, tables_, shard_experts_[0], mlp_scratch, scratch.expert_out.data());
    combine_experts(scratch.expert_out.data(), slot_of_pair, weights, T, top_k_, H, out, stream);
  }
  if (!shared_expert_) return;
  float* shared = scratch.shared.data();
  float* gate = scratch.shared_gate.data();
  shared_expert_->forward(x, T, step.blas, stream, mlp_scratch, shared);
  if (!shared_gate_) {
    add_in_place(out, shared, T * H, stream);
    return;
  }
  step.blas.linear(x, T, *shared_gate_, gate);
  add_sigmoid_gated(out, gate, shared, T, H, stream);
}

void CudaMoeBlock::route_grouped_sigmoid_and_group(const float* logits, const StepContext& step,
                                                   const DeviceRoutingRows& captured, Scratch& scratch) const {
  if (step.batch.expert_limit() > 0) throw Error("an expert limit is implemented for softmax routing only");
  const int64_t T = step.batch.num_tokens();
  route_grouped_sigmoid(logits, T, num_experts_, top_k_, *grouped_sigmoid_, scratch.ids.data(), scratch.weights.data(),
                        captured.ids, captured.weights, step.stream);
  group_by_expert(scratch.ids.data(), T * top_k_, num_experts_, scratch.offsets.data(), scratch.cursor.data(),
                  scratch.order.data(), scratch.slot_of_pair.data(), scratch.active.data(), step.stream);
}

void CudaMoeBlock::run_experts(const float* x, const StepContext& step, Path path, Scratch& scratch,
                               const int32_t* active, const ExpertTables& tables, std::span<const int32_t> experts,
                               CudaMlp::Scratch& mlp_scratch, float* expert_out) const {
  const int64_t T = step.batch.num_tokens(), H = hidden_;
  const int32_t* order = scratch.order.data();
  const int32_t* offsets = scratch.offsets.data();
  switch (path) {
    case Path::Grouped:
      if (step.blas.bf16_products(T) && grouped_mma_fits(tables))
        grouped_expert_mlp_mma(x, T, top_k_, order, offsets, active, tables, mlp_scratch.gate.data(), expert_out,
                               step.stream);
      else
        grouped_expert_mlp(x, T, top_k_, order, offsets, active, tables, mlp_scratch.gate.data(), expert_out,
                           step.stream);
      return;
    case Path::Tiled:
      grouped_expert_mlp_tiles(scratch.x_bf16.data(), T, top_k_, order, offsets, active, tables,
                               scratch.tiles.data(), scratch.act_bf16.data(), expert_out, step.stream);
      return;
    case Path::PerExpert:
      for (const int32_t e : experts) {
        const int64_t begin = scratch.host_offsets[e], rows = scratch.host_offsets[e + 1] - begin;
        if (rows > 0)
          experts_[e].forward(scratch.gathered.data() + begin * H, rows, step.blas, step.stream, mlp_scratch,
                              expert_out + begin * H);
      }
      return;
  }
}

void CudaMoeBlock::run_shards(const float* x, const StepContext& step, Path path, Scratch& scratch,
                              CudaMlp::Scratch& mlp_scratch, float* out) const {
  const int64_t T = step.batch.num_tokens(), H = hidden_;
  const int D = static_cast<int>(shard_experts_.size()), per_shard = num_experts_ / D;
  int32_t* shard_active = scratch.shard_active.data();
  float* partials = scratch.partials.data();
  if (path != Path::PerExpert)
    split_active_by_shard(scratch.active.data(), expert_owner_.data(), num_experts_, D, shard_active, step.stream);
  auto run_shard = [&](int d, float* into) {
    run_experts(x, step, path, scratch, shard_active + d * per_shard, shard_tables_, shard_experts_[d], mlp_scratch,
                scratch.expert_out.data());
    combine_shard_experts(scratch.expert_out.data(), scratch.slot_of_pair.data(), scratch.weights.data(),
                          scratch.ids.data(), expert_owner_.data(), d, T, top_k_, H, into, step.stream);
  };
  if (own_shard_ >= 0) {
    run_shard(own_shard_, out);
    return;
  }
  std::array<float*, kMaxExpertShards> buffers{};
  for (int d = 0; d < D; ++d) {
    buffers[d] = d == 0 ? out : partials + (d - 1) * T * H;
    run_shard(d, buffers[d]);
  }
  all_reduce_sum(buffers.data(), D, T * H, step.stream);
}

ExpertLimitRef CudaMoeBlock::expert_limit(const float* logits, const StepContext& step, Scratch& scratch) const {
  const int max_experts = step.batch.expert_limit();
  if (max_experts == 0) return {};
  const int64_t T = step.batch.num_tokens();
  int32_t* in_pool = scratch.in_pool.reserve(static_cast<size_t>(num_experts_));
  expert_pool(logits, T, num_experts_, max_experts, step.batch.limited_tokens(),
              scratch.pool_probs.reserve(static_cast<size_t>(T * num_experts_)), in_pool, step.stream);
  return {step.batch.limited_tokens(), in_pool};
}

DeviceRoutingRows CudaMoeBlock::capture_rows(RoutingCapture* capture, int64_t num_tokens) const {
  if (!capture) return {};
  const DeviceRoutingRows rows = capture->device_rows(moe_index_);
  if (!rows.ids)
    throw Error("CUDA forward: routing capture needs a buffer in device memory (a copy engine from the model)");
  if (num_tokens > rows.capacity)
    throw Error("CUDA forward: a forward of " + std::to_string(num_tokens) + " tokens exceeds the " +
                std::to_string(rows.capacity) + " rows of the capture buffer");
  return rows;
}

}  // namespace moe::cuda
