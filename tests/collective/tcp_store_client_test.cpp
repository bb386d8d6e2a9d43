// TcpStoreClient against a TCPStore server written here from the protocol's description
// (store_server.h): query bytes, lengths and answers as torch 2.x puts them on the wire.
#include <gtest/gtest.h>

#include <thread>

#include "collective/store_server.h"
#include "collective/tcp_store_client.h"
#include "common/error.h"

namespace moe::collective {
namespace {

using namespace std::chrono_literals;
using test::StoreServer;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

TEST(TcpStoreClient, SpeaksTheWireFormatAndRoundTrips) {
  StoreServer server;
  server.start();
  TcpStoreClient client("127.0.0.1", server.port(), 5s);
  client.set("k", bytes_of("ab"));
  EXPECT_EQ(client.get("k"), bytes_of("ab"));
  EXPECT_EQ(client.add("init/", 1), 1);
  EXPECT_EQ(client.add("init/", 2), 3);
  EXPECT_EQ(client.get("init/"), bytes_of("3"));  // counters are decimal text, as torch keeps them
  EXPECT_TRUE(client.check({"k", "init/"}));
  EXPECT_FALSE(client.check({"k", "absent"}));
  EXPECT_TRUE(server.validated());
  // VALIDATE + magic, then SET: type 1, key length 1 (u64) + "k", value length 2 (u64) + "ab".
  const std::vector<uint8_t> expected_head = {0,    0xCE, 0xF7, 0x85, 0x3C, 1, 1, 0, 0, 0, 0, 0, 0, 0,
                                              'k', 2,    0,    0,    0,    0, 0, 0, 0, 'a', 'b'};
  const std::vector<uint8_t> seen = server.first_connection_bytes();
  ASSERT_GE(seen.size(), expected_head.size());
  EXPECT_EQ(std::vector<uint8_t>(seen.begin(), seen.begin() + static_cast<long>(expected_head.size())), expected_head);
}

TEST(TcpStoreClient, GetWaitsForAKeyAnotherRankSets) {
  StoreServer server;
  server.start();
  TcpStoreClient reader("127.0.0.1", server.port(), 10s);
  std::thread writer([&] {
    std::this_thread::sleep_for(200ms);
    TcpStoreClient rank0("127.0.0.1", server.port(), 10s);
    rank0.set("group//0", bytes_of("unique-id"));
  });
  EXPECT_EQ(reader.get("group//0"), bytes_of("unique-id"));
  writer.join();
}

TEST(TcpStoreClient, AWaitPastTheTimeoutIsCancelledAndNamesTheKeys) {
  StoreServer server;
  server.start();
  TcpStoreClient client("127.0.0.1", server.port(), 300ms);
  try {
    client.wait({"never"});
    ADD_FAILURE() << "the wait returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("never"), std::string::npos) << e.what();
  }
  client.set("after", bytes_of("x"));  // the connection is still in step
  EXPECT_TRUE(client.check({"after"}));
}

TEST(TcpStoreClient, ConnectingRetriesUntilTheStoreOpensAndNamesTheAddressWhenItNeverDoes) {
  StoreServer late;
  std::thread opener([&] {
    std::this_thread::sleep_for(300ms);
    late.start();
  });
  TcpStoreClient client("127.0.0.1", late.port(), 5s);
  opener.join();
  client.set("a", bytes_of("1"));
  EXPECT_TRUE(client.check({"a"}));

  uint16_t closed_port = 0;
  {
    StoreServer gone;  // bound, never listening, then closed: nothing accepts there
    closed_port = gone.port();
  }
  try {
    TcpStoreClient never("127.0.0.1", closed_port, 300ms);
    ADD_FAILURE() << "connected to a closed port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(closed_port)), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::collective
