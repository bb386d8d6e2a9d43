// Memory released and resumed in the engine step (EngineCore: the same SchedulerService and
// ModelWorker calls the actors make): while released no step runs; a request the release caught
// mid-decode is recomputed after the resume to its golden ids and rows; the prefix cache is empty
// after a KV release; the weights of the last load come back, and a checkpoint that changed on disk
// meanwhile is refused rather than served as if it were the last load; a load while the weights are
// released is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/json_file.h"
#include "golden_serving_test.h"
#include "model/random_checkpoint.h"

namespace moe::testing {
namespace {

namespace fs = std::filesystem;

class MemoryOccupation : public GoldenServingTest {
 protected:
  std::unique_ptr<EngineCore> engine_on(const std::string& model_dir) const {
    EngineCoreOptions options;
    options.settings = HarnessOptions{}.settings;
    options.load_checkpoint = [](const std::string& dir, std::optional<Quantization>) { return Model::load(dir); };
    options.model_path = model_dir;
    return std::make_unique<EngineCore>(Model::load(model_dir),
                                        tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"),
                                        options);
  }

  static msg::UpdateWeights memory(msg::MemoryAction action, bool weights, bool kv_cache) {
    msg::UpdateWeights update;
    update.memory = action;
    update.weights_tag = weights;
    update.kv_cache_tag = kv_cache;
    return update;
  }
};

TEST_F(MemoryOccupation, ARequestCaughtByAReleaseEndsAsGoldenAfterTheResume) {
  const auto engine = engine_on(golden_.model_dir);
  ASSERT_FALSE(engine->submit(all_cases("caught")[1]));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine->step());
  const msg::WeightsUpdated released = engine->update_weights(memory(msg::MemoryAction::Release, true, true));
  ASSERT_TRUE(released.success) << released.message;
  EXPECT_EQ(released.message, "released the KV pool and the weights");
  EXPECT_TRUE(engine->service().memory_released());
  EXPECT_EQ(engine->service().stats().radix_cached_tokens, 0);
  EXPECT_FALSE(engine->step());  // nothing runs while released
  ASSERT_FALSE(engine->submit(all_cases("queued")[2]));
  EXPECT_FALSE(engine->step());

  // A load needs the weights back first.
  msg::UpdateWeights load;
  load.model_path = golden_.model_dir;
  const msg::WeightsUpdated refused = engine->update_weights(load);
  EXPECT_FALSE(refused.success);
  EXPECT_NE(refused.message.find("resume_memory_occupation"), std::string::npos) << refused.message;

  // The weights alone: still nothing runs, for the KV cache is still released.
  ASSERT_TRUE(engine->update_weights(memory(msg::MemoryAction::Resume, true, false)).success);
  EXPECT_FALSE(engine->step());
  const msg::WeightsUpdated resumed = engine->update_weights(memory(msg::MemoryAction::Resume, false, true));
  ASSERT_TRUE(resumed.success) << resumed.message;
  EXPECT_FALSE(engine->service().memory_released());
  const auto joined = join_outputs(engine->run({}));
  expect_golden(joined.at({"caught1", 0}), 1);
  expect_golden(joined.at({"queued2", 0}), 2);
  expect_all_golden(join_outputs(engine->run(all_cases("after"))), "after");
  EXPECT_TRUE(engine->errors().empty());
}

TEST_F(MemoryOccupation, ReleasingTwiceOrResumingNothingChangesNothing) {
  const auto engine = engine_on(golden_.model_dir);
  ASSERT_TRUE(engine->update_weights(memory(msg::MemoryAction::Release, false, true)).success);
  EXPECT_EQ(engine->update_weights(memory(msg::MemoryAction::Release, false, true)).message,
            "nothing to release: the memory tagged is released already");
  EXPECT_EQ(engine->update_weights(memory(msg::MemoryAction::Resume, true, false)).message,
            "nothing to resume: the memory tagged is not released");
  EXPECT_TRUE(engine->service().memory_released());
  ASSERT_TRUE(engine->update_weights(memory(msg::MemoryAction::Resume, true, true)).success);
  expect_all_golden(join_outputs(engine->run(all_cases("after"))), "after");
}

TEST_F(MemoryOccupation, AResumeRefusesACheckpointThatChangedWhileReleased) {
  const fs::path dir = fs::temp_directory_path() / ("moe_memory_occupation_" + std::to_string(::getpid()));
  const nlohmann::json config = read_json_file(golden_.model_dir + "/config.json");
  RandomCheckpointOptions options;
  options.seed = 3;
  write_random_checkpoint(config, dir.string(), options);
  const auto engine = engine_on(dir.string());
  const auto before = join_outputs(engine->run(all_cases("before")));
  ASSERT_TRUE(engine->update_weights(memory(msg::MemoryAction::Release, true, true)).success);

  options.seed = 4;  // a trainer wrote its next checkpoint over this one
  write_random_checkpoint(config, dir.string(), options);
  const msg::WeightsUpdated changed = engine->update_weights(memory(msg::MemoryAction::Resume, true, true));
  EXPECT_FALSE(changed.success);
  EXPECT_NE(changed.message.find("changed since the weights were released"), std::string::npos) << changed.message;
  EXPECT_TRUE(engine->service().memory_released());

  options.seed = 3;  // the same weights again: they resume
  write_random_checkpoint(config, dir.string(), options);
  ASSERT_TRUE(engine->update_weights(memory(msg::MemoryAction::Resume, true, true)).success);
  const auto after = join_outputs(engine->run(all_cases("before")));
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& a = after.at({"before" + std::to_string(i), 0});
    const JoinedOutput& b = before.at({"before" + std::to_string(i), 0});
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.rows, b.rows);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moe::testing
