#pragma once
// A checkpoint directory's identity, computed on any host that holds its files: what a model worker
// reports and its scheduler expects (serving/worker_settings.h), taken again when new weights are loaded.
#include <cstdint>
#include <string>

namespace moe {

// A model directory's identity, an XXH3 64-bit hash of: config.json's bytes; every weight file's
// name and size (*.safetensors and the shard index, its bytes too); each safetensors header (every
// tensor's name, dtype, shape and offsets); and samples of every tensor's bytes: its first and last
// 4 KiB and 4 KiB at every MiB between. Copies of one checkpoint on two hosts have the same one;
// checkpoints whose tensors differ in the sampled bytes have different ones. A successive training
// checkpoint changes most elements of every tensor, so the samples (0.4% of the bytes, plus 8 KiB a
// tensor) tell it apart; a change confined to unsampled bytes of a tensor is not seen.
uint64_t model_fingerprint(const std::string& model_dir);

// The identity of random weights made from model_dir's config.json alone with `seed`
// (--load-format dummy): config.json's bytes and the seed; no weight file is read.
uint64_t dummy_weights_fingerprint(const std::string& model_dir, uint64_t seed);

}  // namespace moe
