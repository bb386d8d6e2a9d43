#pragma once
// The CUDA runtime's status codes and devices, as the rest of the backend sees them: a failing
// device call is a moe::Error naming the call, so a step stops instead of leaving wrong data behind.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace moe::cuda {

void check(cudaError_t status, const char* what);
void check(cublasStatus_t status, const char* what);

// How many CUDA devices this process sees; 0 when there is none or no driver (a build machine).
int device_count();

}  // namespace moe::cuda
