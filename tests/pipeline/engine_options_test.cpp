// moe::EngineOptions' expert parallelism (ep_size and expert_placement, moe-serve's --ep-size and
// --expert-placement) and moe::Engine::expert_load: sharded engines, uniform or placed from a file,
// give the golden outputs; options that cannot shard the model stop the start naming the flag; the
// load counts are what the engine computed, a reset starts a new window, and an engine without
// capture refuses the read with a RequestError.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/error.h"
#include "model/model_config.h"
#include "moe/engine.h"
#include "moe/expert_placement.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

class EngineOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = load_golden("qwen3-moe-tiny");
    num_experts_ = load_model_config(golden_.model_dir).num_experts;
  }
  void TearDown() override {
    if (!placement_file_.empty()) std::filesystem::remove(placement_file_);
  }

  EngineOptions options() const {
    EngineOptions o;
    o.model_path = golden_.model_dir;
    o.tokenizer_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
    o.enable_return_routed_experts = true;
    o.max_total_tokens = 4096;
    return o;
  }

  // A device_expert_mapping file placing the experts at random over `ep_size` devices.
  std::string write_random_placement(int ep_size) {
    placement_file_ = (std::filesystem::temp_directory_path() /
                       ("moe_engine_placement_" + std::to_string(::getpid()) + ".json"))
                          .string();
    std::ofstream(placement_file_) << nlohmann::json(ExpertPlacement::random(num_experts_, ep_size, 77).device_expert_mapping).dump();
    return placement_file_;
  }

  // Every golden case at once through async_generate, each case's joined reply.
  std::vector<JoinedReply> generate_all(Engine& engine) const {
    std::vector<std::future<std::vector<msg::TextOutput>>> futures;
    for (const GoldenCase& c : golden_.cases)
      futures.push_back(engine.async_generate(golden_request(golden_, c, ""), boost::asio::use_future));
    std::vector<JoinedReply> replies;
    for (auto& future : futures) {
      EXPECT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
      replies.push_back(join_reply(future.get()));
    }
    return replies;
  }

  Golden golden_;
  int num_experts_ = 0;
  std::string placement_file_;
};

TEST_F(EngineOptionsTest, ExpertParallelShardsUniformAndPlacedFromAFileGiveTheGoldens) {
  EngineOptions uniform = options();
  uniform.ep_size = 2;
  Engine uniform_engine(uniform);
  expect_all_golden(golden_, generate_all(uniform_engine));

  EngineOptions placed = options();
  placed.ep_size = 4;
  placed.expert_placement = write_random_placement(4);
  Engine placed_engine(placed);
  expect_all_golden(golden_, generate_all(placed_engine));
}

TEST_F(EngineOptionsTest, ShardingsThatCannotBeStopTheStartNamingTheCause) {
  EngineOptions uneven = options();
  uneven.ep_size = 3;
  try {
    Engine engine(uneven);
    ADD_FAILURE() << "ep_size 3 over " << num_experts_ << " experts was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be split evenly over 3"), std::string::npos) << e.what();
  }

  EngineOptions mismatched = options();
  mismatched.ep_size = 2;
  mismatched.expert_placement = write_random_placement(4);
  try {
    Engine engine(mismatched);
    ADD_FAILURE() << "a placement over 4 devices was accepted with ep_size 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--ep-size is 2"), std::string::npos) << e.what();
  }

  EngineOptions missing = options();
  missing.expert_placement = golden_.model_dir + "/no-such-placement.json";
  try {
    Engine engine(missing);
    ADD_FAILURE() << "a missing placement file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-placement.json"), std::string::npos) << e.what();
  }
}

TEST_F(EngineOptionsTest, ExpertLoadCountsTheComputedRowsAndAResetStartsANewWindow) {
  Engine engine(options());
  const ExpertLoad zero = zero_expert_load(golden_, num_experts_);
  EXPECT_EQ(engine.expert_load(), zero);

  const std::vector<JoinedReply> replies = generate_all(engine);
  expect_all_golden(golden_, replies);
  const ExpertLoad expected = computed_expert_load(golden_, num_experts_, replies);
  EXPECT_GT(expected.tokens, 0u);
  const ExpertLoad load = engine.expert_load();
  EXPECT_EQ(load, expected);
  expect_k_experts_per_token(golden_, load);
  EXPECT_EQ(engine.expert_load(/*reset=*/true), expected);
  EXPECT_EQ(engine.expert_load(), zero);

  const std::vector<JoinedReply> next = generate_all(engine);
  EXPECT_EQ(engine.expert_load(), computed_expert_load(golden_, num_experts_, next));
}

TEST_F(EngineOptionsTest, ExpertLoadWithoutCaptureThrowsRequestError) {
  EngineOptions plain = options();
  plain.enable_return_routed_experts = false;
  Engine engine(plain);
  try {
    engine.expert_load();
    FAIL() << "expected a RequestError";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.reply().code, 400);
    EXPECT_EQ(std::string(e.what()), "expert_load needs a server started with --enable-return-routed-experts");
  }
  msg::GenerateRequest request = golden_request(golden_, golden_.cases[3], "");
  request.routing.return_routed_experts = false;
  auto future = engine.async_generate(request, boost::asio::use_future);
  ASSERT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(join_reply(future.get()).ids, golden_.cases[3].output_ids);
}

}  // namespace
}  // namespace moe::testing
