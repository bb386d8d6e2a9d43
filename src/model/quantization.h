#pragma once
// How a checkpoint's projection matrices (attention q/k/v/o, experts and dense MLPs, lm_head) are
// held in memory: as stored (bf16/f16 tiled, f32 in place), quantized at load by
// `--quantization int8|int4`, or read from a Hugging Face GPTQ checkpoint (docs/quantization.md
// describes the tensors). Norms, routers and embeddings always stay in their checkpoint dtype.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "kernels/kernel_dtype.h"

namespace moe {

// What `--quantization` asks for.
enum class Quantization : uint8_t { None, Int8, Int4 };

// "none" (or "") | "int8" | "int4"; anything else is a moe::Error listing them.
Quantization parse_quantization(const std::string& name);
const char* quantization_name(Quantization quantization);

// A GPTQ checkpoint's quantization_config, as far as the loader needs it.
struct GptqConfig {
  int bits = 4;                    // 4 or 8
  int64_t group_size = 128;        // input columns per scale; -1: one group over every column
  bool zeros_stored_minus_one = true;  // checkpoint_format "gptq" (v1) stores zero - 1; "gptq_v2" the zero
};

// The GPTQ settings of a config.json object, none without a quantization_config. A quantization
// method or variant the loader does not read is a moe::Error naming it (and `path`).
std::optional<GptqConfig> read_gptq_config(const nlohmann::json& config, const std::string& path);

// What the checkpoint reader does with projection matrices (Checkpoint::projection).
struct ProjectionFormat {
  Quantization at_load = Quantization::None;
  int64_t group_size = 128;         // int4 at load: input columns per scale
  std::optional<GptqConfig> gptq;   // the checkpoint is GPTQ
  // The precision linear() multiplies bf16 matrices in; BF16 needs every matrix to be bf16.
  KernelDType kernel_dtype = KernelDType::F32;
};

// The format for a model of config.json's `gptq` served with `at_load` and `kernel_dtype`:
// quantizing at load is for float checkpoints, so asking for it on a GPTQ one is a moe::Error, as
// is bf16 products with either kind of quantization (they multiply bf16 weights, not integers).
ProjectionFormat projection_format(const std::optional<GptqConfig>& gptq, Quantization at_load, int64_t group_size,
                                   KernelDType kernel_dtype = KernelDType::F32);

}  // namespace moe
