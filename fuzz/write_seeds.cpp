// Writes the seed corpora of the binary formats: every sample message of the transport tests as a
// codec frame (DIR/fuzz_message_codec/) and as the client protocol's request or reply where one
// exists (DIR/fuzz_client_protocol/). Usage: fuzz_write_seeds fuzz/corpus
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "moe/messages.h"
#include "sample_messages.h"
#include "transport/client_protocol.h"
#include "transport/message_codec.h"

namespace {

void write_seed(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_write_seeds CORPUS_DIR\n";
    return 2;
  }
  using namespace moe;
  const std::filesystem::path corpus = argv[1];
  const std::vector<msg::Message> messages = test::sample_messages();
  for (size_t i = 0; i < messages.size(); ++i) {
    const msg::Message& message = messages[i];
    const std::string kind = std::to_string(i) + "_" + std::string(msg::kind_name(msg::kind_of(message)));
    write_seed(corpus / "fuzz_message_codec", kind, transport::encode_message(message));
    if (const auto* request = std::get_if<msg::GenerateRequest>(&message))
      write_seed(corpus / "fuzz_client_protocol", "request_" + kind, transport::encode_client_request(*request));
    if (const auto* batch = std::get_if<msg::TextOutputBatch>(&message))
      for (size_t j = 0; j < batch->outputs.size(); ++j)
        write_seed(corpus / "fuzz_client_protocol", "reply_" + kind + "_" + std::to_string(j),
                   transport::encode_client_reply(batch->outputs[j]));
    if (const auto* error = std::get_if<msg::ErrorReply>(&message))
      write_seed(corpus / "fuzz_client_protocol", "error_" + kind, transport::encode_client_error(*error));
  }
  write_seed(corpus / "fuzz_client_protocol", "op_abort", transport::encode_client_request(transport::AbortRequest{"r1"}));
  write_seed(corpus / "fuzz_client_protocol", "op_expert_load",
             transport::encode_client_request(transport::ExpertLoadRequest{"r2", true}));
  write_seed(corpus / "fuzz_client_protocol", "op_update_weights",
             transport::encode_client_request(transport::UpdateWeightsRequest{"r3", {.model_path = "/m"}}));
  return 0;
}
