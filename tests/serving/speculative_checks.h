#pragma once
// Checks the speculative serving suites (NGRAM and STANDALONE) share: every golden case through an
// engine alone and all batched, speculating and non-speculating requests in one batch, and that
// verifies happened and kept some drafts.
#include <functional>
#include <memory>
#include <string>

#include "golden_serving_test.h"

namespace moe::testing {

// The harness's settings with NGRAM drafts (4 steps, top-2, 8 draft tokens) and --max-tree-experts.
EngineSettings ngram_settings(int max_tree_experts = 0);

// Verifies happened and kept some drafts: a test exercises acceptance, not only fallback.
void expect_drafts_accepted(EngineCore& engine);

// A streamed request run alone: each chunk after the prompt's carries one step's rows (a plain
// decode's, or the kept tokens of one verify pass), and each uses at most `limit` experts per MoE
// layer. Returns how many chunks held several rows (verify passes that kept drafts).
int64_t expect_chunks_within_expert_limit(const std::vector<msg::TextOutput>& chunks, int num_moe_layers, int top_k,
                                          size_t limit, const std::string& where);

// Each golden case of `fixture` alone (a fresh engine each), then all of them batched in one engine,
// gives the golden ids and P+G-1 rows; returns the batched run's engine.
std::unique_ptr<EngineCore> expect_every_case_golden_alone_and_batched(
    const std::string& fixture, const std::function<std::unique_ptr<EngineCore>()>& make_engine);

class SpeculativeServingTest : public GoldenServingTest {
 protected:
  // Every case twice in one run, once speculating and once with speculative = false: all golden.
  void expect_mixed_with_plain_golden(EngineCore& engine) const;
  // NGRAM with --max-tree-experts 16 (every expert of the fixture) serves every case exactly what
  // no limit serves, golden.
  void expect_limit_of_every_expert_serves_what_no_limit_serves(
      const std::function<std::unique_ptr<EngineCore>(const EngineSettings&)>& make_engine) const;
};

}  // namespace moe::testing
