#pragma once
// The ZeroMQ context of a process. inproc:// connects only sockets of one context, so the actors of
// one process share a single Context; it must outlive every socket made from it.
#include <memory>

namespace zmq {
class context_t;
}

namespace moe::transport {

class Context {
 public:
  explicit Context(int io_threads = 1);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  zmq::context_t& native() { return *context_; }

 private:
  std::unique_ptr<zmq::context_t> context_;
};

}  // namespace moe::transport
