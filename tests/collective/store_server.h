#pragma once
// A TCPStore server written here from the protocol's description (torch's c10d TCPStore.cpp and
// TCPStoreBackend.hpp, read, not copied): query bytes, lengths and answers as torch 2.x puts them on
// the wire, for the tests of the clients of a trainer's store. No torch server is available here, so
// compatibility with real torch is checked only as far as this description is right.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moe::collective::test {

using namespace std::chrono_literals;

// A TCPStore server on 127.0.0.1: a thread per connection, the keys in one map.
class StoreServer {
 public:
  StoreServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t length = sizeof(address);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~StoreServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    if (acceptor_.joinable()) acceptor_.join();
    for (std::thread& t : connections_) t.join();
  }
  uint16_t port() const { return port_; }
  void start() {
    ::listen(listener_, 8);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) return;
        connections_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  void put(const std::string& key, const std::string& value) {
    std::lock_guard lock(mutex_);
    store_[key] = std::vector<uint8_t>(value.begin(), value.end());
    changed_.notify_all();
  }
  // The value under `key`, or none.
  std::optional<std::string> value(const std::string& key) {
    std::lock_guard lock(mutex_);
    const auto it = store_.find(key);
    if (it == store_.end()) return std::nullopt;
    return std::string(it->second.begin(), it->second.end());
  }
  // Every query's bytes as received, in order (the first connection's).
  std::vector<uint8_t> first_connection_bytes() {
    std::lock_guard lock(mutex_);
    return recorded_;
  }
  bool validated() const { return validated_; }

 private:
  // Reads exactly `n` bytes; false when the peer closed.
  bool read(int fd, void* out, size_t n, bool record) {
    auto* p = static_cast<uint8_t*>(out);
    for (size_t got = 0; got < n;) {
      const ssize_t r = ::recv(fd, p + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    if (record) {
      std::lock_guard lock(mutex_);
      recorded_.insert(recorded_.end(), p, p + n);
    }
    return true;
  }
  template <class T>
  void write(int fd, T value) {
    ::send(fd, &value, sizeof(T), MSG_NOSIGNAL);
  }
  bool read_string(int fd, std::string& out, bool record) {
    uint64_t size = 0;
    if (!read(fd, &size, 8, record)) return false;
    out.resize(size);
    return read(fd, out.data(), size, record);
  }
  bool read_keys(int fd, std::vector<std::string>& keys, bool record) {
    uint64_t count = 0;
    if (!read(fd, &count, 8, record)) return false;
    keys.resize(count);
    for (std::string& key : keys)
      if (!read_string(fd, key, record)) return false;
    return true;
  }
  bool all_set(const std::vector<std::string>& keys) {
    for (const std::string& key : keys)
      if (!store_.count(key)) return false;
    return true;
  }

  void serve(int fd) {
    const bool record = connections_seen_++ == 0;
    uint8_t query = 0;
    while (read(fd, &query, 1, record)) {
      std::string key, value;
      std::vector<std::string> keys;
      if (query == 0) {  // VALIDATE
        uint32_t magic = 0;
        if (!read(fd, &magic, 4, record)) break;
        validated_ = magic == 0x3C85F7CE;
      } else if (query == 1) {  // SET
        if (!read_string(fd, key, record) || !read_string(fd, value, record)) break;
        put(key, value);
      } else if (query == 3) {  // GET
        if (!read_string(fd, key, record)) break;
        std::lock_guard lock(mutex_);
        const std::vector<uint8_t>& v = store_.at(key);
        write<uint64_t>(fd, v.size());
        ::send(fd, v.data(), v.size(), MSG_NOSIGNAL);
      } else if (query == 4) {  // ADD
        int64_t delta = 0;
        if (!read_string(fd, key, record) || !read(fd, &delta, 8, record)) break;
        std::lock_guard lock(mutex_);
        auto& v = store_[key];
        const int64_t sum = (v.empty() ? 0 : std::stoll(std::string(v.begin(), v.end()))) + delta;
        const std::string text = std::to_string(sum);
        v.assign(text.begin(), text.end());
        write<int64_t>(fd, sum);
        changed_.notify_all();
      } else if (query == 5) {  // CHECK
        if (!read_keys(fd, keys, record)) break;
        std::lock_guard lock(mutex_);
        write<uint8_t>(fd, all_set(keys) ? 0 : 1);
      } else if (query == 6) {  // WAIT: answered once every key is set, or cancelled by the client
        if (!read_keys(fd, keys, record)) break;
        for (;;) {
          {
            std::unique_lock lock(mutex_);
            if (changed_.wait_for(lock, 20ms, [&] { return all_set(keys); })) {
              write<uint8_t>(fd, 0);  // STOP_WAITING
              break;
            }
          }
          pollfd p{fd, POLLIN, 0};
          if (::poll(&p, 1, 0) > 0) {
            if (!read(fd, &query, 1, record) || query != 12) return (void)::close(fd);  // CANCEL_WAIT
            write<uint8_t>(fd, 1);  // WAIT_CANCELED
            break;
          }
          if (stopping_) return (void)::close(fd);
        }
      } else {
        break;  // an unknown query: torch's server drops the connection too
      }
    }
    ::close(fd);
  }

  int listener_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> connections_;
  std::atomic<int> connections_seen_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> validated_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<uint8_t>> store_;
  std::vector<uint8_t> recorded_;
};

}  // namespace moe::collective::test
