#pragma once
// The fixture the serving suites share: the qwen3-moe-tiny golden cases as greedy requests, and
// the check that a joined output has the golden ids and routing rows.
#include <gtest/gtest.h>

#include "serving_harness.h"
#include "support/golden_support.h"

namespace moe::testing {

class GoldenServingTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // Every golden case as a greedy request named prefix + its index.
  std::vector<msg::GenerateRequest> all_cases(const std::string& prefix) const;
  // Golden case i's rows 0 .. P+G-2 (P+G-1 with include_last), [rows][layer][k] flattened.
  std::vector<int32_t> golden_rows(size_t i, bool include_last) const;
  // Each case's joined output has the golden ids and P+G-1 golden rows (P+G with include_last).
  void expect_all_golden(const std::map<std::pair<std::string, int32_t>, JoinedOutput>& joined,
                         const std::string& prefix, int32_t index = 0, bool include_last = false) const;
  // One output against case i.
  void expect_golden(const JoinedOutput& out, size_t i, bool include_last = false) const;
  // A reply to case i that a stop condition ended after `kept` output tokens: the golden ids and
  // rows up to there (P+kept-1 rows, P+kept with include_last), finish reason stop.
  void expect_stopped_golden(const JoinedOutput& out, size_t i, size_t kept, bool include_last) const;
  // Runs every case twice through `engine` (its host cache filled with a sentinel first): the second
  // run hits the prefix cache for all of each prompt but its last token, and both are golden.
  void expect_prefix_hits_golden(EngineCore& engine) const;

  Golden golden_;
};

}  // namespace moe::testing
