#pragma once
// The concrete MoeRunner backends behind MoeRunner::create, one .cpp each.
#include <memory>

#include "moe/moe_runner.h"

namespace moe {

// The oracle: for every token, its k experts one after another with float32 dot products.
std::unique_ptr<MoeRunner> make_reference_moe_runner();
// The three expert-parallel ops on each of the placement's D devices, then the all-reduce.
std::unique_ptr<MoeRunner> make_grouped_moe_runner(const ExpertPlacement& placement);

}  // namespace moe
