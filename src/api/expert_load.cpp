#include "api/expert_load.h"

#include <nlohmann/json.hpp>

namespace moe::api {

nlohmann::json expert_load_json(const ExpertLoad& load) {
  return {{"num_moe_layers", load.counts.size()},
          {"num_experts", load.counts.empty() ? 0 : load.counts.front().size()},
          {"tokens", load.tokens},
          {"counts", load.counts}};
}

}  // namespace moe::api
