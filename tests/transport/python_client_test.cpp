// The client protocol as a Python client speaks it (Debian's python3-msgpack and numpy): the
// reply decodes as docs/zmq-protocol.md shows, and a request Python packs parses here.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "transport/client_protocol.h"

namespace moe::transport {
namespace {

constexpr const char* kPythonClient = R"(
import base64, sys
import msgpack, numpy as np
reply = msgpack.unpackb(open(sys.argv[1], "rb").read(), raw=False)
meta = reply["meta_info"]
experts = np.frombuffer(meta["routed_experts"], dtype=meta["routed_experts_dtype"]).reshape(meta["routed_experts_shape"])
weights = np.frombuffer(base64.b64decode(meta["router_weights"]), dtype=meta["router_weights_dtype"]).reshape(
    meta["router_weights_shape"])
print(reply["text"], reply["output_ids"], meta["finish_reason"], experts.tolist(), weights.tolist())
request = {"rid": "py-1", "text": "hi", "sampling_params": {"temperature": 0, "max_new_tokens": 4, "stop": ["\n"]},
           "return_routed_experts": True, "routed_experts_raw": True, "lora_path": None}
open(sys.argv[2], "wb").write(msgpack.packb(request))
)";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(PythonClient, DecodesRepliesAndSendsRequestsWeParse) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("moe-pyclient-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::int16_t ids[] = {1, 2, 3, 4};
  msg::TextOutput output;
  output.rid = "r";
  output.output_ids = {5, 6};
  output.finish_reason = msg::FinishReason{msg::FinishKind::Stop, 6, std::nullopt, ""};
  output.prompt_tokens = 1;
  output.text = "ok";
  output.completion_tokens = 2;
  output.routed_experts =
      msg::EncodedArray{std::string(reinterpret_cast<const char*>(ids), sizeof ids), true, {2, 1, 2}, "int16"};
  output.router_weights = msg::EncodedArray{"AAAAPwAAgD4=", false, {1, 1, 2}, "float32"};
  std::ofstream(dir / "reply.msgpack", std::ios::binary) << encode_client_reply(output);
  std::ofstream(dir / "client.py") << kPythonClient;

  const std::string command = "/usr/bin/python3 " + (dir / "client.py").string() + " " + (dir / "reply.msgpack").string() +
                              " " + (dir / "request.msgpack").string();
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string printed;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) printed += buffer;
  ASSERT_EQ(::pclose(pipe), 0) << printed;
  EXPECT_EQ(printed, "ok [5, 6] {'type': 'stop', 'matched': 6} [[[1, 2]], [[3, 4]]] [[[0.5, 0.25]]]\n");

  const auto request = std::get<msg::GenerateRequest>(parse_client_request(read_file(dir / "request.msgpack")));
  EXPECT_EQ(request.rid, "py-1");
  EXPECT_EQ(request.text, "hi");
  EXPECT_EQ(request.sampling.temperature, 0.0f);
  EXPECT_EQ(request.sampling.max_new_tokens, 4);
  EXPECT_EQ(request.sampling.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(request.routing.return_routed_experts);
  EXPECT_TRUE(request.routing.raw);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moe::transport
