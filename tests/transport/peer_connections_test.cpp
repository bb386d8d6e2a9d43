// Which ROUTER peer spoke on which connection, from the monitor's events (no sockets).
#include <gtest/gtest.h>

#include "transport/peer_connections.h"

namespace moe::transport {
namespace {

using Peers = std::vector<std::string>;

TEST(PeerConnections, ClosingAConnectionReportsEveryPeerThatSpokeOnIt) {
  PeerConnections connections;
  connections.accepted(7);
  connections.accepted(8);
  EXPECT_TRUE(connections.heard_from("a", 7));
  EXPECT_TRUE(connections.heard_from("b", 8));
  EXPECT_EQ(connections.closed(7), Peers{"a"});
  EXPECT_EQ(connections.closed(7), Peers{});  // reported once
  EXPECT_EQ(connections.closed(8), Peers{"b"});
}

TEST(PeerConnections, AReusedDescriptorIsANewConnection) {
  PeerConnections connections;
  connections.accepted(7);
  EXPECT_TRUE(connections.heard_from("old", 7));
  EXPECT_EQ(connections.closed(7), Peers{"old"});
  connections.accepted(7);
  EXPECT_TRUE(connections.heard_from("new", 7));
  EXPECT_EQ(connections.closed(7), Peers{"new"});
}

TEST(PeerConnections, AMessageReadAfterItsConnectionClosedMeansThePeerIsGone) {
  PeerConnections connections;
  connections.accepted(7);
  EXPECT_EQ(connections.closed(7), Peers{});
  EXPECT_FALSE(connections.heard_from("quick", 7));
  connections.accepted(7);
  EXPECT_TRUE(connections.heard_from("next", 7));
}

TEST(PeerConnections, ADescriptorNoEventNamedCountsAsOpen) {
  PeerConnections connections;
  EXPECT_TRUE(connections.heard_from("early", 5));  // accepted before the monitor started
  EXPECT_EQ(connections.closed(5), Peers{"early"});
}

TEST(PeerConnections, InprocPeersAreNeverTracked) {
  PeerConnections connections;
  EXPECT_TRUE(connections.heard_from("local", -1));
  EXPECT_EQ(connections.closed(-1), Peers{});
  EXPECT_TRUE(connections.heard_from("local", -1));
}

TEST(PeerConnections, APeerThatMovedToAnotherConnectionIsReportedWithItsLatest) {
  PeerConnections connections;
  for (const int fd : {7, 9}) EXPECT_TRUE(connections.heard_from("p", fd));
  EXPECT_EQ(connections.closed(7), Peers{});
  EXPECT_EQ(connections.closed(9), Peers{"p"});
}

}  // namespace
}  // namespace moe::transport
