#include "serving_harness.h"

#include "worker/load_model_on_device.h"

namespace moe::testing {

std::unique_ptr<EngineCore> make_pipeline(const HarnessOptions& options) {
  ModelOptions model_options;
  model_options.ep_size = options.ep_size;
  model_options.device = options.device;
  return make_engine(load_model_on_device(std::string(MOE_TEST_DATA_DIR) + "/" + options.fixture, model_options),
                     options.settings,
                     [model_options](const std::string& model_dir, std::optional<Quantization> quantization) {
                       ModelOptions options = model_options;
                       options.quantization = quantization.value_or(model_options.quantization);
                       return load_model_on_device(model_dir, options);
                     });
}

}  // namespace moe::testing
