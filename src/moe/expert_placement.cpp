#include "moe/expert_placement.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "common/error.h"
#include "common/json_file.h"

namespace moe {
namespace {

// E experts split into D equal groups, or a moe::Error saying why not.
int experts_per_device(int num_experts, int ep_size) {
  if (ep_size < 1) throw Error("expert-parallel size must be at least 1, got " + std::to_string(ep_size));
  if (num_experts < 1) throw Error("the number of experts must be at least 1, got " + std::to_string(num_experts));
  if (num_experts % ep_size != 0)
    throw Error(std::to_string(num_experts) + " experts cannot be split evenly over " + std::to_string(ep_size) +
                " expert-parallel devices");
  return num_experts / ep_size;
}

// Consecutive runs of `order`, E/D ids per device.
ExpertPlacement split_in_order(const std::vector<int32_t>& order, int ep_size) {
  const int per_device = experts_per_device(static_cast<int>(order.size()), ep_size);
  ExpertPlacement placement;
  placement.num_experts = static_cast<int>(order.size());
  for (int d = 0; d < ep_size; ++d)
    placement.device_expert_mapping.emplace_back(order.begin() + d * per_device, order.begin() + (d + 1) * per_device);
  return placement;
}

// The parsed file's [D][E/D] lists, checked to be a partition of 0..E-1 into equal groups.
std::vector<std::vector<int32_t>> read_mapping(const nlohmann::json& doc, const std::string& path, int num_experts) {
  auto fail = [&](const std::string& problem) { throw Error("expert placement file " + path + ": " + problem); };
  if (!doc.is_array() || doc.empty()) fail("expected a non-empty JSON array of per-device expert-id arrays");
  std::vector<std::vector<int32_t>> mapping;
  std::vector<int> owner(static_cast<size_t>(std::max(num_experts, 0)), -1);
  for (size_t d = 0; d < doc.size(); ++d) {
    const nlohmann::json& device = doc[d];
    if (!device.is_array()) fail("device " + std::to_string(d) + " is not an array of expert ids");
    if (device.size() != doc[0].size())
      fail("uneven split: device 0 has " + std::to_string(doc[0].size()) + " experts but device " +
           std::to_string(d) + " has " + std::to_string(device.size()));
    std::vector<int32_t>& ids = mapping.emplace_back();
    for (const nlohmann::json& id : device) {
      if (!id.is_number_integer()) fail("device " + std::to_string(d) + " holds " + id.dump() + ", not an expert id");
      const int64_t global = id.get<int64_t>();
      if (global < 0 || global >= num_experts)
        fail("expert " + std::to_string(global) + " on device " + std::to_string(d) + " is outside [0, " +
             std::to_string(num_experts) + ")");
      if (owner[global] != -1)
        fail("duplicate expert " + std::to_string(global) + " on devices " + std::to_string(owner[global]) +
             " and " + std::to_string(d));
      owner[global] = static_cast<int>(d);
      ids.push_back(static_cast<int32_t>(global));
    }
  }
  const size_t listed = doc.size() * doc[0].size();
  if (listed != static_cast<size_t>(num_experts)) {
    const auto missing = std::find(owner.begin(), owner.end(), -1) - owner.begin();
    fail("wrong count: lists " + std::to_string(listed) + " experts but the model has " +
         std::to_string(num_experts) + " (expert " + std::to_string(missing) + " is missing)");
  }
  return mapping;
}

}  // namespace

ExpertPlacement ExpertPlacement::uniform(int num_experts, int ep_size) {
  experts_per_device(num_experts, ep_size);
  std::vector<int32_t> order(static_cast<size_t>(num_experts));
  std::iota(order.begin(), order.end(), 0);
  return split_in_order(order, ep_size);
}

ExpertPlacement ExpertPlacement::random(int num_experts, int ep_size, uint64_t seed) {
  experts_per_device(num_experts, ep_size);
  std::vector<int32_t> order(static_cast<size_t>(num_experts));
  std::iota(order.begin(), order.end(), 0);
  // Fisher–Yates on mt19937_64 (its output is fixed by the standard, unlike std::shuffle's use of it),
  // so a seed gives the same placement with every standard library.
  std::mt19937_64 engine(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[engine() % i]);
  return split_in_order(order, ep_size);
}

std::vector<int32_t> ExpertPlacement::expert_owners() const {
  std::vector<int32_t> owner(static_cast<size_t>(num_experts), -1);
  for (int d = 0; d < ep_size(); ++d)
    for (int32_t global : device_expert_mapping[d]) owner.at(static_cast<size_t>(global)) = d;
  return owner;
}

ExpertPlacement ExpertPlacement::from_file(const std::string& path, int num_experts) {
  ExpertPlacement placement;
  placement.num_experts = num_experts;
  placement.device_expert_mapping = read_mapping(read_json_file(path), path, num_experts);
  experts_per_device(num_experts, placement.ep_size());
  return placement;
}

}  // namespace moe
