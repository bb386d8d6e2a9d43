#include "serving_harness.h"

#include <gtest/gtest.h>

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

std::vector<JoinedOutput> run_joined(EngineCore& core, const std::vector<msg::GenerateRequest>& requests) {
  auto joined = join_outputs(core.run(requests));
  for (const msg::ErrorReply& e : core.errors()) ADD_FAILURE() << e.rid << ": " << e.message;
  std::vector<JoinedOutput> out;
  for (const msg::GenerateRequest& r : requests) out.push_back(joined[{r.rid, 0}]);
  return out;
}

bool is_output_projection(const std::string& tensor) {
  const auto ends_with = [&](const std::string& suffix) {
    return tensor.size() >= suffix.size() && tensor.compare(tensor.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("o_proj.weight") || ends_with("down_proj.weight");
}

}  // namespace moe::testing
