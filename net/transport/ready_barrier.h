#pragma once
// The launcher's side of start-up: it binds an endpoint, starts the actors (threads or processes),
// and waits until each has reported msg::Ready there (ActorLoop::report_ready).
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moe/messages.h"

namespace boost::asio {
class io_context;
}

namespace moe::transport {

class Context;
class Inbox;

class ReadyBarrier {
 public:
  ReadyBarrier(Context& context, const std::string& bind_endpoint);
  ~ReadyBarrier();

  // What the actors connect to (the port chosen for tcp://host:0 resolved).
  const std::string& endpoint() const;

  // Blocks until every actor in `actors` has reported, in any order, and returns their reports in
  // the order of `actors`. Throws moe::Error naming the missing ones when `timeout` passes first.
  std::vector<msg::Ready> wait(const std::vector<std::string>& actors, std::chrono::milliseconds timeout);

 private:
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<Inbox> inbox_;
  std::map<std::string, msg::Ready> reported_;
};

}  // namespace moe::transport
