// The expert-load operation of the client protocol: {"op": "expert_load"} requests, their replies,
// and the errors of requests with an unknown `op` (which carry the request's rid).
#include <gtest/gtest.h>

#include "expect_error.h"
#include "msgpack_json.h"
#include "transport/client_protocol.h"

namespace moe::transport {
namespace {

using nlohmann::json;
using test::pack;
using test::unpack;

// The error parse_client_request throws for `frame` (a failure when it throws none).
ClientRequestError request_error(const std::string& frame) {
  try {
    parse_client_request(frame);
  } catch (const ClientRequestError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << unpack(frame).dump();
  return ClientRequestError("", "");
}

TEST(ExpertLoadRequest, IsNamedByOpAndTakesRidAndReset) {
  EXPECT_EQ(std::get<ExpertLoadRequest>(parse_client_request(pack({{"op", "expert_load"}, {"rid", "L1"}, {"reset", true}}))),
            (ExpertLoadRequest{"L1", true}));
  // Defaults and nil as absent, as in generation requests; an unknown key is refused.
  EXPECT_EQ(std::get<ExpertLoadRequest>(parse_client_request(pack({{"op", "expert_load"}, {"reset", nullptr}}))),
            (ExpertLoadRequest{"", false}));
  EXPECT_THROW(parse_client_request(pack({{"op", "expert_load"}, {"text", "refused"}})), ClientRequestError);
}

TEST(ExpertLoadRequest, NoOpOrOpGenerateIsAGeneration) {
  const auto plain = std::get<msg::GenerateRequest>(parse_client_request(pack({{"rid", "g"}, {"text", "hi"}})));
  const auto named = std::get<msg::GenerateRequest>(
      parse_client_request(pack({{"op", "generate"}, {"rid", "g"}, {"text", "hi"}})));
  EXPECT_EQ(plain, named);
  EXPECT_EQ(plain.text, "hi");
  EXPECT_EQ(std::get<msg::GenerateRequest>(parse_client_request(pack({{"op", nullptr}, {"text", "hi"}}))).text, "hi");
}

TEST(ExpertLoadRequest, EncodeThenParseRoundTrips) {
  const ExpertLoadRequest request{"cli-1", true};
  EXPECT_EQ(unpack(encode_client_request(request)), json({{"op", "expert_load"}, {"rid", "cli-1"}, {"reset", true}}));
  EXPECT_EQ(std::get<ExpertLoadRequest>(parse_client_request(encode_client_request(request))), request);
}

TEST(ExpertLoadRequest, ErrorsNameTheFieldAndCarryTheRid) {
  const ClientRequestError unknown = request_error(pack({{"op", "stats"}, {"rid", "r7"}}));
  EXPECT_EQ(unknown.rid(), "r7");
  EXPECT_EQ(std::string(unknown.what()), "request.op: unknown operation \"stats\" (known: \"generate\", \"expert_load\", "
                                        "\"abort\", \"update_weights_from_disk\", \"pause_generation\", "
                                        "\"continue_generation\", \"get_weight_version\", \"update_weight_version\", "
                                        "\"release_memory_occupation\", \"resume_memory_occupation\", "
                                        "\"init_weights_update_group\", \"update_weights_from_distributed\", "
                                        "\"destroy_weights_update_group\")");
  EXPECT_EQ(request_error(pack({{"op", 3}})).what(), std::string("request.op: expected a string, got positive integer"));
  const ClientRequestError reset = request_error(pack({{"op", "expert_load"}, {"rid", "r8"}, {"reset", "yes"}}));
  EXPECT_EQ(reset.rid(), "r8");
  EXPECT_EQ(std::string(reset.what()), "request.reset: expected a bool, got str");
  // A generation's errors carry its rid too; a frame without a string rid gives none.
  EXPECT_EQ(request_error(pack({{"rid", "g1"}, {"text", 5}})).rid(), "g1");
  EXPECT_EQ(request_error(pack({{"rid", 5}, {"text", "x"}})).rid(), "");
  EXPECT_EQ(request_error(pack({1, 2})).rid(), "");
  test::expect_error_containing([] { parse_client_request("\xc1"); }, "request: not valid msgpack");
}

TEST(ExpertLoadReply, HasTheHttpFieldsAndTheRidInMetaInfo) {
  const ExpertLoadReply reply{"L1", ExpertLoad{{{5, 0, 1}, {2, 2, 2}}, 3}};
  EXPECT_EQ(unpack(encode_expert_load_reply(reply)),
            json({{"expert_load", {{"num_moe_layers", 2}, {"num_experts", 3}, {"tokens", 3},
                                   {"counts", {{5, 0, 1}, {2, 2, 2}}}}},
                  {"meta_info", {{"id", "L1"}}}}));
}

TEST(ExpertLoadReply, DecodesToWhatWasEncoded) {
  const ExpertLoadReply large{"L2", ExpertLoad{{{uint64_t{1} << 40, 7}}, uint64_t{1} << 39}};
  EXPECT_EQ(std::get<ExpertLoadReply>(decode_client_reply(encode_expert_load_reply(large))), large);
  const ExpertLoadReply empty{"", ExpertLoad{}};
  EXPECT_EQ(std::get<ExpertLoadReply>(decode_client_reply(encode_expert_load_reply(empty))), empty);
}

TEST(ExpertLoadReply, CountsThatDoNotMatchTheirShapeAreRejected) {
  const json ragged = {{"expert_load", {{"num_moe_layers", 2}, {"num_experts", 2}, {"tokens", 1},
                                        {"counts", {{1, 1}, {2}}}}}};
  test::expect_error_containing([&] { decode_client_reply(pack(ragged)); },
                                "reply.expert_load.counts: expected 2 layers of 2 experts");
  const json negative = {{"expert_load", {{"num_moe_layers", 1}, {"num_experts", 1}, {"tokens", 1},
                                          {"counts", {{-1}}}}}};
  test::expect_error_containing([&] { decode_client_reply(pack(negative)); },
                                "reply.expert_load.counts[0][0]: -1 is out of range");
}

}  // namespace
}  // namespace moe::transport
