#include "transport/peer_connections.h"

namespace moe::transport {

void PeerConnections::accepted(int fd) {
  open_[fd] = ++last_connection_;
  closed_.erase(fd);
}

std::vector<std::string> PeerConnections::closed(int fd) {
  std::vector<std::string> gone;
  closed_.insert(fd);
  const auto it = open_.find(fd);
  if (it == open_.end()) return gone;
  const uint64_t connection = it->second;
  open_.erase(it);
  for (auto peer = peers_.begin(); peer != peers_.end();) {
    if (peer->second == connection) {
      gone.push_back(peer->first);
      peer = peers_.erase(peer);
    } else {
      ++peer;
    }
  }
  return gone;
}

bool PeerConnections::heard_from(const std::string& identity, int fd) {
  if (fd < 0) return true;  // inproc: no descriptor, no events (both ends live in this process)
  if (closed_.count(fd)) {
    peers_.erase(identity);
    return false;
  }
  // A descriptor no event named yet was accepted before the monitor started: open.
  auto [it, unseen] = open_.try_emplace(fd, 0);
  if (unseen) it->second = ++last_connection_;
  peers_[identity] = it->second;
  return true;
}

}  // namespace moe::transport
