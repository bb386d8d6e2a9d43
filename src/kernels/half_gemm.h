#pragma once
// y = x · Wᵀ for half-precision (bf16 or f16) weights and float32 activations, at any token count:
// decode batches, the few tokens each expert gets, prefill. A register-blocked micro-kernel: each
// tile keeps R weight rows × t tokens of partial sums in registers, so every widened weight vector
// feeds t FMAs and every activation vector feeds R, and the weights cross the memory bus once per
// call. The weights are tiled at load (kernels/weight_tiling.h), so every tile, a single token's
// included, reads them front to back. The tiles come in AVX2 (the build's baseline) and AVX-512,
// chosen at run time by what the CPU has.
#include <cstdint>
#include <vector>

#include "kernels/weight.h"

namespace moe {

// The instruction sets the GEMM's tiles are written for.
enum class GemmIsa : uint8_t { Avx2, Avx512 };

const char* gemm_isa_name(GemmIsa isa);
// Whether this CPU (and its OS) runs `isa`'s kernels. AVX2 always: the build requires it.
bool gemm_isa_supported(GemmIsa isa);
// The widest supported set, unless the environment variable MOE_GEMM_ISA names one (avx2 or
// avx512), to compare them or to run the narrower one; read once. Throws moe::Error for a name it
// does not know or a set this CPU lacks.
GemmIsa preferred_gemm_isa();

// Activations rearranged once per call into the order the kernel widens weights in (bf16 weights
// are widened without shuffles, which leaves their columns permuted within each chunk; f16
// weights keep column order), and padded with zeros to whole chunks so the
// kernel has no column remainder on the activation side.
struct PackedActivations {
  std::vector<float> values;  // [num_tokens, stride]
  int64_t num_tokens = 0;
  int64_t cols = 0;           // the weights' input features
  int64_t stride = 0;         // cols rounded up to the kernel's chunk
  DType dtype = DType::BF16;  // the weight dtype the order was made for
  GemmIsa isa = GemmIsa::Avx2;  // the kernels the order was made for
};

// Packs x[num_tokens, cols] for weights of `dtype` (BF16, F16, or Q8/Q4 for quantized_gemm_rows)
// and the kernels of `isa` into `out`, reusing its storage.
void pack_activations(const float* x, int64_t num_tokens, int64_t cols, DType dtype, PackedActivations& out,
                      GemmIsa isa = preferred_gemm_isa());

// y[t * out_stride + (r - row_begin)] = x[t] · W[r] for every token t and r in [row_begin, row_end).
// weight must be tiled, BF16 or F16, with the dtype and cols that x was packed for.
void half_gemm_rows(const PackedActivations& x, const WeightView& weight, int64_t row_begin, int64_t row_end,
                    float* y, int64_t out_stride);

}  // namespace moe
