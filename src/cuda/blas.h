#pragma once
// The backend's linears, y = x·Wᵀ with row-major x and W (torch Linear's layout), in float32 with
// the weights widened from their stored type: for few rows (decode) small_linear, which reads bf16
// weights as they are; otherwise cuBLAS SGEMM, bf16 weights widened chunk by chunk into a scratch
// matrix first. The handle keeps CUBLAS_DEFAULT_MATH, which never rounds float32 inputs to TF32, so
// results differ from the CPU's float32 only by summation order.
//
// In bf16 products (KernelDType::BF16, --kernel-dtype bf16) a bf16 matrix above kSmallRows rows is
// multiplied on tensor cores instead: x rounded to bf16, cuBLAS's bf16 GEMM with float32
// accumulation and output, nothing widened. Up to kSmallRows rows small_linear stays: a step that
// few rows read the weights once whatever the products, and float32 there costs nothing.
#include <cublas_v2.h>

#include <cstdint>
#include <span>

#include "cuda/device_weights.h"
#include "kernels/kernel_dtype.h"

namespace moe::cuda {

class Blas {
 public:
  explicit Blas(cudaStream_t stream, KernelDType products = KernelDType::F32);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // y[rows, w.rows] = x[rows, w.cols] · wᵀ; nothing happens for rows == 0.
  void linear(const float* x, int64_t rows, const DeviceMatrix& w, float* y) const;
  // y[i] = linear(x, w[i]) for each of up to kMaxLinearParts matrices of x's width (a layer's q, k
  // and v): one launch where every one would take small_linear.
  void linears(const float* x, int64_t rows, std::span<const DeviceMatrix* const> w, std::span<float* const> y) const;

  // Grows the scratch to what any linear of up to max_rows rows and max_cols input columns needs.
  void reserve(int64_t max_rows, int64_t max_cols) const;

  // Rows up to which small_linear beats widening and SGEMM for bf16 weights.
  static constexpr int64_t kSmallRows = 16;
  // Whether steps of `rows` rows multiply bf16 weights in bf16 products (tensor cores).
  bool bf16_products(int64_t rows) const { return products_ == KernelDType::BF16 && rows > kSmallRows; }

 private:
  // y[:, first .. first + m) of a y with ldy columns = x · w[first .. first + m)ᵀ, w float32.
  void sgemm(const float* x, int64_t rows, const float* w, int64_t m, int64_t k, float* y, int64_t ldy) const;

  // y[rows, w.rows] = bf16(x) · wᵀ on tensor cores, w bf16.
  void bf16_gemm(const float* x, int64_t rows, const DeviceMatrix& w, float* y) const;

  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  KernelDType products_;
  DeviceArray<unsigned char> workspace_;  // cuBLAS's, ours: a captured CUDA graph must not allocate
  mutable DeviceArray<float> widened_;     // a chunk of a bf16 matrix's rows, for SGEMM
  mutable DeviceArray<uint16_t> rounded_;  // x in bf16, for bf16_gemm
};

}  // namespace moe::cuda
