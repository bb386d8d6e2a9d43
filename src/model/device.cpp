#include "common/error.h"
#include "model/model.h"

namespace moe {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda") return Device::Cuda;
  throw Error("unknown device '" + name + "'; choose one of: cpu, cuda");
}

int kv_cache_element_bytes(Device device, KernelDType products, const ModelConfig& config) {
  return device == Device::Cuda && products == KernelDType::BF16 && !config.mla ? 2 : 4;
}

}  // namespace moe
