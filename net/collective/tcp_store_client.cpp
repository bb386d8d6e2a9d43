#include "collective/tcp_store_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace moe::collective {
namespace {

// TCPStore's query types, by their wire values (c10d::detail::QueryType).
enum class Query : uint8_t { Validate = 0, Set = 1, Get = 3, Add = 4, Check = 5, Wait = 6, CancelWait = 12 };
// Its answers to CHECK and WAIT.
constexpr uint8_t kReady = 0;          // CheckResponseType::READY
constexpr uint8_t kStopWaiting = 0;    // WaitResponseType::STOP_WAITING
constexpr uint8_t kWaitCanceled = 1;   // WaitResponseType::WAIT_CANCELED
// What a client sends after VALIDATE, so the server knows it speaks the protocol.
constexpr uint32_t kValidationMagic = 0x3C85F7CE;

// One query as it goes on the wire.
class QueryBytes {
 public:
  explicit QueryBytes(Query type) { bytes_.push_back(static_cast<char>(type)); }
  template <class T>
  QueryBytes& value(T v) {
    return raw(&v, sizeof(T));
  }
  QueryBytes& bytes(const void* data, size_t size) {
    value<uint64_t>(size);
    return raw(data, size);
  }
  QueryBytes& key(const std::string& k) { return bytes(k.data(), k.size()); }
  QueryBytes& keys(const std::vector<std::string>& ks) {
    value<uint64_t>(ks.size());
    for (const std::string& k : ks) key(k);
    return *this;
  }
  const std::string& wire() const { return bytes_; }

 private:
  QueryBytes& raw(const void* data, size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
    return *this;
  }

  std::string bytes_;
};

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// A connected TCP socket to host:port, or -1 (errno set).
int connect_once(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

}  // namespace

TcpStoreClient::TcpStoreClient(const std::string& host, uint16_t port, std::chrono::milliseconds timeout)
    : timeout_(timeout), address_(host + ":" + std::to_string(port)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((socket_ = connect_once(host, port)) < 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error("the TCPStore at " + address_ + " (the trainer's master_address:master_port) did not accept a "
                  "connection within " + std::to_string(timeout.count()) + " ms: " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  send_all(QueryBytes(Query::Validate).value(kValidationMagic).wire());
}

TcpStoreClient::~TcpStoreClient() {
  if (socket_ >= 0) ::close(socket_);
}

void TcpStoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  send_all(QueryBytes(Query::Set).key(key).bytes(value.data(), value.size()).wire());
}

std::vector<uint8_t> TcpStoreClient::get(const std::string& key) {
  wait({key});
  send_all(QueryBytes(Query::Get).key(key).wire());
  return receive_bytes();
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  send_all(QueryBytes(Query::Add).key(key).value(delta).wire());
  return receive_value<int64_t>();
}

bool TcpStoreClient::check(const std::vector<std::string>& keys) {
  send_all(QueryBytes(Query::Check).keys(keys).wire());
  return receive_value<uint8_t>() == kReady;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys) {
  send_all(QueryBytes(Query::Wait).keys(keys).wire());
  if (readable_within(timeout_)) {
    if (const auto answer = receive_value<uint8_t>(); answer != kStopWaiting)
      throw Error("the TCPStore at " + address_ + " answered a wait with " + std::to_string(answer));
    return;
  }
  // Cancelled, the server answers WAIT_CANCELED, after a STOP_WAITING when the keys came meanwhile.
  send_all(QueryBytes(Query::CancelWait).wire());
  if (receive_value<uint8_t>() != kWaitCanceled && receive_value<uint8_t>() != kWaitCanceled)
    throw Error("the TCPStore at " + address_ + " did not acknowledge a cancelled wait");
  throw Error("waited " + std::to_string(timeout_.count()) + " ms for the TCPStore at " + address_ + " to hold " +
              joined(keys) + " (has the trainer initialised its process group?)");
}

void TcpStoreClient::send_all(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(socket_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("sending to the TCPStore at " + address_ + " failed: " + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
}

void TcpStoreClient::receive_all(void* out, size_t bytes) {
  auto* p = static_cast<uint8_t*>(out);
  size_t got = 0;
  while (got < bytes) {
    if (!readable_within(timeout_))
      throw Error("the TCPStore at " + address_ + " did not answer within " + std::to_string(timeout_.count()) + " ms");
    const ssize_t n = ::recv(socket_, p + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw Error("the TCPStore at " + address_ + " closed the connection");
    if (n < 0) throw Error("reading from the TCPStore at " + address_ + " failed: " + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
}

std::vector<uint8_t> TcpStoreClient::receive_bytes() {
  const auto size = receive_value<uint64_t>();
  // A value of the store is small (an id, a counter): a length past this is a stream out of step.
  constexpr uint64_t kLargestValue = uint64_t{1} << 30;
  if (size > kLargestValue)
    throw Error("the TCPStore at " + address_ + " sent a value of " + std::to_string(size) + " bytes");
  std::vector<uint8_t> value(size);
  receive_all(value.data(), value.size());
  return value;
}

bool TcpStoreClient::readable_within(std::chrono::milliseconds timeout) {
  pollfd fd{socket_, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&fd, 1, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw Error("waiting on the TCPStore at " + address_ + " failed: " + std::strerror(errno));
    return ready > 0;
  }
}

}  // namespace moe::collective
