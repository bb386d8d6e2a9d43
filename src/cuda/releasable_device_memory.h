#pragma once
// Device memory whose physical pages can be given back to the device and taken again at the same
// address, through CUDA's virtual memory management: the address range is reserved for the object's
// life (cuMemAddressReserve); release() unmaps and frees the physical memory behind it (cuMemUnmap,
// cuMemRelease), so another process (a trainer colocated on the GPU) can use it; restore() creates
// and maps new physical memory at the same addresses (cuMemCreate, cuMemMap, cuMemSetAccess). Kernels
// and CUDA graphs that hold the address stay valid across the pair; the contents do not survive it.
// Used for the KV pool (release_memory_occupation's "kv_cache").
#include <cstddef>
#include <cstdint>

namespace moe::cuda {

class ReleasableDeviceMemory {
 public:
  ReleasableDeviceMemory() = default;
  // `bytes` (rounded up to the device's allocation granularity) reserved and backed on the current
  // device; a device without virtual memory management, or too little memory, is a moe::Error.
  explicit ReleasableDeviceMemory(size_t bytes);
  ReleasableDeviceMemory(const ReleasableDeviceMemory&) = delete;
  ReleasableDeviceMemory& operator=(const ReleasableDeviceMemory&) = delete;
  ReleasableDeviceMemory(ReleasableDeviceMemory&& other) noexcept;
  ReleasableDeviceMemory& operator=(ReleasableDeviceMemory&& other) noexcept;
  ~ReleasableDeviceMemory();

  unsigned char* data() const { return reinterpret_cast<unsigned char*>(address_); }
  size_t size() const { return bytes_; }        // as asked
  size_t mapped_bytes() const { return backed_ ? reserved_ : 0; }  // physical memory held now
  bool backed() const { return backed_; }

  // Waits for the device, then gives the physical memory back; nothing when released already.
  void release();
  // Backs the same addresses with new physical memory (uninitialised); nothing when backed.
  void restore();

 private:
  void free_all() noexcept;

  uintptr_t address_ = 0;  // a CUdeviceptr
  size_t bytes_ = 0;
  size_t reserved_ = 0;    // bytes_ rounded up to the granularity
  unsigned long long handle_ = 0;  // a CUmemGenericAllocationHandle while backed
  int device_ = 0;
  bool backed_ = false;
};

}  // namespace moe::cuda
