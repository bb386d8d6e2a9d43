#pragma once
// y = x · Wᵀ for half-precision (bf16 or f16) weights and float32 activations, at any token count:
// decode batches, the few tokens each expert gets, prefill. A register-blocked micro-kernel: each
// tile keeps R weight rows × t tokens of partial sums in registers, so every widened weight vector
// feeds t FMAs and every activation vector feeds R, and the weights cross the memory bus once per
// call. The weights are tiled at load (kernels/weight_tiling.h), so every tile, a single token's
// included, reads them front to back. The tiles come in AVX2 (the build's baseline) and AVX-512,
// chosen at run time by what the CPU has, and for bf16 products (KernelDType::BF16) in AVX-512 BF16.
#include <cstdint>
#include <vector>

#include "kernels/weight.h"

namespace moe {

// The instruction sets the GEMM's tiles are written for. Avx512Bf16 runs the AVX-512 tiles, and
// vdpbf16ps tiles for KernelDType::BF16 where Avx512 rounds the activations for its float32 tiles.
enum class GemmIsa : uint8_t { Avx2, Avx512, Avx512Bf16 };

const char* gemm_isa_name(GemmIsa isa);  // "avx2" | "avx512" | "avx512bf16"
// Whether this CPU (and its OS) runs `isa`'s kernels. AVX2 always: the build requires it.
bool gemm_isa_supported(GemmIsa isa);
// The widest supported set, unless the environment variable MOE_GEMM_ISA names one (avx2, avx512
// or avx512bf16), to compare them or to run a narrower one; read once. Throws moe::Error for a
// name it does not know or a set this CPU lacks.
GemmIsa preferred_gemm_isa();

// Activations rearranged once per call into the order the kernel widens weights in (bf16 weights
// are widened without shuffles, which leaves their columns permuted within each chunk; f16
// weights keep column order), and padded with zeros to whole chunks so the
// kernel has no column remainder on the activation side. For KernelDType::BF16 they are rounded to
// bf16: kept as bf16 in column order for the vdpbf16ps tiles (bf16_values), else widened back to
// float32 in the float32 tiles' order (values). For KernelDType::Int8 (quantized weights) they are
// int8 in column order with a scale per token and 32-column block (kernels/int8_activations.h).
struct PackedActivations {
  std::vector<float> values;  // [num_tokens, stride]
  std::vector<uint16_t> bf16_values;  // [num_tokens, stride], the vdpbf16ps tiles' activations
  std::vector<int8_t> int8_values;    // [num_tokens, stride], the integer-product tiles' activations
  std::vector<float> int8_scales;     // [num_tokens, stride / 32], their block scales
  int64_t num_tokens = 0;
  int64_t cols = 0;           // the weights' input features
  int64_t stride = 0;         // cols rounded up to the kernel's chunk
  DType dtype = DType::BF16;  // the weight dtype the order was made for
  GemmIsa isa = GemmIsa::Avx2;  // the kernels the order was made for
  KernelDType kernel_dtype = KernelDType::F32;  // the precision the activations were made for
};

// Packs x[num_tokens, cols] for weights of `dtype` (BF16, F16, or Q8/Q4 for quantized_gemm_rows),
// the kernels of `isa` and products in `kernel_dtype` (BF16 only for BF16 weights, Int8 only for
// Q8/Q4) into `out`,
// reusing its storage.
void pack_activations(const float* x, int64_t num_tokens, int64_t cols, DType dtype, PackedActivations& out,
                      GemmIsa isa = preferred_gemm_isa(), KernelDType kernel_dtype = KernelDType::F32);

// y[t * out_stride + (r - row_begin)] = x[t] · W[r] for every token t and r in [row_begin, row_end).
// weight must be tiled, BF16 or F16, with the dtype, cols and kernel dtype that x was packed for.
void half_gemm_rows(const PackedActivations& x, const WeightView& weight, int64_t row_begin, int64_t row_end,
                    float* y, int64_t out_stride);

}  // namespace moe
