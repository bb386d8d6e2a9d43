// A served model of 512 experts (random weights, the tiny Qwen3-MoE's shapes otherwise): uint8
// cannot hold its expert ids, so a request asking for them is refused with a 400 naming the field
// before it runs (no token routed, no KV slot used, nothing cached), and auto serves the rows as int16.
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "common/json_file.h"
#include "model/random_checkpoint.h"
#include "moe/client.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

TEST(ManyExperts, Uint8IsRefusedBeforeTheRequestRunsAndAutoServesInt16) {
  namespace fs = std::filesystem;
  nlohmann::json config = read_json_file(std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny/config.json");
  config["num_experts"] = 512;
  const fs::path dir = fs::temp_directory_path() / ("moe_512_experts_" + std::to_string(::getpid()));
  write_random_checkpoint(config, dir.string(), RandomCheckpointOptions{});
  actors::ServeOptions options = tiny_serve_options();
  options.model_path = dir.string();
  {
    actors::EngineRuntime runtime(options);
    RawDealer dealer(runtime.client_endpoint());
    msg::GenerateRequest request;
    request.rid = "narrow";
    request.input_ids = std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8};
    request.sampling.max_new_tokens = 2;
    request.routing.return_routed_experts = true;
    request.routing.dtype = msg::RoutedExpertsDtype::Uint8;
    dealer.send(request);
    auto reply = dealer.receive();
    ASSERT_TRUE(reply);
    const auto* error = std::get_if<msg::ErrorReply>(&*reply);
    ASSERT_NE(error, nullptr) << "a uint8 request on 512 experts was served";
    EXPECT_EQ(error->code, 400);
    EXPECT_NE(error->message.find("`routed_experts_dtype` uint8"), std::string::npos) << error->message;
    EXPECT_NE(error->message.find("512 experts"), std::string::npos) << error->message;
    const SchedulerStats untouched = wait_until_idle(runtime);
    EXPECT_EQ(untouched.radix_cached_tokens, 0) << "the refused prompt ran";
    EXPECT_EQ(untouched.kv_slots_used, 0);
    EXPECT_EQ(runtime.expert_load(false).tokens, 0u) << "the refused prompt was routed";

    request.rid = "auto";
    request.routing.dtype = msg::RoutedExpertsDtype::Auto;
    dealer.send(request);
    reply = dealer.receive();
    ASSERT_TRUE(reply);
    const auto* output = std::get_if<msg::TextOutput>(&*reply);
    ASSERT_NE(output, nullptr) << std::get<msg::ErrorReply>(*reply).message;
    ASSERT_TRUE(output->routed_experts);
    EXPECT_EQ(output->routed_experts->dtype, "int16");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moe::testing
