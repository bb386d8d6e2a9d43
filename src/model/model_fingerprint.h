#pragma once
// A checkpoint directory's identity, cheap to compute on any host: what a model worker reports and
// its scheduler expects (serving/worker_settings.h), taken again when new weights are loaded.
#include <cstdint>
#include <string>

namespace moe {

// A model directory's identity: config.json's bytes and the names and sizes of its weight files
// (*.safetensors and the shard index). Copies of one checkpoint on two hosts have the same one; so
// do two checkpoints of one shape whose weights differ (it reads no weight bytes).
uint64_t model_fingerprint(const std::string& model_dir);

}  // namespace moe
