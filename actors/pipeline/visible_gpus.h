#pragma once
// The GPUs this process may use, as CUDA names them for CUDA_VISIBLE_DEVICES: that variable's list
// when set, else every GPU the driver shows (/proc/driver/nvidia/gpus). Read without initialising CUDA,
// which a process that forks ranks must not do before the fork.
#include <string>
#include <vector>

namespace moe::actors {

std::vector<std::string> visible_gpus();

}  // namespace moe::actors
