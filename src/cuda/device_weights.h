#pragma once
// Weight matrices on the device (cuda/weight_source.h reads them). They keep the checkpoint's bf16
// where it has it (half the memory and the bytes a decode step reads; widening to float32 in a kernel
// is exact, so results are those of float32 weights) and are float32 otherwise.
#include <cstdint>
#include <string>

#include "cuda/device_array.h"
#include "cuda/kernels.h"

namespace moe::cuda {

// A weight matrix [rows, cols]: torch Linear's [out_features, in_features], row-major. Exactly one
// of the two arrays holds it.
struct DeviceMatrix {
  DeviceArray<float> f32;
  DeviceArray<uint16_t> bf16;
  int64_t rows = 0;
  int64_t cols = 0;

  bool is_bf16() const { return !bf16.empty(); }
  WeightRef ref() const {
    return {is_bf16() ? static_cast<const void*>(bf16.data()) : static_cast<const void*>(f32.data()), is_bf16(),
            rows, cols};
  }
  int64_t bytes() const { return rows * cols * (is_bf16() ? 2 : 4); }
};

}  // namespace moe::cuda
