#include "moe/moe_ops.h"

#include <algorithm>
#include <functional>
#include <string>

#include "common/error.h"
#include "kernels/activation.h"
#include "kernels/linear.h"
#include "kernels/thread_pool.h"

namespace moe {

namespace {

// global expert id → local index on this device, or -1 for experts that live elsewhere.
std::vector<int32_t> global_to_local(std::span<const int32_t> device_expert_mapping, int num_experts) {
  std::vector<int32_t> local_of(static_cast<size_t>(num_experts), -1);
  for (size_t local = 0; local < device_expert_mapping.size(); ++local) {
    const int32_t global = device_expert_mapping[local];
    if (global < 0 || global >= num_experts)
      throw Error("device_expert_mapping[" + std::to_string(local) + "] = " + std::to_string(global) +
                  " is not an expert id in [0, " + std::to_string(num_experts) + ")");
    if (local_of[global] != -1)
      throw Error("device_expert_mapping lists expert " + std::to_string(global) + " twice");
    local_of[global] = static_cast<int32_t>(local);
  }
  return local_of;
}

}  // namespace

void prepare_moe_routing_tensors(const int32_t* selected_experts, const float* routing_weights, int64_t num_tokens,
                                 int top_k, std::span<const int32_t> device_expert_mapping, int num_experts,
                                 MoeRoutingTensors& out) {
  const std::vector<int32_t> local_of = global_to_local(device_expert_mapping, num_experts);
  const size_t num_local = device_expert_mapping.size();
  const size_t slots = num_local * static_cast<size_t>(num_tokens);
  out.num_tokens = num_tokens;
  out.num_routed_tokens.assign(num_local, 0);
  out.routed_tokens.assign(slots, kNoRoutedToken);
  out.routed_token_weights.assign(slots, 0.0f);
  out.token_idx_map.assign(slots, kNoTopKPosition);

  // Walking tokens in ascending order fills each expert's row in ascending token order.
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int k = 0; k < top_k; ++k) {
      const int32_t global = selected_experts[t * top_k + k];
      if (global < 0 || global >= num_experts)
        throw Error("selected_experts[" + std::to_string(t) + ", " + std::to_string(k) + "] = " +
                    std::to_string(global) + " is not an expert id in [0, " + std::to_string(num_experts) + ")");
      const int32_t local = local_of[global];
      if (local < 0) continue;
      const size_t row = static_cast<size_t>(local) * num_tokens;
      int32_t& count = out.num_routed_tokens[local];
      // A repeated expert in one token's top-k would overflow the expert's row of T slots.
      if (count > 0 && out.routed_tokens[row + count - 1] == static_cast<uint32_t>(t))
        throw Error("selected_experts row " + std::to_string(t) + " lists expert " + std::to_string(global) +
                    " twice");
      const size_t slot = row + count++;
      out.routed_tokens[slot] = static_cast<uint32_t>(t);
      out.routed_token_weights[slot] = routing_weights[t * top_k + k];
      out.token_idx_map[slot] = k;
    }
  }
}

namespace {

// Calls body(e, next) for every local expert e that received tokens, spread over the kernel threads;
// next is the routed expert the same thread runs after e (-1 if none), whose weights it may prefetch.
// Only routed experts are handed out: at small batches (8 of 64 experts at batch 1) ranges of all
// experts would give one thread most of the routed ones while the other idles.
void for_each_routed_expert(std::span<const int32_t> num_routed_tokens,
                            const std::function<void(int64_t expert, int64_t next)>& body) {
  std::vector<int64_t> routed;
  for (size_t e = 0; e < num_routed_tokens.size(); ++e)
    if (num_routed_tokens[e] > 0) routed.push_back(static_cast<int64_t>(e));
  parallel_for(static_cast<int64_t>(routed.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(routed[i], i + 1 < end ? routed[i + 1] : -1);
  });
}

// The [E/D, T] inputs must agree with the number of local experts and tokens.
void check_routing_shapes(const char* op, size_t num_local, int64_t num_tokens, size_t slot_count,
                          size_t weight_count) {
  if (weight_count != num_local || slot_count != num_local * static_cast<size_t>(num_tokens))
    throw Error(std::string(op) + ": " + std::to_string(num_local) + " local experts and " +
                std::to_string(num_tokens) + " tokens need [E/D, T] routing tensors and E/D weights, got " +
                std::to_string(slot_count) + " slots and " + std::to_string(weight_count) + " weights");
}

// Every local expert must share one shape, or the [E/D, T, ·] buffers would not be rectangular.
void check_same_shape(const char* op, std::span<const WeightView> weights) {
  for (const WeightView& w : weights)
    if (w.rows != weights[0].rows || w.cols != weights[0].cols)
      throw Error(std::string(op) + ": local experts have different weight shapes");
}

}  // namespace

void projection_to_intermediate(const float* hidden, int64_t num_tokens, std::span<const uint32_t> routed_tokens,
                                std::span<const int32_t> num_routed_tokens,
                                std::span<const WeightView> local_weights, std::vector<float>& out) {
  const size_t num_local = num_routed_tokens.size();
  check_routing_shapes("projection_to_intermediate", num_local, num_tokens, routed_tokens.size(),
                       local_weights.size());
  if (num_local == 0) {
    out.clear();
    return;
  }
  check_same_shape("projection_to_intermediate", local_weights);
  const int64_t hidden_size = local_weights[0].cols;
  const int64_t width = local_weights[0].rows;
  // Only the rows past each count are zeroed below: the used rows are overwritten by the GEMMs.
  out.resize(num_local * static_cast<size_t>(num_tokens * width));

  for (size_t e = 0; e < num_local; ++e)
    if (num_routed_tokens[e] == 0)
      std::fill_n(out.data() + static_cast<int64_t>(e) * num_tokens * width, num_tokens * width, 0.0f);
  // Gather each expert's tokens into one contiguous block so the projection is a single GEMM. The
  // experts are independent: they are spread over the kernel threads (each linear then runs serially).
  for_each_routed_expert(num_routed_tokens, [&](int64_t e, int64_t next) {
    thread_local std::vector<float> gathered;
    const int64_t count = num_routed_tokens[e];
    float* expert_out = out.data() + e * num_tokens * width;
    std::fill(expert_out + count * width, expert_out + num_tokens * width, 0.0f);
    gathered.resize(static_cast<size_t>(count * hidden_size));
    const uint32_t* tokens = routed_tokens.data() + e * num_tokens;
    for (int64_t j = 0; j < count; ++j) {
      if (tokens[j] >= static_cast<uint64_t>(num_tokens))
        throw Error("projection_to_intermediate: slot " + std::to_string(j) + " of local expert " +
                    std::to_string(e) + " names token " + std::to_string(tokens[j]) + " of " +
                    std::to_string(num_tokens));
      std::copy_n(hidden + static_cast<int64_t>(tokens[j]) * hidden_size, hidden_size,
                  gathered.data() + j * hidden_size);
    }
    if (next >= 0) prefetch_leading_rows(local_weights[next]);
    linear(gathered.data(), count, local_weights[e], expert_out);
  });
}

void silu_and_multiply_routed(std::vector<float>& gate, const std::vector<float>& up,
                              std::span<const int32_t> num_routed_tokens, int64_t num_tokens) {
  const size_t num_local = num_routed_tokens.size();
  if (gate.size() != up.size())
    throw Error("silu_and_multiply_routed: gate and up buffers differ in size");
  if (num_local == 0 || num_tokens == 0) return;
  const int64_t width = static_cast<int64_t>(gate.size() / num_local) / num_tokens;
  for_each_routed_expert(num_routed_tokens, [&](int64_t e, int64_t) {
    const int64_t begin = e * num_tokens * width;
    silu_mul(gate.data() + begin, up.data() + begin, num_routed_tokens[e] * width);
  });
}

void projection_to_output(const float* act, std::span<const int32_t> token_idx_map,
                          std::span<const uint32_t> routed_tokens, std::span<const int32_t> num_routed_tokens,
                          std::span<const float> routed_token_weights, std::span<const WeightView> local_down,
                          int64_t num_tokens, int top_k, float* out) {
  const size_t num_local = num_routed_tokens.size();
  check_routing_shapes("projection_to_output", num_local, num_tokens, routed_tokens.size(), local_down.size());
  if (token_idx_map.size() != routed_tokens.size() || routed_token_weights.size() != routed_tokens.size())
    throw Error("projection_to_output: token_idx_map and routed_token_weights must be [E/D, T] like routed_tokens");
  if (num_local == 0 || num_tokens == 0) return;
  check_same_shape("projection_to_output", local_down);
  const int64_t hidden_size = local_down[0].rows;
  const int64_t width = local_down[0].cols;

  // Each expert's used rows of act are already contiguous: one GEMM per expert into a stacked
  // [Σ counts, H] block, remembering which (token, k) pair every stacked row belongs to.
  thread_local std::vector<float> projected;
  thread_local std::vector<int64_t> row_of_pair;  // [T, K]: stacked row, or -1 when not on this device
  thread_local std::vector<float> weight_of_pair;
  row_of_pair.assign(static_cast<size_t>(num_tokens * top_k), -1);
  weight_of_pair.assign(row_of_pair.size(), 0.0f);
  int64_t total_rows = 0;
  for (size_t e = 0; e < num_local; ++e) total_rows += num_routed_tokens[e];
  projected.resize(static_cast<size_t>(total_rows * hidden_size));

  // Validate and index every slot first, so the GEMMs below can run on any thread in any order.
  std::vector<int64_t> first_row(num_local + 1, 0);
  for (size_t e = 0; e < num_local; ++e) {
    const int64_t count = num_routed_tokens[e];
    first_row[e + 1] = first_row[e] + count;
    for (int64_t j = 0; j < count; ++j) {
      const size_t slot = e * num_tokens + j;
      if (routed_tokens[slot] >= static_cast<uint64_t>(num_tokens) || token_idx_map[slot] < 0 ||
          token_idx_map[slot] >= top_k)
        throw Error("projection_to_output: slot " + std::to_string(j) + " of local expert " + std::to_string(e) +
                    " names token " + std::to_string(routed_tokens[slot]) + ", top-k position " +
                    std::to_string(token_idx_map[slot]) + " outside [T, K] = [" + std::to_string(num_tokens) +
                    ", " + std::to_string(top_k) + "]");
      const int64_t pair = static_cast<int64_t>(routed_tokens[slot]) * top_k + token_idx_map[slot];
      row_of_pair[pair] = first_row[e] + j;
      weight_of_pair[pair] = routed_token_weights[slot];
    }
  }
  // `projected` is thread-local: the other threads must write through this thread's buffer.
  float* const stacked = projected.data();
  for_each_routed_expert(num_routed_tokens, [&](int64_t e, int64_t next) {
    if (next >= 0) prefetch_leading_rows(local_down[next]);
    linear(act + e * num_tokens * width, num_routed_tokens[e], local_down[e], stacked + first_row[e] * hidden_size);
  });

  std::fill_n(out, num_tokens * hidden_size, 0.0f);
  for (int64_t t = 0; t < num_tokens; ++t) {
    float* out_row = out + t * hidden_size;
    for (int k = 0; k < top_k; ++k) {
      const int64_t row = row_of_pair[t * top_k + k];
      if (row < 0) continue;
      const float weight = weight_of_pair[t * top_k + k];
      const float* projected_row = projected.data() + row * hidden_size;
      for (int64_t h = 0; h < hidden_size; ++h) out_row[h] += weight * projected_row[h];
    }
  }
}

void all_reduce_sum(std::span<float* const> device_buffers, int64_t count) {
  if (device_buffers.size() < 2) return;
  float* total = device_buffers[0];
  for (size_t d = 1; d < device_buffers.size(); ++d)
    for (int64_t i = 0; i < count; ++i) total[i] += device_buffers[d][i];
  for (size_t d = 1; d < device_buffers.size(); ++d) std::copy_n(total, count, device_buffers[d]);
}

}  // namespace moe
