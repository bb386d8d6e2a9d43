#pragma once
// How an internal socket (one between the processes of one deployment) authenticates its peers: with
// the context's internal key (Context::authenticate_internal_peers), over CURVE. Shared by the actors'
// sockets (AsyncSocket) and the ranks' collectives (collective::HostCommunicator).
#include <string>

namespace zmq {
class socket_t;
}

namespace moe::transport {

class Context;

// Before `socket` binds (`bound`) or connects to `endpoint`: when `context` has an internal key and the
// endpoint reaches another process (not inproc://), the socket speaks CURVE with that key, and a bound
// one accepts only peers holding it (the context's ZapHandler decides). Returns whether it does.
bool use_internal_key(Context& context, zmq::socket_t& socket, const std::string& endpoint, bool bound);

}  // namespace moe::transport
