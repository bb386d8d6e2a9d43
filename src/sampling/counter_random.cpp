#include "sampling/counter_random.h"

namespace moe {
namespace {

// splitmix64's finaliser: a bijection on 64 bits whose output bits each depend on every input bit.
uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

double counter_uniform(uint64_t seed, uint64_t counter) {
  // Mixing the seed first keeps nearby seeds' streams unrelated; the top 53 bits fill the mantissa.
  const uint64_t bits = mix64(mix64(seed) ^ counter);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace moe
