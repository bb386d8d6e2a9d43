// size_engine: the context length it resolves, a --context-length longer than the model was
// trained for, refused naming both numbers unless allowed, a tensor-parallel rank's KV pool sized for
// its own KV heads, and the STANDALONE draft's
// quantization handed to the worker; the KV pool a GPU's --mem-fraction-static sizes, in bf16
// with bf16 products on the GPU, and the fractions refused with their numbers; a budget in bytes
// counting the draft's part of each slot.
#include "engine/engine_sizing.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/error.h"
#include "model/kv_row_width.h"
#include "model/model_fingerprint.h"
#include "support/eagle3_heads.h"

namespace moe {
namespace {

// A model trained for 1024 positions; settings with a KV pool of 4096 slots.
ModelConfig small_model() {
  ModelConfig config;
  config.architecture = "Qwen3MoeForCausalLM";
  config.vocab_size = 100;
  config.num_hidden_layers = 2;
  config.num_key_value_heads = 2;
  config.head_dim = 8;
  config.num_experts_per_tok = 2;
  config.max_position_embeddings = 1024;
  return config;
}
const ModelConfig kModel = small_model();

EngineSettings with_context(int64_t context_length) {
  EngineSettings settings;
  settings.max_total_tokens = 4096;
  settings.context_length = context_length;
  return settings;
}

TEST(EngineSizing, ContextLengthDefaultsToTheModelsAndMayBeShorter) {
  EXPECT_EQ(size_engine(with_context(0), kModel, {}, {}, 1).limits.context_length, 1024);
  EXPECT_EQ(size_engine(with_context(512), kModel, {}, {}, 1).limits.max_sequence_len, 512);
}

TEST(EngineSizing, KvBytesPerTokenAreEveryLayersKeyAndValueRow) {
  // 2 layers · (key + value) · 2 heads · 8 floats · 4 bytes.
  EXPECT_EQ(size_engine(with_context(0), kModel, {}, {}, 1).kv_bytes_per_token, 2 * 2 * 2 * 8 * 4);
}

TEST(EngineSizing, ATensorParallelRanksPoolHoldsItsOwnKvHeadsSoABudgetHoldsMoreSlots) {
  ModelConfig model = kModel;
  model.num_attention_heads = 4;  // over 2 KV heads
  EngineSettings settings = with_context(0);
  settings.max_total_tokens = 0;
  settings.kv_cache_memory_bytes = 2 * 2 * 2 * 8 * 4 * 100;  // 100 slots of the whole model's rows
  auto sized_over = [&](int tp_size, int ep_size) {
    ModelIdentity identity;
    identity.tp_size = tp_size;
    identity.ep_size = ep_size;
    return size_engine(settings, model, identity, {}, 1);
  };
  const EngineSizing whole = sized_over(1, 1), experts = sized_over(1, 4), halves = sized_over(2, 1);
  EXPECT_EQ(whole.kv_bytes_per_token, 2 * 2 * 2 * 8 * 4);
  EXPECT_EQ(whole.service.scheduler.max_total_tokens, 100);
  EXPECT_EQ(experts.kv_bytes_per_token, whole.kv_bytes_per_token);  // each expert shard keeps every KV head
  EXPECT_EQ(halves.kv_bytes_per_token, whole.kv_bytes_per_token / 2);  // one KV head of two per rank
  EXPECT_EQ(halves.service.scheduler.max_total_tokens, 200);
  EXPECT_EQ(halves.worker.settings.kv_slots, 201);
  // 4 ranks (--tp-size 4, or 2 × --ep-size 2) over 2 KV heads: each keeps the one its query heads read.
  EXPECT_EQ(sized_over(4, 1).kv_bytes_per_token, whole.kv_bytes_per_token / 2);
  EXPECT_EQ(sized_over(2, 2).service.scheduler.max_total_tokens, 200);
}

TEST(EngineSizing, AContextAboveTheModelsPositionsNeedsAllowLongContext) {
  EngineSettings settings = with_context(2048);
  std::string message;
  try {
    size_engine(settings, kModel, {}, {}, 1);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("--context-length 2048 is above the model's max_position_embeddings 1024"), std::string::npos)
      << message;
  EXPECT_NE(message.find("--allow-long-context"), std::string::npos) << message;
  settings.allow_long_context = true;
  EXPECT_EQ(size_engine(settings, kModel, {}, {}, 1).limits.context_length, 2048);
}

TEST(EngineSizing, TheWorkerGetsTheDraftsOwnQuantizationOrNoneToFollowTheTarget) {
  EngineSettings settings = with_context(0);
  settings.speculative_algorithm = "STANDALONE";
  settings.speculative_draft_model_path = std::string(MOE_TEST_DATA_DIR) + "/mixtral-tiny";
  EXPECT_EQ(size_engine(settings, kModel, {}, {}, 1).worker.draft_quantization, std::nullopt);
  for (const auto& [name, quantization] :
       {std::pair{"unquant", Quantization::None}, {"int8", Quantization::Int8}, {"int4", Quantization::Int4}}) {
    settings.speculative_draft_model_quantization = name;
    const EngineSizing sizing = size_engine(settings, kModel, {}, {}, 1);
    EXPECT_EQ(sizing.worker.draft_quantization, quantization) << name;
    EXPECT_EQ(sizing.service.scheduler.speculative.draft_quantization, quantization) << name;
  }
}

TEST(EngineSizing, TheKvPoolIsBf16OnlyOnAGpuInBf16Products) {
  const int64_t floats = 2 * 2 * 2 * 8;  // layers · (key + value) · kv heads · head_dim
  EngineSettings settings = with_context(0);
  ModelIdentity identity;
  EXPECT_EQ(size_engine(settings, kModel, identity, {}, 1).kv_bytes_per_token, floats * 4);
  identity.compute.kernel_dtype = KernelDType::BF16;  // the CPU keeps float32 K/V in bf16 products
  EXPECT_EQ(size_engine(settings, kModel, identity, {}, 1).kv_bytes_per_token, floats * 4);
  identity.compute.device = Device::Cuda;
  const EngineSizing bf16 = size_engine(settings, kModel, identity, {}, 1);
  EXPECT_EQ(bf16.kv_bytes_per_token, floats * 2);
  EXPECT_EQ(bf16.kv_element_bytes, 2);
  identity.compute.kernel_dtype = KernelDType::F32;  // the exact mode keeps float32 on the GPU
  EXPECT_EQ(size_engine(settings, kModel, identity, {}, 1).kv_bytes_per_token, floats * 4);
  // Latent attention's rows stay float32 in bf16 products: the GPU's latent kernels read them so.
  identity.compute.kernel_dtype = KernelDType::BF16;
  const ModelConfig deepseek = load_model_config(std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny");
  const EngineSizing latent = size_engine(settings, deepseek, identity, {}, 1);
  EXPECT_EQ(latent.kv_element_bytes, 4);
  EXPECT_EQ(latent.kv_bytes_per_token, 4 * (16 + 8) * 4);
}

// SGLang's meaning: weights and pool take the fraction; the pool is what the weights leave of it.
TEST(EngineSizing, TheMemoryFractionSizesThePoolFromWhatTheWeightsLeave) {
  const int64_t gib = int64_t{1} << 30;
  const DeviceMemoryUse h200{140 * gib, 60 * gib};
  EXPECT_EQ(kv_slots_for_memory_fraction(0.5, h200, 1024), 10 * gib / 1024);
  EXPECT_EQ(kv_slots_for_memory_fraction(1.0, h200, 98304), 80 * gib / 98304);
  for (const double bad : {0.0, -0.1, 1.5}) {
    try {
      kv_slots_for_memory_fraction(bad, h200, 1024);
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("must lie in (0, 1]"), std::string::npos) << e.what();
    }
  }
  try {
    kv_slots_for_memory_fraction(0.4, h200, 1024);
    ADD_FAILURE() << "a fraction below the weights was taken";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("56.00 GiB of the device's 140.00 GiB, but 60.00 GiB are in use"), std::string::npos)
        << message;
  }
}

TEST(EngineSizing, APoolGivenInSlotsOrOnTheCpuIsNotSizedByTheFraction) {
  const int64_t gib = int64_t{1} << 30;
  EngineSettings settings = with_context(0);
  ComputeSettings gpu;
  gpu.device = Device::Cuda;
  gpu.kernel_dtype = KernelDType::BF16;
  size_kv_pool_on_device(settings, kModel, gpu, DeviceMemoryUse{100 * gib, 10 * gib});
  EXPECT_EQ(settings.max_total_tokens, 4096);  // given
  settings.max_total_tokens = 0;
  size_kv_pool_on_device(settings, kModel, gpu, std::nullopt);  // the CPU: no device memory
  EXPECT_EQ(settings.max_total_tokens, 0);
  settings.mem_fraction_static = 0.25;
  size_kv_pool_on_device(settings, kModel, gpu, DeviceMemoryUse{100 * gib, 10 * gib});
  EXPECT_EQ(settings.max_total_tokens, 15 * gib / (2 * 2 * 2 * 8 * 2));
}

// A pool sized by a memory budget holds the draft's part of each slot too: a STANDALONE draft's KV
// rows, or a NEXTN module's row and the target's hidden state it drafts from.
TEST(EngineSizing, ABudgetInBytesCountsTheDraftsPartOfEachSlot) {
  const ModelConfig deepseek = load_model_config(std::string(MOE_TEST_DATA_DIR) + "/deepseek-v3-tiny");
  EngineSettings settings = with_context(0);
  settings.max_total_tokens = 0;
  const EngineSizing plain = size_engine(settings, deepseek, {}, {}, 1);
  // 4 latent layers of kv_lora_rank 16 + qk_rope_head_dim 8, float32.
  EXPECT_EQ(plain.kv_bytes_per_token, 4 * (16 + 8) * 4);
  EXPECT_EQ(plain.draft_bytes_per_token, 0);
  settings.kv_cache_memory_bytes = 1000 * (plain.kv_bytes_per_token + (16 + 8 + 64) * 4);
  settings.speculative_algorithm = "NEXTN";
  const EngineSizing nextn = size_engine(settings, deepseek, {}, {}, 1);
  EXPECT_EQ(nextn.draft_bytes_per_token, (16 + 8 + 64) * 4);  // its latent row and the hidden state (64)
  EXPECT_EQ(nextn.service.scheduler.max_total_tokens, 1000);

  settings = with_context(0);
  settings.max_total_tokens = 0;
  settings.kv_cache_memory_bytes = 2 * 2 * 2 * 8 * 4 * 100;  // 100 slots of kModel's rows alone
  settings.speculative_algorithm = "STANDALONE";
  settings.speculative_draft_model_path = std::string(MOE_TEST_DATA_DIR) + "/mixtral-tiny";
  const EngineSizing standalone = size_engine(settings, kModel, {}, {}, 1);
  const ModelConfig draft = load_model_config(settings.speculative_draft_model_path);
  EXPECT_EQ(standalone.draft_bytes_per_token, kv_bytes_per_token(draft, 4));
  EXPECT_EQ(standalone.service.scheduler.max_total_tokens,
            settings.kv_cache_memory_bytes / (standalone.kv_bytes_per_token + standalone.draft_bytes_per_token));
  EXPECT_LT(standalone.service.scheduler.max_total_tokens, 100);

  ComputeSettings gpu;  // the fraction's pool counts the draft's rows as well
  gpu.device = Device::Cuda;
  settings.mem_fraction_static = 0.5;
  const int64_t gib = int64_t{1} << 30;
  size_kv_pool_on_device(settings, kModel, gpu, DeviceMemoryUse{100 * gib, 10 * gib});
  EXPECT_EQ(settings.max_total_tokens, 40 * gib / (2 * 2 * 2 * 8 * 4 + kv_bytes_per_token(draft, 4)));
}

// An EAGLE-3 head keeps its one layer's K/V row and the hidden state it reads per slot, and the
// worker is told to load it as a head, with the head's fingerprint for the handshake.
TEST(EngineSizing, AnEagle3HeadsPartOfEachSlotAndItsWorkerSettings) {
  const std::string target_dir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";
  const ModelConfig target = load_model_config(target_dir);
  RandomEagle3HeadOptions options;
  options.draft_vocab_size = 512;
  const std::string head = testing::random_eagle3_head(target_dir, "sizing", options);
  EngineSettings settings = with_context(0);
  settings.max_total_tokens = 0;
  settings.speculative_algorithm = "EAGLE3";
  settings.speculative_draft_model_path = head;
  const EngineSizing sizing = size_engine(settings, target, {}, {}, 1);
  EXPECT_EQ(sizing.draft_bytes_per_token, (2 * 2 * 16 + 32) * 4);  // 2 KV heads of 16, K and V; H = 32
  EXPECT_TRUE(sizing.worker.eagle3);
  EXPECT_EQ(sizing.worker.draft_model_path, head);
  EXPECT_EQ(sizing.worker.settings.draft_fingerprint, model_fingerprint(head));
  EXPECT_EQ(sizing.worker.settings.speculative_algorithm, "EAGLE3");
  EXPECT_EQ(sizing.service.draft_routing.num_moe_layers, 0);  // the head has no routing
}

}  // namespace
}  // namespace moe
