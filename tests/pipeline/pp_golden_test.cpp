// Pipeline parallelism through the ZeroMQ client API: the engine with its model cut into 2, 3 (and,
// for the 4-layer fixture, 4) stages, each a model worker thread passing activations to the next over
// inproc://, up to one micro-batch per stage in flight, answers every golden case of every fixture
// with transformers' ids and routing rows (each stage captured its own layers' slice): alone, eight
// at once, again from the prefix cache, streamed, in prefill chunks of 7 with a KV pool small enough
// to preempt, and as n = 3 completions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>

#include "common/error.h"
#include "model/model_config.h"
#include "moe/client.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

struct PpCase {
  std::string fixture;
  int pp_size;
};

// How gtest shows a case (instead of its bytes).
void PrintTo(const PpCase& c, std::ostream* out) { *out << c.fixture << " pp " << c.pp_size; }

std::string pp_case_name(const ::testing::TestParamInfo<PpCase>& info) {
  std::string name = info.param.fixture + "_pp" + std::to_string(info.param.pp_size);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::vector<PpCase> pp_cases() {
  std::vector<PpCase> cases;
  for (const std::string& fixture : kGoldenFixtures) {
    const int layers = load_model_config(std::string(MOE_TEST_DATA_DIR) + "/" + fixture).num_hidden_layers;
    for (int pp = 2; pp <= std::min(layers, 4); ++pp) cases.push_back({fixture, pp});
  }
  return cases;
}

class PpGolden : public ::testing::TestWithParam<PpCase> {
 protected:
  void SetUp() override { golden_ = load_golden(GetParam().fixture); }

  actors::ServeOptions options() const {
    actors::ServeOptions o = tiny_serve_options();
    o.model_path = std::string(MOE_TEST_DATA_DIR) + "/" + GetParam().fixture;
    o.pp_size = GetParam().pp_size;
    return o;
  }

  Golden golden_;
};

TEST_P(PpGolden, AloneEightAtOnceFromThePrefixCacheAndStreamed) {
  actors::EngineRuntime runtime(options());
  Client client(runtime.client_endpoint());
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_golden_reply(golden_, golden_.cases[i],
                        join_reply(client.generate(golden_request(golden_, golden_.cases[i], "one" + std::to_string(i)))));
  }
  // Every prompt was served once already: all of it but its last token comes from the prefix cache.
  const std::vector<JoinedReply> again = send_all_cases_at_once(client, golden_, "eight");
  expect_all_golden(golden_, again);
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i].cached_tokens, static_cast<int32_t>(golden_.cases[i].prompt_ids.size()) - 1) << "case " << i;
  const std::vector<JoinedReply> streamed = send_all_cases_at_once(client, golden_, "stream", /*stream=*/true);
  expect_all_golden(golden_, streamed);
  for (const JoinedReply& reply : streamed) EXPECT_EQ(reply.chunks, golden_.max_new_tokens);
  const SchedulerStats stats = wait_until_idle(runtime);
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
  EXPECT_EQ(stats.kv_slots_used, stats.radix_cached_tokens);
}

TEST_P(PpGolden, ChunksOf7InAPoolSmallEnoughToPreempt) {
  actors::ServeOptions o = options();
  o.chunked_prefill_size = 7;
  // Room for the longest case alone, far less than all eight at once.
  int64_t longest = 0;
  for (const GoldenCase& c : golden_.cases)
    longest = std::max<int64_t>(longest, static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens);
  o.max_total_tokens = longest + 8;
  actors::EngineRuntime runtime(o);
  Client client(runtime.client_endpoint());
  expect_all_golden(golden_, send_all_cases_at_once(client, golden_, "small"));
  EXPECT_GT(wait_until_idle(runtime).num_preemptions, 0);
}

TEST_P(PpGolden, ThreeCompletionsOfOnePromptEachGolden) {
  actors::EngineRuntime runtime(options());
  Client client(runtime.client_endpoint());
  const GoldenCase& c = golden_.cases[1];
  msg::GenerateRequest request = golden_request(golden_, c, "n3");
  request.sampling.n = 3;
  std::map<int32_t, std::vector<msg::TextOutput>> by_index;
  for (msg::TextOutput& output : client.generate(request)) by_index[output.index].push_back(std::move(output));
  ASSERT_EQ(by_index.size(), 3u);
  for (auto& [index, outputs] : by_index) {
    SCOPED_TRACE("completion " + std::to_string(index));
    expect_golden_reply(golden_, c, join_reply(outputs));
  }
}

// Prompt logprobs (logprob_start_len) come from the last stage, in prefill chunks of 7, through the
// C++ client: teacher forcing case c's first outputs gives their golden logprobs, the greedy token first.
TEST_P(PpGolden, PromptLogprobsByTeacherForcingInChunksOf7) {
  actors::ServeOptions o = options();
  o.chunked_prefill_size = 7;
  actors::EngineRuntime runtime(o);
  Client client(runtime.client_endpoint());
  const size_t m = static_cast<size_t>(golden_.max_new_tokens) - 1;
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const GoldenCase& c = golden_.cases[i];
    msg::GenerateRequest request = golden_request(golden_, c, "tf" + std::to_string(i));
    request.input_ids->insert(request.input_ids->end(), c.output_ids.begin(),
                              c.output_ids.begin() + static_cast<std::ptrdiff_t>(m));
    request.sampling.max_new_tokens = 1;
    request.return_logprob = true;
    request.top_logprobs_num = 2;
    request.logprob_start_len = static_cast<int32_t>(c.prompt_ids.size());
    const std::vector<msg::TextOutput> outputs = client.generate(request);
    ASSERT_EQ(outputs.size(), 1u);
    const msg::TextOutput& out = outputs[0];
    EXPECT_EQ(out.output_ids, std::vector<int32_t>{c.output_ids[m]});
    ASSERT_EQ(out.input_token_logprobs.size(), m);
    ASSERT_EQ(out.input_top_logprobs.size(), m);
    EXPECT_EQ(out.input_token_ids, std::vector<int32_t>(c.output_ids.begin(), c.output_ids.begin() + static_cast<std::ptrdiff_t>(m)));
    for (size_t j = 0; j < m; ++j) {
      EXPECT_NEAR(out.input_token_logprobs[j], c.output_logprobs[j], 1e-3) << "output " << j;
      EXPECT_EQ(out.input_top_logprobs[j].ids.front(), c.output_ids[j]) << "output " << j;
    }
  }
}

// What one stage answers, byte for byte, for requests that use every routing option: the last
// token's row, start_len, router weights, int16 rows, streamed; and the same expert-load counts.
TEST_P(PpGolden, RoutingOptionsAndExpertLoadAsWithOneStage) {
  auto serve = [&](int pp_size) {
    actors::ServeOptions o = options();
    o.pp_size = pp_size;
    o.enable_return_router_weights = true;
    actors::EngineRuntime runtime(o);
    Client client(runtime.client_endpoint());
    std::vector<std::vector<msg::TextOutput>> replies;
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      msg::GenerateRequest request = golden_request(golden_, golden_.cases[i], "opt" + std::to_string(i));
      request.routing.include_last = true;
      request.routing.start_len = 3;
      request.routing.return_router_weights = true;
      request.routing.dtype = msg::RoutedExpertsDtype::Int16;
      request.stream = i % 2 == 1;
      replies.push_back(client.generate(request));
    }
    return std::make_pair(replies, client.expert_load());
  };
  const auto one_stage = serve(1);
  const auto stages = serve(GetParam().pp_size);
  ASSERT_EQ(stages.first.size(), one_stage.first.size());
  for (size_t i = 0; i < one_stage.first.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    ASSERT_TRUE(one_stage.first[i].back().routed_experts && one_stage.first[i].back().router_weights);
    EXPECT_EQ(stages.first[i], one_stage.first[i]);
  }
  EXPECT_EQ(stages.second.counts, one_stage.second.counts);
  EXPECT_EQ(stages.second.tokens, one_stage.second.tokens);
  EXPECT_GT(stages.second.tokens, 0u);
}

// Expert parallelism inside every stage: --pp-size with --ep-size 2.
TEST_P(PpGolden, ExpertParallelShardsInEveryStage) {
  actors::ServeOptions o = options();
  o.ep_size = 2;
  actors::EngineRuntime runtime(o);
  Client client(runtime.client_endpoint());
  expect_all_golden(golden_, send_all_cases_at_once(client, golden_, "ep"));
}

TEST(PpFlags, BadPipelineSplitsStopTheStartNamingTheFlag) {
  const std::vector<std::pair<int, std::string>> bad = {{5, ""}, {2, "3,2"}, {2, "4"}, {2, "2,x"}, {0, ""}};
  for (const auto& [pp_size, split] : bad) {
    actors::ServeOptions o = tiny_serve_options();
    o.pp_size = pp_size;
    o.pp_layer_split = split;
    try {
      actors::EngineRuntime runtime(o);
      ADD_FAILURE() << "--pp-size " << pp_size << " --pp-layer-split '" << split << "' was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--pp-"), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, PpGolden, ::testing::ValuesIn(pp_cases()), pp_case_name);

}  // namespace
}  // namespace moe::testing
