// Weight-bound linears for few rows: the dense small_linear and the grouped routed-expert MLP. A
// warp takes a few consecutive output columns and reads their weight rows once per tile of up to
// kTile input rows, lanes taking eight consecutive weights at a time (widened as read), and sums its
// tile's dot products with warp shuffles. The grouped kernels find each expert's rows in device memory, so a MoE layer needs no
// host round trip and a decode step can be captured in a CUDA graph.
#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/weight_access.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kWarpsPerBlock = 8;
constexpr int kMaxTile = 8;

// acc[c][t] = w[c] · x[t] over k for the tile's first `rows` input rows x[t] and the warp's kCols
// weight rows; every lane ends with the sums. kVector: k is a multiple of 8 and w,
// x are aligned to 8 elements; lanes then take 8 consecutive weights at a time. A decode step's
// rows are short, so latency, not bandwidth, is what a warp waits for: the unrolled loop and the
// kCols rows keep several loads in flight, and fewer, longer-lived blocks spend less of the time
// being scheduled.
template <typename W, bool kVector, int kTile, int kCols>
__device__ __forceinline__ void warp_dot_tile(const W* const (&w)[kCols], const float* const (&x)[kTile], int rows,
                                              int64_t k, float (&acc)[kCols][kTile]) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int t = 0; t < kTile; ++t) acc[c][t] = 0.0f;
  if constexpr (kVector) {
#pragma unroll 4
    for (int64_t i = lane * 8; i < k; i += kWarpSize * 8) {
      float wv[kCols][8];
#pragma unroll
      for (int c = 0; c < kCols; ++c) load8(w[c] + i, wv[c]);
#pragma unroll
      for (int t = 0; t < kTile; ++t) {
        if (t >= rows) break;
        float xv[8];
        load8(x[t] + i, xv);
#pragma unroll
        for (int c = 0; c < kCols; ++c)
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[c][t] += wv[c][j] * xv[j];
      }
    }
  } else {
    for (int64_t i = lane; i < k; i += kWarpSize) {
      float wv[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) wv[c] = widen(w[c][i]);
#pragma unroll
      for (int t = 0; t < kTile; ++t) {
        if (t >= rows) break;
        const float xv = x[t][i];
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[c][t] += wv[c] * xv;
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int t = 0; t < kTile; ++t)
      for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        acc[c][t] += __shfl_xor_sync(kFullWarp, acc[c][t], offset);
}

// Lane t of the warp writes row t's value: out[t · stride] = value(t).
template <int kTile, typename Value>
__device__ __forceinline__ void write_tile(int rows, float* out, int64_t stride, Value value) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
#pragma unroll
  for (int t = 0; t < kTile; ++t)
    if (t == lane && t < rows) out[t * stride] = value(t);
}

// Rows begin .. end-1 of x (consecutive rows of k) times the warp's kCols weight rows, a tile at a
// time: out[c][r · stride[c]] = w[c] · x[r] for the first `valid` columns.
template <typename W, bool kVector, int kTile, int kCols>
__device__ __forceinline__ void dense_rows(const W* const (&w)[kCols], int valid, const float* x, int64_t begin,
                                           int64_t end, int64_t k, float* const (&out)[kCols],
                                           const int64_t (&stride)[kCols]) {
  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    const int rows = static_cast<int>(end - r0 < kTile ? end - r0 : kTile);
    const float* x_rows[kTile];
#pragma unroll
    for (int t = 0; t < kTile; ++t) x_rows[t] = x + (r0 + t) * k;
    float acc[kCols][kTile];
    warp_dot_tile<W, kVector, kTile, kCols>(w, x_rows, rows, k, acc);
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (c < valid) write_tile<kTile>(rows, out[c] + r0 * stride[c], stride[c], [&](int t) { return acc[c][t]; });
  }
}

// Weight rows a warp takes at once in the dense and down kernels: each x value loaded serves this
// many of them. A tile of kMaxTile rows already reuses each weight eight times, and its
// accumulators take the registers: there, more warps with fewer rows each were faster (58 against
// 67 us for a decode of 32 tokens' down projections on the H100).
template <int kTile>
constexpr int kRowsPerWarp = kTile < kMaxTile ? 4 : 2;

// The warp's first column: warps take kCols consecutive columns each.
template <int kCols>
__device__ __forceinline__ int64_t warp_first_column() {
  return (static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize) * kCols;
}

// The matrices of one small_linears launch: their columns side by side, warp by warp.
struct LinearParts {
  const void* w[kMaxLinearParts];
  float* y[kMaxLinearParts];
  int64_t n[kMaxLinearParts];
  int count;
};

template <typename W, bool kVector, int kTile>
__global__ void small_linear_kernel(const float* x, int64_t tokens, LinearParts parts, int64_t columns, int64_t k) {
  constexpr int kCols = kRowsPerWarp<kTile>;
  const int64_t first = warp_first_column<kCols>();
  if (first >= columns) return;
  // Each of the warp's columns in its part; columns past the end repeat the last one (their loads
  // are cached, their results dropped).
  const W* rows[kCols];
  float* outs[kCols];
  int64_t widths[kCols];
  int valid = 0;
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    int64_t column = first + c < columns ? first + c : columns - 1;
    valid += first + c < columns ? 1 : 0;
    int part = 0;
    while (part + 1 < parts.count && column >= parts.n[part]) column -= parts.n[part++];
    rows[c] = static_cast<const W*>(parts.w[part]) + column * k;
    outs[c] = parts.y[part] + column;
    widths[c] = parts.n[part];
  }
  dense_rows<W, kVector, kTile, kCols>(rows, valid, x, 0, tokens, k, outs, widths);
}

// An expert's kCols consecutive weight rows from `column` of a matrix with `count` rows of `k`;
// rows past the end repeat the last one. Returns how many are real.
template <typename W, int kCols>
__device__ __forceinline__ int expert_rows(const void* matrix, int64_t column, int64_t count, int64_t k,
                                           const W* (&rows)[kCols]) {
#pragma unroll
  for (int c = 0; c < kCols; ++c)
    rows[c] = static_cast<const W*>(matrix) + (column + c < count ? column + c : count - 1) * k;
  return static_cast<int>(count - column < kCols ? count - column : kCols);
}

// A warp takes kSwigluColumns output columns: their gate and up rows (four weight rows at every
// tile size; measured better than two at a tile of eight) in one pass over x.
constexpr int kSwigluColumns = 2;

template <typename W, bool kVector, int kTile>
__global__ void grouped_swiglu_kernel(const float* x, const int32_t* order, int top_k, const int32_t* offsets,
                                      const int32_t* active, const void* const* gate, const void* const* up,
                                      int64_t hidden, int64_t width, float* act) {
  constexpr int kCols = kSwigluColumns;
  const int e = active[blockIdx.y];
  if (e < 0) return;
  const int64_t begin = offsets[e], end = offsets[e + 1], column = warp_first_column<kCols>();
  if (begin == end || column >= width) return;
  const W *g[kCols], *u[kCols], *gate_up[2 * kCols];
  const int valid = expert_rows<W, kCols>(gate[e], column, width, hidden, g);
  expert_rows<W, kCols>(up[e], column, width, hidden, u);
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    gate_up[c] = g[c];
    gate_up[kCols + c] = u[c];
  }
  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    const int rows = static_cast<int>(end - r0 < kTile ? end - r0 : kTile);
    // Row r is routed pair order[r], token order[r] / top_k: read in place, not gathered first.
    const float* x_rows[kTile];
#pragma unroll
    for (int t = 0; t < kTile; ++t) x_rows[t] = x + (t < rows ? order[r0 + t] / top_k : 0) * hidden;
    float acc[2 * kCols][kTile];  // gate rows, then up rows
    warp_dot_tile<W, kVector, kTile, 2 * kCols>(gate_up, x_rows, rows, hidden, acc);
    // silu_mul's arithmetic, as the per-expert path computes it.
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (c < valid)
        write_tile<kTile>(rows, act + r0 * width + column + c, width,
                          [&](int t) { return acc[c][t] * sigmoid(acc[c][t]) * acc[kCols + c][t]; });
  }
}

template <typename W, bool kVector, int kTile>
__global__ void grouped_down_kernel(const float* act, const int32_t* offsets, const int32_t* active,
                                    const void* const* down, int64_t hidden, int64_t width, float* out) {
  constexpr int kCols = kRowsPerWarp<kTile>;
  const int e = active[blockIdx.y];
  if (e < 0) return;
  const int64_t begin = offsets[e], end = offsets[e + 1], column = warp_first_column<kCols>();
  if (begin == end || column >= hidden) return;
  const W* d[kCols];
  const int valid = expert_rows<W, kCols>(down[e], column, hidden, width, d);
  float* outs[kCols];
  int64_t strides[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    outs[c] = out + column + c;
    strides[c] = hidden;
  }
  dense_rows<W, kVector, kTile, kCols>(d, valid, act, begin, end, width, outs, strides);
}

__global__ void widen_bf16_kernel(const uint16_t* src, int64_t n, float* dst) {
  MOE_GRID_STRIDE(i, n) dst[i] = widen(src[i]);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Blocks for `columns` output columns, kWarpsPerBlock warps of `per_warp` columns each.
unsigned column_blocks(int64_t columns, int per_warp) {
  const int64_t per_block = int64_t{kWarpsPerBlock} * per_warp;
  return static_cast<unsigned>((columns + per_block - 1) / per_block);
}

// Rows a warp takes at a time: as many as a step can give one weight row (all of its tokens, at
// most), so a decode of one token keeps one accumulator, not eight.
int tile_for(int64_t tokens) { return tokens >= 8 ? 8 : tokens >= 4 ? 4 : tokens >= 2 ? 2 : 1; }

// Runs Launch<W, kVector, kTile>::run(args...) for the weights' stored type, the vector choice and
// the tile.
template <template <typename, bool, int> class Launch, typename W, bool kVector, typename... Args>
void dispatch_tile(int tile, Args... args) {
  switch (tile) {
    case 1: return Launch<W, kVector, 1>::run(args...);
    case 2: return Launch<W, kVector, 2>::run(args...);
    case 4: return Launch<W, kVector, 4>::run(args...);
    default: return Launch<W, kVector, kMaxTile>::run(args...);
  }
}
template <template <typename, bool, int> class Launch, typename... Args>
void dispatch(bool bf16, bool vector, int tile, Args... args) {
  if (bf16)
    vector ? dispatch_tile<Launch, uint16_t, true>(tile, args...) : dispatch_tile<Launch, uint16_t, false>(tile, args...);
  else
    vector ? dispatch_tile<Launch, float, true>(tile, args...) : dispatch_tile<Launch, float, false>(tile, args...);
}

template <typename W, bool kVector, int kTile>
struct SmallLinear {
  static void run(const float* x, int64_t tokens, const LinearParts& parts, int64_t columns, int64_t k,
                  cudaStream_t stream) {
    small_linear_kernel<W, kVector, kTile><<<column_blocks(columns, kRowsPerWarp<kTile>), kWarpsPerBlock * kWarpSize, 0, stream>>>(
        x, tokens, parts, columns, k);
  }
};

template <typename W, bool kVector, int kTile>
struct GroupedExpertMlp {
  static void run(const float* x, const int32_t* order, int top_k, const int32_t* offsets, const int32_t* active,
                  unsigned active_rows, ExpertTables experts, float* act, float* out, cudaStream_t stream) {
    const dim3 swiglu_grid(column_blocks(experts.width, kSwigluColumns), active_rows),
        down_grid(column_blocks(experts.hidden, kRowsPerWarp<kTile>), active_rows);
    grouped_swiglu_kernel<W, kVector, kTile><<<swiglu_grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(
        x, order, top_k, offsets, active, experts.gate, experts.up, experts.hidden, experts.width, act);
    grouped_down_kernel<W, kVector, kTile><<<down_grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(
        act, offsets, active, experts.down, experts.hidden, experts.width, out);
  }
};

}  // namespace

void small_linear(const float* x, int64_t tokens, const WeightRef& w, float* y, cudaStream_t stream) {
  small_linears(x, tokens, &w, &y, 1, stream);
}

void small_linears(const float* x, int64_t tokens, const WeightRef* w, float* const* y, int parts,
                   cudaStream_t stream) {
  if (parts < 1 || parts > kMaxLinearParts) throw Error("small_linears takes 1 to 3 matrices");
  if (tokens == 0) return;
  LinearParts launch{};
  launch.count = parts;
  int64_t columns = 0;
  bool vector = w[0].cols % 8 == 0 && aligned16(x);
  for (int i = 0; i < parts; ++i) {
    if (w[i].cols != w[0].cols || w[i].bf16 != w[0].bf16)
      throw Error("small_linears: the matrices differ in width or stored type");
    launch.w[i] = w[i].data;
    launch.y[i] = y[i];
    launch.n[i] = w[i].rows;
    columns += w[i].rows;
    vector = vector && aligned16(w[i].data);
  }
  dispatch<SmallLinear>(w[0].bf16, vector, tile_for(tokens), x, tokens, launch, columns, w[0].cols, stream);
  check_launch("small_linear");
}

void widen_bf16(const uint16_t* src, int64_t n, float* dst, cudaStream_t stream) {
  if (n == 0) return;
  widen_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, n, dst);
  check_launch("widen_bf16");
}

void grouped_expert_mlp(const float* x, int64_t tokens, int top_k, const int32_t* order, const int32_t* offsets,
                        const int32_t* active, const ExpertTables& experts, float* act, float* out,
                        cudaStream_t stream) {
  if (tokens == 0) return;
  // Every expert's matrices come from cudaMalloc (aligned), so rows are aligned when the widths are.
  const bool vector = experts.hidden % 8 == 0 && experts.width % 8 == 0 && aligned16(x) && aligned16(act);
  // A step's pairs reach at most that many experts.
  const auto active_rows = static_cast<unsigned>(std::min<int64_t>(experts.num_experts, tokens * top_k));
  // An expert gets at most one row per token.
  dispatch<GroupedExpertMlp>(experts.bf16, vector, tile_for(tokens), x, order, top_k, offsets, active, active_rows,
                             experts, act, out, stream);
  check_launch("grouped_expert_mlp");
}

}  // namespace moe::cuda
