#pragma once
// Which server a moe-bench configuration talks to and how: the endpoint's scheme picks the
// transport (tcp:// or ipc:// -> ZeroMQ, http:// -> HTTP).
#include <memory>
#include <string>

#include "serving/bench_transport.h"
#include "serving/http_api.h"

namespace moe::bench {

struct ServerTarget {
  std::string endpoint = "tcp://127.0.0.1:30001";  // moe-serve's --zmq-endpoint, or http://HOST:PORT
  HttpApi api = HttpApi::Generate;                 // for an http:// endpoint
};

// The transport for `target`; an endpoint of another scheme is a moe::Error.
std::unique_ptr<StreamingTransport> make_transport(const ServerTarget& target);

}  // namespace moe::bench
