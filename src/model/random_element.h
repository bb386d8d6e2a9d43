#pragma once
// Element i of a random tensor (moe-make-checkpoint's checkpoints, --load-format dummy): a pure
// function of the tensor's rule and i, written once for the host and the device (nvcc compiles it
// into the GPU's dummy-weight kernel), so that the CPU and the GPU make the same bits for a seed and
// any split of a tensor over threads or ranks gives the same values.
#include <cmath>
#include <cstdint>

#include "kernels/bf16_bits.h"

namespace moe {

// SplitMix64's finaliser: a strong 64-bit mix.
MOE_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A tensor's uniform draws: element i is low + step · (the top 24 bits of mix64(stream + i)).
struct RandomElementRule {
  uint64_t stream = 0;
  float low = 0.0f;
  float step = 0.0f;
};

// One fused multiply-add, rounded once, on both sides: a compiler left to choose would fuse it on one
// and not the other (g++ contracts at -O3 for x86-64-v3; the checkpoints already written were made so).
MOE_HOST_DEVICE inline float random_element(const RandomElementRule& rule, int64_t i) {
  const auto draw = static_cast<float>(mix64(rule.stream + static_cast<uint64_t>(i)) >> 40);
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(rule.step, draw, rule.low);
#else
  return std::fma(rule.step, draw, rule.low);
#endif
}

}  // namespace moe
