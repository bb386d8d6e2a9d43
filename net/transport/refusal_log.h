#pragma once
// Logs refused connections without flooding: a peer refused at its handshake retries every tenth
// of a second (ZeroMQ reconnects by itself), so after one line a refusal is logged at most every
// few seconds, with how many were not logged meanwhile.
#include <chrono>
#include <string>

namespace moe::transport {

class RefusalLog {
 public:
  // Logs `what` (a warning) unless a refusal was logged less than the interval ago.
  void refused(const std::string& what);

 private:
  std::chrono::steady_clock::time_point last_logged_{};
  bool logged_any_ = false;
  uint64_t unlogged_ = 0;
};

}  // namespace moe::transport
