#include "api/request_ids.h"

#include <cstdio>

namespace moe::api {

RequestIdGenerator::RequestIdGenerator() : random_(std::random_device{}()) {}

std::string RequestIdGenerator::next() {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(random_()),
                static_cast<unsigned long long>(random_()));
  return text;
}

}  // namespace moe::api
