#include "kernels/kernel_dtype.h"

#include "common/error.h"

namespace moe {

const char* kernel_dtype_name(KernelDType kernel_dtype) {
  switch (kernel_dtype) {
    case KernelDType::F32: return "float32";
    case KernelDType::BF16: return "bf16";
    case KernelDType::Int8: return "int8";
  }
  return "?";
}

KernelDType parse_kernel_dtype(const std::string& name) {
  for (const KernelDType kernel_dtype : {KernelDType::F32, KernelDType::BF16, KernelDType::Int8})
    if (name == kernel_dtype_name(kernel_dtype)) return kernel_dtype;
  throw Error("--kernel-dtype '" + name + "': expected float32, bf16 or int8");
}

}  // namespace moe
