#include "support/capture_run.h"

#include <algorithm>
#include <map>

#include "sampling/sampler.h"

namespace moe::testing {

std::vector<std::vector<int32_t>> CaptureRun::run(const std::vector<GoldenCase>& cases, int chunk, int new_tokens) {
  KvCache kv = model.make_kv_cache(slot_base + 4096);
  std::vector<std::vector<int32_t>> tokens;
  std::vector<size_t> fed(cases.size(), 0);
  slot_tables.assign(cases.size(), {});
  int32_t next = slot_base;
  for (const GoldenCase& c : cases) {
    tokens.push_back(c.prompt_ids);
    for (size_t i = 0; i < c.prompt_ids.size() + new_tokens; ++i) slot_tables[tokens.size() - 1].push_back(next++);
  }
  std::map<uint64_t, std::vector<int32_t>> step_slots;
  uint64_t next_staged = step;
  const auto store = [&](const std::vector<StagedRouting>& staged_steps) {
    for (const StagedRouting& staged : staged_steps) {
      EXPECT_EQ(staged.step, next_staged) << "staged steps out of order";
      next_staged = staged.step + 1;
      host.store(staged, step_slots.at(staged.step));
    }
  };
  std::vector<float> logits;
  for (;;) {
    ForwardBatch batch;
    std::vector<size_t> owners;
    std::vector<int32_t> token_slots;
    for (size_t r = 0; r < cases.size(); ++r) {
      const size_t target = cases[r].prompt_ids.size() + new_tokens - 1;  // the last token is never fed
      if (fed[r] >= target) continue;
      size_t n = std::min(tokens[r].size() - fed[r], static_cast<size_t>(chunk));
      std::vector<int32_t> part(tokens[r].begin() + fed[r], tokens[r].begin() + fed[r] + n);
      batch.add_sequence(part, {slot_tables[r].begin(), slot_tables[r].begin() + fed[r] + n},
                         fed[r] + n == tokens[r].size());
      for (size_t i = 0; i < n; ++i) token_slots.push_back(slot_tables[r][fed[r] + i]);
      owners.push_back(r);
    }
    if (owners.empty()) break;
    capturer.begin_step(step, batch.num_tokens());
    model.forward(batch, kv, logits, &capturer);
    capturer.end_step();
    step_slots[step++] = token_slots;
    store(capturer.take_ready());
    int64_t row = 0;
    for (size_t i = 0; i < owners.size(); ++i) {
      fed[owners[i]] += batch.sequences[i].num_new_tokens;
      if (!batch.sequences[i].needs_logits) continue;
      const msg::TokenSampling greedy{{0.0f, 1.0f, -1, 0.0f}, 0, 0, false};
      tokens[owners[i]].push_back(
          sample_token(logits.data() + row++ * model.config().vocab_size, model.config().vocab_size, greedy).id);
    }
  }
  store(capturer.drain());
  EXPECT_EQ(next_staged, step) << "a step's rows never arrived";
  return tokens;
}

void expect_rows_match(const Golden& golden, const GoldenCase& c, const std::vector<int16_t>& rows, int64_t count) {
  expect_routing_matches_golden(golden, c, std::vector<int32_t>(rows.begin(), rows.end()), count);
}

}  // namespace moe::testing
