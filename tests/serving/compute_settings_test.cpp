// How a worker computes, as its handshake reports it (engine/compute_settings.h): flags that compute
// alike give equal settings ("auto" and the runner it picks, a group size int4 does not use, tree
// limits without speculation), flags that compute otherwise give different ones.
#include "engine/compute_settings.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace moe {
namespace {

msg::WorkerSettings described(const EngineOptions& options, const SpeculativeConfig& speculative = {}) {
  msg::WorkerSettings settings;
  describe_computation(compute_settings_of(options), speculative, settings);
  return settings;
}

TEST(ComputeSettings, TheDefaultsAreTheCpusGroupedRunnerInFloat32) {
  const msg::WorkerSettings settings = described({});
  EXPECT_EQ(settings.device, "cpu");
  EXPECT_EQ(settings.moe_backend, "grouped");
  EXPECT_EQ(settings.quantization, "none");
  EXPECT_EQ(settings.quantization_group_size, 0);
  EXPECT_EQ(settings.kernel_dtype, "float32");
  EXPECT_EQ(settings.speculative_algorithm, "");
  EXPECT_EQ(settings.draft_quantization, "");
  EXPECT_EQ(settings, msg::WorkerSettings{});  // what a worker that says nothing of it reports
}

TEST(ComputeSettings, AutoIsTheRunnerItPicks) {
  EngineOptions grouped;
  grouped.moe_runner_backend = "grouped";
  EXPECT_EQ(described(grouped), described({}));
  EngineOptions reference;
  reference.moe_runner_backend = "reference";
  EXPECT_EQ(described(reference).moe_backend, "reference");
  EngineOptions gpu;
  gpu.device = "cuda";
  EXPECT_EQ(described(gpu).device, "cuda");
  EXPECT_EQ(described(gpu).moe_backend, "cuda");
}

TEST(ComputeSettings, QuantizationAndKernelDtypeAreNamedAndTheGroupSizeCountsForInt4Only) {
  EngineOptions int8;
  int8.quantization = "int8";
  int8.quantization_group_size = 64;
  EXPECT_EQ(described(int8).quantization, "int8");
  EXPECT_EQ(described(int8).quantization_group_size, 0);
  EngineOptions int4 = int8;
  int4.quantization = "int4";
  EXPECT_EQ(described(int4).quantization_group_size, 64);
  EngineOptions bf16;
  bf16.kernel_dtype = "bf16";
  EXPECT_EQ(described(bf16).kernel_dtype, "bf16");
  EngineOptions typo;
  typo.quantization = "int3";
  EXPECT_THROW(described(typo), Error);
}

TEST(ComputeSettings, SpeculativeLimitsCountOnlyWithSpeculation) {
  SpeculativeConfig off;
  off.num_steps = 7;
  EXPECT_EQ(described({}, off), described({}));
  SpeculativeConfig ngram;
  ngram.algorithm = SpeculativeAlgorithm::Ngram;
  ngram.max_tree_experts = 16;
  const msg::WorkerSettings settings = described({}, ngram);
  EXPECT_EQ(settings.speculative_algorithm, "NGRAM");
  EXPECT_EQ(settings.speculative_num_steps, 4);
  EXPECT_EQ(settings.speculative_eagle_topk, 2);
  EXPECT_EQ(settings.speculative_num_draft_tokens, 8);
  EXPECT_EQ(settings.max_tree_experts, 16);
  EXPECT_EQ(settings.draft_quantization, "");
}

TEST(ComputeSettings, TheDraftsQuantizationIsTheOneItLoadsWith) {
  SpeculativeConfig standalone;
  standalone.algorithm = SpeculativeAlgorithm::Standalone;
  EngineOptions int8;
  int8.quantization = "int8";
  EXPECT_EQ(described(int8, standalone).draft_quantization, "int8");  // as the target
  standalone.draft_quantization = Quantization::None;                // unquant
  EXPECT_EQ(described(int8, standalone).draft_quantization, "none");
  standalone.draft_quantization = Quantization::Int4;  // its group size counts, the target's not int4
  EngineOptions grouped_by_32;
  grouped_by_32.quantization_group_size = 32;
  EXPECT_EQ(described(grouped_by_32, standalone).quantization_group_size, 32);
}

}  // namespace
}  // namespace moe
