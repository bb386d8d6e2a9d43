#include "serving/http_transport.h"

#include <unordered_map>

#include "common/error.h"
#include "serving/http_exchange.h"

namespace moe::bench {
namespace {

class HttpTransport final : public StreamingTransport {
 public:
  HttpTransport(const HttpUrl& url, HttpApi api) : client_(url, api) {
    boost::asio::ip::tcp::resolver resolver(client_.io);
    boost::system::error_code ec;
    client_.server = resolver.resolve(url.host, url.port, ec);
    if (ec) throw Error("moe-bench: cannot resolve " + url.host + ":" + url.port + ": " + ec.message());
  }

  void send(uint64_t id, const BenchRequest& request) override {
    auto exchange = std::make_shared<HttpExchange>(client_, id, request);
    exchange->start();
    exchanges_[id] = std::move(exchange);
  }

  void wait(Clock::time_point deadline, std::vector<StreamEvent>& events) override {
    if (client_.io.stopped()) client_.io.restart();  // it stops whenever it runs out of work
    // Handlers run one at a time until one has produced an event; those ready by then run too, so
    // the events of one wake-up come back together.
    while (client_.events.empty() && client_.io.run_one_until(deadline) > 0) {
    }
    client_.io.poll();
    for (StreamEvent& event : client_.events) {
      if (event.finished) exchanges_.erase(event.request);
      events.push_back(std::move(event));
    }
    client_.events.clear();
  }

  void cancel(uint64_t id) override {
    const auto exchange = exchanges_.find(id);
    if (exchange == exchanges_.end()) return;
    exchange->second->cancel();
    exchanges_.erase(exchange);
  }

 private:
  HttpClient client_;
  std::unordered_map<uint64_t, std::shared_ptr<HttpExchange>> exchanges_;  // unfinished, for cancel()
};

}  // namespace

std::unique_ptr<StreamingTransport> make_http_transport(const HttpUrl& url, HttpApi api) {
  return std::make_unique<HttpTransport>(url, api);
}

}  // namespace moe::bench
