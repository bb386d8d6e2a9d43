#include "http/parse_thread.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

namespace moe::http {

namespace asio = boost::asio;

struct ParseThread::Pool {
  explicit Pool(asio::io_context& io) : front(io) {}
  asio::io_context& front;
  asio::thread_pool thread{1};
};

ParseThread::ParseThread(asio::io_context& front) : pool_(std::make_unique<Pool>(front)) {}

ParseThread::~ParseThread() { pool_->thread.join(); }

void ParseThread::run(std::function<void()> parse, std::function<void()> then) {
  asio::post(pool_->thread, [&front = pool_->front, parse = std::move(parse), then = std::move(then)]() mutable {
    parse();
    asio::post(front, std::move(then));
  });
}

}  // namespace moe::http
