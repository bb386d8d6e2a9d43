#pragma once
// The one place request ids are minted, for requests that bring none (SGLang's rid is optional,
// OpenAI has none): the server needs one to route outputs and to abort a request whose client went
// away. Ids are 128 bits from the operating system's random source, so no client can guess another
// client's id and cancel its request.
#include <string>

namespace moe {

// 32 lowercase hex digits (128 random bits), as SGLang's uuid4().hex.
std::string new_request_id();

}  // namespace moe
