// moe::Client's RL operations against a running engine over ZeroMQ: update_weights_from_disk (a
// failed one leaves the version; a good one, the same checkpoint under a new label, changes it on
// later replies) and abort (this client's streaming request ends with finish reason abort).
#include <gtest/gtest.h>

#include <future>

#include "moe/client.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

msg::UpdateWeights update_to(const std::string& path, const std::string& version) {
  msg::UpdateWeights update;
  update.model_path = path;
  update.weight_version = version;
  return update;
}

TEST(ZmqClientRl, UpdateWeightsFromDisk) {
  const Golden golden = load_golden("qwen3-moe-tiny");
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  const msg::WeightsUpdated failed = client.update_weights_from_disk(update_to(golden.model_dir + "/missing", "v2"));
  EXPECT_FALSE(failed.success);
  EXPECT_NE(failed.message.find("/missing"), std::string::npos) << failed.message;
  EXPECT_EQ(failed.weight_version, "default");

  const msg::WeightsUpdated updated = client.update_weights_from_disk(update_to(golden.model_dir, "v2"));
  ASSERT_TRUE(updated.success) << updated.message;
  EXPECT_EQ(updated.weight_version, "v2");
  const auto outputs = client.generate(golden_request(golden, golden.cases[1], ""));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].weight_version, "v2");
  expect_golden_reply(golden, golden.cases[1], join_reply(outputs));
}

TEST(ZmqClientRl, AbortEndsTheClientsOwnRequest) {
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  msg::GenerateRequest request;
  request.rid = "long";
  request.text = "Once upon a time";
  request.stream = true;
  request.sampling.max_new_tokens = 4000;
  request.sampling.ignore_eos = true;
  std::promise<void> started, finished;
  std::optional<msg::FinishReason> finish;
  bool first = true;
  client.submit(
      request,
      [&](const msg::TextOutput& chunk) {  // on the client's I/O thread, one at a time
        if (chunk.finish_reason) finish = chunk.finish_reason;
        if (std::exchange(first, false)) started.set_value();
      },
      [&](std::exception_ptr error) { error ? finished.set_exception(error) : finished.set_value(); });
  ASSERT_EQ(started.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_FALSE(Client(runtime.client_endpoint()).abort("long"));  // another client's request
  EXPECT_TRUE(client.abort("long"));
  auto done = finished.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  done.get();
  ASSERT_TRUE(finish);
  EXPECT_EQ(finish->kind, msg::FinishKind::Abort);
  EXPECT_FALSE(client.abort("long"));
  EXPECT_FALSE(client.abort(""));
}

}  // namespace
}  // namespace moe::testing
