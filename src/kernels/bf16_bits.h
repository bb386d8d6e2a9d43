#pragma once
// A float32 rounded to the nearest bf16 (ties to even; NaN stays NaN), as bits: one definition for
// the host (float_to_bf16, kernels/weight.h) and the device (the GPU's dummy weights).
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MOE_HOST_DEVICE __host__ __device__
#else
#define MOE_HOST_DEVICE
#endif

namespace moe {

MOE_HOST_DEVICE inline uint16_t bf16_bits_nearest_even(float value) {
  uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(value);
#else
  std::memcpy(&bits, &value, 4);
#endif
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace moe
