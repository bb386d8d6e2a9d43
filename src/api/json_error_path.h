#pragma once
// Where in a request body the JSON parser failed, as a field path ("sampling_params.temperature",
// "messages[2].content"), so that a body which is valid JSON text but holds a value the parser
// cannot represent (a number like 1e999) is refused naming the field.
#include <string>
#include <string_view>

namespace moe::api {

// The path of the value the parser was reading when it failed on `body`; "" when the failure is at
// the top level or `body` parses.
std::string json_error_path(std::string_view body);

}  // namespace moe::api
