// Prompt logprobs in the scheduler: which rows of which chunk carry them (the position before each
// prompt token from logprob_start_len on), the prefix-cache cap at the first row still needed, and
// their return with the first output token, once, also after a preemption.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"

#include "scheduler_driver.h"
#include "worker/model_worker.h"

namespace moe::test {
namespace {

SchedulerConfig config_with(int64_t pool, int64_t chunk) {
  SchedulerConfig config;
  config.max_total_tokens = pool;
  config.chunked_prefill_size = chunk;
  return config;
}

Request asking_from(std::string rid, std::vector<int32_t> prompt, int32_t start, int32_t top = 0) {
  Request r = make_request(std::move(rid), std::move(prompt), 3, 1);
  r.return_logprob = true;
  r.logprob_start_len = start;
  r.top_logprobs_num = top;
  return r;
}

// Answers a batch as a worker would: sampled token 5 for each sampler, and for prompt row k of the
// step the logprob -(k + 1) / 8 (its alternatives: that id with that logprob, when asked).
std::vector<CompletionRecord> answer(Scheduler& scheduler, const ScheduledBatch& batch,
                                     std::vector<float>& prompt_logprobs, bool with_top = false) {
  std::vector<int32_t> sampled(static_cast<size_t>(batch.num_samplers()), 5);
  std::vector<float> step_logprobs;
  std::vector<msg::TokenAlternatives> tops;
  for (const msg::WorkerSequence& s : batch.sequences) {
    for (int32_t id : s.prompt_logprob_ids) {
      const float logprob = -static_cast<float>(prompt_logprobs.size() + 1) / 8.0f;
      step_logprobs.push_back(logprob);
      prompt_logprobs.push_back(logprob);
      if (with_top) tops.push_back({{id}, {logprob}, {}});
    }
  }
  return scheduler.process_result(batch, sampled, {}, {}, {}, {step_logprobs, tops});
}

TEST(PromptLogprobRows, EachChunkAsksForTheRowsBeforeThePromptTokensFromTheStart) {
  Scheduler scheduler(config_with(256, 4));
  const std::vector<int32_t> prompt = prompt_of(10, 100);
  scheduler.add_request(asking_from("r", prompt, 3, 2));
  std::vector<float> sent;
  std::vector<std::vector<int32_t>> targets;
  std::vector<int32_t> rows;
  std::vector<CompletionRecord> last;
  SequenceTables tables;
  for (int step = 0; step < 3; ++step) {
    auto batch = scheduler.schedule_step();
    ASSERT_TRUE(batch);
    tables.apply(*batch);
    targets.push_back(batch->sequences[0].prompt_logprob_ids);
    rows.push_back(static_cast<int32_t>(batch->sequences[0].prompt_logprob_ids.size()));
    EXPECT_EQ(to_forward_batch(*batch, tables).num_logit_rows(), rows.back() + (batch->sequences[0].needs_logits ? 1 : 0));
    last = answer(scheduler, *batch, sent, true);
  }
  // Chunks [0, 4), [4, 8), [8, 10): rows at positions 2..8 give tokens 3..9.
  EXPECT_EQ(targets, (std::vector<std::vector<int32_t>>{{103, 104}, {105, 106, 107, 108}, {109}}));
  EXPECT_EQ(rows, (std::vector<int32_t>{2, 4, 1}));
  ASSERT_EQ(last.size(), 1u);
  ASSERT_EQ(last[0].output_ids.size(), 1u);
  const CompletionRecord& input = last[0];
  EXPECT_EQ(input.input_token_ids, std::vector<int32_t>(prompt.begin() + 3, prompt.end()));
  EXPECT_EQ(input.input_token_logprobs, sent);
  ASSERT_EQ(input.input_top_logprobs.size(), sent.size());
  EXPECT_EQ(input.input_top_logprobs[0].ids, std::vector<int32_t>{103});
  // Later steps (decodes) carry no prompt rows and no second copy.
  auto decode = scheduler.schedule_step();
  ASSERT_TRUE(decode);
  EXPECT_TRUE(decode->sequences[0].prompt_logprob_ids.empty());
  const std::vector<CompletionRecord> next = answer(scheduler, *decode, sent);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].output_ids.size(), 1u);
  EXPECT_TRUE(next[0].input_token_ids.empty());
  EXPECT_TRUE(next[0].input_token_logprobs.empty());
}

TEST(PromptLogprobRows, StartZeroHasANullFirstEntryAndRequestsWithoutThemHaveNoRows) {
  Scheduler scheduler(config_with(256, 0));
  const std::vector<int32_t> prompt = prompt_of(5, 10);
  scheduler.add_request(asking_from("zero", prompt, 0, 1));
  scheduler.add_request(make_request("plain", prompt_of(6, 50), 2, 1));
  auto batch = scheduler.schedule_step();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->sequences[0].prompt_logprob_ids, (std::vector<int32_t>{11, 12, 13, 14}));
  EXPECT_TRUE(batch->sequences[1].prompt_logprob_ids.empty());
  SequenceTables tables;
  tables.apply(*batch);
  EXPECT_EQ(to_forward_batch(*batch, tables).num_logit_rows(), 4 + 2);
  std::vector<float> sent;
  const std::vector<CompletionRecord> records = answer(scheduler, *batch, sent, true);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[1].input_token_ids.empty());
  const CompletionRecord& input = records[0];
  EXPECT_EQ(input.input_token_ids, prompt);
  ASSERT_EQ(input.input_token_logprobs.size(), 5u);
  EXPECT_TRUE(std::isnan(input.input_token_logprobs[0]));
  EXPECT_EQ(std::vector<float>(input.input_token_logprobs.begin() + 1, input.input_token_logprobs.end()), sent);
  ASSERT_EQ(input.input_top_logprobs.size(), 5u);
  EXPECT_TRUE(input.input_top_logprobs[0].ids.empty());
}

TEST(PromptLogprobRows, APrefixHitStopsBeforeTheFirstRowStillNeeded) {
  Scheduler scheduler(config_with(256, 0));
  const std::vector<int32_t> prompt = prompt_of(12, 7);
  scheduler.add_request(make_request("warm", prompt, 1, 1));
  std::vector<float> sent;
  while (auto batch = scheduler.schedule_step()) answer(scheduler, *batch, sent);
  ASSERT_FALSE(scheduler.has_unfinished());

  for (const int32_t start : {9, 1, 0}) {
    SCOPED_TRACE("logprob_start_len " + std::to_string(start));
    scheduler.add_request(asking_from("s" + std::to_string(start), prompt, start));
    auto batch = scheduler.schedule_step();
    ASSERT_TRUE(batch);
    // The row before the start (position start - 1) is recomputed; everything before it is a hit.
    const int64_t first_row = start > 0 ? start - 1 : 0;
    EXPECT_EQ(batch->positions.front(), first_row);
    EXPECT_EQ(batch->sequences[0].prompt_logprob_ids.size(), static_cast<size_t>(11 - first_row));
    while (batch) {
      answer(scheduler, *batch, sent);
      batch = scheduler.schedule_step();
    }
  }
}

TEST(PromptLogprobRows, APreemptedRequestIsRecomputedWithoutRowsAndSendsThemOnce) {
  // Two prompts of 10 fill most of a 24-slot pool: the second is preempted once both decode.
  Scheduler scheduler(config_with(24, 0));
  for (const char* rid : {"a", "b"}) {
    Request r = asking_from(rid, prompt_of(10, rid[0] == 'a' ? 0 : 40), 2);
    r.sampling.max_new_tokens = 6;  // 2 x (10 + 5) positions: more than the pool
    scheduler.add_request(std::move(r));
  }
  std::vector<float> sent;
  int inputs = 0, prompt_rows_after_first = 0;
  bool first_done = false;
  while (auto batch = scheduler.schedule_step()) {
    if (first_done)
      for (const msg::WorkerSequence& s : batch->sequences) prompt_rows_after_first += static_cast<int>(s.prompt_logprob_ids.size());
    for (const CompletionRecord& record : answer(scheduler, *batch, sent))
      inputs += record.input_token_ids.empty() ? 0 : 1;
    first_done = true;
  }
  EXPECT_GE(scheduler.stats().num_preemptions, 1);
  EXPECT_EQ(inputs, 2);
  EXPECT_EQ(prompt_rows_after_first, 0);
}

// Their logits are rows x vocabulary floats: a long prompt's rows come at most
// kMaxPromptLogprobRowsPerStep a step, whatever the token budget; the chunks before the start are whole.
TEST(PromptLogprobRows, ALongPromptsRowsComeAFewHundredAStep) {
  Scheduler scheduler(config_with(4096, 0));
  const int64_t prompt_len = 2 * kMaxPromptLogprobRowsPerStep + 300;
  scheduler.add_request(asking_from("long", prompt_of(static_cast<int>(prompt_len), 1), 200));
  std::vector<float> sent;
  std::vector<int32_t> chunks, rows;
  while (auto batch = scheduler.schedule_step()) {
    if (batch->sequences[0].num_new_tokens > 1 || chunks.empty()) {
      chunks.push_back(batch->sequences[0].num_new_tokens);
      rows.push_back(static_cast<int32_t>(batch->sequences[0].prompt_logprob_ids.size()));
    }
    answer(scheduler, *batch, sent);
  }
  const auto cap = static_cast<int32_t>(kMaxPromptLogprobRowsPerStep);
  // Positions 0..198 need no rows; rows run from position 199 to the prompt's last but one.
  EXPECT_EQ(chunks, (std::vector<int32_t>{199 + cap, cap, static_cast<int32_t>(prompt_len) - 199 - 2 * cap}));
  EXPECT_EQ(rows, (std::vector<int32_t>{cap, cap, static_cast<int32_t>(prompt_len) - 199 - 2 * cap - 1}));
  EXPECT_EQ(sent.size(), static_cast<size_t>(prompt_len - 200));
}

TEST(PromptLogprobRows, AResultWithTheWrongNumberOfPromptLogprobsIsRefused) {
  Scheduler scheduler(config_with(256, 0));
  scheduler.add_request(asking_from("r", prompt_of(6, 1), 2));
  auto batch = scheduler.schedule_step();
  ASSERT_TRUE(batch);
  const std::vector<int32_t> sampled{5};
  const std::vector<float> short_of_one(3, -1.0f);  // the batch has 4 rows (positions 1..4)
  EXPECT_THROW(scheduler.process_result(*batch, sampled, {}, {}, {}, {short_of_one, {}}), Error);
  const std::vector<float> right(4, -1.0f);
  const std::vector<CompletionRecord> records = scheduler.process_result(*batch, sampled, {}, {}, {}, {right, {}});
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].input_token_logprobs, right);
}

TEST(PromptLogprobRows, AStartAtOrPastThePromptsEndNeverReachesTheScheduler) {
  Scheduler scheduler(config_with(256, 0));
  EXPECT_THROW(scheduler.add_request(asking_from("r", prompt_of(6, 1), 6)), std::logic_error);
  EXPECT_THROW(scheduler.add_request(asking_from("r", prompt_of(6, 1), -2)), std::logic_error);
}

}  // namespace
}  // namespace moe::test
