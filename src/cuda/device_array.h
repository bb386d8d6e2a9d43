#pragma once
// Device memory owned like a std::vector: moved, never copied, freed with its owner.
#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/device.h"

namespace moe::cuda {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t count) {
    if (count) check(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)), "cudaMalloc");
    size_ = count;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~DeviceArray() {
    if (data_) cudaFree(data_);
  }

  // A copy of `host` (synchronous: weights are uploaded once, at load).
  static DeviceArray from_host(const std::vector<T>& host) {
    DeviceArray array(host.size());
    check(cudaMemcpy(array.data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
    return array;
  }

  // Room for at least `count` elements. Activations are kept from step to step and grow to the
  // largest step seen; growing drops the contents (cudaFree waits for the device, so no kernel
  // still reads the old memory).
  T* reserve(size_t count) {
    if (count > size_) *this = DeviceArray(count);
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

}  // namespace moe::cuda
