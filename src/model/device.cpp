#include "common/error.h"
#include "model/model.h"

namespace moe {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda") return Device::Cuda;
  throw Error("unknown device '" + name + "'; choose one of: cpu, cuda");
}

}  // namespace moe
