#include "transport/message_codec.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <random>
#include <set>

#include "common/error.h"
#include "expect_error.h"
#include "sample_messages.h"

namespace moe::transport {
namespace {

void expect_decode_error(const std::string& frame, const std::string& needle) {
  test::expect_error_containing([&] { decode_message(frame); }, needle);
}

// A frame [version, kind, body] where body is packed by `pack_body`.
template <class PackBody>
std::string frame_of(uint32_t version, uint32_t kind, PackBody pack_body) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> packer(buffer);
  packer.pack_array(3);
  packer.pack(version);
  packer.pack(kind);
  pack_body(packer);
  return std::string(buffer.data(), buffer.size());
}

TEST(MessageCodec, EveryKindRoundTrips) {
  const std::vector<msg::Message> messages = test::sample_messages();
  std::set<msg::MessageKind> kinds;
  for (const msg::Message& message : messages) {
    kinds.insert(msg::kind_of(message));
    const msg::Message decoded = decode_message(encode_message(message));
    EXPECT_EQ(decoded, message) << msg::kind_name(msg::kind_of(message));
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<msg::Message>) << "sample_messages() misses a kind";
}

TEST(MessageCodec, FrameIsVersionKindBody) {
  const std::string frame = encode_message(msg::Abort{.rid = "x", .reason = "y"});
  const msgpack::object_handle handle = msgpack::unpack(frame.data(), frame.size());
  const msgpack::object& root = handle.get();
  ASSERT_EQ(root.type, msgpack::type::ARRAY);
  ASSERT_EQ(root.via.array.size, 3u);
  EXPECT_EQ(root.via.array.ptr[0].as<uint32_t>(), msg::kProtocolVersion);
  EXPECT_EQ(root.via.array.ptr[1].as<uint32_t>(), static_cast<uint32_t>(msg::MessageKind::Abort));
  const msgpack::object& body = root.via.array.ptr[2];
  ASSERT_EQ(body.type, msgpack::type::ARRAY);
  ASSERT_EQ(body.via.array.size, 5u);  // rid, reason, index, stop_string, kept_tokens
  EXPECT_EQ(body.via.array.ptr[0].as<std::string>(), "x");
  EXPECT_EQ(body.via.array.ptr[1].as<std::string>(), "y");
  EXPECT_EQ(body.via.array.ptr[2].as<int32_t>(), -1);
}

TEST(MessageCodec, RoutingRowsTravelAsBinNotIntegerArrays) {
  msg::WorkerResult result{.step = 1, .sampled_ids = {}, .logprobs = {}, .routing = {}};
  msg::RoutingRows rows{.num_layers = 48, .top_k = 8, .expert_ids = {}, .weights = {}};
  rows.expert_ids.assign(100 * 48 * 8, 127);
  result.routing.push_back({.step = 1, .rows = rows});
  const std::string frame = encode_message(result);
  const msgpack::object_handle handle = msgpack::unpack(frame.data(), frame.size());
  // body = [step, sampled_ids, logprobs, top_logprobs, routing]; routing[0] = [step, rows]; rows[2] = expert_ids.
  const msgpack::object& ids =
      handle.get().via.array.ptr[2].via.array.ptr[4].via.array.ptr[0].via.array.ptr[1].via.array.ptr[2];
  ASSERT_EQ(ids.type, msgpack::type::BIN);
  EXPECT_EQ(ids.via.bin.size, rows.expert_ids.size() * sizeof(int16_t));
  EXPECT_EQ(std::get<msg::WorkerResult>(decode_message(frame)).routing[0].rows.num_rows(), 100);
}

TEST(MessageCodec, RejectsBytesThatAreNotMsgpack) {
  expect_decode_error("\xc1", "not valid msgpack");  // 0xc1 is never used by msgpack
  expect_decode_error("", "truncated");
}

TEST(MessageCodec, RejectsOtherProtocolVersions) {
  const std::string frame = frame_of(msg::kProtocolVersion + 6, static_cast<uint32_t>(msg::MessageKind::Ready),
                                     [](auto& packer) { packer.pack(std::vector<std::string>{"bye"}); });
  expect_decode_error(frame, "protocol version " + std::to_string(msg::kProtocolVersion + 6));
}

TEST(MessageCodec, RejectsUnknownKinds) {
  expect_decode_error(frame_of(msg::kProtocolVersion, 200, [](auto& packer) { packer.pack_array(0); }),
                      "unknown message kind 200");
  expect_decode_error(frame_of(msg::kProtocolVersion, 0, [](auto& packer) { packer.pack_array(0); }),
                      "unknown message kind 0");
}

TEST(MessageCodec, RejectsTruncatedAndPaddedFrames) {
  const std::string frame = encode_message(test::sample_messages()[2]);
  for (size_t length = 0; length < frame.size(); ++length) {
    EXPECT_THROW(decode_message(frame.substr(0, length)), Error) << "prefix of " << length << " bytes";
  }
  expect_decode_error(frame + "x", "1 stray bytes");
}

TEST(MessageCodec, NamesTheFieldOfABodyThatDoesNotFitItsKind) {
  const auto abort_kind = static_cast<uint32_t>(msg::MessageKind::Abort);
  expect_decode_error(frame_of(msg::kProtocolVersion, abort_kind,
                               [](auto& packer) { packer.pack(std::make_tuple(7, std::string("r"), -1, false, -1)); }),
                      "Abort.rid: expected a string, got positive integer");
  expect_decode_error(frame_of(msg::kProtocolVersion, abort_kind,
                               [](auto& packer) { packer.pack(std::vector<std::string>{"only one"}); }),
                      "Abort: expected 5 fields, got 1");
  expect_decode_error(frame_of(msg::kProtocolVersion, static_cast<uint32_t>(msg::MessageKind::Heartbeat),
                               [](auto& packer) { packer.pack(std::make_tuple(-1, std::vector<int>{})); }),
                      "Heartbeat.instance: -1 is out of range");
  expect_decode_error(frame_of(msg::kProtocolVersion, static_cast<uint32_t>(msg::MessageKind::WorkerResult),
                               [](auto& packer) {
                                 packer.pack_array(13);
                                 packer.pack(3);
                                 packer.pack_bin(0);
                                 packer.pack_bin(3);  // 3 bytes cannot hold whole floats
                                 packer.pack_bin_body("abc", 3);
                                 packer.pack_bin(0);
                                 packer.pack_bin(0);
                                 packer.pack_array(0);
                                 packer.pack_array(0);
                                 packer.pack(false);
                                 packer.pack_bin(0);
                                 packer.pack_bin(0);
                                 packer.pack_bin(0);
                                 packer.pack_array(0);
                                 packer.pack(std::make_tuple(0, 0, std::string(), std::string()));  // draft_routing
                               }),
                      "WorkerResult.logprobs: bin of 3 bytes is not a whole number of 4-byte values");
}

TEST(MessageCodec, RejectsOutOfRangeEnumValues) {
  msg::DetokenizeBatch batch;
  batch.items.push_back({});
  batch.items[0].finish_reason = msg::FinishReason{};
  std::string frame = encode_message(batch);
  // FinishReason.kind (Length = 1) is the first byte after its fixarray header (0x94).
  const size_t kind_at = frame.find("\x94\x01");
  ASSERT_NE(kind_at, std::string::npos);
  frame[kind_at + 1] = 0x7f;
  expect_decode_error(frame, "DetokenizeBatch.items[0].finish_reason.kind: unknown value 127");
}

TEST(MessageCodec, HostileSizesAreRejectedWithoutAllocating) {
  expect_decode_error("\xdd\xff\xff\xff\xff", "msgpack");  // array32 claiming 4G elements
  expect_decode_error("\xc6\xff\xff\xff\xf0", "msgpack");  // bin32 claiming 4 GB
}

TEST(MessageCodec, CorruptedFramesOnlyEverThrowMoeError) {
  const std::vector<msg::Message> messages = test::sample_messages();
  std::mt19937 random(1234);
  int decoded_anyway = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string frame = encode_message(messages[trial % messages.size()]);
    std::uniform_int_distribution<size_t> position(0, frame.size() - 1);
    for (int flips = 0; flips < 3; ++flips) frame[position(random)] = static_cast<char>(random());
    try {
      decode_message(frame);
      ++decoded_anyway;  // a flip inside a string or number still decodes; that is fine
    } catch (const Error&) {
    }
  }
  EXPECT_LT(decoded_anyway, 3000);
}

}  // namespace
}  // namespace moe::transport
