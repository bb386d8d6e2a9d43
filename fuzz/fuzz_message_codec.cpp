// The internal message codec (one ZeroMQ frame between the actors, possibly from another host): a
// frame decodes into a message or throws moe::Error, and a decoded message encodes into a frame that
// decodes and encodes to the same bytes (bytes, not messages, are compared: a NaN float is not
// equal to itself).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.h"
#include "transport/message_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  moe::msg::Message message;
  try {
    message = moe::transport::decode_message(frame);
  } catch (const moe::Error&) {
    return 0;
  }
  const std::string encoded = moe::transport::encode_message(message);
  if (moe::transport::encode_message(moe::transport::decode_message(encoded)) != encoded) std::abort();
  return 0;
}
