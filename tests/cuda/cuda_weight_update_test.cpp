// A weight update on the GPU: the CUDA worker loads a random checkpoint of the fixture's shapes
// through the same loader as at start, swaps it in with a fresh device KV pool, and from then on
// answers exactly as a fresh CUDA engine on that checkpoint does (ids and routing); a checkpoint
// that does not load leaves the fixture's goldens. Skipped where no GPU is visible.
#include <filesystem>
#include <unistd.h>

#include "common/json_file.h"
#include "cuda/device.h"
#include "model/random_checkpoint.h"
#include "support/golden_support.h"
#include "worker/load_model_on_device.h"

namespace moe::testing {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Model> load_on_gpu(const std::string& dir) {
  ModelOptions options;
  options.device = Device::Cuda;
  return load_model_on_device(dir, options);
}

TEST(CudaWeightUpdate, AfterAnUpdateTheGpuAnswersAsAFreshEngineOnTheNewWeights) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Golden golden = load_golden("qwen3-moe-tiny");
  const fs::path dir = fs::temp_directory_path() / ("moe_cuda_update_" + std::to_string(::getpid()));
  RandomCheckpointOptions random;
  random.seed = 3;
  write_random_checkpoint(read_json_file(golden.model_dir + "/config.json"), (dir / "b").string(), random);

  EngineCoreOptions options;
  options.settings.max_total_tokens = 4096;
  options.settings.enable_return_routed_experts = true;
  options.load_checkpoint = [](const std::string& dir, std::optional<Quantization>) { return load_on_gpu(dir); };
  EngineCore engine(load_on_gpu(golden.model_dir),
                    tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"), options);
  const std::vector<msg::GenerateRequest> requests = greedy_requests(golden);
  auto check_golden = [&](const std::string& label) {
    const auto joined = join_outputs(engine.run(requests));
    for (size_t i = 0; i < golden.cases.size(); ++i) {
      const GoldenCase& c = golden.cases[i];
      expect_matches_golden(golden, c, joined.at({requests[i].rid, 0}),
                            static_cast<int64_t>(c.prompt_ids.size()) + golden.max_new_tokens - 1, label);
    }
  };
  check_golden("before");

  msg::UpdateWeights update;
  update.model_path = (dir / "missing").string();
  EXPECT_FALSE(engine.update_weights(update).success);
  check_golden("after a failed update");

  update.model_path = (dir / "b").string();
  update.weight_version = "b";
  const msg::WeightsUpdated answer = engine.update_weights(update);
  ASSERT_TRUE(answer.success) << answer.message;
  const auto updated = join_outputs(engine.run(requests));
  const std::vector<JoinedOutput> fresh = run_engine(load_on_gpu((dir / "b").string()), requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const JoinedOutput& out = updated.at({requests[i].rid, 0});
    EXPECT_EQ(out.ids, fresh[i].ids);
    EXPECT_EQ(out.rows, fresh[i].rows);
    EXPECT_EQ(out.weight_version, "b");
    EXPECT_EQ(out.cached_tokens, 0);
  }
  EXPECT_TRUE(engine.errors().empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moe::testing
