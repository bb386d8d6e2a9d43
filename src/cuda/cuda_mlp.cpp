#include "cuda/cuda_mlp.h"

#include "cuda/kernels.h"

namespace moe::cuda {

CudaMlp CudaMlp::load(const WeightSource& weights, const MlpTensorNames& names, int64_t hidden, int64_t intermediate,
                      IndexRange part) {
  return {weights.matrix(names.gate, intermediate, hidden, part), weights.matrix(names.up, intermediate, hidden, part),
          weights.matrix(names.down, hidden, intermediate, {}, part)};
}

void CudaMlp::reserve(Scratch& scratch, int64_t max_rows) const {
  scratch.gate.reserve(static_cast<size_t>(max_rows * gate.rows));
  scratch.up.reserve(static_cast<size_t>(max_rows * gate.rows));
}

void CudaMlp::forward(const float* x, int64_t rows, const Blas& blas, cudaStream_t stream, Scratch& scratch,
                      float* out) const {
  const int64_t width = gate.rows;
  reserve(scratch, rows);
  float* g = scratch.gate.data();
  float* u = scratch.up.data();
  blas.linear(x, rows, gate, g);
  blas.linear(x, rows, up, u);
  silu_mul(g, u, rows * width, stream);
  blas.linear(g, rows, down, out);
}

}  // namespace moe::cuda
