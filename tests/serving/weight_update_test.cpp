// Weight updates in the engine step (EngineCore: the same SchedulerService and ModelWorker calls the
// actors make): after an update the replies are exactly those of a fresh engine on the new
// checkpoint (ids and routing), carry its version, and use no prefix-cache KV of the old weights; a
// request the old weights began ends with finish reason abort and the old version, a queued one
// runs whole on the new weights; a failed update changes nothing, not even for paused requests.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "common/json_file.h"
#include "golden_serving_test.h"
#include "model/random_checkpoint.h"

namespace moe::testing {
namespace {

namespace fs = std::filesystem;

class WeightUpdate : public GoldenServingTest {
 protected:
  void SetUp() override {
    GoldenServingTest::SetUp();
    dir_ = fs::temp_directory_path() / ("moe_weight_update_" + std::to_string(::getpid()));
    const nlohmann::json config = read_json_file(golden_.model_dir + "/config.json");
    RandomCheckpointOptions options;
    options.seed = 11;
    write_random_checkpoint(config, checkpoint_b(), options);
    nlohmann::json other = config;
    other["num_experts"] = 8;
    write_random_checkpoint(other, (dir_ / "other-shape").string(), options);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string checkpoint_b() const { return (dir_ / "b").string(); }

  // An engine on the fixture (checkpoint A) that can load updates.
  std::unique_ptr<EngineCore> engine_on_a() const {
    const HarnessOptions harness;
    EngineCoreOptions options;
    options.settings = harness.settings;
    options.load_checkpoint = [](const std::string& dir, std::optional<Quantization>) { return Model::load(dir); };
    return std::make_unique<EngineCore>(Model::load(golden_.model_dir),
                                        tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"),
                                        options);
  }

  static msg::UpdateWeights update_to(const std::string& path, std::optional<std::string> version) {
    msg::UpdateWeights update;
    update.model_path = path;
    update.weight_version = std::move(version);
    return update;
  }

  fs::path dir_;
};

TEST_F(WeightUpdate, RepliesAfterAnUpdateAreAFreshEnginesOnTheNewWeights) {
  const auto engine = engine_on_a();
  const auto on_a = join_outputs(engine->run(all_cases("a")));
  expect_all_golden(on_a, "a");
  EXPECT_EQ(on_a.at({"a0", 0}).weight_version, "default");

  const msg::WeightsUpdated answer = engine->update_weights(update_to(checkpoint_b(), "step-1"));
  ASSERT_TRUE(answer.success) << answer.message;
  EXPECT_EQ(answer.weight_version, "step-1");
  EXPECT_EQ(engine->service().weights().model_path, checkpoint_b());
  EXPECT_EQ(engine->service().stats().radix_cached_tokens, 0);

  const auto fresh = join_outputs(make_engine(Model::load(checkpoint_b()), HarnessOptions{}.settings)->run(all_cases("b")));
  const auto on_b = join_outputs(engine->run(all_cases("b")));
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const JoinedOutput& updated = on_b.at({"b" + std::to_string(i), 0});
    const JoinedOutput& expected = fresh.at({"b" + std::to_string(i), 0});
    EXPECT_EQ(updated.ids, expected.ids);
    EXPECT_EQ(updated.rows, expected.rows);
    EXPECT_EQ(updated.logprobs, expected.logprobs);
    EXPECT_EQ(updated.weight_version, "step-1");
    // The same prompts ran on A: a prefix hit would have served A's KV.
    EXPECT_EQ(updated.cached_tokens, 0);
  }
  EXPECT_NE(on_b.at({"b0", 0}).ids, on_a.at({"a0", 0}).ids);  // the weights did change

  // Back to A: the goldens again; without a version the label stays, as SGLang keeps it.
  ASSERT_TRUE(engine->update_weights(update_to(golden_.model_dir, std::nullopt)).success);
  const auto again = join_outputs(engine->run(all_cases("again")));
  expect_all_golden(again, "again");
  EXPECT_EQ(again.at({"again0", 0}).weight_version, "step-1");
  EXPECT_TRUE(engine->errors().empty());
}

TEST_F(WeightUpdate, AFailedUpdateChangesNothing) {
  const auto engine = engine_on_a();
  for (const std::string& bad : {(dir_ / "missing").string(), (dir_ / "other-shape").string()}) {
    SCOPED_TRACE(bad);
    // A request paused mid-decode by the update goes on as if nothing happened.
    ASSERT_FALSE(engine->submit(all_cases("paused")[1]));
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine->step());
    const msg::WeightsUpdated answer = engine->update_weights(update_to(bad, "never"));
    EXPECT_FALSE(answer.success);
    EXPECT_NE(answer.message.find(bad), std::string::npos) << answer.message;
    EXPECT_EQ(answer.weight_version, "default");
    const auto joined = join_outputs(engine->run({}));
    expect_golden(joined.at({"paused1", 0}), 1);
    EXPECT_EQ(joined.at({"paused1", 0}).weight_version, "default");
  }
  const msg::WeightsUpdated other_shape = engine->update_weights(update_to((dir_ / "other-shape").string(), "x"));
  // The client is told the path and that the model differs; the difference itself goes to the server log.
  EXPECT_NE(other_shape.message.find("holds another model than the one serving"), std::string::npos)
      << other_shape.message;
  expect_all_golden(join_outputs(engine->run(all_cases("after"))), "after");
}

TEST_F(WeightUpdate, BegunRequestsEndWithTheOldVersionAndQueuedOnesRunOnTheNew) {
  const auto engine = engine_on_a();
  ASSERT_FALSE(engine->submit(all_cases("begun")[2]));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine->step());
  ASSERT_FALSE(engine->submit(all_cases("queued")[2]));  // no step has run for it yet
  ASSERT_TRUE(engine->update_weights(update_to(checkpoint_b(), "b")).success);
  const auto joined = join_outputs(engine->run({}));

  const JoinedOutput& begun = joined.at({"begun2", 0});
  ASSERT_TRUE(begun.finish);
  EXPECT_EQ(begun.finish->kind, msg::FinishKind::Abort);
  EXPECT_NE(begun.finish->message.find("updated to version 'b'"), std::string::npos) << begun.finish->message;
  EXPECT_EQ(begun.weight_version, "default");
  EXPECT_LT(begun.ids.size(), static_cast<size_t>(golden_.max_new_tokens));
  // Its tokens so far are A's: a prefix of the golden output.
  const std::vector<int32_t>& golden_ids = golden_.cases[2].output_ids;
  EXPECT_TRUE(std::equal(begun.ids.begin(), begun.ids.end(), golden_ids.begin()));

  const JoinedOutput& queued = joined.at({"queued2", 0});
  EXPECT_EQ(queued.weight_version, "b");
  const auto fresh = run_engine(Model::load(checkpoint_b()), {all_cases("fresh")[2]})[0];
  EXPECT_EQ(queued.ids, fresh.ids);
  EXPECT_EQ(queued.rows, fresh.rows);
}

}  // namespace
}  // namespace moe::testing
