// TorchRendezvous against the TCPStore server of store_server.h, the test playing the trainer's
// rank 0 as torch 2.x does: it waits for the engine's count under "init/", then publishes the NCCL
// unique id under the key its prefix stores make for a group of SGLang's init_custom_process_group.
#include <gtest/gtest.h>

#include <thread>

#include "collective/store_server.h"
#include "collective/tcp_store_client.h"
#include "collective/torch_rendezvous.h"

namespace moe::collective {
namespace {

using namespace std::chrono_literals;

TEST(TorchRendezvous, KeysAreThoseOfTorchsPrefixStores) {
  // PrefixStore("g") over PrefixStore("g/") over PrefixStore("cuda/"), key "0", TCPStore's "/" first.
  EXPECT_EQ(torch_nccl_id_key("g", 0), "/g/g//cuda//0");
  EXPECT_EQ(torch_nccl_id_key("weight_update_group", 2), "/weight_update_group/weight_update_group//cuda//2");
}

TEST(TorchRendezvous, CountsItselfInAndReadsTheIdRankZeroPublishesLater) {
  test::StoreServer server;
  server.start();
  const std::string id(128, '\x07');  // NCCL_UNIQUE_ID_BYTES
  std::thread trainer([&] {
    TcpStoreClient rank0("127.0.0.1", server.port(), 10s);
    // TCPStore's rank 0 waits for the world (itself and the engine) under the raw key "init/".
    EXPECT_EQ(rank0.add(kTorchWorkerCountKey, 1) >= 1, true);
    while (server.value(kTorchWorkerCountKey) != std::optional<std::string>("2")) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(200ms);  // the first collective comes later
    rank0.set("/g/g//cuda//0", std::vector<uint8_t>(id.begin(), id.end()));
  });
  TorchRendezvous engine("127.0.0.1", server.port(), 10s);
  const std::atomic<bool> stop{false};
  EXPECT_EQ(engine.nccl_unique_id("g", 0, stop), id);
  trainer.join();
}

TEST(TorchRendezvous, AWaitForTheIdEndsWhenStopped) {
  test::StoreServer server;
  server.start();
  TorchRendezvous engine("127.0.0.1", server.port(), 10s);
  EXPECT_EQ(server.value(kTorchWorkerCountKey), std::optional<std::string>("1"));
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop = true;
  });
  EXPECT_FALSE(engine.nccl_unique_id("g", 0, stop));
  stopper.join();
}

}  // namespace
}  // namespace moe::collective
