#include "common/prelude.h"

#include "transport/ready_barrier.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "transport/endpoints.h"

namespace moe::transport {

ReadyBarrier::ReadyBarrier(Context& context, const std::string& bind_endpoint)
    : io_(std::make_unique<boost::asio::io_context>(1)) {
  inbox_ = std::make_unique<Inbox>(*io_, context, bind_endpoint, [this](msg::Message&& message) {
    if (auto* ready = std::get_if<msg::Ready>(&message)) {
      reported_[ready->actor] = *ready;
    } else {
      spdlog::warn("launcher: ignored a {} message while waiting for actors", msg::kind_name(msg::kind_of(message)));
    }
  });
}

ReadyBarrier::~ReadyBarrier() {
  inbox_.reset();  // the socket goes before the io_context it is registered with
}

const std::string& ReadyBarrier::endpoint() const { return inbox_->endpoint(); }

std::vector<msg::Ready> ReadyBarrier::wait(const std::vector<std::string>& actors, std::chrono::milliseconds timeout) {
  auto all_reported = [&] {
    for (const std::string& actor : actors) {
      if (!reported_.contains(actor)) return false;
    }
    return true;
  };
  // The timer's handler may run during a later wait(), so it touches only the shared flag.
  auto expired = std::make_shared<bool>(false);
  boost::asio::steady_timer deadline(*io_, timeout);
  deadline.async_wait([expired](const boost::system::error_code& error) {
    if (!error) *expired = true;
  });
  while (!all_reported() && !*expired) io_->run_one();
  deadline.cancel();

  if (!all_reported()) {
    std::string missing;
    for (const std::string& actor : actors) {
      if (!reported_.contains(actor)) missing += (missing.empty() ? "" : ", ") + actor;
    }
    throw Error("actors not ready after " + std::to_string(timeout.count()) + " ms: " + missing);
  }
  std::vector<msg::Ready> reports;
  for (const std::string& actor : actors) reports.push_back(reported_.at(actor));
  return reports;
}

}  // namespace moe::transport
