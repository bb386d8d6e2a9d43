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

// Each warp's weights go through shared memory kStep input columns at a time: its 16 rows of each
// matrix are loaded 16 bytes a lane into registers one step ahead, so the next step's loads are in
// flight while this step multiplies (wmma's fragment loads straight from global memory left every
// k-step waiting on its own loads: ~1.3 us a step at batch 32).
constexpr int kStep = 64;
constexpr int kWeightLd = kStep + 8;                                  // padded like the staged inputs
constexpr int kLoadsPerLane = kTile * kStep * sizeof(Bf16) / 16 / 32;  // uint4 per lane per matrix

// staged[t][j] = bf16(x[row(t) · k + k0 + j]) for the chunk's columns, rows past the expert's
// `rows` zeros (their results are dropped). kVector: a full chunk goes in 16-byte loads, all of a
// thread's issued before any is converted, one wait for memory a chunk where one load at a time
// waited about once per element (SwiGLU; the down kernel's 64 registers spill with it).
template <bool kVector, typename Row>
__device__ __forceinline__ void stage_inputs(const float* x, int64_t k, int64_t k0, int chunk, int rows, Row row,
                                             Bf16 (&staged)[kTile][kStagedLd]) {
  constexpr int kThreads = kMmaWarps * 32;
  if (kVector && chunk == kChunk) {
    constexpr int kQuads = kChunk / 4, kPerThread = kTile * kQuads / kThreads;
    float4 v[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int idx = static_cast<int>(threadIdx.x) + i * kThreads, t = idx / kQuads, j = idx % kQuads * 4;
      v[i] = t < rows ? *reinterpret_cast<const float4*>(x + row(t) * k + k0 + j) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int idx = static_cast<int>(threadIdx.x) + i * kThreads, t = idx / kQuads, j = idx % kQuads * 4;
      staged[t][j] = __float2bfloat16_rn(v[i].x);
      staged[t][j + 1] = __float2bfloat16_rn(v[i].y);
      staged[t][j + 2] = __float2bfloat16_rn(v[i].z);
      staged[t][j + 3] = __float2bfloat16_rn(v[i].w);
    }
    return;
  }
  for (int i = static_cast<int>(threadIdx.x); i < kTile * chunk; i += kThreads) {
    const int t = i / chunk, j = i % chunk;
    staged[t][j] = __float2bfloat16_rn(t < rows ? x[row(t) * k + k0 + j] : 0.0f);
  }
}

// Blocks a multiprocessor must hold: the down projection's (eight column blocks an expert, 64
// experts at batch 32) then fit the H100's 132 in one wave, at 64 registers where 74 left room
// for three and a second wave; SwiGLU's two (126 registers; asked for one, it takes 143).
template <bool kSwiglu>
constexpr int kMinBlocks = kSwiglu ? 2 : 4;

// kSwiglu: out[r] = silu(gate·x) · (up·x) over the token row x[order[r] / top_k] (the up
// projection's weights in `second`); otherwise out[r] = first·x[r] (the down projection over the
// grouped rows). Expert e = active[blockIdx.y] takes rows offsets[e] .. offsets[e+1]-1; a block
// takes kBlockColumns of the n output columns, a warp 16 of them. k is a multiple of kStep, n of 16.
template <bool kSwiglu>
__global__ void __launch_bounds__(kMmaWarps * 32, kMinBlocks<kSwiglu>)
    grouped_mma_kernel(const float* x, const int32_t* order, int top_k, const int32_t* offsets,
                       const int32_t* active, const void* const* first, const void* const* second, int64_t k,
                       int64_t n, float* out) {
  constexpr int kMatrices = kSwiglu ? 2 : 1;
  const int e = active[blockIdx.y];
  if (e < 0) return;
  const int64_t begin = offsets[e], end = offsets[e + 1];
  if (begin == end) return;
  __shared__ __align__(32) Bf16 staged[kTile][kStagedLd];
  // A warp's weight step; once its row tile is multiplied, the same bytes hold its results.
  __shared__ __align__(32) Bf16 weights[kMmaWarps][kMatrices][kTile][kWeightLd];
  static_assert(sizeof(weights[0]) >= kMatrices * kTile * kTile * sizeof(float), "results fit a warp's weights");
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kBlockColumns + warp * kTile;
  const bool computes = column < n;  // n is a multiple of 16: a warp's columns are all in or all out
  const Bf16* w[kMatrices];
  w[0] = static_cast<const Bf16*>(first[e]) + column * k;
  if constexpr (kSwiglu) w[1] = static_cast<const Bf16*>(second[e]) + column * k;
  // Lane l's loads of a step: uint4 i covers weight row (l + 32i) / 8, input columns 8 × ((l + 32i) % 8).
  uint4 next[kMatrices][kLoadsPerLane];
  const auto load_step = [&](int64_t k0) {
#pragma unroll
    for (int m = 0; m < kMatrices; ++m)
#pragma unroll
      for (int i = 0; i < kLoadsPerLane; ++i) {
        const int idx = lane + 32 * i;
        next[m][i] = *reinterpret_cast<const uint4*>(w[m] + (idx / 8) * k + k0 + (idx % 8) * 8);
      }
  };
  float* results = reinterpret_cast<float*>(&weights[warp][0][0][0]);

  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    const int rows = static_cast<int>(end - r0 < kTile ? end - r0 : kTile);
    Accumulator acc[kMatrices];
#pragma unroll
    for (int m = 0; m < kMatrices; ++m) wmma::fill_fragment(acc[m], 0.0f);
    if (computes) load_step(0);
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int chunk = static_cast<int>(k - k0 < kChunk ? k - k0 : kChunk);
      __syncthreads();  // the previous chunk's readers are done with `staged`
      const auto row = [&](int t) { return kSwiglu ? order[r0 + t] / top_k : r0 + t; };
      stage_inputs<kSwiglu>(x, k, k0, chunk, rows, row, staged);
      __syncthreads();
      if (!computes) continue;
      for (int step = 0; step < chunk; step += kStep) {
#pragma unroll
        for (int m = 0; m < kMatrices; ++m)
#pragma unroll
          for (int i = 0; i < kLoadsPerLane; ++i) {
            const int idx = lane + 32 * i;
            *reinterpret_cast<uint4*>(&weights[warp][m][idx / 8][(idx % 8) * 8]) = next[m][i];
          }
        __syncwarp();
        if (k0 + step + kStep < k) load_step(k0 + step + kStep);  // in flight while this step multiplies
#pragma unroll
        for (int kk = 0; kk < kStep; kk += kTile) {
          InputFragment a;
          wmma::load_matrix_sync(a, &staged[0][step + kk], kStagedLd);
#pragma unroll
          for (int m = 0; m < kMatrices; ++m) {
            WeightFragment b;
            wmma::load_matrix_sync(b, &weights[warp][m][0][kk], kWeightLd);
            wmma::mma_sync(acc[m], a, b, acc[m]);
          }
        }
        __syncwarp();  // every lane's fragments are read before the next step overwrites them
      }
    }
    if (!computes) continue;
#pragma unroll
    for (int m = 0; m < kMatrices; ++m)
      wmma::store_matrix_sync(results + m * kTile * kTile, acc[m], kTile, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < kTile * kTile; i += 32) {
      const int t = i / kTile, j = i % kTile;
      if (t >= rows) continue;
      const float g = results[i];
      // silu_mul's arithmetic, as the float32 kernels compute it.
      float value = g;
      if constexpr (kSwiglu) value = g * sigmoid(g) * results[kTile * kTile + i];
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
  return experts.bf16 && experts.hidden % kStep == 0 && experts.width % kStep == 0;
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
