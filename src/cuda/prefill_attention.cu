// Causal GQA attention of prefill chunks over the bf16 slot pool, tiled over keys (flash-attention
// style) on tensor cores. A block takes one query tile (up to kQueryTile consecutive new tokens of one
// plain sequence, DeviceBatch's QueryRuns) and one q head; its 4 warps hold 16 query rows each. The
// block walks the sequence's positions kKeyTile at a time, up to its last query's position: each
// key tile's K and V rows are gathered from the pool through the slot table into shared memory by
// cp.async, one tile ahead of the one being used (two stages). Each warp computes its scores S = Q·Kᵀ
// with mma.sync m16n8k16 (bf16 inputs: q rounded to bf16 once; float32 accumulation), masks the
// keys after each row's position, keeps a running softmax per row (max and sum, in float32, the
// output rescaled when the max grows), and adds P·V with P rounded to bf16 (V read transposed by
// ldmatrix). Every K/V row is read once per query tile and head instead of once per query token and
// head (attention.cu's per-token kernel). Decode tokens and short runs stay with the per-token kernel,
// which splits a token's positions over blocks when there are few of them (flash-decoding).
#include <cuda_bf16.h>

#include <cmath>
#include <string>

#include "common/error.h"
#include "cuda/async_copy.cuh"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace moe::cuda {
namespace {

using Bf16 = __nv_bfloat16;

constexpr int kKeyTile = 64;
constexpr int kTileWarps = kQueryTile / 16;  // a warp per 16 query rows (one mma's rows)
constexpr int kTileThreads = kTileWarps * 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// A staged K or V row: head_dim bf16 and 16 bytes of padding, so that the 8 rows an mma fragment or
// ldmatrix reads at once fall in different banks.
template <int kHeadDim>
constexpr int kStagedRow = kHeadDim + 8;
template <int kHeadDim>
constexpr size_t kSharedBytes = 2 /* stages */ * 2 /* K and V */ * sizeof(Bf16) * kKeyTile * kStagedRow<kHeadDim>;

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);  // lo in the low half: the lower column
  return *reinterpret_cast<const uint32_t*>(&pair);
}

// c += a · b for one m16n8k16 tile: a 16 × 16 (row-major fragment), b 16 × 8 (column-major), c float32.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8 × 8 bf16 matrices from shared memory, transposed; lane l gives the address of row l % 8 of
// matrix l / 8.
__device__ __forceinline__ void load_transposed(uint32_t (&r)[4], const Bf16* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// blockIdx.x: the query tile; blockIdx.y: the q head. Fragment layouts are mma.sync's: lane l holds
// rows l/4 and l/4 + 8 of its warp's 16, and columns 2·(l%4), +1 of each 8-wide n tile.
template <int kHeadDim>
__global__ void __launch_bounds__(kTileThreads) tiled_attention_kernel(const float* q, const int32_t* tiles,
                                                                       AttentionTables tables, const Bf16* key_pool,
                                                                       const Bf16* value_pool, int num_heads,
                                                                       int group_size, float scale_log2, float* out) {
  constexpr int kSteps = kHeadDim / 16;  // k steps of Q·Kᵀ; also pairs of 8-wide output tiles of P·V
  constexpr int kRow = kStagedRow<kHeadDim>;
  constexpr int kChunks = kHeadDim / 8;  // 16-byte pieces of a K/V row
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Bf16* staged = reinterpret_cast<Bf16*>(shared_bytes);  // [stage][K, V][kKeyTile][kRow]
  const auto staged_rows = [&](int stage, int matrix) { return staged + (stage * 2 + matrix) * kKeyTile * kRow; };

  const int first = tiles[2 * blockIdx.x], count = tiles[2 * blockIdx.x + 1];
  const int h = static_cast<int>(blockIdx.y);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t row_size = static_cast<int64_t>(num_heads / group_size) * kHeadDim;
  const int64_t kv_offset = static_cast<int64_t>(h / group_size) * kHeadDim;
  const int32_t* slots = tables.slot_table + tables.slot_offsets[first];
  // The tile's tokens run in position order: the last sees the most positions.
  const int visible = tables.positions[first + count - 1] + 1;
  const int key_tiles = (visible + kKeyTile - 1) / kKeyTile;

  // This lane's two query rows; rows past the tile's count repeat its last token (never written).
  const int row0 = warp * 16 + lane / 4, row1 = row0 + 8;
  const int token0 = first + min(row0, count - 1), token1 = first + min(row1, count - 1);
  const int position0 = tables.positions[token0], position1 = tables.positions[token1];
  const int warp_last_position = tables.positions[first + min(warp * 16 + 15, count - 1)];

  uint32_t query[kSteps][4];
  {
    const float* q0 = q + (static_cast<int64_t>(token0) * num_heads + h) * kHeadDim;
    const float* q1 = q + (static_cast<int64_t>(token1) * num_heads + h) * kHeadDim;
#pragma unroll
    for (int k = 0; k < kSteps; ++k) {
      const int c = k * 16 + (lane % 4) * 2;
      query[k][0] = pack_bf16(q0[c], q0[c + 1]);
      query[k][1] = pack_bf16(q1[c], q1[c + 1]);
      query[k][2] = pack_bf16(q0[c + 8], q0[c + 9]);
      query[k][3] = pack_bf16(q1[c + 8], q1[c + 9]);
    }
  }

  // Gathers key tile `tile`'s K and V rows into `stage`; positions past `visible` are zeros.
  const auto stage_tile = [&](int tile, int stage) {
    Bf16* keys = staged_rows(stage, 0);
    Bf16* values = staged_rows(stage, 1);
    for (int c = static_cast<int>(threadIdx.x); c < kKeyTile * kChunks; c += kTileThreads) {
      const int key = c / kChunks, part = (c % kChunks) * 8;
      const int position = tile * kKeyTile + key;
      const bool valid = position < visible;
      const int64_t at = (valid ? static_cast<int64_t>(slots[position]) * row_size + kv_offset : 0) + part;
      copy16(keys + key * kRow + part, key_pool + at, valid);
      copy16(values + key * kRow + part, value_pool + at, valid);
    }
    commit_copies();
  };

  float acc[2 * kSteps][4] = {};  // the output's 8-wide column tiles, unnormalised
  float max0 = -INFINITY, max1 = -INFINITY, sum0 = 0.0f, sum1 = 0.0f;  // per row, log2 units; sums per lane
  stage_tile(0, 0);
  for (int tile = 0; tile < key_tiles; ++tile) {
    const int stage = tile % 2;
    if (tile + 1 < key_tiles) {
      stage_tile(tile + 1, 1 - stage);
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    __syncthreads();
    const int base = tile * kKeyTile;
    if (base <= warp_last_position) {  // else every key of the tile is after this warp's rows
      const Bf16* keys = staged_rows(stage, 0);
      const Bf16* values = staged_rows(stage, 1);
      float score[kKeyTile / 8][4] = {};
#pragma unroll
      for (int n = 0; n < kKeyTile / 8; ++n) {
        const Bf16* key_row = keys + (n * 8 + lane / 4) * kRow + (lane % 4) * 2;
#pragma unroll
        for (int k = 0; k < kSteps; ++k)
          mma_bf16(score[n], query[k], *reinterpret_cast<const uint32_t*>(key_row + k * 16),
                   *reinterpret_cast<const uint32_t*>(key_row + k * 16 + 8));
      }
      // Scale into log2 units, mask, and each row's largest score.
      float tile_max0 = -INFINITY, tile_max1 = -INFINITY;
#pragma unroll
      for (int n = 0; n < kKeyTile / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int position = base + n * 8 + (lane % 4) * 2 + (e % 2);
          const bool upper = e >= 2;
          const bool seen = position <= (upper ? position1 : position0);
          score[n][e] = seen ? score[n][e] * scale_log2 : -INFINITY;
          if (upper)
            tile_max1 = fmaxf(tile_max1, score[n][e]);
          else
            tile_max0 = fmaxf(tile_max0, score[n][e]);
        }
#pragma unroll
      for (int offset = 1; offset < 4; offset *= 2) {
        tile_max0 = fmaxf(tile_max0, __shfl_xor_sync(kFullWarp, tile_max0, offset));
        tile_max1 = fmaxf(tile_max1, __shfl_xor_sync(kFullWarp, tile_max1, offset));
      }
      // A row that has seen no position yet keeps max -inf; its weights are then 0, not NaN.
      const float new_max0 = fmaxf(max0, tile_max0), new_max1 = fmaxf(max1, tile_max1);
      const float shift0 = new_max0 == -INFINITY ? 0.0f : new_max0;
      const float shift1 = new_max1 == -INFINITY ? 0.0f : new_max1;
      const float rescale0 = exp2f(max0 - shift0), rescale1 = exp2f(max1 - shift1);
      max0 = new_max0;
      max1 = new_max1;
      sum0 *= rescale0;
      sum1 *= rescale1;
#pragma unroll
      for (int n = 0; n < 2 * kSteps; ++n) {
        acc[n][0] *= rescale0;
        acc[n][1] *= rescale0;
        acc[n][2] *= rescale1;
        acc[n][3] *= rescale1;
      }
      // P = exp2(score - max), into A fragments of 16 keys each: score tiles 2k and 2k + 1.
      uint32_t weights[kKeyTile / 16][4];
#pragma unroll
      for (int k = 0; k < kKeyTile / 16; ++k)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float* s = score[2 * k + half];
          const float p0 = exp2f(s[0] - shift0), p1 = exp2f(s[1] - shift0);
          const float p2 = exp2f(s[2] - shift1), p3 = exp2f(s[3] - shift1);
          sum0 += p0 + p1;
          sum1 += p2 + p3;
          weights[k][2 * half] = pack_bf16(p0, p1);
          weights[k][2 * half + 1] = pack_bf16(p2, p3);
        }
      // acc += P · V: V's rows are keys; ldmatrix.trans gives its column-major B fragments.
#pragma unroll
      for (int k = 0; k < kKeyTile / 16; ++k) {
        const int key = k * 16 + ((lane / 8) % 2) * 8 + lane % 8;
#pragma unroll
        for (int d = 0; d < kSteps; ++d) {
          uint32_t b[4];
          load_transposed(b, values + key * kRow + d * 16 + (lane / 16) * 8);
          mma_bf16(acc[2 * d], weights[k], b[0], b[1]);
          mma_bf16(acc[2 * d + 1], weights[k], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the stage is refilled next iteration
  }

  // Each row's sum over its four lanes, then the rows of this tile's tokens written.
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    sum0 += __shfl_xor_sync(kFullWarp, sum0, offset);
    sum1 += __shfl_xor_sync(kFullWarp, sum1, offset);
  }
  const int column = (lane % 4) * 2;
  if (row0 < count) {
    float* o = out + (static_cast<int64_t>(token0) * num_heads + h) * kHeadDim + column;
#pragma unroll
    for (int n = 0; n < 2 * kSteps; ++n)
      *reinterpret_cast<float2*>(o + n * 8) = make_float2(acc[n][0] / sum0, acc[n][1] / sum0);
  }
  if (row1 < count) {
    float* o = out + (static_cast<int64_t>(token1) * num_heads + h) * kHeadDim + column;
#pragma unroll
    for (int n = 0; n < 2 * kSteps; ++n)
      *reinterpret_cast<float2*>(o + n * 8) = make_float2(acc[n][2] / sum1, acc[n][3] / sum1);
  }
}

template <int kHeadDim>
void launch_tiled(const float* q, const int32_t* tiles, int64_t num_tiles, const AttentionTables& tables,
                  const KvPoolRef& pool, int num_heads, int num_kv_heads, float* out, cudaStream_t stream) {
  constexpr size_t shared = kSharedBytes<kHeadDim>;
  static const bool raised = [] {  // over 48 KB for head_dim 128: allowed once per kernel
    check(cudaFuncSetAttribute(tiled_attention_kernel<kHeadDim>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(shared)),
          "cudaFuncSetAttribute (tiled attention)");
    return true;
  }();
  (void)raised;
  constexpr double kLog2E = 1.4426950408889634;  // scores in log2 units: exp2f in the softmax
  const float scale_log2 = static_cast<float>(kLog2E / std::sqrt(static_cast<double>(kHeadDim)));
  const dim3 grid(static_cast<unsigned>(num_tiles), static_cast<unsigned>(num_heads));
  tiled_attention_kernel<kHeadDim><<<grid, kTileThreads, shared, stream>>>(
      q, tiles, tables, static_cast<const Bf16*>(pool.keys), static_cast<const Bf16*>(pool.values), num_heads,
      num_heads / num_kv_heads, scale_log2, out);
  check_launch("tiled_attention");
}

}  // namespace

bool tiled_attention_supports(const KvPoolRef& pool, int head_dim) {
  return pool.bf16 && (head_dim == 16 || head_dim == 32 || head_dim == 64 || head_dim == 128);
}

void tiled_attention(const float* q, const int32_t* tiles, int64_t num_tiles, const AttentionTables& tables,
                     const KvPoolRef& pool, int num_heads, int num_kv_heads, int head_dim, float* out,
                     cudaStream_t stream) {
  if (!tiled_attention_supports(pool, head_dim))
    throw Error("the tiled attention takes bf16 K/V of head_dim 16, 32, 64 or 128, not head_dim " +
                std::to_string(head_dim) + (pool.bf16 ? "" : " in float32"));
  if (num_tiles == 0) return;
  switch (head_dim) {
    case 16: launch_tiled<16>(q, tiles, num_tiles, tables, pool, num_heads, num_kv_heads, out, stream); break;
    case 32: launch_tiled<32>(q, tiles, num_tiles, tables, pool, num_heads, num_kv_heads, out, stream); break;
    case 64: launch_tiled<64>(q, tiles, num_tiles, tables, pool, num_heads, num_kv_heads, out, stream); break;
    default: launch_tiled<128>(q, tiles, num_tiles, tables, pool, num_heads, num_kv_heads, out, stream); break;
  }
}

}  // namespace moe::cuda
