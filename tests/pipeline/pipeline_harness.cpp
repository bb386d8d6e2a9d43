#include "pipeline_harness.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <thread>
#include <zmq.hpp>

#include "capture/routing_encoding.h"
#include "moe/client.h"

namespace moe::testing {

actors::ServeOptions tiny_serve_options() {
  actors::ServeOptions options;
  options.model_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";
  options.tokenizer_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
  options.zmq_endpoint = "tcp://127.0.0.1:*";
  options.enable_return_routed_experts = true;
  options.max_total_tokens = 4096;
  return options;
}

msg::GenerateRequest golden_request(const Golden& golden, const GoldenCase& c, const std::string& rid) {
  msg::GenerateRequest request;
  request.rid = rid;
  request.input_ids = c.prompt_ids;
  request.sampling.temperature = 0;
  request.sampling.max_new_tokens = golden.max_new_tokens;
  request.sampling.ignore_eos = true;
  request.routing.return_routed_experts = true;
  request.routing.layers = msg::RoutedExpertsLayers::Moe;  // the goldens' rows: MoE layers only
  return request;
}

JoinedReply join_reply(const std::vector<msg::TextOutput>& outputs) {
  JoinedReply joined;
  for (const msg::TextOutput& output : outputs) {
    joined.ids.insert(joined.ids.end(), output.output_ids.begin(), output.output_ids.end());
    joined.text += output.text;
    joined.cached_tokens = output.cached_tokens;
    joined.finish = output.finish_reason;
    ++joined.chunks;
    if (!output.routed_experts) continue;
    EXPECT_EQ(output.routed_experts->dtype, "int32");
    const std::string bytes = base64_decode(output.routed_experts->data);
    const size_t begin = joined.rows.size();
    joined.rows.resize(begin + bytes.size() / sizeof(int32_t));
    std::memcpy(joined.rows.data() + begin, bytes.data(), bytes.size());
    joined.num_rows += output.routed_experts->shape.at(0);
  }
  return joined;
}

void expect_golden_reply(const Golden& golden, const GoldenCase& c, const JoinedReply& reply) {
  EXPECT_EQ(reply.ids, c.output_ids);
  ASSERT_TRUE(reply.finish);
  EXPECT_EQ(reply.finish->kind, msg::FinishKind::Length);
  const int64_t rows = static_cast<int64_t>(c.prompt_ids.size()) + golden.max_new_tokens - 1;
  EXPECT_EQ(reply.num_rows, rows);
  expect_routing_matches_golden(golden, c, reply.rows, rows);
}

void expect_all_golden(const Golden& golden, const std::vector<JoinedReply>& replies) {
  ASSERT_EQ(replies.size(), golden.cases.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_golden_reply(golden, golden.cases[i], replies[i]);
  }
}

std::vector<JoinedReply> send_all_cases_at_once(Client& client, const Golden& golden, const std::string& prefix,
                                                bool stream) {
  std::vector<std::shared_ptr<std::vector<msg::TextOutput>>> outputs;
  std::vector<std::future<void>> done;
  for (size_t i = 0; i < golden.cases.size(); ++i) {
    msg::GenerateRequest request = golden_request(golden, golden.cases[i], prefix + std::to_string(i));
    request.stream = stream;
    auto received = std::make_shared<std::vector<msg::TextOutput>>();
    auto finished = std::make_shared<std::promise<void>>();
    done.push_back(finished->get_future());
    client.submit(
        request, [received](const msg::TextOutput& output) { received->push_back(output); },
        [finished](std::exception_ptr error) { error ? finished->set_exception(error) : finished->set_value(); });
    outputs.push_back(received);
  }
  std::vector<JoinedReply> joined;
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].wait_for(std::chrono::seconds(60)), std::future_status::ready);
    done[i].get();
    joined.push_back(join_reply(*outputs[i]));
  }
  return joined;
}

ExpertLoad zero_expert_load(const Golden& golden, int num_experts) {
  return {std::vector<std::vector<uint64_t>>(golden.num_moe_layers, std::vector<uint64_t>(num_experts, 0)), 0};
}

ExpertLoad computed_expert_load(const Golden& golden, int num_experts, const std::vector<JoinedReply>& replies) {
  const int L = golden.num_moe_layers, K = golden.top_k;
  ExpertLoad load = zero_expert_load(golden, num_experts);
  for (const JoinedReply& reply : replies) {
    for (size_t j = static_cast<size_t>(reply.cached_tokens) * L * K; j < reply.rows.size(); ++j)
      ++load.counts[(j / K) % L][reply.rows[j]];
    load.tokens += reply.num_rows - reply.cached_tokens;
  }
  return load;
}

void expect_k_experts_per_token(const Golden& golden, const ExpertLoad& load) {
  for (const std::vector<uint64_t>& layer : load.counts) {
    uint64_t sum = 0;
    for (uint64_t count : layer) sum += count;
    EXPECT_EQ(sum, load.tokens * golden.top_k);
  }
}

SchedulerStats wait_until_idle(actors::EngineRuntime& runtime, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  SchedulerStats stats = runtime.scheduler_stats();
  while ((stats.num_running > 0 || stats.num_waiting > 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stats = runtime.scheduler_stats();
  }
  return stats;
}

RawDealer::RawDealer(const std::string& endpoint)
    : context_(std::make_unique<zmq::context_t>()),
      socket_(std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::dealer)) {
  socket_->set(zmq::sockopt::linger, 0);
  socket_->connect(endpoint);
}

RawDealer::~RawDealer() = default;

void RawDealer::send_frame(const std::string& frame) { socket_->send(zmq::buffer(frame), zmq::send_flags::none); }

std::optional<transport::ClientReply> RawDealer::receive(std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
  zmq::message_t message;
  if (!socket_->recv(message)) return std::nullopt;
  return transport::decode_client_reply(message.to_string_view());
}

void RawDealer::close() { socket_->close(); }

}  // namespace moe::testing
