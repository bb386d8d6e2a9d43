// Expert-load statistics through the ZeroMQ API of a running engine (real tcp socket, the four
// actors as threads): the counts are the histogram of the routing rows the engine computed (every
// row it returned, less the prompt rows a prefix-cache hit served from the host cache), a reset
// returns them and starts a new window without losing a row, and errors (unknown op, a server
// without capture) go to their request alone while generation goes on.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "moe/client.h"
#include "pipeline_harness.h"

namespace moe {

// Loads that differ print as their numbers, not their bytes.
void PrintTo(const ExpertLoad& load, std::ostream* os) {
  *os << "{tokens " << load.tokens << ", counts " << ::testing::PrintToString(load.counts) << "}";
}

}  // namespace moe

namespace moe::testing {
namespace {

class ZmqExpertLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = load_golden("qwen3-moe-tiny");
    num_experts_ = load_model_config(golden_.model_dir).num_experts;
  }

  ExpertLoad zero_load() const { return zero_expert_load(golden_, num_experts_); }
  ExpertLoad computed_load(const std::vector<JoinedReply>& replies) const {
    return computed_expert_load(golden_, num_experts_, replies);
  }
  void expect_k_per_token(const ExpertLoad& load) const { expect_k_experts_per_token(golden_, load); }

  // Golden case `c` through the blocking client.
  JoinedReply run_case(Client& client, size_t c, const std::string& rid) {
    const JoinedReply reply = join_reply(client.generate(golden_request(golden_, golden_.cases[c], rid)));
    expect_golden_reply(golden_, golden_.cases[c], reply);
    return reply;
  }

  Golden golden_;
  int num_experts_ = 0;
};

TEST_F(ZmqExpertLoad, CountsAreTheComputedRowsAndAResetStartsANewWindow) {
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  EXPECT_EQ(client.expert_load(), zero_load());

  std::vector<JoinedReply> replies;
  for (size_t c = 0; c < golden_.cases.size(); ++c) replies.push_back(run_case(client, c, "case" + std::to_string(c)));
  replies.push_back(run_case(client, 5, "repeat"));  // the 120-token prompt again: a prefix-cache hit
  EXPECT_GT(replies.back().cached_tokens, 0);
  const ExpertLoad expected = computed_load(replies);
  ASSERT_EQ(runtime.scheduler_stats().num_preemptions, 0);  // a preempted token would count twice

  const ExpertLoad load = client.expert_load();
  EXPECT_EQ(load, expected);
  expect_k_per_token(load);
  EXPECT_EQ(client.expert_load(/*reset=*/true), expected);
  EXPECT_EQ(client.expert_load(), zero_load());

  const JoinedReply next = run_case(client, 4, "next-window");
  EXPECT_EQ(client.expert_load(), computed_load({next}));
}

TEST_F(ZmqExpertLoad, ResetWindowsTakenWhileServingAddUpToTheWhole) {
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  std::vector<std::future<std::vector<msg::TextOutput>>> running;
  for (int round = 0; round < 3; ++round)
    for (size_t c = 0; c < golden_.cases.size(); ++c)
      running.push_back(std::async(std::launch::async, [&, c, round] {
        return client.generate(golden_request(golden_, golden_.cases[c], std::to_string(c) + "-in-round-" + std::to_string(round)));
      }));

  ExpertLoad windows = zero_load();
  int nonempty_windows = 0;
  auto add_window = [&](const ExpertLoad& window) {
    expect_k_per_token(window);
    nonempty_windows += window.tokens > 0;
    windows.tokens += window.tokens;
    for (size_t l = 0; l < window.counts.size(); ++l)
      for (size_t e = 0; e < window.counts[l].size(); ++e) windows.counts[l][e] += window.counts[l][e];
  };
  auto all_done = [&] {
    for (auto& r : running)
      if (r.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    return true;
  };
  while (!all_done()) {
    add_window(client.expert_load(/*reset=*/true));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  add_window(client.expert_load(/*reset=*/true));

  std::vector<JoinedReply> replies;
  for (auto& r : running) replies.push_back(join_reply(r.get()));
  ASSERT_EQ(runtime.scheduler_stats().num_preemptions, 0);
  EXPECT_EQ(windows, computed_load(replies));
  EXPECT_GT(nonempty_windows, 1);  // the reads did cut the serving into several windows
}

TEST_F(ZmqExpertLoad, PipelinedWithGenerationsAndAnUnknownOpFailsOnlyItself) {
  actors::EngineRuntime runtime(tiny_serve_options());
  RawDealer dealer(runtime.client_endpoint());
  dealer.send(golden_request(golden_, golden_.cases[1], "gen"));
  dealer.send_frame(transport::encode_client_request(transport::ExpertLoadRequest{"load", false}));
  const std::vector<uint8_t> bogus_frame = nlohmann::json::to_msgpack({{"op", "bogus"}, {"rid", "bad"}});
  dealer.send_frame(std::string(bogus_frame.begin(), bogus_frame.end()));
  dealer.send(golden_request(golden_, golden_.cases[2], "gen-after"));

  std::map<std::string, transport::ClientReply> by_rid;
  for (int i = 0; i < 4; ++i) {  // replies to one DEALER come in any order: matched by rid
    const auto reply = dealer.receive();
    ASSERT_TRUE(reply) << "reply " << i << " missing";
    by_rid.emplace(std::visit([](const auto& r) { return r.rid; }, *reply), *reply);
  }
  ASSERT_TRUE(std::holds_alternative<transport::ExpertLoadReply>(by_rid.at("load")));
  EXPECT_EQ(std::get<transport::ExpertLoadReply>(by_rid.at("load")).load.counts.size(), golden_.num_moe_layers);
  const auto& error = std::get<msg::ErrorReply>(by_rid.at("bad"));
  EXPECT_EQ(error.code, 400);
  EXPECT_NE(error.message.find("unknown operation \"bogus\""), std::string::npos) << error.message;
  expect_golden_reply(golden_, golden_.cases[1], join_reply({std::get<msg::TextOutput>(by_rid.at("gen"))}));
  expect_golden_reply(golden_, golden_.cases[2], join_reply({std::get<msg::TextOutput>(by_rid.at("gen-after"))}));
}

TEST_F(ZmqExpertLoad, WithoutCaptureTheRequestIsRefusedAndGenerationGoesOn) {
  actors::ServeOptions options = tiny_serve_options();
  options.enable_return_routed_experts = false;
  actors::EngineRuntime runtime(options);
  Client client(runtime.client_endpoint());
  try {
    client.expert_load();
    FAIL() << "expected a RequestError";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.reply().code, 400);
    EXPECT_FALSE(e.reply().rid.empty());  // matched to its request, not a frame-level error
    EXPECT_EQ(std::string(e.what()), "expert_load needs a server started with --enable-return-routed-experts");
  }
  msg::GenerateRequest request = golden_request(golden_, golden_.cases[3], "plain");
  request.routing.return_routed_experts = false;
  const JoinedReply reply = join_reply(client.generate(request));
  EXPECT_EQ(reply.ids, golden_.cases[3].output_ids);
  EXPECT_EQ(reply.num_rows, 0);
}

}  // namespace
}  // namespace moe::testing
