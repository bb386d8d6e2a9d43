// size_engine: the context length it resolves, a --context-length longer than the model was
// trained for, refused naming both numbers unless allowed, and the STANDALONE draft's
// quantization handed to the worker.
#include "engine/engine_sizing.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/error.h"

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

}  // namespace
}  // namespace moe
