// The grouped MoE runner with its shards in other ranks (threads here, each with its own host
// communicator over tcp://): every rank's output equals, bit for bit, the one-process runner that runs
// all the shards in turn, for uniform and random placements of 2 and 4 ranks.
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "collective/host_communicator.h"
#include "common/error.h"
#include "moe/moe_fixtures.h"
#include "moe/moe_runner.h"

namespace moe::collective {
namespace {

using namespace moe::testing;

TEST(GroupMoeRunner, EveryRankEqualsTheOneProcessShardsBitForBit) {
  const int64_t T = 23;
  const auto [experts, hidden, routing] = random_layer_input(DType::BF16, 3, T);
  for (int ranks : {2, 4})
    for (const ExpertPlacement& placement :
         {ExpertPlacement::uniform(kExperts, ranks), ExpertPlacement::random(kExperts, ranks, 9)}) {
      std::vector<float> one_process(hidden.size());
      MoeRunner::create(MoeBackend::Grouped, placement)
          ->run(hidden.data(), T, routing, experts.weights, one_process.data());
      auto run_rank = [&](HostCommunicator& group) {
        std::vector<float> out(hidden.size(), 42.0f);
        MoeRunner::create(MoeBackend::Grouped, placement, &group)
            ->run(hidden.data(), T, routing, experts.weights, out.data());
        return out;
      };
      GroupOptions options;
      options.endpoint = "tcp://127.0.0.1:*";
      options.size = ranks;
      HostCommunicator hub(options);
      std::vector<std::future<std::vector<float>>> others;
      for (int r = 1; r < ranks; ++r)
        others.push_back(std::async(std::launch::async, [&, r] {
          GroupOptions mine = options;
          mine.endpoint = hub.endpoint();
          mine.rank = r;
          HostCommunicator member(mine);
          member.join();
          return run_rank(member);
        }));
      hub.join();
      EXPECT_EQ(run_rank(hub), one_process) << ranks << " ranks, rank 0";
      for (int r = 1; r < ranks; ++r) EXPECT_EQ(others[r - 1].get(), one_process) << ranks << " ranks, rank " << r;
    }
}

TEST(GroupMoeRunner, ShardRunnersLeaveTheirPartialsWhoseSumIsTheOneProcessRunnersBitForBit) {
  const int64_t T = 23;
  const auto [experts, hidden, routing] = random_layer_input(DType::BF16, 5, T);
  const ExpertPlacement placement = ExpertPlacement::random(kExperts, 4, 11);
  std::vector<float> one_process(hidden.size());
  MoeRunner::create(MoeBackend::Grouped, placement)->run(hidden.data(), T, routing, experts.weights, one_process.data());
  std::vector<float> sum(hidden.size(), 0.0f), partial(hidden.size());
  for (int shard = 0; shard < placement.ep_size(); ++shard) {
    MoeRunner::create_for_shard(MoeBackend::Auto, placement, shard)
        ->run(hidden.data(), T, routing, experts.weights, partial.data());
    // In shard order from shard 0's partial, as the one-process runner adds its devices.
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = shard == 0 ? partial[i] : sum[i] + partial[i];
  }
  EXPECT_EQ(sum, one_process);
  EXPECT_THROW(MoeRunner::create_for_shard(MoeBackend::Reference, placement, 0), Error);
  EXPECT_THROW(MoeRunner::create_for_shard(MoeBackend::Grouped, placement, 4), Error);
}

TEST(GroupMoeRunner, TheReferenceRunnerAndAPlacementOfAnotherSizeAreRefused) {
  GroupOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  options.size = 2;
  HostCommunicator hub(options);  // never joined: the runners are refused before any collective
  EXPECT_THROW(MoeRunner::create(MoeBackend::Reference, ExpertPlacement::uniform(kExperts, 2), &hub), Error);
  EXPECT_THROW(MoeRunner::create(MoeBackend::Grouped, ExpertPlacement::uniform(kExperts, 4), &hub), Error);
}

}  // namespace
}  // namespace moe::collective
