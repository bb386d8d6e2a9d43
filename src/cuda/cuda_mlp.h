#pragma once
// A SwiGLU MLP on the device, down(silu(gate(x)) * up(x)): dense decoder layers, every routed
// expert (over the rows routed to it) and Qwen2-MoE's shared expert.
#include "cuda/blas.h"
#include "cuda/weight_source.h"
#include "model/model_plan.h"

namespace moe::cuda {

struct CudaMlp {
  // The gate/up activations, kept from step to step and shared by every MLP of the model.
  struct Scratch {
    DeviceArray<float> gate, up;
  };

  DeviceMatrix gate, up, down;

  // The matrices `names` names, of width `intermediate` over `hidden`.
  // `part`: the block of the intermediate width this rank holds (model/tensor_shard.h; all of it when empty):
  // gate's and up's rows, down's columns.
  static CudaMlp load(const WeightSource& weights, const MlpTensorNames& names, int64_t hidden, int64_t intermediate,
                      IndexRange part = {});
  // out[rows, H] = mlp(x[rows, H]); out is overwritten.
  void forward(const float* x, int64_t rows, const Blas& blas, cudaStream_t stream, Scratch& scratch,
               float* out) const;
  // Grows `scratch` to a forward of up to max_rows rows.
  void reserve(Scratch& scratch, int64_t max_rows) const;
};

}  // namespace moe::cuda
