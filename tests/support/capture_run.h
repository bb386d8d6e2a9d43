#pragma once
// Golden cases run to completion step by step through a model and a RoutedExpertsCapturer, the way
// ModelWorker drives them (begin_step, forward, end_step, take_ready), with every staged step's rows
// stored in a host cache by KV slot. Shared by the capture tests of each copy engine.
#include <cstdint>
#include <vector>

#include "capture/routed_experts_capturer.h"
#include "capture/routing_host_cache.h"
#include "model/model.h"
#include "support/golden_support.h"

namespace moe::testing {

// Each case gets its own slot range starting at slot_base; prompts go in chunks of `chunk` tokens.
struct CaptureRun {
  Model& model;
  RoutedExpertsCapturer& capturer;
  RoutingHostCache& host;
  int32_t slot_base = 0;
  uint64_t step = 0;
  std::vector<std::vector<int32_t>> slot_tables{};

  // Runs every case in one batch, greedy, until it has `new_tokens` outputs; returns each case's
  // prompt and outputs. Checks that staged steps arrive exactly once each, oldest first.
  std::vector<std::vector<int32_t>> run(const std::vector<GoldenCase>& cases, int chunk, int new_tokens);
};

// The first `count` rows captured for case c (host-cache rows, [count, L, K]) equal its golden rows.
void expect_rows_match(const Golden& golden, const GoldenCase& c, const std::vector<int16_t>& rows, int64_t count);

}  // namespace moe::testing
