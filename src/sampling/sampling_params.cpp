#include "sampling/sampling_params.h"

#include <string>

#include "common/error.h"

namespace moe {
namespace {

// The message every range check shares: "<field> must be <range>, got <value>".
[[noreturn]] void reject(const char* field, const char* range, const std::string& value) {
  throw Error(std::string("sampling parameter ") + field + " must be " + range + ", got " + value);
}

}  // namespace

void validate(const msg::DrawSettings& params) {
  // Written as !(in range) so that NaN is rejected too.
  if (!(params.temperature >= 0.0f)) reject("temperature", ">= 0", std::to_string(params.temperature));
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) reject("top_p", "in (0, 1]", std::to_string(params.top_p));
  if (params.top_k < -1) reject("top_k", "-1 (off), 0 (off) or positive", std::to_string(params.top_k));
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f)) reject("min_p", "in [0, 1]", std::to_string(params.min_p));
}

}  // namespace moe
