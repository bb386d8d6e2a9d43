#pragma once
// CUDA-allocated memory owned like a std::vector: moved, never copied, freed with its owner. Device
// memory (DeviceArray) holds weights and activations; page-locked host memory (PinnedArray) is what
// an asynchronous device-to-host copy may land in.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuda/device.h"

namespace moe::cuda {

// Counts device allocations in this process. A CUDA graph holds the addresses of the buffers it was
// captured with; one captured at an earlier count may name memory that has since moved.
uint64_t device_allocation_count();
void count_device_allocation();

struct DeviceMemory {
  static void* allocate(size_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    count_device_allocation();
    return p;
  }
  static void release(void* p) { cudaFree(p); }
};

struct PinnedHostMemory {
  static void* allocate(size_t bytes) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    return p;
  }
  static void release(void* p) { cudaFreeHost(p); }
};

template <typename T, typename Memory>
class CudaArray {
 public:
  CudaArray() = default;
  explicit CudaArray(size_t count) {
    if (count) data_ = static_cast<T*>(Memory::allocate(count * sizeof(T)));
    size_ = count;
  }
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  CudaArray(CudaArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  CudaArray& operator=(CudaArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~CudaArray() {
    if (data_) Memory::release(data_);
  }

  // A copy of `host` (synchronous: weights are uploaded once, at load).
  static CudaArray from_host(const T* host, size_t count) {
    CudaArray array(count);
    check(cudaMemcpy(array.data_, host, count * sizeof(T), cudaMemcpyDefault), "cudaMemcpy (upload)");
    return array;
  }
  static CudaArray from_host(const std::vector<T>& host) { return from_host(host.data(), host.size()); }

  // Room for at least `count` elements. Activations are kept from step to step and grow to the
  // largest step seen; growing drops the contents (cudaFree waits for the device, so no kernel
  // still reads the old memory).
  T* reserve(size_t count) {
    if (count > size_) *this = CudaArray(count);
    return data_;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
using DeviceArray = CudaArray<T, DeviceMemory>;
template <typename T>
using PinnedArray = CudaArray<T, PinnedHostMemory>;

}  // namespace moe::cuda
