// The heads' norm, rotation and KV store, and causal GQA attention over the slot pool, one token at a
// time (the tokens that the tiled kernel of prefill_attention.cu does not take). Attention: a
// block per (token, query head, split of its positions), so short runs and decode tokens of any
// sequences share one launch, and a decode of few sequences still fills the device (flash-decoding:
// several blocks per head, each over a run of positions, then a pass that merges them). A block's
// warps take positions in turn, each keeping a running softmax (max, sum, weighted values) with
// head_dim spread over its lanes; the warps' partial results are merged at the end.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common/error.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kWarps = 16;      // warps of an unsplit block: a token's positions are spread over many warps
constexpr int kSplitWarps = 4;  // warps of a block that takes one split of a token's positions

// head_dim elements each lane holds (head_dim <= 32 · kPer), and positions a warp loads at once:
// their keys and values together take 16 registers a lane (32 at kPer 8).
constexpr int lane_elements(int head_dim) {
  const int per = (head_dim + kWarpSize - 1) / kWarpSize;
  return per <= 1 ? 1 : per <= 2 ? 2 : per <= 4 ? 4 : 8;
}
__host__ __device__ constexpr int positions_at_once(int per) { return per >= 4 ? 2 : 8 / per; }
static_assert(lane_elements(kMaxHeadDim) == 8, "the launcher's cases cover kMaxHeadDim");

// A K/V pool element as stored (float32, or bf16 rounded to nearest even) and as read.
__device__ __forceinline__ void store_kv(float* at, float v) { *at = v; }
__device__ __forceinline__ void store_kv(__nv_bfloat16* at, float v) { *at = __float2bfloat16_rn(v); }
__device__ __forceinline__ float load_kv(const float* at) { return *at; }
__device__ __forceinline__ float load_kv(const __nv_bfloat16* at) { return __bfloat162float(*at); }

// blockIdx.x: the token; blockIdx.y: a q head, then the k heads. Thread j holds the pair
// (j, j + head_dim/2) of its head, which is what the rotation mixes.
// Also zeroes the split attention's counter of each (token, q head) that follows it on the stream.
template <typename Kv>
__global__ void norm_rotate_store_kernel(float* q, const float* k, const float* v, HeadShape heads, const float* q_norm,
                                         const float* k_norm, float eps, const int32_t* positions,
                                         const float* inv_freq, const int32_t* slots, Kv* key_pool, Kv* value_pool,
                                         int32_t* split_counters) {
  __shared__ float warp_sums[kMaxHeadDim / 2 / kWarpSize];
  const int64_t t = blockIdx.x;
  const int head = static_cast<int>(blockIdx.y), half = heads.head_dim / 2, j = static_cast<int>(threadIdx.x);
  const bool is_q = head < heads.num_heads;
  if (split_counters != nullptr && is_q && j == 0) split_counters[t * heads.num_heads + head] = 0;
  const int64_t kv_width = static_cast<int64_t>(heads.num_kv_heads) * heads.head_dim;
  const int64_t kv_offset = static_cast<int64_t>(head - heads.num_heads) * heads.head_dim;
  float* q_row = q + (t * heads.num_heads + head) * heads.head_dim;
  const float* src = is_q ? q_row : k + t * kv_width + kv_offset;
  const float* norm = is_q ? q_norm : k_norm;
  float a = 0.0f, b = 0.0f;
  if (j < half) {
    a = src[j];
    b = src[j + half];
  }
  if (norm != nullptr) {  // the same for every block of a launch
    float sum = a * a + b * b;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullWarp, sum, offset);
    if (j % kWarpSize == 0) warp_sums[j / kWarpSize] = sum;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x / kWarpSize); ++w) total += warp_sums[w];
    const float scale = 1.0f / sqrtf(total / static_cast<float>(heads.head_dim) + eps);
    a = norm[j < half ? j : 0] * (a * scale);
    b = norm[j < half ? j + half : 0] * (b * scale);
  }
  if (j >= half) return;
  const float angle = static_cast<float>(positions[t]) * inv_freq[j];
  const float c = cosf(angle), s = sinf(angle);
  const float rotated_a = a * c - b * s, rotated_b = b * c + a * s;
  if (is_q) {
    q_row[j] = rotated_a;
    q_row[j + half] = rotated_b;
    return;
  }
  const int64_t at = static_cast<int64_t>(slots[t]) * kv_width + kv_offset;
  store_kv(key_pool + at + j, rotated_a);
  store_kv(key_pool + at + j + half, rotated_b);
  const float* v_row = v + t * kv_width + kv_offset;
  store_kv(value_pool + at + j, v_row[j]);
  store_kv(value_pool + at + j + half, v_row[j + half]);
}

// Positions [begin, end) of the split `split` of `splits` over a token's visible positions: equal
// runs, so every block of a launch has about the same work whatever the context length.
__device__ __forceinline__ void split_range(int visible, int split, int splits, int& begin, int& end) {
  const int chunk = (visible + splits - 1) / splits;
  begin = min(visible, split * chunk);
  end = min(visible, begin + chunk);
}

// blockIdx.x: the token's index i in `tokens` (null: the token i); blockIdx.y: the q head; blockIdx.z:
// the split of the token's positions. With one split the block writes the head's output; with several
// it writes its partial (max, sum, weighted values) to partials[(i · num_heads + h) · splits + split],
// and the head's last block to
// finish merges them. The per-warp merge and the per-split merge are the same online-softmax rescaling, so a
// split changes only the order of float32 additions.
template <int kPer, typename Kv>
__global__ void attention_kernel(const float* q, const int32_t* tokens, AttentionTables tables, const Kv* key_pool,
                                 const Kv* value_pool, int num_heads, int group_size, int head_dim, float scale,
                                 float* out, float* partials, int32_t* split_counters) {
  const int64_t i = blockIdx.x, t = tokens != nullptr ? tokens[i] : i;
  const int h = static_cast<int>(blockIdx.y), split = static_cast<int>(blockIdx.z), splits = static_cast<int>(gridDim.z);
  const int warps = static_cast<int>(blockDim.x / kWarpSize);
  const int warp = static_cast<int>(threadIdx.x / kWarpSize), lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int64_t q_offset = (t * num_heads + h) * head_dim;
  const int64_t row_size = static_cast<int64_t>(num_heads / group_size) * head_dim;
  const int64_t kv_offset = static_cast<int64_t>(h / group_size) * head_dim;
  int begin = 0, end = 0;
  split_range(tables.positions[t] + 1, split, splits, begin, end);
  const int32_t* slots = tables.slot_table + tables.slot_offsets[t];

  float query[kPer], acc[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int d = lane + j * kWarpSize;
    query[j] = d < head_dim ? q[q_offset + d] : 0.0f;
    acc[j] = 0.0f;
  }
  // Each warp takes kUnroll positions `warps` apart at a time: their key and value rows are loaded
  // together, and the next group's slots while this group's rows are in flight, so a decode token
  // waits for memory about once per group (the positions and their order per warp are kUnroll's
  // whatever it is).
  constexpr int kUnroll = positions_at_once(kPer);
  const auto slots_of = [&](int base, int32_t (&group)[kUnroll]) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int p = base + u * warps;
      group[u] = p < end ? slots[p] : -1;
    }
  };
  int32_t group_slots[kUnroll];
  slots_of(begin + warp, group_slots);
  float max_score = -INFINITY, sum = 0.0f;
  for (int base = begin + warp; base < end; base += warps * kUnroll) {
    float keys[kUnroll][kPer], values[kUnroll][kPer];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (group_slots[u] < 0) continue;
      const int64_t row = static_cast<int64_t>(group_slots[u]) * row_size + kv_offset;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int d = lane + j * kWarpSize;
        if (d < head_dim) {
          keys[u][j] = load_kv(key_pool + row + d);
          values[u][j] = load_kv(value_pool + row + d);
        }
      }
    }
    int valid = 0;  // positions run in order: the group's first `valid` are before the end
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) valid += group_slots[u] >= 0 ? 1 : 0;
    slots_of(base + warps * kUnroll, group_slots);
    float scores[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float dot = 0.0f;
      if (u < valid) {
#pragma unroll
        for (int j = 0; j < kPer; ++j)
          if (lane + j * kWarpSize < head_dim) dot += query[j] * keys[u][j];
      }
      scores[u] = dot;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        scores[u] += __shfl_xor_sync(kFullWarp, scores[u], offset);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (u >= valid) break;
      const float score = scores[u] * scale;
      const float new_max = fmaxf(max_score, score);
      const float rescale = expf(max_score - new_max);  // 0 for the first position (max was -inf)
      const float weight = expf(score - new_max);
      sum = sum * rescale + weight;
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (lane + j * kWarpSize < head_dim) acc[j] = acc[j] * rescale + weight * values[u][j];
      max_score = new_max;
    }
  }

  // Each warp's (max, sum, weighted values), then every head_dim element merged over the warps. A
  // warp that saw no position has max -inf and weighs 0. Split 0 holds position 0, so its max is
  // finite; a later split may see no position at all and then reports max -inf, sum 0.
  extern __shared__ float partial[];  // warps × (2 + head_dim)
  float* mine = partial + warp * (2 + head_dim);
  if (lane == 0) {
    mine[0] = max_score;
    mine[1] = sum;
  }
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int d = lane + j * kWarpSize;
    if (d < head_dim) mine[2 + d] = acc[j];
  }
  __syncthreads();
  float overall_max = -INFINITY;
  for (int w = 0; w < warps; ++w) overall_max = fmaxf(overall_max, partial[w * (2 + head_dim)]);
  float* split_out = splits == 1 ? nullptr : partials + ((i * num_heads + h) * splits + split) * (2 + head_dim);
  for (int d = static_cast<int>(threadIdx.x); d < head_dim; d += static_cast<int>(blockDim.x)) {
    float total = 0.0f, weighted = 0.0f;
    if (overall_max > -INFINITY) {
      for (int w = 0; w < warps; ++w) {
        const float* theirs = partial + w * (2 + head_dim);
        const float factor = expf(theirs[0] - overall_max);
        total += theirs[1] * factor;
        weighted += theirs[2 + d] * factor;
      }
    }
    if (splits == 1) {
      out[q_offset + d] = weighted / total;
      continue;
    }
    split_out[2 + d] = weighted;
    if (d == 0) {
      split_out[0] = overall_max;
      split_out[1] = total;
    }
  }
  if (splits == 1) return;

  // The last of the head's split blocks to finish merges every split's partial (the counter was
  // zeroed by norm_rotate_store_kernel earlier on the stream): no second launch.
  __shared__ bool last;
  __threadfence();  // this block's partial is visible to whichever block merges
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&split_counters[i * num_heads + h], 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const float* head_partials = partials + (i * num_heads + h) * splits * (2 + head_dim);
  overall_max = -INFINITY;
  for (int s = 0; s < splits; ++s) overall_max = fmaxf(overall_max, __ldcg(head_partials + s * (2 + head_dim)));
  for (int d = static_cast<int>(threadIdx.x); d < head_dim; d += static_cast<int>(blockDim.x)) {
    float total = 0.0f, weighted = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float* theirs = head_partials + s * (2 + head_dim);
      const float factor = expf(__ldcg(theirs) - overall_max);  // 0 for a split that saw no position
      total += __ldcg(theirs + 1) * factor;
      weighted += __ldcg(theirs + 2 + d) * factor;
    }
    out[q_offset + d] = weighted / total;
  }
}

int multiprocessor_count() {
  static const int count = [] {
    int device = 0, sms = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    return sms;
  }();
  return count;
}

}  // namespace

void norm_rotate_store(float* q, const float* k, const float* v, int64_t tokens, HeadShape heads, const float* q_norm,
                       const float* k_norm, float eps, const int32_t* positions, const float* inv_freq,
                       const int32_t* slots, const KvPoolRef& pool, int32_t* split_counters, cudaStream_t stream) {
  if (heads.head_dim > kMaxHeadDim || heads.head_dim % 2 != 0)
    throw Error("CUDA attention supports even head_dim up to " + std::to_string(kMaxHeadDim) + ", not " +
                std::to_string(heads.head_dim));
  if (tokens == 0) return;
  // Whole warps (the norm's shuffles take all 32 lanes), a thread per pair.
  const auto threads = static_cast<unsigned>((heads.head_dim / 2 + kWarpSize - 1) / kWarpSize * kWarpSize);
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(heads.num_heads + heads.num_kv_heads));
  const auto launch = [&](auto* keys, auto* values) {
    using Kv = std::remove_pointer_t<decltype(keys)>;
    norm_rotate_store_kernel<Kv><<<grid, threads, 0, stream>>>(q, k, v, heads, q_norm, k_norm, eps, positions,
                                                               inv_freq, slots, keys, values, split_counters);
  };
  if (pool.bf16)
    launch(static_cast<__nv_bfloat16*>(pool.keys), static_cast<__nv_bfloat16*>(pool.values));
  else
    launch(static_cast<float*>(pool.keys), static_cast<float*>(pool.values));
  check_launch("norm_rotate_store");
}

int attention_splits(int64_t single_tokens, int num_heads) {
  // Enough blocks for about four per multiprocessor: a decode of a few sequences has far fewer
  // (token, head) pairs than the device has multiprocessors (four gained 3% at batch 8 and 32 on the
  // H100 over two).
  const int64_t heads = single_tokens * num_heads, wanted = 4 * int64_t{multiprocessor_count()};
  return static_cast<int>(std::clamp<int64_t>((wanted + heads - 1) / std::max<int64_t>(heads, 1), 1, kMaxAttentionSplits));
}

size_t attention_partials_size(int64_t single_tokens, int num_heads, int head_dim) {
  const int splits = attention_splits(single_tokens, num_heads);
  return splits == 1 ? 0 : static_cast<size_t>(single_tokens * num_heads * splits * (2 + head_dim));
}

size_t attention_counters_size(int64_t tokens, int64_t single_tokens, int num_heads) {
  if (single_tokens == 0 || attention_splits(single_tokens, num_heads) == 1) return 0;
  return static_cast<size_t>(tokens * num_heads);
}

// Splits shrink as tokens grow, so the partials are largest somewhere below the tokens that leave one
// split; the counters, one per token of a step whose single tokens split, at the largest step.
size_t max_attention_partials_size(int64_t max_tokens, int num_heads, int head_dim) {
  size_t largest = 0;
  for (int64_t t = 1; t <= max_tokens && attention_splits(t, num_heads) > 1; ++t)
    largest = std::max(largest, attention_partials_size(t, num_heads, head_dim));
  return largest;
}

size_t max_attention_counters_size(int64_t max_tokens, int num_heads) {
  return attention_counters_size(max_tokens, 1, num_heads);
}

QueryRuns attention_runs(const QueryRuns& step_runs, int64_t tokens, const KvPoolRef& pool, int head_dim) {
  return step_runs.num_tiles > 0 && tiled_attention_supports(pool, head_dim) ? step_runs
                                                                               : QueryRuns::every_token(tokens);
}

void causal_attention(const float* q, const QueryRuns& runs, const AttentionTables& tables, const KvPoolRef& pool,
                      int num_heads, int num_kv_heads, int head_dim, const AttentionSplits& split, float* out,
                      cudaStream_t stream) {
  if (head_dim > kMaxHeadDim)
    throw Error("CUDA attention supports head_dim up to " + std::to_string(kMaxHeadDim) + ", not " +
                std::to_string(head_dim));
  if (runs.num_tiles > 0)
    tiled_attention(q, runs.tiles, runs.num_tiles, tables, pool, num_heads, num_kv_heads, head_dim, out, stream);
  const int64_t tokens = runs.num_single;
  if (tokens == 0) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int splits = attention_splits(tokens, num_heads);
  // A split block covers a fraction of the positions: fewer warps keep each of them busy.
  const int warps = splits == 1 ? kWarps : kSplitWarps;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(num_heads), static_cast<unsigned>(splits));
  const size_t shared_bytes = sizeof(float) * warps * (2 + head_dim);
  const auto launch = [&](auto kernel, const auto* keys, const auto* values) {
    kernel<<<grid, warps * kWarpSize, shared_bytes, stream>>>(q, runs.single_tokens, tables, keys, values, num_heads,
                                                              num_heads / num_kv_heads, head_dim, scale, out,
                                                              split.partials, split.counters);
  };
  const auto launch_for = [&](const auto* keys, const auto* values) {
    using Kv = std::remove_const_t<std::remove_pointer_t<decltype(keys)>>;
    switch (lane_elements(head_dim)) {
      case 1: launch(attention_kernel<1, Kv>, keys, values); break;
      case 2: launch(attention_kernel<2, Kv>, keys, values); break;
      case 4: launch(attention_kernel<4, Kv>, keys, values); break;
      default: launch(attention_kernel<8, Kv>, keys, values); break;
    }
  };
  if (pool.bf16)
    launch_for(static_cast<const __nv_bfloat16*>(pool.keys), static_cast<const __nv_bfloat16*>(pool.values));
  else
    launch_for(static_cast<const float*>(pool.keys), static_cast<const float*>(pool.values));
  check_launch("causal_attention");
}

}  // namespace moe::cuda
