#pragma once
// The settings handshake between a scheduler and a model worker in another process: both derive
// msg::WorkerSettings from their own flags and model directory, the worker reports its settings on
// every heartbeat, and the scheduler refuses a worker whose settings differ from its own before it
// sends it any step (a worker with fewer KV slots, no capture buffer, other weights or another way
// of computing would otherwise fail, or answer wrongly, only when a request arrives).
#include <cstdint>
#include <optional>
#include <string>

#include "moe/messages.h"

namespace moe {

// The weights being served: where they were loaded from and their label (SGLang's weight_version),
// which every reply carries. Weight updates change both.
struct ServingWeights {
  std::string model_path;
  std::string weight_version = "default";
  bool operator==(const ServingWeights&) const = default;
};

// How `worker` differs from what the scheduler expects: every setting that differs, each named with
// the worker's and the scheduler's values, joined by "; " (other weights also name the `serving`
// ones, which a worker must be started on); nothing when they match.
std::optional<std::string> settings_mismatch(const msg::WorkerSettings& expected, const msg::WorkerSettings& worker,
                                             const ServingWeights& serving);

}  // namespace moe
