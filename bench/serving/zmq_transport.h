#pragma once
// moe-bench over moe-serve's ZeroMQ client protocol (docs/zmq-protocol.md): one DEALER socket,
// streamed msgpack requests told apart by their rid.
#include <memory>
#include <string>

#include "serving/bench_transport.h"

namespace moe::bench {

// A transport connected to `endpoint` (tcp:// or ipc://, moe-serve's --zmq-endpoint).
std::unique_ptr<StreamingTransport> make_zmq_transport(const std::string& endpoint);

}  // namespace moe::bench
