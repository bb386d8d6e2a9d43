#include "serving_harness.h"

namespace moe::testing {

std::unique_ptr<EngineCore> make_pipeline(const HarnessOptions& options) {
  ModelOptions model_options;
  model_options.ep_size = options.ep_size;
  return make_engine(Model::load(std::string(MOE_TEST_DATA_DIR) + "/" + options.fixture, model_options),
                     options.settings);
}

}  // namespace moe::testing
