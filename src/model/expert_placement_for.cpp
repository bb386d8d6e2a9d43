#include "common/error.h"
#include "model/model.h"

namespace moe {

ExpertPlacement expert_placement_for(const ModelConfig& config, const ModelOptions& options) {
  if (!options.expert_placement_file.empty()) {
    ExpertPlacement placement = ExpertPlacement::from_file(options.expert_placement_file, config.num_experts);
    if (placement.ep_size() != options.ep_size && options.ep_size != 1)
      throw Error(options.expert_placement_file + ": places experts on " + std::to_string(placement.ep_size()) +
                  " devices but --ep-size is " + std::to_string(options.ep_size));
    return placement;
  }
  return ExpertPlacement::uniform(config.num_experts, options.ep_size);
}

}  // namespace moe
