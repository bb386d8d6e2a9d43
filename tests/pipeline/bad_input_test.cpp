// Bad input through the ZeroMQ endpoint: each bad request is answered with an error for that request
// alone, and the same server then answers a good request with the golden output. A client that
// vanishes in the middle of a stream has its request aborted and its KV slots freed.
#include <gtest/gtest.h>

#include <algorithm>
#include <msgpack.hpp>
#include <thread>

#include "pipeline_harness.h"

namespace moe::testing {
namespace {

class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new Golden(load_golden("qwen3-moe-tiny"));
    runtime_ = new actors::EngineRuntime(tiny_serve_options());
  }
  static void TearDownTestSuite() {
    delete runtime_;
    delete golden_;
  }

  // The reply to `frame` is an error (code 400) whose message mentions `words`.
  static void expect_error(RawDealer& dealer, const std::string& frame, const std::string& words) {
    dealer.send_frame(frame);
    const auto reply = dealer.receive();
    ASSERT_TRUE(reply) << "no reply";
    const auto* error = std::get_if<msg::ErrorReply>(&*reply);
    ASSERT_NE(error, nullptr) << "expected an error";
    EXPECT_EQ(error->code, 400);
    EXPECT_NE(error->message.find(words), std::string::npos) << error->message;
  }

  // The same socket's next good request gets the golden output of case 1.
  static void expect_still_serving(RawDealer& dealer) {
    const GoldenCase& c = golden_->cases[1];
    dealer.send(golden_request(*golden_, c, "after-" + std::to_string(++good_requests_)));
    const auto reply = dealer.receive();
    ASSERT_TRUE(reply) << "no reply";
    const auto* output = std::get_if<msg::TextOutput>(&*reply);
    ASSERT_NE(output, nullptr) << std::get<msg::ErrorReply>(*reply).message;
    expect_golden_reply(*golden_, c, join_reply({*output}));
  }

  // A greedy request for case 1 with one change, encoded.
  template <class Change>
  static std::string golden_frame_with(Change change) {
    msg::GenerateRequest request = golden_request(*golden_, golden_->cases[1], "bad-" + std::to_string(++bad_requests_));
    change(request);
    return transport::encode_client_request(request);
  }

  static Golden* golden_;
  static actors::EngineRuntime* runtime_;
  static inline int good_requests_ = 0;
  static inline int bad_requests_ = 0;
};
Golden* BadInput::golden_ = nullptr;
actors::EngineRuntime* BadInput::runtime_ = nullptr;

// A msgpack map of string keys to values packed by `pack_value(packer, key)`.
template <class PackValues>
std::string msgpack_map(uint32_t size, PackValues pack_values) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_map(size);
  pack_values(packer);
  return std::string(buffer.data(), buffer.size());
}

TEST_F(BadInput, FrameThatIsNotMsgpack) {
  RawDealer dealer(runtime_->client_endpoint());
  expect_error(dealer, std::string("\xc1\xc1 not msgpack", 14), "msgpack");
  expect_still_serving(dealer);
}

// A field the server does not know is refused naming it, never silently dropped.
TEST_F(BadInput, UnknownFieldsAreRefusedNamingThem) {
  RawDealer dealer(runtime_->client_endpoint());
  const GoldenCase& c = golden_->cases[1];
  dealer.send_frame(msgpack_map(5, [&](auto& p) {
    p.pack(std::string("rid"));
    p.pack(std::string("unknown-fields"));
    p.pack(std::string("input_ids"));
    p.pack(c.prompt_ids);
    p.pack(std::string("sampling_params"));
    p.pack_map(4);
    p.pack(std::string("temperature"));
    p.pack(0.0);
    p.pack(std::string("max_new_tokens"));
    p.pack(golden_->max_new_tokens);
    p.pack(std::string("ignore_eos"));
    p.pack(true);
    p.pack(std::string("frobnicate_sampling"));
    p.pack(3);
    p.pack(std::string("return_routed_experts"));
    p.pack(true);
    p.pack(std::string("frobnicate"));
    p.pack_array(2);
    p.pack(1);
    p.pack(std::string("x"));
  }));
  const auto reply = dealer.receive();
  ASSERT_TRUE(reply);
  const auto* error = std::get_if<msg::ErrorReply>(&*reply);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(error->message.find("sampling_params.frobnicate_sampling"), std::string::npos) << error->message;
  expect_still_serving(dealer);
}

TEST_F(BadInput, MapWithNeitherTextNorInputIds) {
  RawDealer dealer(runtime_->client_endpoint());
  expect_error(dealer, msgpack_map(1, [](auto& p) {
                 p.pack(std::string("sampling_params"));
                 p.pack_map(0);
               }),
               "input_ids");
  expect_still_serving(dealer);
}

// A second client that reuses a live request's rid is refused, and the first client's request runs
// to its golden end on its own socket (neither aborted nor moved to the second socket).
// Rids are per client: the client's own live rid is refused, the original untouched, while another
// client's is invisible to it, so the same rid runs as that client's own request.
TEST_F(BadInput, OnlyTheClientsOwnLiveRidIsRefusedAnotherClientsIsItsOwn) {
  RawDealer owner(runtime_->client_endpoint()), other(runtime_->client_endpoint());
  const GoldenCase& c = golden_->cases[1];
  msg::GenerateRequest original = golden_request(*golden_, c, "shared-rid");
  original.sampling.max_new_tokens = 1000;  // still running when the others come
  owner.send(original);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the owner's request is registered first
  expect_error(owner, transport::encode_client_request(golden_request(*golden_, c, "shared-rid")), "in use");
  other.send(golden_request(*golden_, c, "shared-rid"));
  const auto other_reply = other.receive(std::chrono::minutes(5));
  ASSERT_TRUE(other_reply) << "the other client's request of the same rid was not answered";
  const auto* other_output = std::get_if<msg::TextOutput>(&*other_reply);
  ASSERT_NE(other_output, nullptr) << std::get<msg::ErrorReply>(*other_reply).message;
  EXPECT_EQ(other_output->rid, "shared-rid");
  EXPECT_EQ(other_output->output_ids, c.output_ids);
  // 1000 tokens take seconds here but over a minute under the sanitizers on a busy machine.
  const auto reply = owner.receive(std::chrono::minutes(5));
  ASSERT_TRUE(reply) << "the original request was not answered";
  const auto* output = std::get_if<msg::TextOutput>(&*reply);
  ASSERT_NE(output, nullptr) << std::get<msg::ErrorReply>(*reply).message;
  ASSERT_EQ(output->output_ids.size(), 1000u);
  EXPECT_TRUE(std::equal(c.output_ids.begin(), c.output_ids.end(), output->output_ids.begin()));
  EXPECT_FALSE(other.receive(std::chrono::milliseconds(200))) << "the other client got the original's reply";
}

TEST_F(BadInput, TokenIdOutsideTheVocabulary) {
  RawDealer dealer(runtime_->client_endpoint());
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.input_ids->push_back(151936); }),
               "outside the vocabulary");
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.input_ids->front() = -1; }),
               "outside the vocabulary");
  expect_still_serving(dealer);
}

TEST_F(BadInput, PromptLongerThanTheContext) {
  RawDealer dealer(runtime_->client_endpoint());
  // The fixture's context is max_position_embeddings = 8192 tokens.
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.input_ids = std::vector<int32_t>(9000, 7); }),
               "context");
  expect_still_serving(dealer);
}

TEST_F(BadInput, BadSamplingValues) {
  RawDealer dealer(runtime_->client_endpoint());
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.sampling.max_new_tokens = 0; }),
               "max_new_tokens");
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.sampling.max_new_tokens = -3; }),
               "max_new_tokens");
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.sampling.temperature = -0.5f; }),
               "temperature");
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.sampling.top_p = 0.0f; }), "top_p");
  expect_error(dealer, golden_frame_with([](msg::GenerateRequest& r) { r.sampling.top_p = 1.5f; }), "top_p");
  expect_still_serving(dealer);
}

TEST_F(BadInput, ClientVanishingMidStreamAbortsTheRequestAndFreesItsSlots) {
  const int64_t cached_before = wait_until_idle(*runtime_).radix_cached_tokens;
  RawDealer vanishing(runtime_->client_endpoint());
  msg::GenerateRequest request = golden_request(*golden_, golden_->cases[1], "vanishing");
  request.stream = true;
  request.sampling.max_new_tokens = 4000;  // far longer than the test lets it run
  vanishing.send(request);
  for (int chunk = 0; chunk < 2; ++chunk) {
    const auto reply = vanishing.receive();
    ASSERT_TRUE(reply);
    ASSERT_TRUE(std::holds_alternative<msg::TextOutput>(*reply));
  }
  vanishing.close();

  const SchedulerStats stats = wait_until_idle(*runtime_, std::chrono::seconds(10));
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
  EXPECT_EQ(stats.kv_slots_used, stats.radix_cached_tokens);
  // The aborted request's computed tokens went to the prefix cache: far fewer than a full run's.
  EXPECT_LT(stats.radix_cached_tokens - cached_before, 1000);
  RawDealer next(runtime_->client_endpoint());
  expect_still_serving(next);
}

}  // namespace
}  // namespace moe::testing
