#include "engine/compute_settings.h"

#include "worker/load_model_on_device.h"

namespace moe {
namespace {

const char* moe_backend_in_effect(const ComputeSettings& compute) {
  if (compute.device == Device::Cuda) return "cuda";  // the only runner there
  return compute.moe_backend == MoeBackend::Reference ? "reference" : "grouped";
}

const char* algorithm_name(SpeculativeAlgorithm algorithm) {
  switch (algorithm) {
    case SpeculativeAlgorithm::None: return "";
    case SpeculativeAlgorithm::Ngram: return "NGRAM";
    case SpeculativeAlgorithm::Standalone: return "STANDALONE";
    case SpeculativeAlgorithm::Nextn: return "NEXTN";
    case SpeculativeAlgorithm::Eagle3: return "EAGLE3";
  }
  return "?";
}

}  // namespace

// The flags are parsed where the model's options are, so the worker computes with what it describes.
ComputeSettings compute_settings_of(const EngineOptions& options) {
  const ModelOptions model = model_options(options);
  return {model.device, model.moe_backend, model.quantization, model.quantization_group_size, model.kernel_dtype};
}

void describe_computation(const ComputeSettings& compute, const SpeculativeConfig& speculative,
                          msg::WorkerSettings& settings) {
  settings.device = compute.device == Device::Cuda ? "cuda" : "cpu";
  settings.moe_backend = moe_backend_in_effect(compute);
  settings.quantization = quantization_name(compute.quantization);
  settings.kernel_dtype = kernel_dtype_name(compute.kernel_dtype);
  const bool standalone = speculative.algorithm == SpeculativeAlgorithm::Standalone;
  const Quantization draft = speculative.draft_quantization.value_or(compute.quantization);
  const bool int4_at_load = compute.quantization == Quantization::Int4 || (standalone && draft == Quantization::Int4);
  settings.quantization_group_size = int4_at_load ? compute.quantization_group_size : 0;
  settings.draft_quantization = standalone ? quantization_name(draft) : "";
  settings.speculative_algorithm = algorithm_name(speculative.algorithm);
  if (!speculative.enabled()) return;
  settings.speculative_num_steps = speculative.num_steps;
  settings.speculative_eagle_topk = speculative.eagle_topk;
  settings.speculative_num_draft_tokens = speculative.num_draft_tokens;
  settings.max_tree_experts = speculative.max_tree_experts;
}

}  // namespace moe
