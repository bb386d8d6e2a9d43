#pragma once
// The event loop of one actor: an io_context, the sockets made on it, and the thread
// that runs it. An actor builds its endpoints with make<>(), then runs the loop on the calling
// thread (a process per actor) or on its own thread (actors as threads of one process).
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace moe::transport {

class Context;

class ActorLoop {
 public:
  ActorLoop(Context& context, std::string name);
  // Stops the loop, joins its thread, then closes its endpoints, newest first.
  ~ActorLoop();
  ActorLoop(const ActorLoop&) = delete;
  ActorLoop& operator=(const ActorLoop&) = delete;

  const std::string& name() const { return name_; }
  Context& context() { return context_; }
  // For timers and other Asio objects of the actor (in its .cpp files).
  boost::asio::io_context& io() { return *io_; }

  // Builds an endpoint (Inbox, Outbox, RouterEndpoint, DealerEndpoint, AsyncSocket) on this loop;
  // it lives as long as the loop. Call before the loop runs or from the loop's own thread.
  template <class Endpoint, class... Args>
  Endpoint& make(Args&&... args) {
    auto endpoint = std::make_shared<Endpoint>(io(), context_, std::forward<Args>(args)...);
    Endpoint& result = *endpoint;
    endpoints_.push_back(std::move(endpoint));
    return result;
  }

  // Runs `task` on the loop's thread; callable from any thread.
  void post(std::function<void()> task);

  // Runs the loop on the calling thread until stop(). An exception escaping a handler is logged
  // and the loop goes on: one bad message must not take the actor down.
  void run();
  // run() on a new thread.
  void start();
  // Makes run() return soon; callable from any thread (a signal handler's loop, a launcher), repeatedly.
  void stop();
  // Waits for the thread start() made, if any.
  void join();

  // Tells the launcher's ReadyBarrier bound at `launcher_endpoint` that this actor is ready (a
  // msg::Ready with its name and process id). Call before run() or from the loop's thread.
  void report_ready(const std::string& launcher_endpoint);

 private:
  Context& context_;
  std::string name_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::vector<std::shared_ptr<void>> endpoints_;
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

}  // namespace moe::transport
