#pragma once
// The settings handshake between a scheduler and a model worker in another process: both derive
// msg::WorkerSettings from their own flags and model directory, the worker reports its settings on
// every heartbeat, and the scheduler refuses a worker whose settings differ from its own before it
// sends it any step (a worker with fewer KV slots, no capture buffer or another model would
// otherwise fail, or answer wrongly, only when a request arrives).
#include <cstdint>
#include <optional>
#include <string>

#include "moe/messages.h"

namespace moe {

// How `worker` differs from what the scheduler expects, naming the first setting that differs
// and both values; nothing when they match.
std::optional<std::string> settings_mismatch(const msg::WorkerSettings& expected, const msg::WorkerSettings& worker);

}  // namespace moe
