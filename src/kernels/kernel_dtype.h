#pragma once
// The precision a model's GEMMs multiply in, chosen at load (--kernel-dtype):
//  - F32 ("float32", the default): activations stay float32 and every product is accumulated in
//    float32 from the weights widened exactly, whatever their storage dtype.
//  - BF16 ("bf16"): for bf16 weights only, the activations are rounded to bf16 as each GEMM packs
//    them, so every product is of two bf16 numbers (exact in float32) and sums in float32. CPUs with
//    AVX-512 BF16 run it as vdpbf16ps (two products a lane an instruction, half the activation
//    bytes); others run the float32 tiles on the rounded activations: the same mode, results equal
//    up to float32 summation order.
#include <cstdint>
#include <string>

namespace moe {

enum class KernelDType : uint8_t { F32, BF16, Int8 };

const char* kernel_dtype_name(KernelDType kernel_dtype);  // "float32" | "bf16" | "int8"
// "float32" | "bf16" | "int8"; anything else is a moe::Error naming them.
KernelDType parse_kernel_dtype(const std::string& name);

}  // namespace moe
