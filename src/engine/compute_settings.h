#pragma once
// The flags that decide how a model worker computes (besides its weights and sizes): the device, the
// MoE runner, quantization and the GEMMs' products. Each changes the tokens or routing rows a worker
// gives for one input, so a worker and its scheduler must agree on them (serving/worker_settings.h).
#include <cstdint>

#include "model/model.h"
#include "moe/engine_options.h"
#include "moe/messages.h"
#include "scheduler/speculation.h"

namespace moe {

struct ComputeSettings {
  Device device = Device::Cpu;
  MoeBackend moe_backend = MoeBackend::Auto;
  Quantization quantization = Quantization::None;
  int64_t quantization_group_size = 128;
  KernelDType kernel_dtype = KernelDType::F32;
};

// The flags of `options`, parsed (an unknown name is a moe::Error naming the choices).
ComputeSettings compute_settings_of(const EngineOptions& options);

// Writes `compute` and `speculative` into `settings` under their resolved names: "auto" as the
// runner it picks, the draft's quantization as the one it loads with, the group size only where
// int4 quantizes at load, the tree's limits only with speculation on; so that two settings that
// compute alike compare equal.
void describe_computation(const ComputeSettings& compute, const SpeculativeConfig& speculative,
                          msg::WorkerSettings& settings);

}  // namespace moe
