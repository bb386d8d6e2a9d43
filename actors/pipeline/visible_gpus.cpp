#include "pipeline/visible_gpus.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace moe::actors {

std::vector<std::string> visible_gpus() {
  std::vector<std::string> gpus;
  if (const char* listed = std::getenv("CUDA_VISIBLE_DEVICES"); listed != nullptr) {
    std::stringstream list(listed);
    for (std::string gpu; std::getline(list, gpu, ',');)
      if (!gpu.empty()) gpus.push_back(gpu);
    return gpus;
  }
  std::error_code error;
  const std::filesystem::path driver("/proc/driver/nvidia/gpus");
  int count = 0;
  for (auto it = std::filesystem::directory_iterator(driver, error); !error && it != std::filesystem::directory_iterator();
       it.increment(error))
    ++count;
  for (int i = 0; i < count; ++i) gpus.push_back(std::to_string(i));
  return gpus;
}

}  // namespace moe::actors
