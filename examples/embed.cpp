// Embedding moe-engine in a C++ program: start the engine in-process, then generate with the three
// kinds of Asio completion token — a callback, a future, a coroutine — and stream one request.
//   moe-embed-example MODEL_DIR [TOKENIZER_DIR]
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <iomanip>
#include <iostream>

#include "moe/engine.h"

namespace {

// A greedy request for `prompt` that also asks for the routed experts of every token.
moe::msg::GenerateRequest greedy(const std::string& prompt) {
  moe::msg::GenerateRequest request;
  request.text = prompt;
  request.sampling.temperature = 0;
  request.sampling.max_new_tokens = 12;
  request.routing.return_routed_experts = true;
  return request;
}

void print(const std::string& how, const moe::msg::TextOutput& output) {
  std::cout << how << ": " << output.output_ids.size() << " tokens, text " << std::quoted(output.text);
  if (output.routed_experts) {
    std::cout << ", routed experts [";
    for (size_t i = 0; i < output.routed_experts->shape.size(); ++i)
      std::cout << (i ? ", " : "") << output.routed_experts->shape[i];
    std::cout << "] " << output.routed_experts->dtype;
  }
  std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR [TOKENIZER_DIR]\n";
    return 2;
  }
  try {
    moe::EngineOptions options;
    options.model_path = argv[1];
    options.tokenizer_path = argc > 2 ? argv[2] : "";
    options.enable_return_routed_experts = true;
    moe::Engine engine(options);

    // 1. A callback: runs on the engine's thread when the request is done.
    std::promise<void> callback_done;
    engine.async_generate(greedy("The capital of France is"),
                          [&](std::exception_ptr error, std::vector<moe::msg::TextOutput> outputs) {
                            if (error) std::rethrow_exception(error);
                            print("callback", outputs.at(0));
                            callback_done.set_value();
                          });
    callback_done.get_future().get();

    // 2. A future: get() returns the outputs or throws moe::RequestError.
    auto future = engine.async_generate(greedy("Mixture-of-experts models route"), boost::asio::use_future);
    print("future", future.get().at(0));

    // 3. A coroutine on an io_context, plus a streamed request whose chunks arrive on that context.
    boost::asio::io_context io;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          auto outputs = co_await engine.async_generate(greedy("Once upon a time"), boost::asio::use_awaitable);
          print("coroutine", outputs.at(0));
          std::string streamed;
          co_await engine.async_generate_stream(
              greedy("Once upon a time"), [&](const moe::msg::TextOutput& chunk) { streamed += chunk.text; },
              boost::asio::use_awaitable);
          std::cout << "stream: " << std::quoted(streamed) << "\n";
        },
        [](std::exception_ptr error) {
          if (error) std::rethrow_exception(error);
        });
    io.run();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
