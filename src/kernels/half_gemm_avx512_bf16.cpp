// The bf16-product GEMM's AVX-512 BF16 kernels (KernelDType::BF16 on CPUs with avx512_bf16):
// register tiles whose step over a 32-column chunk is one vdpbf16ps per row and token. The file
// is compiled for AVX-512 BF16 only below its target pragma, as half_gemm_avx512.cpp is for AVX-512;
// half_gemm.cpp calls it only where the CPU has it.
//
// How the tiled weights feed vdpbf16ps: the instruction multiplies the bf16 PAIRS of each 32-bit
// lane, lane i of both operands holding elements 2i and 2i + 1, and adds both products to float
// lane i. A tiled chunk-row (kernels/weight_tiling.h) is 32 consecutive columns of one row in 64
// bytes, exactly one zmm load, so lane i of it already holds columns 2i and 2i + 1, adjacent along
// k. Activations packed as bf16 in plain column order pair up the same way. So the bf16 weights are
// read in the same tiled layout as the float32 mode's (no second copy, no interleaving at tiling
// time, no shuffle in registers): only the activations are packed differently.

// As in half_gemm_avx512.cpp: GCC 12's AVX-512 headers trip its uninitialised-value warnings.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/half_gemm_kernels.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#endif

#include "kernels/half_gemm_avx512_vec.inc"
#include "kernels/half_gemm_tile.inc"

namespace moe::half_gemm_kernels {
namespace {

static_assert(Vec::kChunk == weight_tiling::kChunkCols, "a step is one whole tiled chunk-row: one zmm of bf16");

// 32 bf16 values at p, as vdpbf16ps's operand.
inline __m512bh load_bf16(const uint16_t* p) { return (__m512bh)_mm512_loadu_si512(p); }

// One step over a chunk: acc[r][t] += the pairwise products of W[r]'s and x[t]'s 32 bf16 columns,
// two a lane. The product of two bf16 numbers is exact in float32; vdpbf16ps adds the two to the
// lane in float32 (flushing denormals).
struct Bf16DotStep {
  using Activation = uint16_t;
  template <int R, int T>
  static void step(const uint16_t* w, int64_t group_stride, const uint16_t* x, int64_t x_stride, __m512 (&acc)[R][T]) {
    __m512bh wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load_bf16(w + tile_row_offset(r, group_stride));
    for (int t = 0; t < T; ++t) {
      const __m512bh xv = load_bf16(x + t * x_stride);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], xv);
    }
  }
};

constexpr Bf16DotTileSet kBf16DotTileSet = {
    kMaxTokens, {0, 8, 8, 4, 4, 4, 4},
    TileTable<Tiles<Vec, Bf16DotStep>, kMaxRows, kMinTokens, kMaxTokens, Bf16DotTileFn>::at};

}  // namespace

const Bf16DotTileSet& avx512_bf16_dot_tiles() { return kBf16DotTileSet; }

}  // namespace moe::half_gemm_kernels

#if defined(__clang__)
#pragma clang attribute pop
#endif
