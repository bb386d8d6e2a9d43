#pragma once
// Device-side reads of weights in their stored type, widened to float32 (exact for bf16: its bits
// are a float32's upper half), and the activation helpers the kernels share.
#include <cstdint>

namespace moe::cuda {

__device__ __forceinline__ float widen(float value) { return value; }
__device__ __forceinline__ float widen(uint16_t bf16_bits) { return __uint_as_float(uint32_t{bf16_bits} << 16); }

// Eight consecutive values from p, which is aligned to eight elements, widened to float32.
__device__ __forceinline__ void load8(const float* p, float (&out)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  out[0] = a.x;
  out[1] = a.y;
  out[2] = a.z;
  out[3] = a.w;
  out[4] = b.x;
  out[5] = b.y;
  out[6] = b.z;
  out[7] = b.w;
}
__device__ __forceinline__ void load8(const uint16_t* p, float (&out)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);  // little-endian: a word's lower half comes first
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

}  // namespace moe::cuda
