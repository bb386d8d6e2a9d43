// Tensor parallelism's split of a model: each rank's part of the heads, widths and vocabulary, the
// refusals of sizes that do not split, and a projection's block equal to that part of the whole.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/error.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "model/tensor_shard.h"

namespace moe {
namespace {

const std::string kModelDir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";

void expect_range(IndexRange range, int64_t begin, int64_t count) {
  EXPECT_EQ(range.begin, begin);
  EXPECT_EQ(range.count, count);
}

TEST(TensorShard, HeadsAndWidthsSplitEvenly) {
  expect_range(TensorShard{1, 2}.even_part(64), 32, 32);
  expect_range(TensorShard{1, 2}.query_heads(4), 2, 2);
  expect_range(TensorShard{1, 2}.kv_heads(4, 2), 1, 1);
  expect_range(TensorShard{0, 1}.kv_heads(4, 2), 0, 2);
  EXPECT_THROW(TensorShard({0, 3}).even_part(64), Error);
}

TEST(TensorShard, RanksBeyondTheKvHeadsKeepTheOneTheirQueryHeadsRead) {
  // 8 query heads over 2 KV heads (query heads 0-3 read KV head 0, 4-7 KV head 1), 4 ranks.
  for (int rank = 0; rank < 4; ++rank) expect_range(TensorShard{rank, 4}.kv_heads(8, 2), rank / 2, 1);
}

TEST(TensorShard, VocabularyPartsCoverItAllTheLastOneShorter) {
  expect_range(TensorShard{0, 3}.vocab_part(10), 0, 4);
  expect_range(TensorShard{1, 3}.vocab_part(10), 4, 4);
  expect_range(TensorShard{2, 3}.vocab_part(10), 8, 2);
}

TEST(TensorShard, RefusesWhatDoesNotSplitNamingIt) {
  const ModelConfig config = load_model_config(kModelDir);  // 4 heads, 2 KV heads, widths 64 and 32
  EXPECT_EQ(tensor_parallel_refusal(config, 1), "");
  EXPECT_EQ(tensor_parallel_refusal(config, 2), "");
  EXPECT_EQ(tensor_parallel_refusal(config, 4), "");
  EXPECT_NE(tensor_parallel_refusal(config, 3).find("4 attention heads cannot be split evenly over 3"), std::string::npos);
  EXPECT_NE(tensor_parallel_refusal(config, 8).find("attention heads"), std::string::npos);
  ModelConfig odd = config;
  odd.moe_intermediate_size = 30;
  EXPECT_NE(tensor_parallel_refusal(odd, 4).find("moe_intermediate_size of 30"), std::string::npos);
  const ModelConfig local = local_attention_config(config, TensorShard{3, 4});
  EXPECT_EQ(local.num_attention_heads, 1);
  EXPECT_EQ(local.num_key_value_heads, 1);
}

TEST(RankShards, TensorByExpertRanksSplitTheRestOverAllAndTheExpertsByBoth) {
  // --tp-size 2 --ep-size 2: ranks 0 and 1 hold expert shard 0, each half of every expert's width.
  for (int rank = 0; rank < 4; ++rank) {
    const RankShards shards = rank_shards(rank, 4, 2);
    EXPECT_EQ(shards.dense.rank, rank);
    EXPECT_EQ(shards.dense.size, 4);
    EXPECT_EQ(shards.expert.rank, rank % 2);
    EXPECT_EQ(shards.expert.size, 2);
    EXPECT_EQ(shards.expert_shard, rank / 2);
  }
  // Tensor parallelism alone: every part the same.
  const RankShards alone = rank_shards(1, 2, 1);
  EXPECT_EQ(alone.expert.rank, 1);
  EXPECT_EQ(alone.expert.size, 2);
  EXPECT_EQ(alone.expert_shard, 0);
  EXPECT_THROW(rank_shards(0, 4, 3), Error);
  EXPECT_THROW(rank_shards(4, 4, 2), Error);
}

TEST(RankShards, RefusalsOfTensorByExpertRanksNameBothFlags) {
  const ModelConfig config = load_model_config(kModelDir);  // 4 heads, 2 KV heads, widths 64 and 32
  EXPECT_EQ(tensor_parallel_refusal(config, 2, 2), "");
  EXPECT_EQ(tensor_parallel_refusal(config, 1, 4), "");  // expert parallelism alone splits no tensor
  EXPECT_NE(tensor_parallel_refusal(config, 2, 3).find("4 attention heads cannot be split evenly over 6 ranks "
                                                       "(--tp-size 2 × --ep-size 3)"),
            std::string::npos);
  ModelConfig odd = config;
  odd.moe_intermediate_size = 30;  // splits over 2 (each expert's width) though not over 4
  EXPECT_EQ(tensor_parallel_refusal(odd, 2, 2), "");
  odd.intermediate_size = 66;  // the dense width splits over all 4 ranks
  EXPECT_NE(tensor_parallel_refusal(odd, 2, 2).find("intermediate_size of 66"), std::string::npos);
}

TEST(TensorShard, ProjectionBlockIsThatPartOfTheWhole) {
  const Checkpoint checkpoint = Checkpoint::open(kModelDir);
  const ModelConfig config = load_model_config(kModelDir);
  const std::string name = "model.layers.0.self_attn.o_proj.weight";  // [H, heads · head_dim]
  const int64_t rows = config.hidden_size, cols = int64_t{config.num_attention_heads} * config.head_dim;
  const WeightView whole = checkpoint.projection(name, rows, cols);
  const IndexRange row_part{0, rows}, col_part = TensorShard{1, 2}.even_part(cols);
  const WeightView block = checkpoint.projection_block(name, rows, cols, row_part, col_part);
  ASSERT_EQ(block.rows, rows);
  ASSERT_EQ(block.cols, col_part.count);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < block.cols; ++c) ASSERT_EQ(block.at(r, c), whole.at(r, col_part.begin + c)) << r << "," << c;
  const IndexRange top = TensorShard{1, 4}.even_part(rows);
  const WeightView row_block = checkpoint.projection_block(name, rows, cols, top, IndexRange{0, cols});
  for (int64_t r = 0; r < top.count; ++r)
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(row_block.at(r, c), whole.at(top.begin + r, c));
}

TEST(TensorShard, AQuantizedRowParallelBlockKeepsTheWholeRowsIntegersAndScales) {
  const ModelConfig config = load_model_config(kModelDir);
  const int64_t H = config.hidden_size, attention = int64_t{config.num_attention_heads} * config.head_dim;
  // Halves of the input columns: of an expert's down (32 columns, within one int4 group of 32) and of
  // o_proj (64 columns: whole groups of 32).
  const std::tuple<std::string, int64_t, int64_t> projections[] = {
      {"model.layers.0.mlp.experts.0.down_proj.weight", H, config.moe_intermediate_size},
      {"model.layers.0.self_attn.o_proj.weight", H, attention}};
  for (const Quantization quantization : {Quantization::Int8, Quantization::Int4}) {
    const Checkpoint checkpoint = Checkpoint::open(kModelDir, projection_format(std::nullopt, quantization, 32));
    for (const auto& [name, rows, cols] : projections) {
      const WeightView whole = checkpoint.projection(name, rows, cols);
      const IndexRange part = TensorShard{1, 2}.even_part(cols);
      const WeightView block = checkpoint.projection_block(name, rows, cols, IndexRange{0, rows}, part);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < part.count; ++c)
          ASSERT_EQ(block.at(r, c), whole.at(r, part.begin + c)) << quantization_name(quantization) << " " << name;
    }
  }
}

}  // namespace
}  // namespace moe
