#include "transport/zmq_context.h"

#include <zmq.hpp>

namespace moe::transport {

Context::Context(int io_threads) : context_(std::make_unique<zmq::context_t>(io_threads)) {}

// Terminating the context waits for its sockets to close (each closes with linger 0, see SocketOptions).
Context::~Context() = default;

}  // namespace moe::transport
