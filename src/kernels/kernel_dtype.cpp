#include "kernels/kernel_dtype.h"

#include "common/error.h"

namespace moe {

const char* kernel_dtype_name(KernelDType kernel_dtype) { return kernel_dtype == KernelDType::BF16 ? "bf16" : "float32"; }

KernelDType parse_kernel_dtype(const std::string& name) {
  for (const KernelDType kernel_dtype : {KernelDType::F32, KernelDType::BF16})
    if (name == kernel_dtype_name(kernel_dtype)) return kernel_dtype;
  throw Error("--kernel-dtype '" + name + "': expected float32 or bf16");
}

}  // namespace moe
