#include "transport/internal_socket_auth.h"

#include <zmq.hpp>

#include "common/error.h"
#include "transport/zmq_context.h"

namespace moe::transport {

bool use_internal_key(Context& context, zmq::socket_t& socket, const std::string& endpoint, bool bound) {
  const InternalKey* key = context.internal_key();
  if (key == nullptr || endpoint.rfind("inproc://", 0) == 0) return false;
  // The key goes in as 40 Z85 characters and their NUL.
  auto set_key = [&socket](int option, const std::string& z85) {
    if (zmq_setsockopt(socket.handle(), option, z85.c_str(), z85.size() + 1) != 0)
      throw Error(std::string("cannot set a CURVE key: ") + zmq_strerror(zmq_errno()));
  };
  if (!bound) {
    set_key(ZMQ_CURVE_SERVERKEY, key->public_key);
    set_key(ZMQ_CURVE_PUBLICKEY, key->public_key);
    set_key(ZMQ_CURVE_SECRETKEY, key->secret_key);
    return true;
  }
  socket.set(zmq::sockopt::curve_server, true);
  set_key(ZMQ_CURVE_SECRETKEY, key->secret_key);
  socket.set(zmq::sockopt::zap_domain, "moe-internal");  // every handshake asks the ZapHandler
  return true;
}

}  // namespace moe::transport
