// Multi-head latent attention's kernels (mla_kernels.h).
#include <string>

#include "common/error.h"
#include "cuda/launch.cuh"
#include "cuda/mla_kernels.h"
#include "cuda/router_softmax.cuh"
#include "cuda/weight_access.cuh"

namespace moe::cuda {
namespace {

// LatentShape::row_size() on the device.
__device__ __forceinline__ int64_t row_width(const LatentShape& shape) { return int64_t{shape.latent} + shape.rope; }

template <typename W>
__device__ __forceinline__ float weight_at(const WeightRef& w, int64_t row, int64_t col) {
  return widen(static_cast<const W*>(w.data)[row * w.cols + col]);
}

// Rotates pair i of the `rope` floats at x (in place: every pair is read before any is written, the
// block's threads each holding one pair, so at most one vector per launch row).
__device__ void rotate_pair(float* x, int i, int rope, float position, const LatentRotary& rotary) {
  const int half = rope / 2;
  float a = 0.0f, b = 0.0f;
  if (i < half) {
    a = rotary.interleaved ? x[2 * i] : x[i];
    b = rotary.interleaved ? x[2 * i + 1] : x[i + half];
  }
  __syncthreads();
  if (i >= half) return;
  const float angle = position * rotary.inv_freq[i];
  const float c = cosf(angle) * rotary.scale, s = sinf(angle) * rotary.scale;
  x[i] = a * c - b * s;
  x[i + half] = b * c + a * s;
}

// blockIdx.x: the token; blockIdx.y: a head's q, then (y == heads) the token's cache row.
__global__ void latent_rotate_store_kernel(float* q, const float* compressed, LatentShape shape, const float* norm,
                                           float eps, const int32_t* positions, LatentRotary rotary,
                                           const int32_t* slots, float* rows) {
  const int64_t t = blockIdx.x;
  const int head = static_cast<int>(blockIdx.y), i = static_cast<int>(threadIdx.x);
  const float position = static_cast<float>(positions[t]);
  if (head < shape.num_heads) {
    rotate_pair(q + (t * shape.num_heads + head) * (shape.nope + shape.rope) + shape.nope, i, shape.rope, position,
                rotary);
    return;
  }
  __shared__ float warp_sums[kThreads / kWarpSize];
  const float* in = compressed + t * row_width(shape);
  float* row = rows + static_cast<int64_t>(slots[t]) * row_width(shape);
  float sum = 0.0f;
  for (int d = i; d < shape.latent; d += static_cast<int>(blockDim.x)) sum += in[d] * in[d];
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullWarp, sum, offset);
  if (i % kWarpSize == 0) warp_sums[i / kWarpSize] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x / kWarpSize); ++w) total += warp_sums[w];
  const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(shape.latent) + eps);
  for (int d = i; d < shape.latent; d += static_cast<int>(blockDim.x)) row[d] = norm[d] * (in[d] * inv_rms);
  for (int d = i; d < shape.rope; d += static_cast<int>(blockDim.x)) row[shape.latent + d] = in[shape.latent + d];
  __syncthreads();
  rotate_pair(row + shape.latent, i, shape.rope, position, rotary);
}

// blockIdx.x: the token; blockIdx.y: the head; a thread per latent column (strided).
template <typename W>
__global__ void absorb_queries_kernel(const float* q, LatentShape shape, WeightRef kv_b, float* q_latent) {
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const float* q_nope = q + (t * shape.num_heads + h) * (shape.nope + shape.rope);
  const int64_t first_row = static_cast<int64_t>(h) * (shape.nope + shape.v);
  float* out = q_latent + (t * shape.num_heads + h) * shape.latent;
  for (int c = static_cast<int>(threadIdx.x); c < shape.latent; c += static_cast<int>(blockDim.x)) {
    float acc = 0.0f;
    for (int n = 0; n < shape.nope; ++n) acc += q_nope[n] * weight_at<W>(kv_b, first_row + n, c);
    out[c] = acc;
  }
}

template <typename W>
__global__ void expand_values_kernel(const float* out_latent, LatentShape shape, WeightRef kv_b, float* out) {
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const float* latent = out_latent + (t * shape.num_heads + h) * shape.latent;
  const int64_t first_row = static_cast<int64_t>(h) * (shape.nope + shape.v) + shape.nope;
  for (int d = static_cast<int>(threadIdx.x); d < shape.v; d += static_cast<int>(blockDim.x)) {
    float acc = 0.0f;
    for (int c = 0; c < shape.latent; ++c) acc += weight_at<W>(kv_b, first_row + d, c) * latent[c];
    out[(t * shape.num_heads + h) * shape.v + d] = acc;
  }
}

// blockIdx.x: the token; blockIdx.y: the head. Each warp takes positions warp, warp + warps, ... with
// an online softmax (its running max, sum and latent-weighted sum in shared memory), then the warps'
// results are merged. Shared memory: the query (latent + rope), then per warp 2 + latent floats.
__global__ void latent_attention_kernel(const float* q_latent, const float* q, AttentionTables tables,
                                        const float* rows, LatentShape shape, float scale, float* out_latent) {
  extern __shared__ float shared[];
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const int warps = static_cast<int>(blockDim.x / kWarpSize);
  const int warp = static_cast<int>(threadIdx.x / kWarpSize), lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int64_t width = row_width(shape);
  float* query = shared;
  float* mine = shared + width + warp * (2 + shape.latent);
  const float* q_head_latent = q_latent + (t * shape.num_heads + h) * shape.latent;
  const float* q_head_rope = q + (t * shape.num_heads + h) * (shape.nope + shape.rope) + shape.nope;
  for (int d = static_cast<int>(threadIdx.x); d < width; d += static_cast<int>(blockDim.x))
    query[d] = d < shape.latent ? q_head_latent[d] : q_head_rope[d - shape.latent];
  for (int d = lane; d < shape.latent; d += kWarpSize) mine[2 + d] = 0.0f;
  __syncthreads();
  const int visible = tables.positions[t] + 1;
  const int32_t* slots = tables.slot_table + tables.slot_offsets[t];
  float max_score = -INFINITY, sum = 0.0f;
  for (int p = warp; p < visible; p += warps) {
    const float* row = rows + static_cast<int64_t>(slots[p]) * width;
    float dot = 0.0f;
    for (int d = lane; d < width; d += kWarpSize) dot += query[d] * row[d];
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(kFullWarp, dot, offset);
    const float score = dot * scale;
    const float new_max = fmaxf(max_score, score);
    const float rescale = expf(max_score - new_max);  // 0 for the first position (max was -inf)
    const float weight = expf(score - new_max);
    sum = sum * rescale + weight;
    for (int d = lane; d < shape.latent; d += kWarpSize) mine[2 + d] = mine[2 + d] * rescale + weight * row[d];
    max_score = new_max;
  }
  if (lane == 0) {
    mine[0] = max_score;
    mine[1] = sum;
  }
  __syncthreads();
  float overall_max = -INFINITY;
  for (int w = 0; w < warps; ++w) overall_max = fmaxf(overall_max, shared[width + w * (2 + shape.latent)]);
  float total_sum = 0.0f;
  for (int w = 0; w < warps; ++w) {
    const float* theirs = shared + width + w * (2 + shape.latent);
    if (theirs[0] > -INFINITY) total_sum += theirs[1] * expf(theirs[0] - overall_max);
  }
  float* out = out_latent + (t * shape.num_heads + h) * shape.latent;
  for (int d = static_cast<int>(threadIdx.x); d < shape.latent; d += static_cast<int>(blockDim.x)) {
    float weighted = 0.0f;
    for (int w = 0; w < warps; ++w) {
      const float* theirs = shared + width + w * (2 + shape.latent);
      if (theirs[0] > -INFINITY) weighted += theirs[2 + d] * expf(theirs[0] - overall_max);
    }
    out[d] = weighted / total_sum;
  }
}

constexpr int kAttentionWarps = 4;

size_t attention_shared_bytes(const LatentShape& shape) {
  return sizeof(float) * static_cast<size_t>(shape.row_size() + kAttentionWarps * (2 + shape.latent));
}

dim3 token_head_grid(int64_t tokens, int heads) { return dim3(static_cast<unsigned>(tokens), static_cast<unsigned>(heads)); }

}  // namespace

void latent_rotate_store(float* q, const float* compressed, int64_t tokens, const LatentShape& shape,
                         const float* norm, float eps, const int32_t* positions, const LatentRotary& rotary,
                         const int32_t* slots, float* rows, cudaStream_t stream) {
  if (shape.rope % 2 != 0 || shape.rope / 2 > kThreads)
    throw Error("CUDA latent attention supports an even qk_rope_head_dim up to " + std::to_string(2 * kThreads) +
                ", not " + std::to_string(shape.rope));
  if (tokens == 0) return;
  latent_rotate_store_kernel<<<token_head_grid(tokens, shape.num_heads + 1), kThreads, 0, stream>>>(
      q, compressed, shape, norm, eps, positions, rotary, slots, rows);
  check_launch("latent_rotate_store");
}

void absorb_queries(const float* q, int64_t tokens, const LatentShape& shape, const WeightRef& kv_b, float* q_latent,
                    cudaStream_t stream) {
  if (tokens == 0) return;
  const dim3 grid = token_head_grid(tokens, shape.num_heads);
  if (kv_b.bf16)
    absorb_queries_kernel<uint16_t><<<grid, kThreads, 0, stream>>>(q, shape, kv_b, q_latent);
  else
    absorb_queries_kernel<float><<<grid, kThreads, 0, stream>>>(q, shape, kv_b, q_latent);
  check_launch("absorb_queries");
}

void latent_attention(const float* q_latent, const float* q, int64_t tokens, const AttentionTables& tables,
                      const float* rows, const LatentShape& shape, float scale, float* out_latent, cudaStream_t stream) {
  if (tokens == 0) return;
  const size_t shared_bytes = attention_shared_bytes(shape);
  if (shared_bytes > 48 * 1024)
    throw Error("CUDA latent attention supports kv_lora_rank + qk_rope_head_dim up to about 2,400, not " +
                std::to_string(shape.row_size()));
  latent_attention_kernel<<<token_head_grid(tokens, shape.num_heads), kAttentionWarps * kWarpSize, shared_bytes,
                            stream>>>(q_latent, q, tables, rows, shape, scale, out_latent);
  check_launch("latent_attention");
}

void expand_values(const float* out_latent, int64_t tokens, const LatentShape& shape, const WeightRef& kv_b, float* out,
                   cudaStream_t stream) {
  if (tokens == 0) return;
  const dim3 grid = token_head_grid(tokens, shape.num_heads);
  if (kv_b.bf16)
    expand_values_kernel<uint16_t><<<grid, kThreads, 0, stream>>>(out_latent, shape, kv_b, out);
  else
    expand_values_kernel<float><<<grid, kThreads, 0, stream>>>(out_latent, shape, kv_b, out);
  check_launch("expand_values");
}

}  // namespace moe::cuda
