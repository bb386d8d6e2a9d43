#include "kernels/half_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

#include "common/error.h"
#include "kernels/half_gemm_kernels.h"
#include "kernels/int8_activations.h"
#include "kernels/quantized_weight.h"
#include "kernels/simd.h"

namespace moe {

using half_gemm_kernels::TileSet;

namespace {

const TileSet& tiles_for(GemmIsa isa, DType dtype) {
  return isa == GemmIsa::Avx2 ? half_gemm_kernels::avx2_tiles(dtype) : half_gemm_kernels::avx512_tiles(dtype);
}

// Whether activations packed for these kernels feed the vdpbf16ps tiles.
bool bf16_dot(GemmIsa isa, KernelDType kernel_dtype) {
  return isa == GemmIsa::Avx512Bf16 && kernel_dtype == KernelDType::BF16;
}

// Calls `tiles` (a TileSet or Bf16DotTileSet) over rows [row_begin, row_end) for every token of
// `values`, x's activations in the layout those tiles read.
template <class Set, class Activation>
void gemm_rows(const Set& tiles, const Activation* values, const PackedActivations& x, const WeightView& weight,
               int64_t row_begin, int64_t row_end, float* y, int64_t out_stride) {
  const uint16_t* weights = static_cast<const uint16_t*>(weight.data);
  const int64_t group_stride = weight_tiling::group_stride(weight.cols);
  half_gemm_kernels::for_each_tile(
      tiles.max_tokens, tiles.rows_for_tokens, x.num_tokens, row_begin, row_end,
      [&](int64_t r, int rows, int64_t first_token, int tokens) {
        tiles.tile(rows, tokens)(weights + weight_tiling::row_offset(r, weight.cols), group_stride,
                                 values + first_token * x.stride, x.stride, x.stride,
                                 y + first_token * out_stride + (r - row_begin), out_stride);
      });
}

// x[0, n) rounded to bf16 into out[0, n), eight a step.
void round_row_to_bf16(const float* x, int64_t n, uint16_t* out) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i bits = _mm256_srli_epi32(_mm256_castps_si256(simd::round_to_bf16(_mm256_loadu_ps(x + c))), 16);
    // Packing works within 128-bit halves: the eight 16-bit values end up in quadwords 0 and 2.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c), _mm256_castsi256_si128(packed));
  }
  for (; c < n; ++c) out[c] = float_to_bf16(x[c]);
}

// x[num_tokens, cols] rounded to bf16 into out[num_tokens, stride] in column order, zeros past cols.
void pack_bf16(const float* x, PackedActivations& out) {
  out.bf16_values.resize(static_cast<size_t>(out.num_tokens * out.stride));
  for (int64_t t = 0; t < out.num_tokens; ++t) {
    uint16_t* out_row = out.bf16_values.data() + t * out.stride;
    round_row_to_bf16(x + t * out.cols, out.cols, out_row);
    std::fill(out_row + out.cols, out_row + out.stride, uint16_t{0});
  }
}

// Copies x into out's layout: whole chunks of `chunk` columns, each in column order or as its even
// columns followed by its odd ones, zeros past cols.
void pack(const float* x, int64_t chunk, bool interleaved, PackedActivations& out) {
  const int64_t cols = out.cols, half = chunk / 2;
  for (int64_t t = 0; t < out.num_tokens; ++t) {
    const float* x_row = x + t * cols;
    float* out_row = out.values.data() + t * out.stride;
    for (int64_t c = 0; c < out.stride; c += chunk) {
      const int64_t present = std::clamp<int64_t>(cols - c, 0, chunk);  // none in the padding past cols
      float* to = out_row + c;
      if (present < chunk) std::fill(to, to + chunk, 0.0f);
      const float* from = x_row + c;
      if (!interleaved) {
        std::copy(from, from + present, to);
      } else if (present == chunk) {  // the common case, in a loop the compiler vectorises
        for (int64_t j = 0; j < half; ++j) {
          to[j] = from[2 * j];
          to[half + j] = from[2 * j + 1];
        }
      } else {
        for (int64_t j = 0; j < present; ++j) to[(j % 2) * half + j / 2] = from[j];
      }
    }
  }
}

GemmIsa isa_from_environment() {
  constexpr GemmIsa kWidestFirst[] = {GemmIsa::Avx512Bf16, GemmIsa::Avx512, GemmIsa::Avx2};
  const char* forced = std::getenv("MOE_GEMM_ISA");
  if (!forced || !*forced) return *std::find_if(std::begin(kWidestFirst), std::end(kWidestFirst), gemm_isa_supported);
  for (const GemmIsa isa : kWidestFirst) {
    if (std::string(forced) != gemm_isa_name(isa)) continue;
    if (!gemm_isa_supported(isa)) throw Error(std::string("MOE_GEMM_ISA=") + forced + ": this CPU has no " + forced);
    return isa;
  }
  throw Error(std::string("MOE_GEMM_ISA=") + forced + ": expected avx2, avx512 or avx512bf16");
}

}  // namespace

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Avx2: return "avx2";
    case GemmIsa::Avx512: return "avx512";
    case GemmIsa::Avx512Bf16: return "avx512bf16";
  }
  return "?";
}

bool gemm_isa_supported(GemmIsa isa) {
  if (isa == GemmIsa::Avx2) return true;
  // GCC's checks include the OS saving the zmm and mask registers (XGETBV). Asked once: every
  // linear call packs its activations and checks.
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  static const bool avx512_bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  return isa == GemmIsa::Avx512 ? avx512 : avx512_bf16;
}

GemmIsa preferred_gemm_isa() {
  static const GemmIsa isa = isa_from_environment();
  return isa;
}

void pack_activations(const float* x, int64_t num_tokens, int64_t cols, DType dtype, PackedActivations& out,
                      GemmIsa isa, KernelDType kernel_dtype) {
  if (dtype != DType::BF16 && dtype != DType::F16 && !quantized::is_quantized(dtype))
    throw Error(std::string("pack_activations: the GEMM takes BF16, F16, Q8 or Q4 weights, not ") + dtype_name(dtype));
  if (kernel_dtype == KernelDType::BF16 && dtype != DType::BF16)
    throw Error(std::string("pack_activations: bf16 products are for BF16 weights, not ") + dtype_name(dtype));
  if (kernel_dtype == KernelDType::Int8 && !quantized::is_quantized(dtype))
    throw Error(std::string("pack_activations: int8 products are for Q8 and Q4 weights, not ") + dtype_name(dtype));
  if (!gemm_isa_supported(isa)) throw Error(std::string("pack_activations: this CPU has no ") + gemm_isa_name(isa));
  out.num_tokens = num_tokens;
  out.cols = cols;
  out.dtype = dtype;
  out.isa = isa;
  out.kernel_dtype = kernel_dtype;
  // Whole tiled chunks in every layout (a multiple of every kernel's step): the tiles walk them one
  // at a time, and the int8 activations take one scale per chunk.
  out.stride = weight_tiling::padded_cols(cols);
  if (bf16_dot(isa, kernel_dtype)) {
    pack_bf16(x, out);
    return;
  }
  if (kernel_dtype == KernelDType::Int8) {
    out.int8_values.resize(static_cast<size_t>(num_tokens * out.stride));
    out.int8_scales.resize(static_cast<size_t>(num_tokens * out.stride / quantized::kChunkCols));
    quantize_activation_blocks(x, num_tokens, cols, out.stride, out.int8_values.data(), out.int8_scales.data());
    return;
  }
  // The quantized tiles read whole chunks in column order.
  const bool quantized_weights = quantized::is_quantized(dtype);
  const int64_t chunk = quantized_weights ? quantized::kChunkCols : tiles_for(isa, dtype).chunk;
  const bool interleaved = !quantized_weights && tiles_for(isa, dtype).interleaved;
  out.values.resize(static_cast<size_t>(num_tokens * out.stride));
  pack(x, chunk, interleaved, out);
  // Without vdpbf16ps, bf16 products are the float32 tiles' on activations rounded to bf16 (the
  // padding's zeros stay zeros).
  if (kernel_dtype == KernelDType::BF16)  // the stride is whole vectors
    for (size_t i = 0; i < out.values.size(); i += 8)
      _mm256_storeu_ps(&out.values[i], simd::round_to_bf16(_mm256_loadu_ps(&out.values[i])));
}

void half_gemm_rows(const PackedActivations& x, const WeightView& weight, int64_t row_begin, int64_t row_end,
                    float* y, int64_t out_stride) {
  if (weight.dtype != x.dtype || weight.cols != x.cols || weight.kernel_dtype != x.kernel_dtype)
    throw Error(std::string("half_gemm_rows: activations packed for ") + dtype_name(x.dtype) + " weights of " +
                std::to_string(x.cols) + " columns in " + kernel_dtype_name(x.kernel_dtype) + ", given " +
                dtype_name(weight.dtype) + " weights of " + std::to_string(weight.cols) + " columns in " +
                kernel_dtype_name(weight.kernel_dtype));
  if (weight.layout != WeightLayout::Tiled)
    throw Error("half_gemm_rows: half-precision weights must be tiled first (weight_tiling::tile_into)");
  if (x.num_tokens == 0) return;
  if (bf16_dot(x.isa, x.kernel_dtype))
    gemm_rows(half_gemm_kernels::avx512_bf16_dot_tiles(), x.bf16_values.data(), x, weight, row_begin, row_end, y,
              out_stride);
  else
    gemm_rows(tiles_for(x.isa, x.dtype), x.values.data(), x, weight, row_begin, row_end, y, out_stride);
}

}  // namespace moe
