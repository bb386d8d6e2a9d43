#pragma once
// A placement written as the JSON device_expert_mapping file --expert-placement reads, in the
// temporary directory for as long as the object lives.
#include <string>

#include "moe/expert_placement.h"

namespace moe::testing {

class PlacementFile {
 public:
  // `name` tells apart the files of one process.
  PlacementFile(const ExpertPlacement& placement, const std::string& name);
  ~PlacementFile();
  PlacementFile(const PlacementFile&) = delete;
  PlacementFile& operator=(const PlacementFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace moe::testing
