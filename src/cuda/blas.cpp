#include "cuda/blas.h"

#include <limits>

#include "common/error.h"

namespace moe::cuda {

Blas::Blas(cudaStream_t stream) {
  check(cublasCreate(&handle_), "cublasCreate");
  try {
    check(cublasSetStream(handle_, stream), "cublasSetStream");
    check(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

Blas::~Blas() { cublasDestroy(handle_); }

void Blas::linear(const float* x, int64_t rows, const DeviceMatrix& w, float* y) const {
  if (rows == 0) return;
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (rows > kMax || w.rows > kMax || w.cols > kMax) throw Error("CUDA linear: a dimension exceeds cuBLAS's int range");
  // cuBLAS is column-major: row-major y[rows, n] is column-major yᵀ[n, rows] = W·xᵀ, where row-major
  // W[n, k] read column-major is Wᵀ (hence CUBLAS_OP_T) and row-major x[rows, k] is xᵀ.
  const int m = static_cast<int>(w.rows), n = static_cast<int>(rows), k = static_cast<int>(w.cols);
  const float one = 1.0f, zero = 0.0f;
  check(cublasSgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w.data.data(), k, x, k, &zero, y, m),
        "cublasSgemm");
}

}  // namespace moe::cuda
