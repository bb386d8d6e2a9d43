// The server's whole path with --device cuda: the four actors as threads over real ZeroMQ sockets,
// the model worker running the CUDA model (CUDA graphs on, rows from the CUDA copy engine), a
// client on tcp://. Every fixture's golden cases come back with transformers' ids and routing rows
// one at a time, all at once, from the prefix cache, with the prompts chunked, under preemption and
// as n = 3 completions, over 2 expert-parallel shards (--ep-size 2) and with NGRAM speculation.
// Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include "cuda/device.h"
#include "moe/client.h"
#include "pipeline/pipeline_harness.h"

namespace moe::testing {
namespace {

class CudaServing : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = load_golden(GetParam());
  }

  actors::ServeOptions options() const {
    actors::ServeOptions options = tiny_serve_options();
    options.model_path = golden_.model_dir;
    options.device = "cuda";
    return options;
  }

  Golden golden_;
};

TEST_P(CudaServing, OneAtATimeAllAtOnceAndFromThePrefixCache) {
  actors::EngineRuntime runtime(options());
  Client client(runtime.client_endpoint());
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("alone case " + std::to_string(i));
    expect_golden_reply(golden_, golden_.cases[i],
                        join_reply(client.generate(golden_request(golden_, golden_.cases[i], "one" + std::to_string(i)))));
  }
  // The prompts were all served once: the second time all of each prompt but its last token is a
  // prefix-cache hit, and the cached rows are the real ones.
  const auto again = send_all_cases_at_once(client, golden_, "again");
  expect_all_golden(golden_, again);
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i].cached_tokens, static_cast<int32_t>(golden_.cases[i].prompt_ids.size()) - 1) << "case " << i;
}

TEST_P(CudaServing, ChunkedPrefillAndAPoolSmallEnoughToPreempt) {
  actors::ServeOptions small = options();
  small.chunked_prefill_size = 7;
  // Room for the longest case alone, not for all of them at once.
  int64_t longest = 0, all = 0;
  for (const GoldenCase& c : golden_.cases) {
    const int64_t tokens = static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens;
    longest = std::max(longest, tokens);
    all += tokens;
  }
  small.max_total_tokens = longest + 8;
  actors::EngineRuntime runtime(small);
  Client client(runtime.client_endpoint());
  expect_all_golden(golden_, send_all_cases_at_once(client, golden_, "small"));
  const SchedulerStats stats = wait_until_idle(runtime);
  // Preempted where the other cases, admitted together, outgrow the pool; GLM-4.5's and DeepSeek-V3's
  // fixtures have one 300-token prompt that fills it alone, and the others finish within it first.
  if (all - longest > small.max_total_tokens) EXPECT_GT(stats.num_preemptions, 0);
}

TEST_P(CudaServing, ThreeCompletionsOfOnePrompt) {
  actors::EngineRuntime runtime(options());
  Client client(runtime.client_endpoint());
  msg::GenerateRequest request = golden_request(golden_, golden_.cases[2], "three");
  request.sampling.n = 3;
  const auto outputs = client.generate(request);
  ASSERT_EQ(outputs.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(outputs[i].index, i);
    expect_golden_reply(golden_, golden_.cases[2], join_reply({outputs[i]}));
  }
}

// --ep-size 2: the MoE layers run as two shards on the GPU, and every reply is still the golden's.
TEST_P(CudaServing, TwoExpertShards) {
  actors::ServeOptions sharded = options();
  sharded.ep_size = 2;
  actors::EngineRuntime runtime(sharded);
  Client client(runtime.client_endpoint());
  expect_golden_reply(golden_, golden_.cases[0],
                      join_reply(client.generate(golden_request(golden_, golden_.cases[0], "ep"))));
  expect_all_golden(golden_, send_all_cases_at_once(client, golden_, "ep all"));
}

// NGRAM speculation (draft trees verified on the GPU) through the actors: all cases at once keep
// the golden ids and rows.
TEST_P(CudaServing, NgramSpeculation) {
  actors::ServeOptions speculative = options();
  speculative.speculative_algorithm = "NGRAM";
  actors::EngineRuntime runtime(speculative);
  Client client(runtime.client_endpoint());
  expect_all_golden(golden_, send_all_cases_at_once(client, golden_, "spec"));
  EXPECT_GT(wait_until_idle(runtime).verify_passes, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaServing, ::testing::ValuesIn(kAllGoldenFixtures), fixture_test_name);

}  // namespace
}  // namespace moe::testing
