#include "model/quantization.h"

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace moe {

Quantization parse_quantization(const std::string& name) {
  if (name.empty() || name == "none") return Quantization::None;
  if (name == "int8") return Quantization::Int8;
  if (name == "int4") return Quantization::Int4;
  throw Error("--quantization '" + name + "': expected none, int8 or int4");
}

const char* quantization_name(Quantization quantization) {
  switch (quantization) {
    case Quantization::None: return "none";
    case Quantization::Int8: return "int8";
    case Quantization::Int4: return "int4";
  }
  return "?";
}

std::optional<GptqConfig> read_gptq_config(const nlohmann::json& config, const std::string& path) {
  if (!config.contains("quantization_config") || config["quantization_config"].is_null()) return std::nullopt;
  const nlohmann::json& q = config["quantization_config"];
  const std::string where = path + ": quantization_config";
  if (!q.is_object()) throw Error(where + " is not an object");
  const std::string method = q.value("quant_method", std::string());
  if (method != "gptq")
    throw Error(where + ".quant_method '" + method + "' is not supported; supported: gptq (or --quantization int8|int4 on a bf16/f16/f32 checkpoint)");
  GptqConfig gptq;
  if (!q.contains("bits") || !q["bits"].is_number_integer()) throw Error(where + ".bits is missing or not an integer");
  gptq.bits = q["bits"].get<int>();
  if (gptq.bits != 4 && gptq.bits != 8)
    throw Error(where + ".bits " + std::to_string(gptq.bits) + " is not supported; supported: 4, 8");
  if (q.contains("group_size")) {
    if (!q["group_size"].is_number_integer()) throw Error(where + ".group_size is not an integer");
    gptq.group_size = q["group_size"].get<int64_t>();
    if (gptq.group_size == 0 || gptq.group_size < -1)
      throw Error(where + ".group_size " + std::to_string(gptq.group_size) + " is not a group size (-1 or positive)");
  }
  if (q.contains("sym") && !q.value("sym", true))
    throw Error(where + ".sym false (asymmetric zero points) is not supported; supported: sym true");
  if (q.value("desc_act", false))
    throw Error(where + ".desc_act true (act-order, groups permuted by g_idx) is not supported; supported: desc_act false");
  const std::string format = q.value("checkpoint_format", std::string("gptq"));
  if (format != "gptq" && format != "gptq_v2")
    throw Error(where + ".checkpoint_format '" + format + "' is not supported; supported: gptq, gptq_v2");
  gptq.zeros_stored_minus_one = format == "gptq";
  return gptq;
}

ProjectionFormat projection_format(const std::optional<GptqConfig>& gptq, Quantization at_load, int64_t group_size,
                                   KernelDType kernel_dtype) {
  if (gptq && at_load != Quantization::None)
    throw Error(std::string("--quantization ") + quantization_name(at_load) +
                " quantizes bf16/f16/f32 checkpoints at load; this checkpoint is GPTQ already (leave the flag out)");
  if (group_size <= 0) throw Error("--quantization-group-size must be positive, got " + std::to_string(group_size));
  if (kernel_dtype == KernelDType::BF16 && at_load != Quantization::None)
    throw Error(std::string("--kernel-dtype bf16 multiplies bf16 weights; it cannot run a model quantized by --quantization ") +
                quantization_name(at_load) + " (use one or the other)");
  if (kernel_dtype == KernelDType::BF16 && gptq)
    throw Error("--kernel-dtype bf16 multiplies bf16 weights; this checkpoint is GPTQ-quantized (leave the flag out)");
  if (kernel_dtype == KernelDType::Int8 && !gptq && at_load == Quantization::None)
    throw Error("--kernel-dtype int8 multiplies int8/int4 weights: add --quantization int8|int4, or load a GPTQ "
                "checkpoint");
  return {at_load, group_size, gptq, kernel_dtype};
}

}  // namespace moe
