#include "common/prelude.h"

#include "transport/actor_loop.h"

#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "common/thread_name.h"
#include "transport/endpoints.h"

namespace moe::transport {

ActorLoop::ActorLoop(Context& context, std::string name)
    : context_(context), name_(std::move(name)), io_(std::make_unique<boost::asio::io_context>(1)) {}

ActorLoop::~ActorLoop() {
  stop();
  join();
  while (!endpoints_.empty()) endpoints_.pop_back();
}

void ActorLoop::post(std::function<void()> task) { boost::asio::post(*io_, std::move(task)); }

void ActorLoop::run() {
  const auto keep_running = boost::asio::make_work_guard(*io_);
  while (!stopped_) {
    try {
      io_->run();
    } catch (const std::exception& e) {
      spdlog::error("{}: a handler failed: {}", name_, e.what());
    }
  }
}

void ActorLoop::start() {
  thread_ = std::thread([this] {
    name_this_thread(name_);
    run();
  });
}

void ActorLoop::stop() {
  stopped_ = true;
  io_->stop();
}

void ActorLoop::join() {
  if (thread_.joinable()) thread_.join();
}

void ActorLoop::report_ready(const std::string& launcher_endpoint) {
  make<Outbox>(launcher_endpoint).send(msg::Ready{.actor = name_, .pid = static_cast<int64_t>(::getpid())});
}

}  // namespace moe::transport
