// A model's config.json: load_model_config gives a config whose sizes are all in range, or a
// moe::Error naming the field (never a crash, SIGFPE or a silent fallback). The largest products the
// engine derives from an accepted config (KV bytes per token, an expert's weight bytes) must fit in
// 64 bits: the bounds the config is checked against are there to guarantee it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/error.h"
#include "fuzz_support.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moe::fuzz::write_input("config.json", data, size);
  try {
    const moe::ModelConfig c = moe::load_model_config(moe::fuzz::scratch_directory().string());
    if (c.num_key_value_heads < 1 || c.num_attention_heads % c.num_key_value_heads != 0) std::abort();
    if (c.num_experts_per_tok < 1 || c.num_experts_per_tok > c.num_experts) std::abort();
    for (int layer : c.moe_layer_ids)
      if (layer < 0 || layer >= c.num_hidden_layers) std::abort();
    int64_t product = 0;
    if (__builtin_mul_overflow(int64_t{8} * c.num_hidden_layers, int64_t{c.num_key_value_heads} * c.head_dim, &product) ||
        __builtin_mul_overflow(int64_t{4} * c.num_experts * c.moe_intermediate_size, c.hidden_size, &product))
      std::abort();
  } catch (const moe::Error&) {
  }
  return 0;
}
