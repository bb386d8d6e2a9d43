// The scheduler side of a weight update, message by message: no step is planned from the moment an
// update is queued; it goes to the worker only once the step in flight has answered; a success
// takes the new fingerprint (so the handshake accepts a worker serving the new weights and refuses
// one serving the old), and the version; a worker lost during the update fails it, and the answer
// of a silent worker that comes back is applied.
#include <gtest/gtest.h>

#include "scheduler_service_support.h"

namespace moe {
namespace {

msg::WorkerSettings settings(uint64_t fingerprint) { return testing::small_worker_settings(fingerprint); }

SchedulerServiceOptions options() {
  SchedulerServiceOptions o = testing::small_scheduler_options(settings(10));
  o.weights = {"/ckpt/a", "a"};
  return o;
}

msg::TokenizedRequest request(const std::string& rid) { return testing::six_token_request(rid, 8); }

msg::WorkerResult answer(const msg::WorkerBatch& batch, uint64_t instance) { return testing::sevens(batch, instance); }

msg::UpdateWeights update(uint64_t id, const std::string& path, const std::string& version) {
  msg::UpdateWeights u;
  u.id = id;
  u.model_path = path;
  u.weight_version = version;
  return u;
}

// The worker's answer to `sent`.
msg::WeightsUpdated loaded(const msg::UpdateWeights& sent, bool success, uint64_t fingerprint) {
  msg::WeightsUpdated done;
  done.request = sent;
  done.success = success;
  done.message = success ? "" : "no such directory";
  done.model_fingerprint = fingerprint;
  done.worker_instance = sent.worker_instance;
  return done;
}

class WeightUpdateProtocol : public ::testing::Test {
 protected:
  void SetUp() override { service_.on_heartbeat({1, settings(10)}); }
  SchedulerService service_{options(), ServingModelInfo{2, 2, 4}};
};

TEST_F(WeightUpdateProtocol, WaitsForTheStepInFlightAndPlansNoneMeanwhile) {
  ASSERT_FALSE(service_.add_request(request("r")));
  const auto step = service_.next_batch();
  ASSERT_TRUE(step);
  service_.update_weights(update(5, "/ckpt/b", "b"));
  EXPECT_FALSE(service_.next_weight_update());  // a step is in flight
  service_.on_worker_result(answer(*step, 1));
  EXPECT_FALSE(service_.next_batch());  // "r" has tokens to go, but the update comes first
  const auto sent = service_.next_weight_update();
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->worker_instance, 1u);
  EXPECT_FALSE(service_.next_weight_update());  // sent once
  EXPECT_FALSE(service_.next_batch());

  service_.on_weights_updated(loaded(*sent, true, 20));
  const auto answers = service_.take_weight_update_answers();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].success);
  EXPECT_EQ(answers[0].request.id, 5u);
  EXPECT_EQ(answers[0].weight_version, "b");
  EXPECT_EQ(service_.weights(), (ServingWeights{"/ckpt/b", "b"}));
  // "r" had begun on the old weights: it ended, with their version.
  const msg::DetokenizeBatch out = service_.take_output();
  ASSERT_FALSE(out.items.empty());
  const msg::DetokenizeItem& last = out.items.back();
  EXPECT_EQ(last.rid, "r");
  ASSERT_TRUE(last.finish_reason);
  EXPECT_EQ(last.finish_reason->kind, msg::FinishKind::Abort);
  EXPECT_EQ(last.weight_version, "a");
  EXPECT_FALSE(service_.has_unfinished());
  // Planning goes on, and new items carry the new version.
  ASSERT_FALSE(service_.add_request(request("s")));
  const auto next = service_.next_batch();
  ASSERT_TRUE(next);
  service_.on_worker_result(answer(*next, 1));
  EXPECT_EQ(service_.take_output().items.front().weight_version, "b");
}

TEST_F(WeightUpdateProtocol, AFailedUpdateResumesThePausedRequests) {
  ASSERT_FALSE(service_.add_request(request("r")));
  service_.on_worker_result(answer(*service_.next_batch(), 1));
  service_.take_output();
  service_.update_weights(update(6, "/missing", "b"));
  service_.on_weights_updated(loaded(*service_.next_weight_update(), false, 0));
  const auto answers = service_.take_weight_update_answers();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].success);
  EXPECT_EQ(answers[0].weight_version, "a");
  EXPECT_TRUE(service_.take_output().items.empty());  // "r" was not ended
  EXPECT_TRUE(service_.has_unfinished());
  EXPECT_TRUE(service_.next_batch());
}

TEST_F(WeightUpdateProtocol, TheHandshakeFollowsTheNewFingerprint) {
  service_.update_weights(update(7, "/ckpt/b", "b"));
  service_.on_weights_updated(loaded(*service_.next_weight_update(), true, 20));
  // A worker restarted on the old checkpoint would serve other weights: refused.
  service_.on_heartbeat({2, settings(10)});
  EXPECT_FALSE(service_.worker_accepted());
  EXPECT_NE(service_.worker_refusal().find("other weights"), std::string::npos);
  // It is told which weights serve now, so it can be started on them.
  EXPECT_NE(service_.worker_refusal().find("/ckpt/b, weight version 'b'"), std::string::npos) << service_.worker_refusal();
  service_.on_heartbeat({3, settings(20)});
  EXPECT_TRUE(service_.worker_accepted());
}

TEST_F(WeightUpdateProtocol, AWorkerRestartedDuringTheUpdateFailsIt) {
  service_.update_weights(update(8, "/ckpt/b", "b"));
  ASSERT_TRUE(service_.next_weight_update());
  service_.on_heartbeat({2, settings(10)});  // restarted while loading: it serves --model-path
  const auto answers = service_.take_weight_update_answers();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_FALSE(answers[0].success);
  EXPECT_NE(answers[0].message.find("restarted"), std::string::npos);
  EXPECT_FALSE(service_.has_weight_updates());
  EXPECT_EQ(service_.weights().weight_version, "a");
  EXPECT_TRUE(service_.worker_accepted());
}

TEST_F(WeightUpdateProtocol, TheAnswerOfAWorkerGivenUpForSilenceIsStillApplied) {
  ASSERT_FALSE(service_.add_request(request("r")));
  service_.update_weights(update(9, "/ckpt/b", "b"));
  const auto sent = service_.next_weight_update();
  ASSERT_TRUE(sent);
  service_.fail_weight_updates("the model worker stopped responding");
  ASSERT_EQ(service_.take_weight_update_answers().size(), 1u);
  const auto step = service_.next_batch();  // planning resumed
  ASSERT_TRUE(step);
  // The weights the worker swapped in are what it serves, whoever still waits for the answer: what
  // ran since ran on them, so it ends, and the version follows.
  service_.on_weights_updated(loaded(*sent, true, 20));
  EXPECT_EQ(service_.weights().weight_version, "b");
  EXPECT_EQ(service_.take_weight_update_answers().size(), 1u);  // for nobody any more: dropped by the front
  EXPECT_FALSE(service_.has_unfinished());
  service_.on_worker_result(answer(*step, 1));  // the step in flight comes back for an ended request
  EXPECT_FALSE(service_.next_batch());
}

}  // namespace
}  // namespace moe
