// The grouped routed-expert MLP in bf16 products on tensor cores (--kernel-dtype bf16): the same
// grouping as grouped_expert_mlp (rows sorted by expert, token rows read in place through `order`),
// with each 16-row tile of an expert's inputs rounded to bf16 once into shared memory and shared by
// the block's warps, each warp multiplying it by 16 weight rows with wmma (bf16 inputs, float32
// accumulation). A block's warps reading the staged tile rather than each its own float32 copy of
// the rows is most of the gain at 16 to 256 tokens; the tensor cores keep the products off the
// CUDA cores as the rows per expert grow.
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>

#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/weight_access.cuh"

namespace moe::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 16;                  // wmma's m, n and k
constexpr int kMmaWarps = 8;
constexpr int kBlockColumns = kMmaWarps * kTile;  // output columns a block computes
constexpr int kChunk = 256;                // input columns staged at a time
constexpr int kStagedLd = kChunk + 8;      // padded against shared-memory bank conflicts

using Bf16 = __nv_bfloat16;
using Accumulator = wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float>;
using InputFragment = wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, Bf16, wmma::row_major>;
// A weight matrix [n, k] row-major read as the k × n right operand: column-major with ld k.
using WeightFragment = wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, Bf16, wmma::col_major>;

// kSwiglu: out[r] = silu(gate·x) · (up·x) over the token row x[order[r] / top_k] (the up
// projection's weights in `second`); otherwise out[r] = first·x[r] (the down projection over the
// grouped rows). Expert e = active[blockIdx.y] takes rows offsets[e] .. offsets[e+1]-1; a block
// takes kBlockColumns of the n output columns, a warp 16 of them. k and n are multiples of 16.
template <bool kSwiglu>
__global__ void __launch_bounds__(kMmaWarps * 32)
    grouped_mma_kernel(const float* x, const int32_t* order, int top_k, const int32_t* offsets,
                       const int32_t* active, const void* const* first, const void* const* second, int64_t k,
                       int64_t n, float* out) {
  const int e = active[blockIdx.y];
  if (e < 0) return;
  const int64_t begin = offsets[e], end = offsets[e + 1];
  if (begin == end) return;
  __shared__ __align__(32) Bf16 staged[kTile][kStagedLd];
  __shared__ __align__(32) float results[kMmaWarps][kSwiglu ? 2 : 1][kTile][kTile];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kBlockColumns + warp * kTile;
  const bool computes = column < n;  // n is a multiple of 16: a warp's columns are all in or all out
  const Bf16* w1 = static_cast<const Bf16*>(first[e]) + column * k;
  const Bf16* w2 = kSwiglu ? static_cast<const Bf16*>(second[e]) + column * k : nullptr;

  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    const int rows = static_cast<int>(end - r0 < kTile ? end - r0 : kTile);
    Accumulator acc1, acc2;
    wmma::fill_fragment(acc1, 0.0f);
    if constexpr (kSwiglu) wmma::fill_fragment(acc2, 0.0f);
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int chunk = static_cast<int>(k - k0 < kChunk ? k - k0 : kChunk);
      __syncthreads();  // the previous chunk's readers are done with `staged`
      for (int i = static_cast<int>(threadIdx.x); i < kTile * chunk; i += blockDim.x) {
        const int t = i / chunk, j = i % chunk;
        float v = 0.0f;  // rows past the expert's are zeros, their results dropped
        if (t < rows) {
          const int64_t row = kSwiglu ? order[r0 + t] / top_k : r0 + t;
          v = x[row * k + k0 + j];
        }
        staged[t][j] = __float2bfloat16_rn(v);
      }
      __syncthreads();
      if (!computes) continue;
#pragma unroll 4
      for (int kk = 0; kk < chunk; kk += kTile) {
        InputFragment a;
        WeightFragment b1, b2;
        wmma::load_matrix_sync(b1, w1 + k0 + kk, static_cast<unsigned>(k));
        if constexpr (kSwiglu) wmma::load_matrix_sync(b2, w2 + k0 + kk, static_cast<unsigned>(k));
        wmma::load_matrix_sync(a, &staged[0][kk], kStagedLd);
        wmma::mma_sync(acc1, a, b1, acc1);
        if constexpr (kSwiglu) wmma::mma_sync(acc2, a, b2, acc2);
      }
    }
    if (!computes) continue;
    wmma::store_matrix_sync(&results[warp][0][0][0], acc1, kTile, wmma::mem_row_major);
    if constexpr (kSwiglu) wmma::store_matrix_sync(&results[warp][1][0][0], acc2, kTile, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < kTile * kTile; i += 32) {
      const int t = i / kTile, j = i % kTile;
      if (t >= rows) continue;
      const float g = results[warp][0][t][j];
      // silu_mul's arithmetic, as the float32 kernels compute it.
      float value = g;
      if constexpr (kSwiglu) value = g * sigmoid(g) * results[warp][1][t][j];
      out[(r0 + t) * n + column + j] = value;
    }
    __syncwarp();
  }
}

unsigned column_blocks(int64_t columns) {
  return static_cast<unsigned>((columns + kBlockColumns - 1) / kBlockColumns);
}

}  // namespace

bool grouped_mma_fits(const ExpertTables& experts) {
  return experts.bf16 && experts.hidden % kTile == 0 && experts.width % kTile == 0;
}

void grouped_expert_mlp_mma(const float* x, int64_t tokens, int top_k, const int32_t* order, const int32_t* offsets,
                            const int32_t* active, const ExpertTables& experts, float* act, float* out,
                            cudaStream_t stream) {
  if (tokens == 0) return;
  // A step's pairs reach at most that many experts.
  const auto active_rows = static_cast<unsigned>(std::min<int64_t>(experts.num_experts, tokens * top_k));
  const dim3 swiglu_grid(column_blocks(experts.width), active_rows),
      down_grid(column_blocks(experts.hidden), active_rows);
  grouped_mma_kernel<true><<<swiglu_grid, kMmaWarps * 32, 0, stream>>>(
      x, order, top_k, offsets, active, experts.gate, experts.up, experts.hidden, experts.width, act);
  grouped_mma_kernel<false><<<down_grid, kMmaWarps * 32, 0, stream>>>(
      act, order, top_k, offsets, active, experts.down, nullptr, experts.width, experts.hidden, out);
  check_launch("grouped_expert_mlp_mma");
}

}  // namespace moe::cuda
