#pragma once
// Runs a test over each ZeroMQ transport the engine supports: inproc://, ipc:// (a fresh temp
// directory) and tcp:// on 127.0.0.1 with an ephemeral port.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>

#include "transport/zmq_context.h"

namespace moe::test {

class TransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Where to bind a socket called `name` on this test's transport.
  std::string bind_address(const std::string& name) const;

  transport::Context context_;
  std::filesystem::path ipc_dir_;
};

// Waits for `future` up to `limit`; false when it did not become ready (the test then fails).
template <class T>
bool arrives(std::future<T>& future, std::chrono::seconds limit = std::chrono::seconds(20)) {
  return future.wait_for(limit) == std::future_status::ready;
}

}  // namespace moe::test
