#include "cuda/releasable_device_memory.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "cuda/device.h"
#include "cuda/device_array.h"

namespace moe::cuda {
namespace {

// The driver calls this needs, found through the runtime (cudaGetDriverEntryPointByVersion) rather
// than linked: a program that links libcuda does not start on a machine without a driver, and the
// CPU-only paths of moe-serve must.
struct Driver {
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
};

template <class F>
void find(const char* symbol, F& function) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult status{};
  check(cudaGetDriverEntryPointByVersion(symbol, &found, 12000, cudaEnableDefault, &status), symbol);
  if (status != cudaDriverEntryPointSuccess || !found)
    throw Error(std::string("the CUDA driver has no ") + symbol + " (virtual memory management)");
  function = reinterpret_cast<F>(found);
}

const Driver& driver() {
  static const Driver loaded = [] {
    Driver d;
    find("cuGetErrorString", d.get_error_string);
    find("cuDeviceGetAttribute", d.device_get_attribute);
    find("cuMemGetAllocationGranularity", d.granularity);
    find("cuMemAddressReserve", d.address_reserve);
    find("cuMemAddressFree", d.address_free);
    find("cuMemCreate", d.create);
    find("cuMemRelease", d.release);
    find("cuMemMap", d.map);
    find("cuMemUnmap", d.unmap);
    find("cuMemSetAccess", d.set_access);
    return d;
  }();
  return loaded;
}

void check_driver(CUresult status, const char* what) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  driver().get_error_string(status, &name);
  throw Error(std::string(what) + " failed: " + (name ? name : "unknown CUDA driver error"));
}

CUmemAllocationProp device_memory_on(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

ReleasableDeviceMemory::ReleasableDeviceMemory(size_t bytes) : bytes_(bytes) {
  check(cudaGetDevice(&device_), "cudaGetDevice");
  check(cudaFree(nullptr), "cudaFree (the primary context)");  // the driver calls need a current context
  int supported = 0;
  check_driver(driver().device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device_),
               "cuDeviceGetAttribute");
  if (!supported) throw Error("this CUDA device does not support virtual memory management (cuMemCreate)");
  const CUmemAllocationProp prop = device_memory_on(device_);
  size_t granularity = 0;
  check_driver(driver().granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               "cuMemGetAllocationGranularity");
  reserved_ = (std::max<size_t>(bytes, 1) + granularity - 1) / granularity * granularity;
  CUdeviceptr address = 0;
  check_driver(driver().address_reserve(&address, reserved_, 0, 0, 0), "cuMemAddressReserve");
  address_ = static_cast<uintptr_t>(address);
  count_device_allocation();  // a new address: graphs captured before cannot hold it
  try {
    restore();
  } catch (...) {
    free_all();
    throw;
  }
}

ReleasableDeviceMemory::ReleasableDeviceMemory(ReleasableDeviceMemory&& other) noexcept
    : address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      reserved_(std::exchange(other.reserved_, 0)),
      handle_(std::exchange(other.handle_, 0)),
      device_(other.device_),
      backed_(std::exchange(other.backed_, false)) {}

ReleasableDeviceMemory& ReleasableDeviceMemory::operator=(ReleasableDeviceMemory&& other) noexcept {
  if (this != &other) {
    free_all();
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    reserved_ = std::exchange(other.reserved_, 0);
    handle_ = std::exchange(other.handle_, 0);
    device_ = other.device_;
    backed_ = std::exchange(other.backed_, false);
  }
  return *this;
}

ReleasableDeviceMemory::~ReleasableDeviceMemory() { free_all(); }

void ReleasableDeviceMemory::release() {
  if (!backed_) return;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before releasing memory)");
  const auto address = static_cast<CUdeviceptr>(address_);
  check_driver(driver().unmap(address, reserved_), "cuMemUnmap");
  check_driver(driver().release(static_cast<CUmemGenericAllocationHandle>(handle_)), "cuMemRelease");
  handle_ = 0;
  backed_ = false;
}

void ReleasableDeviceMemory::restore() {
  if (backed_ || address_ == 0) return;
  const CUmemAllocationProp prop = device_memory_on(device_);
  CUmemGenericAllocationHandle handle = 0;
  check_driver(driver().create(&handle, reserved_, &prop, 0), "cuMemCreate");
  const auto address = static_cast<CUdeviceptr>(address_);
  if (const CUresult mapped = driver().map(address, reserved_, 0, handle, 0); mapped != CUDA_SUCCESS) {
    driver().release(handle);
    check_driver(mapped, "cuMemMap");
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (const CUresult granted = driver().set_access(address, reserved_, &access, 1); granted != CUDA_SUCCESS) {
    driver().unmap(address, reserved_);
    driver().release(handle);
    check_driver(granted, "cuMemSetAccess");
  }
  handle_ = handle;
  backed_ = true;
}

void ReleasableDeviceMemory::free_all() noexcept {
  if (address_ == 0) return;
  const auto address = static_cast<CUdeviceptr>(address_);
  if (backed_) {
    cudaDeviceSynchronize();
    driver().unmap(address, reserved_);
    driver().release(static_cast<CUmemGenericAllocationHandle>(handle_));
  }
  driver().address_free(address, reserved_);
  address_ = 0;
  handle_ = 0;
  backed_ = false;
}

}  // namespace moe::cuda
