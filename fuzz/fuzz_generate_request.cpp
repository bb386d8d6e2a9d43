// SGLang's /generate body, as the HTTP front receives it: any bytes parse into a GenerationCall or
// are refused with an ApiError (a 4xx naming the field). Any other exception would reach the client
// as a 500 for its own mistake, so it is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/generation_call.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    moe::api::parse_generate(moe::api::parse_json_body(body));
  } catch (const moe::api::ApiError&) {
  }
  return 0;
}
