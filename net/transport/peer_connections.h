#pragma once
// Which connection each ROUTER peer spoke on, so that a client whose connection closes is known to
// be gone at once rather than when its reply bounces (a client waiting for a long non-streamed reply
// that disconnects would otherwise keep its request, and its KV slots, to the end). ZeroMQ tells a
// socket's monitor that a connection (a file descriptor) was accepted or closed, and tells each
// received message its descriptor; descriptors are reused, so connections are numbered in event
// order. Feed it the monitor's events before the message they precede.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace moe::transport {

class PeerConnections {
 public:
  void accepted(int fd);
  // The identities of the peers that spoke on fd's connection, now gone.
  std::vector<std::string> closed(int fd);
  // A message from `identity` arrived on fd: false when that connection has closed already (the
  // peer is gone; nothing more will tell). A negative fd (inproc) is never tracked; an fd no event
  // named counts as open (accepted before the monitor started).
  bool heard_from(const std::string& identity, int fd);

 private:
  uint64_t last_connection_ = 0;
  std::map<int, uint64_t> open_;           // fd -> connection number
  std::map<std::string, uint64_t> peers_;  // identity -> connection number
  std::set<int> closed_;                   // fds whose last event was their connection's closing
};

}  // namespace moe::transport
