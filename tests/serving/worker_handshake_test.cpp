// The scheduler side of the worker handshake: no step goes to a worker before its heartbeat shows
// settings equal to the scheduler's; a refused worker gets none, and requests fail naming the
// setting; a new worker instance (a restart: its KV cache is empty) fails every live request and
// empties the prefix cache, so no reply is computed over KV the new worker does not have. A worker
// with another STANDALONE draft model (or none), other weights or another way of computing
// (quantization, kernel dtype, device, speculative settings) is refused too.
#include <gtest/gtest.h>

#include "scheduler_service_support.h"
#include "serving/worker_settings.h"

namespace moe {
namespace {

msg::WorkerSettings expected_settings() { return testing::small_worker_settings(99); }

SchedulerServiceOptions options() { return testing::small_scheduler_options(expected_settings()); }

msg::TokenizedRequest request(const std::string& rid) { return testing::six_token_request(rid, 4); }

msg::WorkerResult answer(const msg::WorkerBatch& batch, uint64_t instance) { return testing::sevens(batch, instance); }

class WorkerHandshake : public ::testing::Test {
 protected:
  SchedulerService service_{options(), ServingModelInfo{2, 2, 4}};
};

TEST_F(WorkerHandshake, NoStepBeforeAWorkerWithTheSameSettingsIsHeardFrom) {
  ASSERT_FALSE(service_.add_request(request("a")));
  EXPECT_FALSE(service_.next_batch());
  EXPECT_TRUE(service_.on_heartbeat({1, expected_settings()}).empty());
  EXPECT_TRUE(service_.worker_accepted());
  EXPECT_TRUE(service_.next_batch());
}

TEST_F(WorkerHandshake, AWorkerWithOtherSettingsIsRefusedNamingTheSetting) {
  msg::WorkerSettings smaller = expected_settings();
  smaller.kv_slots = 201;
  service_.on_heartbeat({1, smaller});
  EXPECT_FALSE(service_.worker_accepted());
  EXPECT_NE(service_.worker_refusal().find("KV slots"), std::string::npos) << service_.worker_refusal();
  const auto refused = service_.add_request(request("a"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, 503);
  EXPECT_NE(refused->message.find("201"), std::string::npos) << refused->message;
  EXPECT_FALSE(service_.next_batch());
  // A worker restarted with the right flags is taken.
  service_.on_heartbeat({2, expected_settings()});
  EXPECT_TRUE(service_.worker_accepted());
  EXPECT_TRUE(service_.worker_refusal().empty());
  EXPECT_FALSE(service_.add_request(request("b")));
  EXPECT_TRUE(service_.next_batch());
}

// A STANDALONE scheduler plans draft trees (and, with capture, waits for the draft's rows) that only a
// worker with the same draft model can fill.
TEST_F(WorkerHandshake, AWorkerWithAnotherDraftModelOrNoneIsRefusedNamingTheFlags) {
  msg::WorkerSettings drafting = expected_settings();
  drafting.draft_fingerprint = 7;
  SchedulerServiceOptions standalone = options();
  standalone.expected_stages = {drafting};
  SchedulerService service(standalone, ServingModelInfo{2, 2, 4});
  for (const uint64_t draft : {uint64_t{0}, uint64_t{8}}) {
    msg::WorkerSettings worker = drafting;
    worker.draft_fingerprint = draft;
    service.on_heartbeat({10 + draft, worker});  // a worker started anew, with these settings
    EXPECT_FALSE(service.worker_accepted());
    const std::string refusal = service.worker_refusal();
    EXPECT_NE(refusal.find("--speculative-draft-model-path"), std::string::npos) << refusal;
    EXPECT_NE(refusal.find(draft == 0 ? "is none" : "fingerprint 8"), std::string::npos) << refusal;
  }
  service.on_heartbeat({20, drafting});
  EXPECT_TRUE(service.worker_accepted());
}

TEST_F(WorkerHandshake, ARestartedWorkerFailsLiveRequestsAndEmptiesThePrefixCache) {
  service_.on_heartbeat({1, expected_settings()});
  ASSERT_FALSE(service_.add_request(request("done")));
  while (auto batch = service_.next_batch()) service_.on_worker_result(answer(*batch, 1));
  ASSERT_GT(service_.stats().radix_cached_tokens, 0);  // "done"'s tokens sit in the prefix cache
  ASSERT_FALSE(service_.add_request(request("live")));
  auto batch = service_.next_batch();
  ASSERT_TRUE(batch);
  service_.on_worker_result(answer(*batch, 1));

  const std::vector<msg::ErrorReply> errors = service_.on_heartbeat({2, expected_settings()});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rid, "live");
  EXPECT_NE(errors[0].message.find("restarted"), std::string::npos);
  EXPECT_EQ(service_.stats().radix_cached_tokens, 0);
  EXPECT_EQ(service_.stats().kv_slots_used, 0);
  EXPECT_TRUE(service_.worker_accepted());
}

TEST_F(WorkerHandshake, AResultFromAnotherInstanceIsDroppedAndFailsLiveRequests) {
  service_.on_heartbeat({1, expected_settings()});
  ASSERT_FALSE(service_.add_request(request("a")));
  auto batch = service_.next_batch();
  ASSERT_TRUE(batch);
  std::vector<msg::ErrorReply> errors;
  EXPECT_FALSE(service_.from_accepted_worker(3, errors));  // a new worker answered the queued step
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_FALSE(service_.worker_accepted());
  EXPECT_FALSE(service_.next_batch());  // until its heartbeat shows its settings
  EXPECT_TRUE(service_.on_heartbeat({3, expected_settings()}).empty());
  EXPECT_TRUE(service_.worker_accepted());
}

// Pipeline stages: one accepted worker per stage, each checked against its own layers.
class StageHandshake : public ::testing::Test {
 protected:
  static msg::WorkerSettings stage(int rank) {
    msg::WorkerSettings s = expected_settings();
    s.pp_size = 2;
    s.pp_rank = rank;
    s.layer_begin = rank == 0 ? 0 : 3;
    s.layer_end = rank == 0 ? 3 : 5;
    return s;
  }
  static SchedulerServiceOptions stage_options() {
    SchedulerServiceOptions o = options();
    o.expected_stages = {stage(0), stage(1)};
    o.scheduler.max_in_flight = 2;
    return o;
  }
  SchedulerService service_{stage_options(), ServingModelInfo{2, 2, 4}};
};

TEST_F(StageHandshake, StepsOnlyOnceEveryStageIsAcceptedAndTheyNameEveryStagesInstance) {
  ASSERT_FALSE(service_.add_request(request("a")));
  ASSERT_FALSE(service_.add_request(request("b")));
  service_.on_heartbeat({10, stage(0)});
  EXPECT_FALSE(service_.worker_accepted());
  EXPECT_FALSE(service_.next_batch());
  service_.on_heartbeat({11, stage(1)});
  ASSERT_TRUE(service_.worker_accepted());
  EXPECT_EQ(service_.stage_of(11), 1);
  const auto first = service_.next_batch();
  const auto second = service_.next_batch();  // a micro-batch per stage in flight
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(service_.next_batch());
  EXPECT_EQ(first->stage_instances, (std::vector<uint64_t>{10, 11}));
  service_.on_worker_result(answer(*first, 11));
  service_.on_worker_result(answer(*second, 11));
}

TEST_F(StageHandshake, AStageWithOtherLayersIsRefusedNamingTheSplit) {
  msg::WorkerSettings shifted = stage(1);
  shifted.layer_begin = 2;
  service_.on_heartbeat({10, stage(0)});
  service_.on_heartbeat({11, shifted});
  EXPECT_FALSE(service_.worker_accepted());
  EXPECT_NE(service_.worker_refusal().find("pipeline stage 1"), std::string::npos) << service_.worker_refusal();
  EXPECT_NE(service_.worker_refusal().find("--pp-layer-split"), std::string::npos) << service_.worker_refusal();
  msg::WorkerSettings one_stage = expected_settings();
  service_.on_heartbeat({12, one_stage});  // a single-stage worker where stage 0 belongs
  EXPECT_NE(service_.worker_refusal().find("--pp-size"), std::string::npos) << service_.worker_refusal();
}

TEST_F(StageHandshake, ARestartedStageFailsLiveRequests) {
  service_.on_heartbeat({10, stage(0)});
  service_.on_heartbeat({11, stage(1)});
  ASSERT_FALSE(service_.add_request(request("live")));
  auto batch = service_.next_batch();
  ASSERT_TRUE(batch);
  service_.on_worker_result(answer(*batch, 11));
  const std::vector<msg::ErrorReply> errors = service_.on_heartbeat({21, stage(1)});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rid, "live");
  EXPECT_TRUE(service_.worker_accepted());  // stage 0 kept its instance, stage 1 has its new one
  EXPECT_EQ(service_.stage_of(21), 1);
  EXPECT_EQ(service_.stage_of(11), std::nullopt);
}

// The scheduler actor drops a late result of an abandoned step by asking whether that step is still in
// flight: a new step sent after the restart must not make the old one look alive.
TEST_F(StageHandshake, AStepAbandonedByARestartIsNoLongerInFlightBesideANewOne) {
  service_.on_heartbeat({10, stage(0)});
  service_.on_heartbeat({11, stage(1)});
  ASSERT_FALSE(service_.add_request(request("old")));
  const auto abandoned = service_.next_batch();
  ASSERT_TRUE(abandoned);
  const uint64_t abandoned_step = abandoned->step;  // the restart's fail_all drops the step itself
  EXPECT_TRUE(service_.step_in_flight(abandoned_step));
  EXPECT_EQ(service_.on_heartbeat({21, stage(1)}).size(), 1u);
  ASSERT_FALSE(service_.add_request(request("new")));
  const auto fresh = service_.next_batch();
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(service_.batch_in_flight());
  EXPECT_TRUE(service_.step_in_flight(fresh->step));
  EXPECT_FALSE(service_.step_in_flight(abandoned_step));
  service_.on_worker_result(answer(*fresh, 21));
}

const ServingWeights kServing{"/ckpt/step-3", "step-3"};

TEST(WorkerSettings, EveryMismatchNamesItsSetting) {
  const msg::WorkerSettings base = expected_settings();
  EXPECT_FALSE(settings_mismatch(base, base, kServing));
  auto named = [&](auto change, const std::string& what) {
    msg::WorkerSettings other = base;
    change(other);
    const auto mismatch = settings_mismatch(base, other, kServing);
    ASSERT_TRUE(mismatch) << what;
    EXPECT_NE(mismatch->find(what), std::string::npos) << *mismatch;
  };
  named([](msg::WorkerSettings& s) { s.model_fingerprint = 1; }, "other weights (checkpoint fingerprint 1, the scheduler's 99");
  named([](msg::WorkerSettings& s) { s.kv_slots = 5; }, "--max-total-tokens");
  named([](msg::WorkerSettings& s) { s.max_batch_tokens = 5; }, "--chunked-prefill-size");
  named([](msg::WorkerSettings& s) { s.capture_routing = true; }, "--enable-return-routed-experts");
  named([](msg::WorkerSettings& s) { s.capture_router_weights = true; }, "--enable-return-router-weights");
  named([](msg::WorkerSettings& s) { s.ep_size = 2; }, "--ep-size is 2, the scheduler's 1");
  named([](msg::WorkerSettings& s) { s.device = "cuda"; }, "--device is 'cuda', the scheduler's 'cpu'");
  named([](msg::WorkerSettings& s) { s.moe_backend = "reference"; },
        "--moe-runner-backend) is 'reference', the scheduler's 'grouped'");
  named([](msg::WorkerSettings& s) { s.quantization = "int8"; }, "--quantization is 'int8', the scheduler's 'none'");
  named([](msg::WorkerSettings& s) { s.quantization_group_size = 32; }, "--quantization-group-size");
  named([](msg::WorkerSettings& s) { s.kernel_dtype = "bf16"; }, "--kernel-dtype is 'bf16', the scheduler's 'float32'");
  named([](msg::WorkerSettings& s) { s.speculative_algorithm = "NGRAM"; },
        "--speculative-algorithm is 'NGRAM', the scheduler's none");
  named([](msg::WorkerSettings& s) { s.speculative_num_steps = 3; }, "--speculative-num-steps is 3");
  named([](msg::WorkerSettings& s) { s.speculative_eagle_topk = 3; }, "--speculative-eagle-topk is 3");
  named([](msg::WorkerSettings& s) { s.speculative_num_draft_tokens = 3; }, "--speculative-num-draft-tokens is 3");
  named([](msg::WorkerSettings& s) { s.max_tree_experts = 3; }, "--max-tree-experts is 3");
  named([](msg::WorkerSettings& s) { s.draft_quantization = "int4"; }, "--speculative-draft-model-quantization");
}

// Quantizing at load gives other token ids and rows, bf16 products other rows: a worker started with
// either is refused, and the refusal names every difference with both values.
TEST(WorkerSettings, AllDifferencesAreNamedTogether) {
  const msg::WorkerSettings base = expected_settings();
  msg::WorkerSettings worker = base;
  worker.quantization = "int8";
  worker.kernel_dtype = "bf16";
  worker.kv_slots = 5;
  const std::string refusal = settings_mismatch(base, worker, kServing).value_or("");
  EXPECT_NE(refusal.find("KV slots (--max-total-tokens, plus one padding slot) is 5, the scheduler's 257; "), std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("--quantization is 'int8', the scheduler's 'none'; "), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("--kernel-dtype is 'bf16', the scheduler's 'float32'"), std::string::npos) << refusal;
}

// A worker on other weights is told which ones serve and how to start on them.
TEST(WorkerSettings, OtherWeightsNameTheServingOnes) {
  const msg::WorkerSettings base = expected_settings();
  msg::WorkerSettings worker = base;
  worker.model_fingerprint = 7;
  const std::string refusal = settings_mismatch(base, worker, kServing).value_or("");
  EXPECT_NE(refusal.find("/ckpt/step-3, weight version 'step-3'; start the worker with --model-path /ckpt/step-3"),
            std::string::npos)
      << refusal;
}

TEST_F(WorkerHandshake, TheAcceptedWorkersSettingsAreKnown) {
  EXPECT_FALSE(service_.accepted_settings());
  msg::WorkerSettings int8 = expected_settings();
  int8.quantization = "int8";
  service_.on_heartbeat({1, int8});
  EXPECT_FALSE(service_.accepted_settings());  // refused
  service_.on_heartbeat({2, expected_settings()});
  ASSERT_TRUE(service_.accepted_settings());
  EXPECT_EQ(*service_.accepted_settings(), expected_settings());
}

}  // namespace
}  // namespace moe
