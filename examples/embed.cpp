// Embedding moe-engine in a C++ program: start the engine in-process, then generate with the three
// kinds of Asio completion token — a callback, a future, a coroutine — stream one request, and read
// the expert-load statistics. Built in the tree as build/examples/moe-embed-example, and outside it
// against the installed package (docs/embedding.md).
//   moe-embed-example MODEL_DIR [TOKENIZER_DIR]
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <cstring>
#include <future>
#include <iomanip>
#include <iostream>

#include "moe/engine.h"

namespace {

// A greedy request for `prompt` that also asks for the routed experts of every token, as raw
// little-endian int32 (base64 is for JSON; in-process the bytes need no decoding).
moe::msg::GenerateRequest greedy(const std::string& prompt) {
  moe::msg::GenerateRequest request;
  request.text = prompt;
  request.sampling.temperature = 0;
  request.sampling.max_new_tokens = 12;
  request.routing.return_routed_experts = true;
  request.routing.raw = true;
  return request;
}

template <class T>
void print_list(const std::vector<T>& values) {
  std::cout << "[";
  for (size_t i = 0; i < values.size(); ++i) std::cout << (i ? ", " : "") << values[i];
  std::cout << "]";
}

// The generated ids, then per token (prompt and generated, the last excepted) and per MoE layer
// the experts the router chose, best first.
void print(const std::string& how, const moe::msg::TextOutput& output) {
  std::cout << how << ": " << output.output_ids.size() << " tokens, text " << std::quoted(output.text) << "\n";
  std::cout << "  output ids ";
  print_list(output.output_ids);
  std::cout << "\n";
  if (!output.routed_experts) return;
  const moe::msg::EncodedArray& routing = *output.routed_experts;  // [rows, MoE layers, top k], int32
  std::vector<int32_t> ids(routing.data.size() / sizeof(int32_t));
  std::memcpy(ids.data(), routing.data.data(), ids.size() * sizeof(int32_t));
  const int64_t layers = routing.shape.at(1), top_k = routing.shape.at(2);
  std::cout << "  routed experts ";
  print_list(routing.shape);
  std::cout << "\n";
  for (int64_t row = 0; row < routing.shape.at(0); ++row) {
    std::cout << "    token " << row << ": [";
    for (int64_t layer = 0; layer < layers; ++layer) {
      const auto first = ids.begin() + (row * layers + layer) * top_k;
      std::cout << (layer ? ", " : "");
      print_list(std::vector<int32_t>(first, first + top_k));
    }
    std::cout << "]\n";
  }
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
    auto future = engine.async_generate(greedy("Explain how mixture of experts models work."), boost::asio::use_future);
    print("future", future.get().at(0));

    // 3. A coroutine on an io_context, plus a streamed request whose chunks arrive on that context.
    boost::asio::io_context io;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          auto outputs = co_await engine.async_generate(greedy("Hello"), boost::asio::use_awaitable);
          print("coroutine", outputs.at(0));
          // Each chunk holds the text and ids it adds.
          std::string streamed;
          std::vector<int32_t> streamed_ids;
          co_await engine.async_generate_stream(
              greedy("Hello"),
              [&](const moe::msg::TextOutput& chunk) {
                streamed += chunk.text;
                streamed_ids.insert(streamed_ids.end(), chunk.output_ids.begin(), chunk.output_ids.end());
              },
              boost::asio::use_awaitable);
          std::cout << "stream: " << std::quoted(streamed) << "\n  output ids ";
          print_list(streamed_ids);
          std::cout << "\n";
        },
        [](std::exception_ptr error) {
          if (error) std::rethrow_exception(error);
        });
    io.run();

    // 4. Expert load: the tokens routed to each expert of each MoE layer since the start.
    const moe::ExpertLoad load = engine.expert_load();
    std::cout << "expert load: " << load.tokens << " tokens\n";
    for (size_t layer = 0; layer < load.counts.size(); ++layer) {
      std::cout << "  layer " << layer << " ";
      print_list(load.counts[layer]);
      std::cout << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
