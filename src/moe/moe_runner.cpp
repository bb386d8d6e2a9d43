#include "moe/moe_runner.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/activation.h"
#include "kernels/linear.h"
#include "moe/moe_ops.h"

namespace moe {
namespace {

// Softmax of one token's router logits in place, in float32 as torch computes it.
void softmax_in_place(float* values, int64_t count) {
  const float max_value = *std::max_element(values, values + count);
  float sum = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    values[i] = std::exp(values[i] - max_value);
    sum += values[i];
  }
  for (int64_t i = 0; i < count; ++i) values[i] /= sum;
}

// Σ a[i]·b[i] in plain float32, left to right.
float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y[r] = x · W[r, :] for every row r of W, one widened row at a time.
void matvec(const WeightView& weight, const float* x, float* row_buffer, float* y) {
  for (int64_t r = 0; r < weight.rows; ++r) {
    weight.row_to_float(r, row_buffer);
    y[r] = dot(x, row_buffer, weight.cols);
  }
}

// Deliberately naive so that it can judge the grouped path: no gathering, no GEMMs, no sharding.
class ReferenceMoeRunner final : public MoeRunner {
 public:
  void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
           float* out) override {
    const int64_t hidden_size = experts.hidden_size;
    const int64_t width = experts.intermediate_size;
    std::vector<float> row(static_cast<size_t>(std::max(hidden_size, width)));
    std::vector<float> gate(static_cast<size_t>(width));
    std::vector<float> up(static_cast<size_t>(width));
    std::vector<float> expert_out(static_cast<size_t>(hidden_size));
    std::fill_n(out, num_tokens * hidden_size, 0.0f);
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* x = hidden + t * hidden_size;
      float* y = out + t * hidden_size;
      for (int k = 0; k < routing.top_k; ++k) {
        const int32_t expert = routing.ids[t * routing.top_k + k];
        const float weight = routing.weights[t * routing.top_k + k];
        matvec(experts.gate[expert], x, row.data(), gate.data());
        matvec(experts.up[expert], x, row.data(), up.data());
        silu_mul(gate.data(), up.data(), width);
        matvec(experts.down[expert], gate.data(), row.data(), expert_out.data());
        for (int64_t h = 0; h < hidden_size; ++h) y[h] += weight * expert_out[h];
      }
    }
  }
};

// D expert-parallel shards run one after another in this process; each keeps its own partial
// output until the all-reduce, exactly as D devices would. Not thread-safe: one runner per worker.
class GroupedMoeRunner final : public MoeRunner {
 public:
  explicit GroupedMoeRunner(ExpertPlacement placement) : placement_(std::move(placement)) {
    if (placement_.ep_size() < 1) throw Error("the grouped MoE runner needs a placement with at least one device");
  }

  void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
           float* out) override {
    if (experts.num_experts() != placement_.num_experts)
      throw Error("expert placement is for " + std::to_string(placement_.num_experts) + " experts but the layer has " +
                  std::to_string(experts.num_experts()));
    const int64_t output_size = num_tokens * experts.hidden_size;
    const int ep_size = placement_.ep_size();
    partials_.resize(static_cast<size_t>(ep_size - 1));
    std::vector<float*> device_outputs{out};
    for (std::vector<float>& partial : partials_) {
      partial.resize(static_cast<size_t>(output_size));
      device_outputs.push_back(partial.data());
    }
    for (int d = 0; d < ep_size; ++d) run_device(d, hidden, num_tokens, routing, experts, device_outputs[d]);
    all_reduce_sum(device_outputs, output_size);
  }

 private:
  // One device's share: ops 1–3 over its local experts, writing its partial [T, H] output.
  void run_device(int device, const float* hidden, int64_t num_tokens, const Routing& routing,
                  const ExpertWeights& experts, float* partial) {
    const std::vector<int32_t>& mapping = placement_.device_expert_mapping[device];
    local_gate_.clear();
    local_up_.clear();
    local_down_.clear();
    for (int32_t global : mapping) {
      local_gate_.push_back(experts.gate[global]);
      local_up_.push_back(experts.up[global]);
      local_down_.push_back(experts.down[global]);
    }
    prepare_moe_routing_tensors(routing.ids.data(), routing.weights.data(), num_tokens, routing.top_k, mapping,
                                placement_.num_experts, tensors_);
    projection_to_intermediate(hidden, num_tokens, tensors_.routed_tokens, tensors_.num_routed_tokens, local_gate_,
                               gate_);
    projection_to_intermediate(hidden, num_tokens, tensors_.routed_tokens, tensors_.num_routed_tokens, local_up_, up_);
    silu_and_multiply_routed(gate_, up_, tensors_.num_routed_tokens, num_tokens);
    projection_to_output(gate_.data(), tensors_.token_idx_map, tensors_.routed_tokens, tensors_.num_routed_tokens,
                         tensors_.routed_token_weights, local_down_, num_tokens, routing.top_k, partial);
  }

  ExpertPlacement placement_;
  // Buffers reused across calls so a decode step allocates nothing once warm.
  MoeRoutingTensors tensors_;
  std::vector<WeightView> local_gate_, local_up_, local_down_;
  std::vector<float> gate_, up_;
  std::vector<std::vector<float>> partials_;  // devices 1..D-1; device 0 writes straight into out

  friend class ShardMoeRunner;
};

// One shard of D, the others in other processes: this rank's device through the same ops, then (with
// `group`) the group's all-reduce, which adds the partials in rank order as the one-process runner adds
// devices. Without a group the partial is left for the caller to sum (a tensor-parallel group's
// all-reduce of the whole feed-forward block).
class ShardMoeRunner final : public MoeRunner {
 public:
  ShardMoeRunner(ExpertPlacement placement, int device, Communicator* group)
      : shards_(std::move(placement)), device_(device), group_(group) {
    if (group && shards_.placement_.ep_size() != group->size())
      throw Error("the expert placement has " + std::to_string(shards_.placement_.ep_size()) +
                  " devices but the expert-parallel group " + std::to_string(group->size()) + " ranks");
    if (device < 0 || device >= shards_.placement_.ep_size())
      throw Error("expert shard " + std::to_string(device) + " is outside a placement of " +
                  std::to_string(shards_.placement_.ep_size()) + " devices");
  }

  void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
           float* out) override {
    shards_.run_device(device_, hidden, num_tokens, routing, experts, out);
    if (group_) group_->all_reduce_sum(out, num_tokens * experts.hidden_size);
  }

 private:
  GroupedMoeRunner shards_;
  int device_;
  Communicator* group_;
};

// The runners that hold one shard of several run every expert on the grouped path.
void refuse_reference_for_a_shard(MoeBackend backend) {
  if (backend == MoeBackend::Reference)
    throw Error("--moe-runner-backend reference runs every expert in one process; expert-parallel ranks in "
                "processes of their own need grouped (or auto)");
}

}  // namespace

bool ExpertLimit::active() const {
  return max_experts > 0 && std::any_of(limited.begin(), limited.end(), [](uint8_t m) { return m != 0; });
}

std::vector<int32_t> expert_pool(const float* probs, int64_t num_tokens, int num_experts, const ExpertLimit& limit) {
  std::vector<double> mass(static_cast<size_t>(num_experts), 0.0);
  for (int64_t t = 0; t < num_tokens; ++t)
    if (limit.limited[t])
      for (int e = 0; e < num_experts; ++e) mass[e] += probs[t * num_experts + e];
  std::vector<int32_t> pool(static_cast<size_t>(num_experts));
  std::iota(pool.begin(), pool.end(), 0);
  const int kept = std::min(limit.max_experts, num_experts);
  std::partial_sort(pool.begin(), pool.begin() + kept, pool.end(),
                    [&](int32_t a, int32_t b) { return mass[a] != mass[b] ? mass[a] > mass[b] : a < b; });
  pool.resize(static_cast<size_t>(kept));
  std::sort(pool.begin(), pool.end());
  return pool;
}

std::vector<float> router_logits(const float* hidden, int64_t num_tokens, const WeightView& router_weight, int top_k,
                                 Routing& out) {
  out.num_tokens = num_tokens;
  out.top_k = top_k;
  out.ids.resize(static_cast<size_t>(num_tokens * top_k));
  out.weights.resize(out.ids.size());
  std::vector<float> logits(static_cast<size_t>(num_tokens * router_weight.rows));
  linear(hidden, num_tokens, router_weight, logits.data());
  return logits;
}

void route_tokens(const float* hidden, int64_t num_tokens, const WeightView& router_weight, int top_k,
                  bool normalize_top_k, Routing& out, const ExpertLimit& limit) {
  const int64_t num_experts = router_weight.rows;
  if (top_k < 1 || top_k > num_experts)
    throw Error("route_tokens: top_k " + std::to_string(top_k) + " is outside [1, " + std::to_string(num_experts) +
                "] (the router has " + std::to_string(num_experts) + " experts)");
  const bool limiting = limit.active();
  if (limiting && (limit.max_experts < top_k || limit.limited.size() != static_cast<size_t>(num_tokens)))
    throw Error("route_tokens: an expert limit of " + std::to_string(limit.max_experts) +
                " needs at least top_k = " + std::to_string(top_k) + " experts and a mark per token");
  std::vector<float> probs = router_logits(hidden, num_tokens, router_weight, top_k, out);
  for (int64_t t = 0; t < num_tokens; ++t) softmax_in_place(probs.data() + t * num_experts, num_experts);
  std::vector<int32_t> every(static_cast<size_t>(num_experts));
  std::iota(every.begin(), every.end(), 0);
  const std::vector<int32_t> pool =
      limiting ? expert_pool(probs.data(), num_tokens, static_cast<int>(num_experts), limit) : every;
  std::vector<int32_t> order;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* token_probs = probs.data() + t * num_experts;
    order = limiting && limit.limited[t] ? pool : every;
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int32_t a, int32_t b) {
      return token_probs[a] != token_probs[b] ? token_probs[a] > token_probs[b] : a < b;
    });
    float kept_sum = 0.0f;
    for (int j = 0; j < top_k; ++j) kept_sum += token_probs[order[j]];
    // Divide (not multiply by a reciprocal) so the weights round exactly as torch's `w /= w.sum()`.
    const float divisor = normalize_top_k ? kept_sum : 1.0f;
    for (int j = 0; j < top_k; ++j) {
      out.ids[t * top_k + j] = order[j];
      out.weights[t * top_k + j] = token_probs[order[j]] / divisor;
    }
  }
}

MoeBackend parse_moe_backend(const std::string& name) {
  if (name == "auto") return MoeBackend::Auto;
  if (name == "reference") return MoeBackend::Reference;
  if (name == "grouped") return MoeBackend::Grouped;
  if (name == "cuda") return MoeBackend::Cuda;
  throw Error("unknown MoE runner backend '" + name + "'; choose one of: auto, reference, grouped, cuda");
}

std::unique_ptr<MoeRunner> MoeRunner::create(MoeBackend backend, const ExpertPlacement& placement,
                                             Communicator* group) {
  if (backend == MoeBackend::Cuda) throw Error("--moe-runner-backend cuda runs with --device cuda only");
  if (group && group->size() > 1) {
    refuse_reference_for_a_shard(backend);
    return std::make_unique<ShardMoeRunner>(placement, group->rank(), group);
  }
  if (backend == MoeBackend::Reference) return std::make_unique<ReferenceMoeRunner>();
  return std::make_unique<GroupedMoeRunner>(placement);
}

std::unique_ptr<MoeRunner> MoeRunner::create_for_shard(MoeBackend backend, const ExpertPlacement& placement,
                                                       int shard) {
  if (backend == MoeBackend::Cuda) throw Error("--moe-runner-backend cuda runs with --device cuda only");
  refuse_reference_for_a_shard(backend);
  return std::make_unique<ShardMoeRunner>(placement, shard, nullptr);
}

}  // namespace moe
