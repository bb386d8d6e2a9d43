// The ZeroMQ client protocol: each frame is read as a client's request (what the server parses) and
// as a server's reply (what moe::Client parses). Either gives a value or the documented moe::Error;
// a parsed request encodes into a frame that parses back into the same encoding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.h"
#include "transport/client_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::transport;
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  try {
    const ClientRequest request = parse_client_request(frame);
    const auto encode = [](const ClientRequest& r) {
      return std::visit([](const auto& value) { return encode_client_request(value); }, r);
    };
    const std::string encoded = encode(request);
    if (encode(parse_client_request(encoded)) != encoded) std::abort();
  } catch (const ClientRequestError&) {
  }
  try {
    decode_client_reply(frame);
  } catch (const moe::Error&) {
  }
  return 0;
}
