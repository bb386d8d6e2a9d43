#include "frontend/request_ids.h"

#include <cstdio>
#include <random>

namespace moe {

std::string new_request_id() {
  // std::random_device reads the kernel's random source on Linux: not a seeded generator whose
  // state a client could recover from the ids it sees.
  thread_local std::random_device random;
  char text[33];
  std::snprintf(text, sizeof text, "%08x%08x%08x%08x", random(), random(), random(), random());
  return text;
}

}  // namespace moe
