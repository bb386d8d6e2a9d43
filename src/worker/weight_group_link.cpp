#include "worker/weight_group_link.h"

namespace moe {
namespace {

WeightGroupJoiner registered_joiner = nullptr;

}  // namespace

void register_weight_group_joiner(WeightGroupJoiner joiner) { registered_joiner = joiner; }

WeightGroupJoiner weight_group_joiner() { return registered_joiner; }

}  // namespace moe
