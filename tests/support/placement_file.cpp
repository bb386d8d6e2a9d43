#include "support/placement_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace moe::testing {

PlacementFile::PlacementFile(const ExpertPlacement& placement, const std::string& name)
    : path_((std::filesystem::temp_directory_path() /
             ("moe_placement_" + name + "_" + std::to_string(::getpid()) + ".json"))
                .string()) {
  std::ofstream(path_) << nlohmann::json(placement.device_expert_mapping).dump();
}

PlacementFile::~PlacementFile() { std::filesystem::remove(path_); }

}  // namespace moe::testing
