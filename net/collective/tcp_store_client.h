#pragma once
// A client of torch.distributed's TCPStore, the key-value store behind an `init_method` of
// tcp://MASTER_ADDRESS:MASTER_PORT: the trainer's rank 0 serves it, every other rank connects and
// reads what rank 0 wrote (ProcessGroupNCCL hands NCCL's unique id to the ranks through it). Speaks
// the wire protocol of torch 2.x's TCPStore as read from its source (c10d's TCPStore.cpp and
// TCPStoreBackend.hpp): one connection; each query is a one-byte query type followed by its
// arguments, a string or byte vector as a 64-bit length then its bytes, integers in the host's byte
// order (torch writes them raw; both ends are little-endian x86 or ARM hosts in practice). On
// connecting a client sends VALIDATE with torch's magic number. Blocking calls; every wait is
// bounded by the timeout (a moe::Error naming the keys). Compatibility with a real torch server is
// untested here (no torch 2.x on the build machines): tests/collective checks it against a server
// written from the same description.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace moe::collective {

class TcpStoreClient {
 public:
  // Connects to host:port, retrying until `timeout` (the trainer may open its store after the
  // engine is asked to join), and validates. A moe::Error names the address when it cannot.
  TcpStoreClient(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;
  ~TcpStoreClient();

  void set(const std::string& key, const std::vector<uint8_t>& value);
  // Waits for the key (as torch's get does), then reads it.
  std::vector<uint8_t> get(const std::string& key);
  // Adds `delta` to the key's value (a decimal number; absent counts as 0); returns the sum.
  int64_t add(const std::string& key, int64_t delta);
  // Whether every key is set, without waiting.
  bool check(const std::vector<std::string>& keys);
  // Until every key is set; past the timeout the wait is cancelled and a moe::Error names the keys.
  void wait(const std::vector<std::string>& keys);

 private:
  void send_all(const std::string& bytes);
  void receive_all(void* out, size_t bytes);
  template <class T>
  T receive_value() {
    T value{};
    receive_all(&value, sizeof(T));
    return value;
  }
  std::vector<uint8_t> receive_bytes();
  // Whether a byte arrives within the timeout.
  bool readable_within(std::chrono::milliseconds timeout);

  int socket_ = -1;
  std::chrono::milliseconds timeout_;
  std::string address_;  // host:port, for errors
};

}  // namespace moe::collective
