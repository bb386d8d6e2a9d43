// Prompt logprobs (logprob_start_len) checked exactly by teacher forcing: a golden case's prompt
// followed by its first m golden outputs, sent as the prompt with logprob_start_len at the first
// output, must give those outputs' golden logprobs (within 1e-3) with each greedy token the first
// alternative, whatever batching, chunking, prefix-cache hits, preemption, overlap, n > 1,
// streaming or speculation the request meets; and the reply carries them exactly once.
#include <gtest/gtest.h>

#include <cmath>

#include "golden_serving_test.h"

namespace moe::testing {
namespace {

constexpr int32_t kTop = 3;

// Golden case c's prompt and its first m outputs as one prompt, with the logprobs of the prompt
// tokens from the first output on (and kTop alternatives), and one more token generated.
msg::GenerateRequest teacher_forced(const std::string& rid, const GoldenCase& c, size_t m) {
  std::vector<int32_t> ids = c.prompt_ids;
  ids.insert(ids.end(), c.output_ids.begin(), c.output_ids.begin() + static_cast<std::ptrdiff_t>(m));
  msg::GenerateRequest r = greedy_request(rid, ids, 1);
  r.logprob_start_len = static_cast<int32_t>(c.prompt_ids.size());
  r.top_logprobs_num = kTop;
  return r;
}

// The first m outputs' golden logprobs, the greedy token first among the alternatives with the same
// logprob, sent in one output; then the golden token after them. `offset` skips entries before
// the first output (a request whose logprob_start_len is earlier).
void expect_teacher_forced(const JoinedOutput& out, const GoldenCase& c, size_t m, size_t offset = 0) {
  EXPECT_EQ(out.input_chunks, 1) << "prompt logprobs must come exactly once";
  ASSERT_EQ(out.input_ids.size(), offset + m);
  ASSERT_EQ(out.input_logprobs.size(), offset + m);
  ASSERT_EQ(out.input_top.size(), offset + m);
  ASSERT_EQ(out.input_texts.size(), offset + m);
  for (size_t j = 0; j < m; ++j) {
    SCOPED_TRACE("output " + std::to_string(j));
    const size_t e = offset + j;
    EXPECT_EQ(out.input_ids[e], c.output_ids[j]);
    EXPECT_NEAR(out.input_logprobs[e], c.output_logprobs[j], 1e-3);
    ASSERT_EQ(out.input_top[e].ids.size(), static_cast<size_t>(kTop));
    EXPECT_EQ(out.input_top[e].ids[0], c.output_ids[j]);
    EXPECT_EQ(out.input_top[e].logprobs[0], out.input_logprobs[e]);
    EXPECT_EQ(out.input_top[e].texts.size(), static_cast<size_t>(kTop));
  }
  if (m < c.output_ids.size()) {
    ASSERT_EQ(out.ids.size(), 1u);
    EXPECT_EQ(out.ids[0], c.output_ids[m]);
    EXPECT_NEAR(out.logprobs[0], c.output_logprobs[m], 1e-3);
  }
}

class PromptLogprobsGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { golden_ = load_golden(GetParam()); }

  std::unique_ptr<EngineCore> engine(int64_t chunk = 0, bool overlap = true) const {
    HarnessOptions options;
    options.fixture = GetParam();
    if (chunk > 0) options.settings.chunked_prefill_size = chunk;
    options.settings.disable_overlap_schedule = !overlap;
    return make_pipeline(options);
  }
  // The teacher-forced requests of every case (rid "tf<i>"), m = all outputs but the last.
  std::vector<msg::GenerateRequest> teacher_forced_cases() const {
    std::vector<msg::GenerateRequest> requests;
    for (size_t i = 0; i < golden_.cases.size(); ++i)
      requests.push_back(teacher_forced("tf" + std::to_string(i), golden_.cases[i], outputs() - 1));
    return requests;
  }
  size_t outputs() const { return static_cast<size_t>(golden_.max_new_tokens); }
  void expect_all_teacher_forced(const std::map<std::pair<std::string, int32_t>, JoinedOutput>& joined,
                                 int32_t index = 0) const {
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      SCOPED_TRACE("case " + std::to_string(i));
      expect_teacher_forced(joined.at({"tf" + std::to_string(i), index}), golden_.cases[i], outputs() - 1);
    }
  }

  Golden golden_;
};

TEST_P(PromptLogprobsGolden, AloneAndBatchedWithOtherRequestsWithOverlapOnAndOff) {
  for (const bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlap on" : "overlap off");
    auto e = engine(0, overlap);
    const std::vector<msg::GenerateRequest> forced = teacher_forced_cases();
    for (size_t i = 0; i < forced.size(); ++i) {
      SCOPED_TRACE("alone, case " + std::to_string(i));
      expect_teacher_forced(join_outputs(e->run({forced[i]})).at({forced[i].rid, 0}), golden_.cases[i], outputs() - 1);
    }
    // Beside requests that ask for no prompt logprobs (and pay nothing for them).
    std::vector<msg::GenerateRequest> mixed = forced;
    for (size_t i = 0; i < golden_.cases.size(); ++i)
      mixed.push_back(greedy_request("plain" + std::to_string(i), golden_.cases[i].prompt_ids, golden_.max_new_tokens));
    const auto joined = join_outputs(e->run(mixed));
    EXPECT_TRUE(e->errors().empty());
    expect_all_teacher_forced(joined);
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
      const JoinedOutput& plain = joined.at({"plain" + std::to_string(i), 0});
      EXPECT_EQ(plain.ids, golden_.cases[i].output_ids);
      EXPECT_EQ(plain.input_chunks, 0);
    }
  }
}

TEST_P(PromptLogprobsGolden, ChunkedPrefillOfSevenTokens) {
  auto e = engine(7);
  expect_all_teacher_forced(join_outputs(e->run(teacher_forced_cases())));
  EXPECT_TRUE(e->errors().empty());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PromptLogprobsGolden, ::testing::ValuesIn(kGoldenFixtures), fixture_test_name);

class PromptLogprobs : public GoldenServingTest {
 protected:
  size_t outputs() const { return static_cast<size_t>(golden_.max_new_tokens); }
};

// A cached prefix ending before logprob_start_len is used whole; one reaching past it is used only
// up to the position before it (whose logits give the first logprob), as SGLang caps its match.
TEST_F(PromptLogprobs, PrefixHitsBeforeAndPastTheStart) {
  auto e = make_pipeline({});
  for (size_t i = 1; i < golden_.cases.size(); ++i) {  // case 0's prompt is one token: nothing to cache
    SCOPED_TRACE("case " + std::to_string(i));
    const GoldenCase& c = golden_.cases[i];
    const auto s = static_cast<int32_t>(c.prompt_ids.size());
    const size_t m = outputs() - 1;

    // Past the start: the whole teacher-forced prompt is cached by a request without logprobs.
    msg::GenerateRequest warm = teacher_forced("warm" + std::to_string(i), c, m);
    warm.return_logprob = false;
    e->run({warm});
    const auto past = join_outputs(e->run({teacher_forced("past" + std::to_string(i), c, m)}));
    const JoinedOutput& capped = past.at({"past" + std::to_string(i), 0});
    EXPECT_EQ(capped.cached_tokens, s - 1);
    expect_teacher_forced(capped, c, m);

    // Before the start: only the prompt's first half is cached (by another engine's fresh cache).
    auto fresh = make_pipeline({});
    const size_t half = c.prompt_ids.size() / 2;
    if (half == 0) continue;
    fresh->run({greedy_request("half", {c.prompt_ids.begin(), c.prompt_ids.begin() + static_cast<std::ptrdiff_t>(half)}, 1)});
    const auto before = join_outputs(fresh->run({teacher_forced("before", c, m)}));
    const JoinedOutput& hit = before.at({"before", 0});
    EXPECT_GE(hit.cached_tokens, static_cast<int32_t>(half));
    EXPECT_LE(hit.cached_tokens, s - 1);
    expect_teacher_forced(hit, c, m);
  }
  EXPECT_TRUE(e->errors().empty());
}

// logprob_start_len 0: every prompt token, the first with no logprob and no alternatives (it has
// no context); the entries from the first output on are the same golden ones.
TEST_F(PromptLogprobs, StartAtZeroCoversThePromptWithANullFirstEntry) {
  auto e = make_pipeline({});
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const GoldenCase& c = golden_.cases[i];
    msg::GenerateRequest r = teacher_forced("zero" + std::to_string(i), c, outputs() - 1);
    r.logprob_start_len = 0;
    const JoinedOutput out = join_outputs(e->run({r})).at({r.rid, 0});
    ASSERT_FALSE(out.input_logprobs.empty());
    EXPECT_TRUE(std::isnan(out.input_logprobs[0]));
    EXPECT_TRUE(out.input_top[0].ids.empty());
    EXPECT_EQ(out.input_ids, *r.input_ids);
    for (size_t p = 1; p < out.input_logprobs.size(); ++p) EXPECT_FALSE(std::isnan(out.input_logprobs[p]));
    expect_teacher_forced(out, c, outputs() - 1, c.prompt_ids.size());
  }
}

// Two teacher-forced requests whose prompts fit the pool but whose next tokens do not: one is
// preempted after its prompt logprobs were sent, recomputed without them, and still golden.
TEST_F(PromptLogprobs, PreemptedRequestsSendThemOnce) {
  for (const int64_t chunk : {int64_t{0}, int64_t{7}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    HarnessOptions options;
    const size_t first = 7, second = 3, m = outputs() - 1;
    options.settings.max_total_tokens =
        static_cast<int64_t>(golden_.cases[first].prompt_ids.size() + golden_.cases[second].prompt_ids.size() + 2 * m) + 2;
    if (chunk > 0) options.settings.chunked_prefill_size = chunk;
    auto e = make_pipeline(options);
    msg::GenerateRequest a = teacher_forced("a", golden_.cases[first], m), b = teacher_forced("b", golden_.cases[second], m);
    a.sampling.max_new_tokens = b.sampling.max_new_tokens = 8;
    a.sampling.ignore_eos = b.sampling.ignore_eos = true;
    const auto joined = join_outputs(e->run({a, b}));
    EXPECT_TRUE(e->errors().empty());
    EXPECT_GE(e->service().stats().num_preemptions, 1);
    for (const auto& [key, c] : {std::pair{"a", first}, std::pair{"b", second}}) {
      SCOPED_TRACE(key);
      const JoinedOutput& out = joined.at({key, 0});
      EXPECT_EQ(out.ids.front(), golden_.cases[c].output_ids[m]);
      EXPECT_EQ(out.ids.size(), 8u);
      JoinedOutput first_token = out;
      first_token.ids.resize(1);
      expect_teacher_forced(first_token, golden_.cases[c], m);
    }
  }
}

TEST_F(PromptLogprobs, EveryCompletionOfAnNRequestAndAStreamGetThemOnce) {
  auto e = make_pipeline({});
  const GoldenCase& c = golden_.cases[4];
  msg::GenerateRequest n3 = teacher_forced("n3", c, outputs() - 1);
  n3.sampling.n = 3;
  msg::GenerateRequest streamed = teacher_forced("streamed", c, outputs() - 1);
  streamed.stream = true;
  streamed.sampling.max_new_tokens = 4;
  const auto joined = join_outputs(e->run({n3, streamed}));
  for (int32_t index = 0; index < 3; ++index) expect_teacher_forced(joined.at({"n3", index}), c, outputs() - 1);
  const JoinedOutput& s = joined.at({"streamed", 0});
  EXPECT_GE(s.chunks, 4);
  JoinedOutput first_token = s;
  first_token.ids.resize(1);
  expect_teacher_forced(first_token, c, outputs() - 1);
}

TEST_F(PromptLogprobs, SpeculatingServerComputesThemInThePlainPrefill) {
  HarnessOptions options;
  options.settings.speculative_algorithm = "NGRAM";
  auto e = make_pipeline(options);
  std::vector<msg::GenerateRequest> requests;
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    requests.push_back(teacher_forced("tf" + std::to_string(i), golden_.cases[i], outputs() / 2));
    requests.back().sampling.max_new_tokens = static_cast<int32_t>(outputs() - outputs() / 2);
  }
  const auto joined = join_outputs(e->run(requests));
  EXPECT_TRUE(e->errors().empty());
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const JoinedOutput& out = joined.at({"tf" + std::to_string(i), 0});
    const GoldenCase& c = golden_.cases[i];
    EXPECT_EQ(out.ids, std::vector<int32_t>(c.output_ids.begin() + static_cast<std::ptrdiff_t>(outputs() / 2), c.output_ids.end()));
    JoinedOutput first_token = out;
    first_token.ids.resize(1);
    expect_teacher_forced(first_token, c, outputs() / 2);
  }
}

}  // namespace
}  // namespace moe::testing
