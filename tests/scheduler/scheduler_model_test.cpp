// The scheduler driving the real model (the tiny Qwen3-MoE fixture) with the real sampler: every
// golden case's greedy output must come out exactly, however the scheduler batches, chunks, caches
// or preempts, and every KV slot must be free again afterwards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "scheduler_driver.h"
#include "worker/model_worker.h"

namespace moe::test {
namespace {

struct GoldenCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
};

const std::string kModelDir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";

std::vector<GoldenCase> load_golden_cases() {
  const nlohmann::json golden = read_json_file(kModelDir + "/golden.json");
  std::vector<GoldenCase> cases;
  for (const auto& c : golden.at("cases"))
    cases.push_back({c.at("prompt_ids").get<std::vector<int32_t>>(), c.at("output_ids").get<std::vector<int32_t>>()});
  return cases;
}

class SchedulerWithModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(kModelDir).release();
    cases_ = new std::vector<GoldenCase>(load_golden_cases());
  }
  static void TearDownTestSuite() {
    delete model_;
    delete cases_;
  }

  SchedulerConfig config(int64_t pool, int64_t chunk, bool cache = true) const {
    SchedulerConfig c;
    c.max_total_tokens = pool;
    c.chunked_prefill_size = chunk;
    c.enable_radix_cache = cache;
    c.context_length = model_->config().max_position_embeddings;
    return c;
  }

  // The model worker: forward over a KV cache sized for the scheduler, then sample each sequence
  // that needs logits with its own params and step.
  RunLog run(Scheduler& scheduler, KvCache& kv) const {
    const int64_t vocab = model_->config().vocab_size;
    std::vector<float> logits;
    SequenceTables tables;
    return run_to_completion(scheduler, [&](const ScheduledBatch& batch) {
      tables.apply(batch);
      model_->forward(to_forward_batch(batch, tables), kv, logits);
      std::vector<int32_t> sampled;
      for (size_t i = 0; i < batch.sequences.size(); ++i) {
        if (!batch.sequences[i].needs_logits) continue;
        const float* row = logits.data() + static_cast<int64_t>(sampled.size()) * vocab;
        sampled.push_back(sample_token(row, vocab, batch.sequences[i].sampling).id);
      }
      return sampled;
    });
  }

  // Adds every golden case as a greedy request "<prefix><i>" for the golden number of tokens, runs
  // them all to the end and checks each output against its golden.
  RunLog run_golden(Scheduler& scheduler, KvCache& kv, const std::string& prefix, const std::string& label) const {
    for (size_t i = 0; i < cases_->size(); ++i)
      scheduler.add_request(make_request(prefix + std::to_string(i), (*cases_)[i].prompt_ids,
                                         static_cast<int>((*cases_)[i].output_ids.size())));
    RunLog log = run(scheduler, kv);
    for (size_t i = 0; i < cases_->size(); ++i) {
      const auto it = log.replies.find({prefix + std::to_string(i), 0});
      if (it == log.replies.end()) {
        ADD_FAILURE() << label << ": case " << i << " never finished";
        continue;
      }
      EXPECT_EQ(it->second.output_ids, (*cases_)[i].output_ids) << label << ": case " << i;
      EXPECT_EQ(it->second.reason.kind, msg::FinishKind::Length) << label << ": case " << i;
    }
    return log;
  }

  // Every slot is either free or held by the prefix cache, and all are free after a flush.
  static void expect_all_slots_returned(Scheduler& scheduler, const std::string& label) {
    EXPECT_FALSE(scheduler.has_unfinished()) << label;
    EXPECT_EQ(scheduler.stats().kv_slots_used, scheduler.stats().radix_cached_tokens) << label;
    scheduler.flush_cache();
    EXPECT_EQ(scheduler.stats().kv_slots_used, 0) << label;
  }

  static Model* model_;
  static std::vector<GoldenCase>* cases_;
};

Model* SchedulerWithModel::model_ = nullptr;
std::vector<GoldenCase>* SchedulerWithModel::cases_ = nullptr;

TEST_F(SchedulerWithModel, AllCasesAtOnce) {
  Scheduler scheduler(config(4096, 8192));
  KvCache kv = model_->make_kv_cache(scheduler.kv_cache_slots());
  const RunLog log = run_golden(scheduler, kv, "c", "all at once");
  EXPECT_EQ(log.batches.front().sequences.size(), cases_->size());  // one batch prefills them all
  expect_all_slots_returned(scheduler, "all at once");
}

TEST_F(SchedulerWithModel, ChunkedPrefillOf1And7And16) {
  for (const int64_t chunk : {1, 7, 16}) {
    const std::string label = "chunk " + std::to_string(chunk);
    Scheduler scheduler(config(4096, chunk));
    KvCache kv = model_->make_kv_cache(scheduler.kv_cache_slots());
    const RunLog log = run_golden(scheduler, kv, "c", label);
    for (const ScheduledBatch& batch : log.batches) ASSERT_LE(std::ssize(batch.token_ids), chunk) << label;
    expect_all_slots_returned(scheduler, label);
  }
}

TEST_F(SchedulerWithModel, PrefixCacheHitsGiveTheSameOutputs) {
  Scheduler scheduler(config(4096, 64));
  KvCache kv = model_->make_kv_cache(scheduler.kv_cache_slots());
  run_golden(scheduler, kv, "first", "first pass");
  const RunLog again = run_golden(scheduler, kv, "again", "cached pass");
  for (size_t i = 0; i < cases_->size(); ++i) {
    const int64_t prompt_len = static_cast<int64_t>((*cases_)[i].prompt_ids.size());
    EXPECT_EQ(again.replies.at({"again" + std::to_string(i), 0}).cached_tokens, prompt_len - 1) << "case " << i;
  }
  EXPECT_GT(scheduler.stats().cache_hit_tokens, 0);
  expect_all_slots_returned(scheduler, "prefix cache");
}

TEST_F(SchedulerWithModel, PrefixCacheOff) {
  Scheduler scheduler(config(4096, 64, /*cache=*/false));
  KvCache kv = model_->make_kv_cache(scheduler.kv_cache_slots());
  run_golden(scheduler, kv, "first", "cache off");
  const RunLog again = run_golden(scheduler, kv, "again", "cache off, second pass");
  for (const auto& [key, done] : again.replies) EXPECT_EQ(done.cached_tokens, 0);
  EXPECT_EQ(scheduler.stats().kv_slots_used, 0);
}

TEST_F(SchedulerWithModel, ATinyPoolPreemptsAndOutputsStillMatch) {
  // 160 slots for 8 requests needing 389 in all (the longest alone needs 143).
  for (const bool cache : {true, false}) {
    const std::string label = cache ? "tiny pool, cache on" : "tiny pool, cache off";
    Scheduler scheduler(config(160, 32, cache));
    KvCache kv = model_->make_kv_cache(scheduler.kv_cache_slots());
    const RunLog log = run_golden(scheduler, kv, "c", label);
    EXPECT_GT(scheduler.stats().num_preemptions, 0) << label;
    expect_all_slots_returned(scheduler, label);
  }
}

}  // namespace
}  // namespace moe::test
