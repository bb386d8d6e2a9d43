#pragma once
// Stateless randomness: a draw is a pure function of (seed, counter), so a request that is preempted
// and recomputed draws the same numbers and the worker keeps no generator state between steps.
#include <cstdint>

namespace moe {

// A uniform double in [0, 1) for draw number `counter` of the stream named by `seed`.
double counter_uniform(uint64_t seed, uint64_t counter);

}  // namespace moe
