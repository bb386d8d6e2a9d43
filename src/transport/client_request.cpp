#include "transport/client_protocol.h"

#include "common/error.h"
#include "transport/client_values.h"

namespace moe::transport {

msg::GenerateRequest parse_client_request(std::string_view frame) {
  const msgpack::object_handle handle = detail::unpack_frame(frame, "request");
  msg::GenerateRequest request;
  detail::read_client_map(handle.get(), request, detail::FieldPath{nullptr, "request"});
  const int prompts_given = int{request.text.has_value()} + int{request.input_ids.has_value()} +
                            int{request.messages.has_value()};
  if (prompts_given == 0) throw Error("request: needs `text` or `input_ids` (or chat `messages`)");
  if (prompts_given > 1) throw Error("request: give only one of `text`, `input_ids`, `messages`");
  return request;
}

std::string encode_client_request(const msg::GenerateRequest& request) {
  detail::StringSink sink;
  detail::Packer packer(sink);
  detail::write_client_map(packer, request);
  return std::move(sink.bytes);
}

}  // namespace moe::transport
