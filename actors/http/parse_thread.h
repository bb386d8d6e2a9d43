#pragma once
// A thread of its own for parsing large request bodies. Parsing the largest body a client may send
// (64 MiB of JSON) takes about a second; on the front's thread that second would hold every other
// client's requests and answers.
#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace moe::http {

class ParseThread {
 public:
  // `front`: where each parse's continuation runs (the thread that runs the server).
  explicit ParseThread(boost::asio::io_context& front);
  // Waits for the parse under way; continuations are posted to `front` as usual.
  ~ParseThread();

  // Runs `parse` on the parse thread, then `then` on the front's thread. Parses run one at a time,
  // in the order they came.
  void run(std::function<void()> parse, std::function<void()> then);

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

}  // namespace moe::http
