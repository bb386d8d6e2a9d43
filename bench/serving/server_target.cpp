#include "serving/server_target.h"

#include "common/error.h"
#include "serving/http_transport.h"
#include "serving/zmq_transport.h"

namespace moe::bench {

std::unique_ptr<StreamingTransport> make_transport(const ServerTarget& target) {
  const auto has_scheme = [&](const char* scheme) { return target.endpoint.rfind(scheme, 0) == 0; };
  if (has_scheme("http://")) return make_http_transport(parse_http_url(target.endpoint), target.api);
  if (has_scheme("tcp://") || has_scheme("ipc://")) return make_zmq_transport(target.endpoint);
  throw Error("moe-bench: the endpoint \"" + target.endpoint +
              "\" is neither ZeroMQ (tcp://, ipc://) nor HTTP (http://)");
}

}  // namespace moe::bench
