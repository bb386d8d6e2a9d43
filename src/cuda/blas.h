#pragma once
// The backend's linears, y = x·Wᵀ with row-major x and W (torch Linear's layout), in float32 with
// the weights widened from their stored type: for few rows (decode) small_linear, which reads bf16
// weights as they are; otherwise cuBLAS SGEMM, bf16 weights widened chunk by chunk into a scratch
// matrix first. The handle keeps CUBLAS_DEFAULT_MATH, which never rounds float32 inputs to TF32, so
// results differ from the CPU's float32 only by summation order.
#include <cublas_v2.h>

#include <cstdint>
#include <span>

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
  // y[i] = linear(x, w[i]) for each of up to kMaxLinearParts matrices of x's width (a layer's q, k
  // and v): one launch where every one would take small_linear.
  void linears(const float* x, int64_t rows, std::span<const DeviceMatrix* const> w, std::span<float* const> y) const;

  // Rows up to which small_linear beats widening and SGEMM for bf16 weights.
  static constexpr int64_t kSmallRows = 16;

 private:
  // y[:, first .. first + m) of a y with ldy columns = x · w[first .. first + m)ᵀ, w float32.
  void sgemm(const float* x, int64_t rows, const float* w, int64_t m, int64_t k, float* y, int64_t ldy) const;

  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceArray<unsigned char> workspace_;  // cuBLAS's, ours: a captured CUDA graph must not allocate
  mutable DeviceArray<float> widened_;     // a chunk of a bf16 matrix's rows, for SGEMM
};

}  // namespace moe::cuda
