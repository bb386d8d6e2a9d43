#include "common/weight_group_call.h"

#include <set>

namespace moe {
namespace {

// The most dimensions a weight's shape may have (a fused expert tensor has three).
constexpr size_t kMostDimensions = 8;

std::optional<WeightGroupCallProblem> check_join(const msg::WeightGroupCall& call) {
  if (call.master_address.empty()) return WeightGroupCallProblem{"master_address", "is required"};
  if (call.master_port < 1 || call.master_port > 65535)
    return WeightGroupCallProblem{"master_port", "must be a port in 1..65535"};
  if (call.world_size < 2)
    return WeightGroupCallProblem{"world_size", "must be at least 2: the trainer's rank 0 and this engine"};
  if (call.rank_offset < 1 || call.rank_offset >= call.world_size)
    return WeightGroupCallProblem{"rank_offset", "must be in 1..world_size-1 (rank 0 is the trainer's); got " +
                                                     std::to_string(call.rank_offset)};
  return std::nullopt;
}

std::optional<WeightGroupCallProblem> check_receive(const msg::WeightGroupCall& call) {
  if (call.names.empty()) return WeightGroupCallProblem{"names", "must name at least one tensor"};
  if (call.dtypes.size() != call.names.size())
    return WeightGroupCallProblem{"dtypes", "must give one dtype per name (" + std::to_string(call.names.size()) +
                                                ")"};
  if (call.shapes.size() != call.names.size())
    return WeightGroupCallProblem{"shapes", "must give one shape per name (" + std::to_string(call.names.size()) +
                                                ")"};
  std::set<std::string_view> seen;
  for (size_t i = 0; i < call.names.size(); ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    if (call.names[i].empty()) return WeightGroupCallProblem{"names" + at, "must not be empty"};
    if (!seen.insert(call.names[i]).second)
      return WeightGroupCallProblem{"names" + at, "names \"" + call.names[i] + "\" a second time"};
    if (!weight_dtype_name(call.dtypes[i]))
      return WeightGroupCallProblem{"dtypes" + at, "must be one of bfloat16, float16, float32 (torch's names); got \"" +
                                                       call.dtypes[i] + "\""};
    if (call.shapes[i].size() > kMostDimensions)
      return WeightGroupCallProblem{"shapes" + at, "has more than " + std::to_string(kMostDimensions) + " dimensions"};
    for (int64_t size : call.shapes[i])
      if (size < 0) return WeightGroupCallProblem{"shapes" + at, "must not hold a negative size"};
  }
  return std::nullopt;
}

}  // namespace

msg::UpdateWeights weight_group_update(msg::WeightGroupAction action) {
  msg::UpdateWeights update;
  update.group.action = action;
  update.group.group_name = std::string(kDefaultWeightGroupName);
  return update;
}

std::optional<WeightGroupCallProblem> check_weight_group_call(const msg::WeightGroupCall& call) {
  if (call.group_name.empty()) return WeightGroupCallProblem{"group_name", "must not be empty"};
  switch (call.action) {
    case msg::WeightGroupAction::Join: return check_join(call);
    case msg::WeightGroupAction::Receive: return check_receive(call);
    case msg::WeightGroupAction::None:
    case msg::WeightGroupAction::Leave: break;
  }
  return std::nullopt;
}

std::optional<std::string> weight_dtype_name(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  if (name == "bfloat16") return "bfloat16";
  if (name == "float16" || name == "half") return "float16";
  if (name == "float32" || name == "float") return "float32";
  return std::nullopt;
}

}  // namespace moe
