#pragma once
// Which experts live on which of D expert-parallel devices: device_expert_mapping[d][local] = global.
#include <cstdint>
#include <string>
#include <vector>

namespace moe {

struct ExpertPlacement {
  int num_experts = 0;
  std::vector<std::vector<int32_t>> device_expert_mapping;  // [D][E/D]

  int ep_size() const { return static_cast<int>(device_expert_mapping.size()); }
  // owner[global] = the device holding that expert, [E]: which shard adds a routed pair.
  std::vector<int32_t> expert_owners() const;

  // Experts 0..E/D-1 on device 0, the next E/D on device 1, ...; E must divide by D.
  static ExpertPlacement uniform(int num_experts, int ep_size);
  // A seeded random permutation split evenly over D devices.
  static ExpertPlacement random(int num_experts, int ep_size, uint64_t seed);
  // A JSON file holding [[global ids of device 0], [device 1], ...]: every expert exactly once,
  // the same count per device; anything else is a moe::Error naming the file and the problem.
  static ExpertPlacement from_file(const std::string& path, int num_experts);
};

}  // namespace moe
