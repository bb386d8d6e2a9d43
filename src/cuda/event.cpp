#include "cuda/event.h"

namespace moe::cuda {

bool Event::done() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // "not yet" is an answer, not a fault for a later launch check to find
    return false;
  }
  check(status, "cudaEventQuery");
  return true;
}

float elapsed_ms(const Event& from, const Event& to) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, from.get(), to.get()), "cudaEventElapsedTime");
  return ms;
}

}  // namespace moe::cuda
