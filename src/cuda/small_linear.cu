// Weight-bound linears for few rows: the dense small_linear and the grouped routed-expert MLP. One
// warp per output column reads that weight row once per tile of up to kTile input rows, lanes taking
// eight consecutive weights at a time (widened as read), and sums its tile's dot products with warp
// shuffles. The grouped kernels find each expert's rows in device memory, so a MoE layer needs no
// host round trip and a decode step can be captured in a CUDA graph.
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

// acc[t] = w · x[t] over k for the tile's first `rows` rows (x rows `x_stride` apart); every lane
// ends with the sums. kVector: k is a multiple of 8 and w, x are aligned to 8 elements; lanes then
// take 8 consecutive weights at a time, and the unrolled loop keeps several loads in flight (a
// decode step's rows are short: latency, not bandwidth, is what a warp waits for).
template <typename W, bool kVector, int kTile>
__device__ __forceinline__ void warp_dot_tile(const W* w, const float* x, int64_t x_stride, int rows, int64_t k,
                                              float (&acc)[kTile]) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
#pragma unroll
  for (int t = 0; t < kTile; ++t) acc[t] = 0.0f;
  if constexpr (kVector) {
#pragma unroll 4
    for (int64_t i = lane * 8; i < k; i += kWarpSize * 8) {
      float wv[8];
      load8(w + i, wv);
#pragma unroll
      for (int t = 0; t < kTile; ++t) {
        if (t >= rows) break;
        float xv[8];
        load8(x + t * x_stride + i, xv);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[t] += wv[j] * xv[j];
      }
    }
  } else {
    for (int64_t i = lane; i < k; i += kWarpSize) {
      const float wv = widen(w[i]);
#pragma unroll
      for (int t = 0; t < kTile; ++t) {
        if (t >= rows) break;
        acc[t] += wv * x[t * x_stride + i];
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kTile; ++t)
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) acc[t] += __shfl_xor_sync(kFullWarp, acc[t], offset);
}

// Lane t of the warp writes row t's value: out[t · stride] = value(acc[t]).
template <int kTile, typename Value>
__device__ __forceinline__ void write_tile(int rows, float* out, int64_t stride, Value value) {
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
#pragma unroll
  for (int t = 0; t < kTile; ++t)
    if (t == lane && t < rows) out[t * stride] = value(t);
}

__device__ __forceinline__ int64_t warp_column() {
  return static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
}

// The matrices of one small_linears launch: their columns side by side, warp by warp.
struct LinearParts {
  const void* w[kMaxLinearParts];
  float* y[kMaxLinearParts];
  int64_t n[kMaxLinearParts];
  int count;
};

template <typename W, bool kVector, int kTile>
__global__ void small_linear_kernel(const float* x, int64_t tokens, LinearParts parts, int64_t k) {
  int64_t column = warp_column();
  int part = 0;
  while (part < parts.count && column >= parts.n[part]) column -= parts.n[part++];
  if (part == parts.count) return;
  const int64_t n = parts.n[part];
  const W* row = static_cast<const W*>(parts.w[part]) + column * k;
  float* y = parts.y[part];
  for (int64_t t0 = 0; t0 < tokens; t0 += kTile) {
    const int rows = static_cast<int>(tokens - t0 < kTile ? tokens - t0 : kTile);
    float acc[kTile];
    warp_dot_tile<W, kVector, kTile>(row, x + t0 * k, k, rows, k, acc);
    write_tile<kTile>(rows, y + t0 * n + column, n, [&](int t) { return acc[t]; });
  }
}

template <typename W, bool kVector, int kTile>
__global__ void grouped_swiglu_kernel(const float* x, const int32_t* offsets, const void* const* gate,
                                      const void* const* up, int64_t hidden, int64_t width, float* act) {
  const int e = static_cast<int>(blockIdx.y);
  const int64_t begin = offsets[e], end = offsets[e + 1], column = warp_column();
  if (begin == end || column >= width) return;
  const W* g = static_cast<const W*>(gate[e]) + column * hidden;
  const W* u = static_cast<const W*>(up[e]) + column * hidden;
  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    const int rows = static_cast<int>(end - r0 < kTile ? end - r0 : kTile);
    float g_acc[kTile], u_acc[kTile];
    warp_dot_tile<W, kVector, kTile>(g, x + r0 * hidden, hidden, rows, hidden, g_acc);
    warp_dot_tile<W, kVector, kTile>(u, x + r0 * hidden, hidden, rows, hidden, u_acc);
    // silu_mul's arithmetic, as the per-expert path computes it.
    write_tile<kTile>(rows, act + r0 * width + column, width,
               [&](int t) { return g_acc[t] * sigmoid(g_acc[t]) * u_acc[t]; });
  }
}

template <typename W, bool kVector, int kTile>
__global__ void grouped_down_kernel(const float* act, const int32_t* offsets, const void* const* down, int64_t hidden,
                                    int64_t width, float* out) {
  const int e = static_cast<int>(blockIdx.y);
  const int64_t begin = offsets[e], end = offsets[e + 1], column = warp_column();
  if (begin == end || column >= hidden) return;
  const W* d = static_cast<const W*>(down[e]) + column * width;
  for (int64_t r0 = begin; r0 < end; r0 += kTile) {
    const int rows = static_cast<int>(end - r0 < kTile ? end - r0 : kTile);
    float acc[kTile];
    warp_dot_tile<W, kVector, kTile>(d, act + r0 * width, width, rows, width, acc);
    write_tile<kTile>(rows, out + r0 * hidden + column, hidden, [&](int t) { return acc[t]; });
  }
}

__global__ void widen_bf16_kernel(const uint16_t* src, int64_t n, float* dst) {
  MOE_GRID_STRIDE(i, n) dst[i] = widen(src[i]);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

unsigned column_blocks(int64_t columns) {
  return static_cast<unsigned>((columns + kWarpsPerBlock - 1) / kWarpsPerBlock);
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
    small_linear_kernel<W, kVector, kTile><<<column_blocks(columns), kWarpsPerBlock * kWarpSize, 0, stream>>>(
        x, tokens, parts, k);
  }
};

template <typename W, bool kVector, int kTile>
struct GroupedExpertMlp {
  static void run(const float* x, const int32_t* offsets, ExpertTables experts, float* act, float* out,
                  cudaStream_t stream) {
    const auto num_experts = static_cast<unsigned>(experts.num_experts);
    const dim3 swiglu_grid(column_blocks(experts.width), num_experts), down_grid(column_blocks(experts.hidden), num_experts);
    grouped_swiglu_kernel<W, kVector, kTile><<<swiglu_grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(
        x, offsets, experts.gate, experts.up, experts.hidden, experts.width, act);
    grouped_down_kernel<W, kVector, kTile><<<down_grid, kWarpsPerBlock * kWarpSize, 0, stream>>>(
        act, offsets, experts.down, experts.hidden, experts.width, out);
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

void grouped_expert_mlp(const float* x, int64_t tokens, const int32_t* offsets, const ExpertTables& experts,
                        float* act, float* out, cudaStream_t stream) {
  // Every expert's matrices come from cudaMalloc (aligned), so rows are aligned when the widths are.
  const bool vector = experts.hidden % 8 == 0 && experts.width % 8 == 0 && aligned16(x) && aligned16(act);
  // An expert gets at most one row per token.
  dispatch<GroupedExpertMlp>(experts.bf16, vector, tile_for(tokens), x, offsets, experts, act, out, stream);
  check_launch("grouped_expert_mlp");
}

}  // namespace moe::cuda
