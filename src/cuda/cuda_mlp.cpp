#include "cuda/cuda_mlp.h"

#include "cuda/kernels.h"

namespace moe::cuda {

CudaMlp CudaMlp::load(const Checkpoint& ckpt, const std::string& prefix, const std::string& gate_name,
                      const std::string& up_name, const std::string& down_name, int64_t hidden, int64_t intermediate) {
  return {upload_matrix(ckpt, prefix + gate_name + ".weight", intermediate, hidden),
          upload_matrix(ckpt, prefix + up_name + ".weight", intermediate, hidden),
          upload_matrix(ckpt, prefix + down_name + ".weight", hidden, intermediate)};
}

void CudaMlp::forward(const float* x, int64_t rows, const Blas& blas, cudaStream_t stream, Scratch& scratch,
                      float* out) const {
  const int64_t width = gate.rows;
  float* g = scratch.gate.reserve(static_cast<size_t>(rows * width));
  float* u = scratch.up.reserve(static_cast<size_t>(rows * width));
  blas.linear(x, rows, gate, g);
  blas.linear(x, rows, up, u);
  silu_mul(g, u, rows * width, stream);
  blas.linear(g, rows, down, out);
}

}  // namespace moe::cuda
