// The embedding API's RL calls: moe::Engine::update_weights_from_disk (a broken directory fails and
// changes nothing; a good one succeeds, and later outputs carry the new weight_version) and
// moe::Engine::abort (a streaming request ends with finish reason abort, its handler told).
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <future>

#include "moe/engine.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

class EngineRl : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = load_golden("qwen3-moe-tiny");
    EngineOptions options;
    options.model_path = golden_.model_dir;
    options.tokenizer_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
    options.enable_return_routed_experts = true;
    options.max_total_tokens = 8192;
    options.weight_version = "v1";
    engine_ = std::make_unique<Engine>(options);
  }

  std::vector<msg::TextOutput> generate(size_t case_index) {
    auto future = engine_->async_generate(golden_request(golden_, golden_.cases[case_index], ""), boost::asio::use_future);
    EXPECT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    return future.get();
  }

  static msg::UpdateWeights update_to(const std::string& path, const std::string& version) {
    msg::UpdateWeights update;
    update.model_path = path;
    update.weight_version = version;
    return update;
  }

  Golden golden_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineRl, UpdateWeightsFromDisk) {
  EXPECT_EQ(generate(0).front().weight_version, "v1");
  const std::string missing = golden_.model_dir + "/no-such-checkpoint";
  const msg::WeightsUpdated failed = engine_->update_weights_from_disk(update_to(missing, "v2"));
  EXPECT_FALSE(failed.success);
  EXPECT_NE(failed.message.find(missing), std::string::npos) << failed.message;
  EXPECT_EQ(failed.weight_version, "v1");
  EXPECT_EQ(generate(1).front().weight_version, "v1");

  const msg::WeightsUpdated updated = engine_->update_weights_from_disk(update_to(golden_.model_dir, "v2"));
  ASSERT_TRUE(updated.success) << updated.message;
  EXPECT_EQ(updated.weight_version, "v2");
  const std::vector<msg::TextOutput> after = generate(2);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after.front().weight_version, "v2");
  expect_golden_reply(golden_, golden_.cases[2], join_reply(after));  // the same checkpoint, reloaded
}

TEST_F(EngineRl, AbortEndsAStreamingRequest) {
  msg::GenerateRequest request;
  request.rid = "long";
  request.text = "Once upon a time";
  request.sampling.max_new_tokens = 6000;
  request.sampling.ignore_eos = true;
  std::promise<void> first_chunk;
  bool first = true;
  std::optional<msg::FinishReason> finish;
  int32_t tokens = 0;
  auto done = engine_->async_generate_stream(
      request,
      [&](const msg::TextOutput& chunk) {
        tokens = chunk.completion_tokens;
        if (chunk.finish_reason) finish = chunk.finish_reason;
        if (std::exchange(first, false)) first_chunk.set_value();
      },
      boost::asio::use_future);
  ASSERT_EQ(first_chunk.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_TRUE(engine_->abort("long"));
  ASSERT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  done.get();
  ASSERT_TRUE(finish);
  EXPECT_EQ(finish->kind, msg::FinishKind::Abort);
  EXPECT_LT(tokens, 6000);
  EXPECT_FALSE(engine_->abort("long"));
  EXPECT_FALSE(engine_->abort(""));
}

}  // namespace
}  // namespace moe::testing
