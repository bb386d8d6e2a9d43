// Load through the ZeroMQ endpoint: 500 greedy requests of random prompt and output lengths from 50
// client sockets at once, each socket with ten in flight. Every request is answered exactly once
// with the ids it gets when generated alone (offline, one request at a time), and afterwards every
// KV slot is free again except those the prefix cache keeps.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "pipeline_harness.h"
#include "tokenizer/tokenizer.h"

namespace moe::testing {
namespace {

constexpr int kClients = 50;
constexpr int kRequestsPerClient = 10;
// Distinct prompts; each is sent by several clients, so the prefix cache is exercised too.
constexpr int kDistinctPrompts = 125;

struct Spec {
  std::vector<int32_t> prompt;
  int max_new_tokens = 0;
};

// Prompts of ids the tokenizer knows (the model's embedding rows are padded beyond them).
std::vector<Spec> random_specs(int32_t tokenizer_vocab_size) {
  std::mt19937 rng(20261122);
  std::uniform_int_distribution<int32_t> token(0, tokenizer_vocab_size - 1);
  std::uniform_int_distribution<int> prompt_length(1, 48), output_length(1, 16);
  std::vector<Spec> specs(kDistinctPrompts);
  for (Spec& spec : specs) {
    spec.prompt.resize(prompt_length(rng));
    for (int32_t& id : spec.prompt) id = token(rng);
    spec.max_new_tokens = output_length(rng);
  }
  return specs;
}

// The ids of each spec generated alone, one request at a time through an in-process engine with
// no prefix cache.
std::vector<std::vector<int32_t>> alone(std::unique_ptr<Model> model, const std::vector<Spec>& specs) {
  EngineSettings settings;
  settings.max_total_tokens = 4096;
  settings.disable_radix_cache = true;
  const std::unique_ptr<EngineCore> engine = make_engine(std::move(model), settings);
  std::vector<std::vector<int32_t>> ids;
  for (const Spec& spec : specs) {
    msg::GenerateRequest request;
    request.input_ids = spec.prompt;
    request.sampling.max_new_tokens = spec.max_new_tokens;
    request.sampling.temperature = 0;
    const std::vector<msg::TextOutput> outputs = engine->run({request});
    ids.push_back(outputs.at(0).output_ids);
  }
  return ids;
}

// Request r of client c. (Built by appending: GCC 12 warns falsely about "literal" + std::string.)
std::string rid_of(int client, int r) {
  std::string rid = "c";
  rid.append(std::to_string(client)).append("-r").append(std::to_string(r));
  return rid;
}

// One client socket's work: sends its requests all at once, then reads replies until each of its
// rids is answered and a quiet period shows no reply comes twice. Returns replies per rid.
std::map<std::string, std::vector<msg::TextOutput>> run_client(const std::string& endpoint, int client,
                                                               const std::vector<Spec>& specs) {
  RawDealer dealer(endpoint);
  for (int r = 0; r < kRequestsPerClient; ++r) {
    const int request_index = client * kRequestsPerClient + r;
    const Spec& spec = specs[request_index % specs.size()];
    msg::GenerateRequest request;
    request.rid = rid_of(client, r);
    request.input_ids = spec.prompt;
    request.sampling.temperature = 0;
    request.sampling.max_new_tokens = spec.max_new_tokens;
    request.sampling.ignore_eos = true;
    dealer.send(request);
  }
  std::map<std::string, std::vector<msg::TextOutput>> replies;
  size_t answered = 0;
  while (auto reply = dealer.receive(answered < kRequestsPerClient ? std::chrono::seconds(90)
                                                                    : std::chrono::milliseconds(300))) {
    if (auto* output = std::get_if<msg::TextOutput>(&*reply)) {
      replies[output->rid].push_back(*output);
    } else {
      replies[std::string("error: ").append(std::get<msg::ErrorReply>(*reply).message)];
    }
    answered = replies.size();
  }
  return replies;
}

// The rids (or error messages) a client received, for a failure message.
std::string rids_of(const std::map<std::string, std::vector<msg::TextOutput>>& replies) {
  std::string rids;
  for (const auto& [rid, outputs] : replies) rids += rid + " ";
  return rids;
}

TEST(PipelineLoad, FiveHundredRequestsFromFiftySocketsAnsweredOnceWithTheirAloneIds) {
  actors::EngineRuntime runtime(tiny_serve_options());
  const std::vector<Spec> specs =
      random_specs(tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer").vocab_size());
  const std::vector<std::vector<int32_t>> expected =
      alone(Model::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny"), specs);

  std::vector<std::map<std::string, std::vector<msg::TextOutput>>> replies(kClients);
  std::vector<std::thread> clients;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] { replies[c] = run_client(runtime.client_endpoint(), c, specs); });
  for (std::thread& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("500 requests from 50 sockets in %.2f s\n", seconds);

  int checked = 0;
  for (int c = 0; c < kClients; ++c) {
    ASSERT_EQ(replies[c].size(), static_cast<size_t>(kRequestsPerClient)) << "client " << c;
    for (int r = 0; r < kRequestsPerClient; ++r) {
      const std::string rid = rid_of(c, r);
      const auto it = replies[c].find(rid);
      ASSERT_NE(it, replies[c].end()) << rid << " unanswered; client " << c << " got: " << rids_of(replies[c]);
      ASSERT_EQ(it->second.size(), 1u) << rid << " answered more than once";
      const msg::TextOutput& output = it->second.front();
      EXPECT_EQ(output.output_ids, expected[(c * kRequestsPerClient + r) % specs.size()]) << rid;
      ASSERT_TRUE(output.finish_reason) << rid;
      EXPECT_EQ(output.finish_reason->kind, msg::FinishKind::Length) << rid;
      ++checked;
    }
  }
  EXPECT_EQ(checked, kClients * kRequestsPerClient);
  const SchedulerStats stats = wait_until_idle(runtime);
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
  EXPECT_GT(stats.cache_hit_tokens, 0);
  EXPECT_EQ(stats.kv_slots_used, stats.radix_cached_tokens);
}

}  // namespace
}  // namespace moe::testing
