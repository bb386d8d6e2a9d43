#include "cuda/device.h"

#include <string>

#include "common/error.h"

namespace moe::cuda {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string(what) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(what) + " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) +
                ")");
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // the error is an answer here, not a fault for a later call to find
    return 0;
  }
  return count;
}

}  // namespace moe::cuda
