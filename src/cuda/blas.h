#pragma once
// The backend's GEMMs through cuBLAS: y = x·Wᵀ with row-major x and W (torch Linear's layout), in
// float32. The handle keeps CUBLAS_DEFAULT_MATH, which never rounds float32 inputs to TF32, so
// results differ from the CPU's float32 only by summation order.
#include <cublas_v2.h>

#include <cstdint>

#include "cuda/device_weights.h"

namespace moe::cuda {

class Blas {
 public:
  explicit Blas(cudaStream_t stream);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // y[rows, w.rows] = x[rows, w.cols] · wᵀ; nothing happens for rows == 0.
  void linear(const float* x, int64_t rows, const DeviceMatrix& w, float* y) const;

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace moe::cuda
