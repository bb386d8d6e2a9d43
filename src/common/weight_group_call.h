#pragma once
// The checks of a weight-group call (msg::WeightGroupCall: SGLang's /init_weights_update_group,
// /update_weights_from_distributed, /destroy_weights_update_group), made alike by the HTTP and
// ZeroMQ parsers before the call reaches the engine, and the torch dtype names a received tensor
// may have.
#include <optional>
#include <string>
#include <string_view>

#include "moe/messages.h"

namespace moe {

// SGLang's group name when a call gives none.
inline constexpr std::string_view kDefaultWeightGroupName = "weight_update_group";

// An update that makes the group call `action` on SGLang's default group, its fields to be filled.
msg::UpdateWeights weight_group_update(msg::WeightGroupAction action);

// What is wrong with a call: the field (SGLang's name; "shapes[2]" for an element) and why.
struct WeightGroupCallProblem {
  std::string field;
  std::string why;
};

// The first problem of `call` for its action, or none: the group is named; a Join names the store
// (an address, a port in 1..65535) and a rank in 1..world_size-1 (rank 0 is the trainer's); a
// Receive names each tensor once, with one dtype of weight_dtype_name's and one shape of
// non-negative sizes per name.
std::optional<WeightGroupCallProblem> check_weight_group_call(const msg::WeightGroupCall& call);

// torch's name of a floating-point dtype, as trainers send it ("bfloat16", also "torch.bfloat16"
// and the aliases "half" and "float"), made canonical: "bfloat16", "float16" or "float32"; none
// for any other name.
std::optional<std::string> weight_dtype_name(std::string_view name);

}  // namespace moe
