#pragma once
// The engine embedded in a C++ program: the tokenizer, scheduler, model-worker and
// detokenizer actors run as threads of this process, and async_generate takes any Asio completion
// token — a callback, boost::asio::use_future, boost::asio::use_awaitable. Only the few Asio headers
// async_initiate needs are included here; ZeroMQ, msgpack and the model stay in the .cpp.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/client.h"
#include "moe/engine_options.h"
#include "moe/messages.h"

namespace moe {

namespace actors {
class EngineRuntime;
}

namespace detail {

// Wraps an Asio completion handler into a copyable callable that runs it on the handler's own
// executor (a coroutine's, a strand's; inline for a plain callback), keeping that executor busy
// until then so an io_context does not run out of work while the request is in flight.
template <class Handler>
auto on_associated_executor(Handler handler) {
  using Guard = boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>>;
  struct State {
    Handler handler;
    Guard work;
  };
  Guard work(boost::asio::get_associated_executor(handler));
  auto state = std::make_shared<State>(State{std::move(handler), std::move(work)});
  return [state](auto... args) {
    boost::asio::dispatch(state->work.get_executor(),
                          [state, args...]() mutable { state->handler(std::move(args)...); });
    // Released by the delivering thread once dispatch has returned, not by the handler: released
    // there, the handler's io_context could run out of work, its run() return and its owner destroy
    // it while this thread was still inside dispatch waking that io_context's thread.
    state->work.reset();
  };
}

}  // namespace detail

class Engine {
 public:
  // Loads the model and tokenizer and starts the actors; throws moe::Error on a bad model or option.
  explicit Engine(const EngineOptions& options);
  // Fails the requests still running (their handlers get a RequestError), then stops the actors.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Generates for `request` (not streamed). Completion signature
  // void(std::exception_ptr, std::vector<msg::TextOutput>): one output per completion, by index;
  // the exception is a RequestError when the engine refused or failed the request.
  template <class CompletionToken>
  auto async_generate(msg::GenerateRequest request, CompletionToken&& token) {
    using Signature = void(std::exception_ptr, std::vector<msg::TextOutput>);
    return boost::asio::async_initiate<CompletionToken, Signature>(
        [this](auto handler, msg::GenerateRequest request) {
          request.stream = false;
          start_collected(std::move(request), detail::on_associated_executor(std::move(handler)));
        },
        token, std::move(request));
  }

  // Generates for `request` streamed: `on_chunk` gets every chunk, in order, on the completion
  // handler's executor; then the completion, signature void(std::exception_ptr).
  template <class CompletionToken>
  auto async_generate_stream(msg::GenerateRequest request, OutputHandler on_chunk, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr)>(
        [this](auto handler, msg::GenerateRequest request, OutputHandler on_chunk) {
          request.stream = true;
          auto executor = boost::asio::get_associated_executor(handler);
          auto complete = detail::on_associated_executor(std::move(handler));
          OutputHandler on_output = [executor, on_chunk](const msg::TextOutput& chunk) {
            boost::asio::dispatch(executor, [on_chunk, chunk] { on_chunk(chunk); });
          };
          start(std::move(request), std::move(on_output), [complete](std::exception_ptr error) { complete(error); });
        },
        token, std::move(request), std::move(on_chunk));
  }

  // Loads new weights of the same architecture from update.model_path between two steps, as SGLang's
  // POST /update_weights_from_disk: on success the requests the old weights began end with finish
  // reason abort (their outputs carry the old weight_version), the prefix cache is flushed, and
  // later outputs carry update.weight_version; on failure the old weights keep serving and the
  // answer's message says why. Blocks until the answer; never call it from one of this engine's
  // handlers (they run on the thread that delivers it).
  msg::WeightsUpdated update_weights_from_disk(msg::UpdateWeights update);
  // Ends request `rid` early: its handlers get its outputs so far with finish reason abort. False
  // when no request of that rid is live. Only this Engine's requests: the rids of the server's
  // HTTP and ZeroMQ clients are theirs. Blocks as update_weights_from_disk does, briefly.
  bool abort(const std::string& rid);

  // Expert-load statistics, as GET /expert_load and the ZeroMQ expert_load op: per MoE layer, the
  // tokens the router sent to each expert since the start or the last reset; `reset` zeroes them in
  // the same step as the read, so successive resetting calls return successive windows. Throws
  // RequestError (400) when the engine was started without enable_return_routed_experts. Blocks
  // briefly (one scheduler task); callable from any thread, its handlers' included.
  ExpertLoad expert_load(bool reset = false);

  // KV-cache token slots of the engine's pool.
  int64_t kv_slots() const;
  // The ZeroMQ endpoint actually bound when EngineOptions::zmq_endpoint was given, else empty.
  std::string client_endpoint() const;

 private:
  // The whole of a non-streamed request's outputs, or its error.
  using OutputsHandler = std::function<void(std::exception_ptr, std::vector<msg::TextOutput>)>;
  // Hands `request` to the tokenizer actor; the handlers run on the tokenizer actor's thread.
  void start(msg::GenerateRequest request, OutputHandler on_output, DoneHandler on_done);
  // start() gathering one output per completion, ordered by index, for `on_done`.
  void start_collected(msg::GenerateRequest request, OutputsHandler on_done);

  std::unique_ptr<actors::EngineRuntime> runtime_;
};

}  // namespace moe
