#pragma once
// Internal messages on the wire. One ZeroMQ frame = the msgpack array [version, kind, body], where
// body is the struct's fields as an array (order in message_fields.h), numeric vectors are
// little-endian bin, optionals are nil when absent. Documented in docs/zmq-protocol.md.
#include <string>
#include <string_view>

#include "moe/messages.h"

namespace moe::transport {

// Serialises a message into one frame.
std::string encode_message(const msg::Message& message);

// Parses one frame. A frame that is not msgpack, of another protocol version, of an unknown kind,
// or whose body does not fit its kind throws moe::Error naming the problem (and the field);
// nothing else escapes, so a caller can log the error and carry on.
msg::Message decode_message(std::string_view frame);

}  // namespace moe::transport
