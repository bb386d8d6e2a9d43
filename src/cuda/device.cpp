#include "cuda/device.h"

#include <atomic>
#include <string>

#include "common/error.h"
#include "cuda/device_array.h"

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

namespace {
std::atomic<uint64_t> device_allocations{0};
}  // namespace

uint64_t device_allocation_count() { return device_allocations.load(std::memory_order_relaxed); }
void count_device_allocation() { device_allocations.fetch_add(1, std::memory_order_relaxed); }

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // the error is an answer here, not a fault for a later call to find
    return 0;
  }
  return count;
}

}  // namespace moe::cuda
