#pragma once
// Copies from global to shared memory that complete asynchronously (cp.async, sm_80 and later):
// issue copy16 for a stage, commit_copies, and wait_copies<N> until at most N committed stages are
// still in flight (then a __syncthreads before other threads read what arrived).

namespace moe::cuda {

// 16 bytes from global to shared memory, asynchronously; zeros where !valid (src is then not read).
__device__ __forceinline__ void copy16(void* shared, const void* global, bool valid) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

}  // namespace moe::cuda
