// The grouped routed-expert MLP of prefill-sized steps in bf16 products on tensor cores, with no
// host round trip: the rows grouped by expert (group_by_expert's offsets and active list, on the
// device) are cut into tiles of kTileRows rows by one small kernel, and each projection is one
// launch over (output column block, tile) whose tiles past the step's last are empty blocks. A
// block multiplies its tile's kTileRows rows by kBlockColumns weight rows (the gate's and the up
// projection's together for SwiGLU), both operands moved into shared memory by cp.async kStages
// steps of kStep columns ahead, 8 warps each taking a 32 × 32 corner with wmma (bf16 inputs,
// float32 accumulation). Every weight is read once per tile of its expert's rows, where the decode
// kernel (grouped_mma.cu) reads it once per 16 rows.
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>

#include "common/error.h"
#include "cuda/kernels.h"
#include "cuda/async_copy.cuh"
#include "cuda/launch.cuh"
#include "cuda/weight_access.cuh"

namespace moe::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using Bf16 = __nv_bfloat16;

constexpr int kTileRows = 64;       // grouped rows a block takes
constexpr int kBlockColumns = 128;  // output columns a block takes (of each matrix for SwiGLU)
constexpr int kStep = 32;           // input columns a pipeline stage holds
constexpr int kStages = 3;
constexpr int kLd = kStep + 8;      // a staged row, padded against bank conflicts (80 bytes)
constexpr int kWarps = 8;
constexpr int kThreadsPerBlock = kWarps * 32;
constexpr int kWarpRows = 32, kWarpColumns = 32;  // each warp's corner: 2 × 2 wmma tiles of 16
constexpr int kOutLd = kBlockColumns + 4;         // the results' staging row (floats)
static_assert((kTileRows / kWarpRows) * (kBlockColumns / kWarpColumns) == kWarps, "the warps cover the block");
static_assert(kTileRows * kStep / 8 == kThreadsPerBlock, "one 16-byte input load per thread per stage");

template <bool kSwiglu>
constexpr int kMatrices = kSwiglu ? 2 : 1;
template <bool kSwiglu>
constexpr size_t kStageBytes = sizeof(Bf16) * kLd * (kTileRows + kMatrices<kSwiglu> * kBlockColumns);
template <bool kSwiglu>
constexpr size_t kSharedBytes =
    std::max(kStages * kStageBytes<kSwiglu>, sizeof(float) * kMatrices<kSwiglu> * kTileRows * kOutLd);

// One block, a thread per entry of `active` (at most 1024): tile i of the step is rows
// tile_row[i] .. + kTileRows of expert tile_expert[i]; the entries past the last tile up to
// `capacity` get expert -1 (their blocks return at once).
__global__ void expert_tiles_kernel(const int32_t* offsets, const int32_t* active, int entries, int capacity,
                                    int32_t* tile_expert, int32_t* tile_row) {
  __shared__ int32_t first_tile[1025];
  const int i = static_cast<int>(threadIdx.x);
  const int e = i < entries ? active[i] : -1;
  const int32_t begin = e >= 0 ? offsets[e] : 0, rows = e >= 0 ? offsets[e + 1] - begin : 0;
  first_tile[i + 1] = (rows + kTileRows - 1) / kTileRows;
  __syncthreads();
  if (i == 0) {
    first_tile[0] = 0;
    for (int j = 1; j <= static_cast<int>(blockDim.x); ++j) first_tile[j] += first_tile[j - 1];
  }
  __syncthreads();
  for (int t = first_tile[i]; t < first_tile[i + 1]; ++t) {
    tile_expert[t] = e;
    tile_row[t] = begin + (t - first_tile[i]) * kTileRows;
  }
  for (int t = first_tile[blockDim.x] + i; t < capacity; t += static_cast<int>(blockDim.x)) tile_expert[t] = -1;
}

// kSwiglu: act[r] = bf16(silu(gate·x) · (up·x)) over token row x[order[r] / top_k]; otherwise
// out[r] = first·act[r] over the grouped rows. k: the input width (a multiple of kStep), n: the
// output width (a multiple of 16). blockIdx.x: the column block, blockIdx.y: the tile.
template <bool kSwiglu>
// Two blocks a multiprocessor: SwiGLU's stages take 75 KiB of shared memory each.
__global__ void __launch_bounds__(kThreadsPerBlock, 2)
    grouped_tile_kernel(const Bf16* x, const int32_t* order, int top_k, const int32_t* offsets,
                        const int32_t* tile_expert, const int32_t* tile_row, const void* const* first,
                        const void* const* second, int64_t k, int64_t n, Bf16* act, float* out) {
  constexpr int kMats = kMatrices<kSwiglu>;
  const int e = tile_expert[blockIdx.y];
  if (e < 0) return;
  const int64_t r0 = tile_row[blockIdx.y];
  const int64_t left = offsets[e + 1] - r0;
  const int rows = left < kTileRows ? static_cast<int>(left) : kTileRows;
  const int64_t column0 = static_cast<int64_t>(blockIdx.x) * kBlockColumns;
  extern __shared__ __align__(128) unsigned char shared[];
  const auto staged_rows = [&](int stage) { return reinterpret_cast<Bf16*>(shared + stage * kStageBytes<kSwiglu>); };
  const auto staged_weights = [&](int stage, int m) {
    return staged_rows(stage) + kTileRows * kLd + m * kBlockColumns * kLd;
  };

  const int thread = static_cast<int>(threadIdx.x);
  // This thread's 16-byte input load of each stage: row thread / 4, columns 8 · (thread % 4).
  const int load_row = thread / 4, load_part = (thread % 4) * 8;
  const bool row_valid = load_row < rows;
  const int64_t source_row = !row_valid ? 0 : kSwiglu ? order[r0 + load_row] / top_k : r0 + load_row;
  const Bf16* row_src = x + source_row * k + load_part;
  const Bf16* w[kMats];
  w[0] = static_cast<const Bf16*>(first[e]);
  if constexpr (kSwiglu) w[1] = static_cast<const Bf16*>(second[e]);
  const auto load_stage = [&](int stage, int64_t k0) {
    copy16(staged_rows(stage) + load_row * kLd + load_part, row_src + k0, row_valid);
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // weight rows load_row and load_row + 64
        const int wrow = load_row + half * (kBlockColumns / 2);
        const bool valid = column0 + wrow < n;
        copy16(staged_weights(stage, m) + wrow * kLd + load_part, w[m] + (valid ? (column0 + wrow) * k : 0) + k0 + load_part,
               valid);
      }
  };

  const int warp = thread / 32, warp_row = (warp / (kBlockColumns / kWarpColumns)) * kWarpRows,
            warp_column = (warp % (kBlockColumns / kWarpColumns)) * kWarpColumns;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kMats][2][2];
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[m][i][j], 0.0f);

  const int steps = static_cast<int>(k / kStep);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) load_stage(s, int64_t{s} * kStep);
    commit_copies();
  }
  for (int step = 0; step < steps; ++step) {
    wait_copies<kStages - 2>();  // this step's stage has landed (this thread's copies)...
    __syncthreads();             // ...every thread's, and the stage about to be refilled is read
    const int next = step + kStages - 1;
    if (next < steps) load_stage(next % kStages, int64_t{next} * kStep);
    commit_copies();
    const int stage = step % kStages;
#pragma unroll
    for (int kk = 0; kk < kStep; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, Bf16, wmma::row_major> a[2];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(a[i], staged_rows(stage) + (warp_row + 16 * i) * kLd + kk, kLd);
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          // Weights [n, k] row-major are the k × n right operand in column-major order.
          wmma::fragment<wmma::matrix_b, 16, 16, 16, Bf16, wmma::col_major> b;
          wmma::load_matrix_sync(b, staged_weights(stage, m) + (warp_column + 16 * j) * kLd + kk, kLd);
#pragma unroll
          for (int i = 0; i < 2; ++i) wmma::mma_sync(acc[m][i][j], a[i], b, acc[m][i][j]);
        }
    }
  }
  wait_copies<0>();
  __syncthreads();  // the stages are free: the results go through the same shared memory
  float* results = reinterpret_cast<float*>(shared);
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::store_matrix_sync(results + m * kTileRows * kOutLd + (warp_row + 16 * i) * kOutLd + warp_column + 16 * j,
                                acc[m][i][j], kOutLd, wmma::mem_row_major);
  __syncthreads();
  for (int idx = thread; idx < kTileRows * kBlockColumns; idx += kThreadsPerBlock) {
    const int r = idx / kBlockColumns, c = idx % kBlockColumns;
    if (r >= rows || column0 + c >= n) continue;
    const float g = results[r * kOutLd + c];
    if constexpr (kSwiglu) {
      // silu_mul's arithmetic, as the float32 kernels compute it.
      act[(r0 + r) * n + column0 + c] = __float2bfloat16_rn(g * sigmoid(g) * results[kTileRows * kOutLd + r * kOutLd + c]);
    } else {
      out[(r0 + r) * n + column0 + c] = g;
    }
  }
}

unsigned column_blocks(int64_t columns) {
  return static_cast<unsigned>((columns + kBlockColumns - 1) / kBlockColumns);
}

template <bool kSwiglu>
void launch_tiles(dim3 grid, cudaStream_t stream, const Bf16* x, const int32_t* order, int top_k,
                  const int32_t* offsets, const int32_t* tile_expert, const int32_t* tile_row, const void* const* first,
                  const void* const* second, int64_t k, int64_t n, Bf16* act, float* out) {
  static const bool raised = [] {
    check(cudaFuncSetAttribute(grouped_tile_kernel<kSwiglu>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(kSharedBytes<kSwiglu>)),
          "cudaFuncSetAttribute (grouped tiles)");
    return true;
  }();
  (void)raised;
  grouped_tile_kernel<kSwiglu><<<grid, kThreadsPerBlock, kSharedBytes<kSwiglu>, stream>>>(
      x, order, top_k, offsets, tile_expert, tile_row, first, second, k, n, act, out);
}

}  // namespace

int64_t grouped_tiles_capacity(int64_t pairs, int num_experts) {
  // Each expert with rows leaves at most one partial tile.
  return (pairs + kTileRows - 1) / kTileRows + std::min<int64_t>(num_experts, pairs);
}

void grouped_expert_mlp_tiles(const uint16_t* x, int64_t tokens, int top_k, const int32_t* order,
                              const int32_t* offsets, const int32_t* active, const ExpertTables& experts,
                              int32_t* tiles, uint16_t* act, float* out, cudaStream_t stream) {
  if (tokens == 0) return;
  if (experts.num_experts > 1024) throw Error("grouped_expert_mlp_tiles: at most 1024 experts a layer");
  const int64_t pairs = tokens * top_k;
  const int64_t capacity = grouped_tiles_capacity(pairs, experts.num_experts);
  int32_t* tile_expert = tiles;
  int32_t* tile_row = tiles + capacity;
  const int entries = static_cast<int>(std::min<int64_t>(experts.num_experts, pairs));
  expert_tiles_kernel<<<1, static_cast<unsigned>(entries), 0, stream>>>(offsets, active, entries,
                                                                        static_cast<int>(capacity), tile_expert, tile_row);
  check_launch("expert_tiles");
  const auto* x_bf16 = reinterpret_cast<const Bf16*>(x);
  auto* act_bf16 = reinterpret_cast<Bf16*>(act);
  const auto tile_count = static_cast<unsigned>(capacity);
  launch_tiles<true>(dim3(column_blocks(experts.width), tile_count), stream, x_bf16, order, top_k, offsets, tile_expert,
                     tile_row, experts.gate, experts.up, experts.hidden, experts.width, act_bf16, nullptr);
  check_launch("grouped_expert_mlp_tiles (gate, up)");
  launch_tiles<false>(dim3(column_blocks(experts.hidden), tile_count), stream, act_bf16, order, top_k, offsets,
                      tile_expert, tile_row, experts.down, nullptr, experts.width, experts.hidden, nullptr, out);
  check_launch("grouped_expert_mlp_tiles (down)");
}

}  // namespace moe::cuda
