#include "worker/load_model_on_device.h"

#include "common/error.h"
#include "model/model_config.h"
#include "scheduler/speculation.h"

namespace moe {
namespace {

CudaModelLoader cuda_model_loader = nullptr;  // constant-initialized: set by registrations before main

}  // namespace

void register_cuda_model_loader(CudaModelLoader loader) { cuda_model_loader = loader; }

std::unique_ptr<Model> load_model_on_device(const std::string& model_dir, const ModelOptions& options) {
  if (options.device == Device::Cpu) return Model::load(model_dir, options);
  if (options.nextn)
    throw Error("--speculative-algorithm NEXTN runs on the CPU model only (--device cpu): the GPU model has no "
                "next-token-prediction layer yet; serve with --device cuda and --speculative-algorithm NGRAM or "
                "STANDALONE, or on the CPU");
  if (options.expert_group)
    throw Error("expert-parallel ranks in processes of their own run on the CPU (--device cpu); on one GPU "
                "--ep-size runs the shards in turn in one process");
  // The CUDA backend reads bf16/f16/f32 weights only.
  if (options.kernel_dtype == KernelDType::Int8)
    throw Error("--kernel-dtype int8 multiplies int8/int4 weights, which run on the CPU only (--device cpu)");
  if (options.quantization != Quantization::None)
    throw Error("--quantization runs on the CPU only (--device cpu); the CUDA backend reads bf16/f16/f32 weights");
  if (load_model_config(model_dir).gptq)
    throw Error(model_dir + " is a GPTQ checkpoint, which runs on the CPU only (--device cpu)");
  if (!cuda_model_loader)
    throw Error("this program has no CUDA backend: configure with -DMOE_CUDA=ON on a machine with nvcc (an "
                "embedding program links moe::engine_cuda instead of moe::engine)");
  return cuda_model_loader(model_dir, options);
}

ModelOptions model_options(const EngineOptions& options) {
  ModelOptions mo;
  mo.device = parse_device(options.device);
  mo.cuda_graphs = !options.disable_cuda_graph;
  mo.moe_backend = parse_moe_backend(options.moe_runner_backend);
  mo.ep_size = options.ep_size;
  mo.expert_placement_file = options.expert_placement;
  mo.quantization = parse_quantization(options.quantization);
  mo.quantization_group_size = options.quantization_group_size;
  mo.kernel_dtype = parse_kernel_dtype(options.kernel_dtype);
  const SpeculativeAlgorithm algorithm = parse_speculative_algorithm(options.speculative_algorithm);
  mo.nextn = algorithm == SpeculativeAlgorithm::Nextn;
  if (algorithm == SpeculativeAlgorithm::Eagle3 && mo.device != Device::Cpu)
    throw Error("--speculative-algorithm EAGLE3 runs on the CPU model only (--device cpu): the GPU model does not "
                "return its layers' hidden states yet; serve with --device cuda and NGRAM or STANDALONE, or on the CPU");
  if (options.load_format == "dummy")
    mo.dummy_weights_seed = options.dummy_seed;
  else if (options.load_format != "auto")
    throw Error("--load-format must be auto (the checkpoint's files) or dummy (random weights from config.json), got '" +
                options.load_format + "'");
  return mo;
}

}  // namespace moe
