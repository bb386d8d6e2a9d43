#pragma once
// What every layer's forward shares within one step: the stream everything is queued on, cuBLAS
// on that stream, and the batch's tables on the device.
#include <cuda_runtime_api.h>

#include "cuda/blas.h"
#include "cuda/device_batch.h"

namespace moe::cuda {

struct StepContext {
  cudaStream_t stream;
  const Blas& blas;
  const DeviceBatch& batch;
};

}  // namespace moe::cuda
