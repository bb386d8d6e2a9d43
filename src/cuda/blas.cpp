#include "cuda/blas.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "cuda/kernels.h"

namespace moe::cuda {

namespace {
// Weights widened per SGEMM at most: 64 MB of scratch, allocated once, on the first large bf16 linear.
constexpr int64_t kWidenedElements = int64_t{16} << 20;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
}  // namespace

Blas::Blas(cudaStream_t stream, KernelDType products)
    : stream_(stream), products_(products), workspace_(kWorkspaceBytes) {
  check(cublasCreate(&handle_), "cublasCreate");
  try {
    check(cublasSetStream(handle_, stream), "cublasSetStream");
    check(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cublasSetWorkspace(handle_, workspace_.data(), workspace_.size()), "cublasSetWorkspace");
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
  if (!w.is_bf16()) return sgemm(x, rows, w.f32.data(), w.rows, w.cols, y, w.rows);
  if (rows <= kSmallRows) return small_linear(x, rows, w.ref(), y, stream_);
  if (bf16_products(rows)) return bf16_gemm(x, rows, w, y);
  const int64_t chunk_rows = std::max<int64_t>(1, std::min(w.rows, kWidenedElements / w.cols));
  float* widened = widened_.reserve(static_cast<size_t>(std::max(chunk_rows * w.cols, kWidenedElements)));
  for (int64_t first = 0; first < w.rows; first += chunk_rows) {
    const int64_t m = std::min(chunk_rows, w.rows - first);
    widen_bf16(w.bf16.data() + first * w.cols, m * w.cols, widened, stream_);
    sgemm(x, rows, widened, m, w.cols, y + first, w.rows);
  }
}

void Blas::reserve(int64_t max_rows, int64_t max_cols) const {
  if (products_ == KernelDType::BF16)
    rounded_.reserve(static_cast<size_t>(max_rows * max_cols));
  else
    widened_.reserve(static_cast<size_t>(kWidenedElements));
}

void Blas::linears(const float* x, int64_t rows, std::span<const DeviceMatrix* const> w,
                   std::span<float* const> y) const {
  if (w.size() != y.size() || w.size() > static_cast<size_t>(kMaxLinearParts))
    throw Error("Blas::linears: up to 3 matrices, one output each");
  bool together = rows > 0 && rows <= kSmallRows;
  for (const DeviceMatrix* m : w) together = together && m->is_bf16() && m->cols == w[0]->cols;
  if (!together) {
    for (size_t i = 0; i < w.size(); ++i) linear(x, rows, *w[i], y[i]);
    return;
  }
  WeightRef refs[kMaxLinearParts];
  for (size_t i = 0; i < w.size(); ++i) refs[i] = w[i]->ref();
  small_linears(x, rows, refs, y.data(), static_cast<int>(w.size()), stream_);
}

void Blas::bf16_gemm(const float* x, int64_t rows, const DeviceMatrix& w, float* y) const {
  uint16_t* rounded = rounded_.reserve(static_cast<size_t>(rows * w.cols));
  round_to_bf16(x, rows * w.cols, rounded, stream_);
  // The layouts of sgemm below, in bf16 with float32 accumulation and a float32 y.
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(w.rows), k = static_cast<int>(w.cols);
  check(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, static_cast<int>(rows), k, &one, w.bf16.data(),
                     CUDA_R_16BF, k, rounded, CUDA_R_16BF, k, &zero, y, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx (bf16)");
}

void Blas::sgemm(const float* x, int64_t rows, const float* w, int64_t m, int64_t k, float* y, int64_t ldy) const {
  // cuBLAS is column-major: row-major y[rows, ldy] is column-major yᵀ[ldy, rows] = W·xᵀ, where
  // row-major W[m, k] read column-major is Wᵀ (hence CUBLAS_OP_T) and row-major x[rows, k] is xᵀ.
  const float one = 1.0f, zero = 0.0f;
  check(cublasSgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(rows),
                    static_cast<int>(k), &one, w, static_cast<int>(k), x, static_cast<int>(k), &zero, y,
                    static_cast<int>(ldy)),
        "cublasSgemm");
}

}  // namespace moe::cuda
