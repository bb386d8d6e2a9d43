#include "model/random_eagle3_head.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "model/architectures/llama_eagle3.h"
#include "model/eagle3_config.h"
#include "model/model_config.h"

namespace moe {
std::vector<TensorSpec> eagle3_head_manifest(const Eagle3Config& head) {
  using Init = TensorSpec::Init;
  const Eagle3Plan plan = eagle3_plan();
  const ModelConfig& c = head.layer;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t q = int64_t{c.num_attention_heads} * c.head_dim, kv = int64_t{c.num_key_value_heads} * c.head_dim;
  return {
      {plan.fc, {H, 3 * head.target_hidden_size}, Init::Projection, true},
      {plan.input_norm, {H}, Init::NormScale, false},
      {plan.hidden_norm, {H}, Init::NormScale, false},
      {plan.attention.q_weight, {q, 2 * H}, Init::Projection, true},
      {plan.attention.k_weight, {kv, 2 * H}, Init::Projection, true},
      {plan.attention.v_weight, {kv, 2 * H}, Init::Projection, true},
      {plan.attention.o_weight, {H, q}, Init::Projection, true},
      {plan.post_attention_norm, {H}, Init::NormScale, false},
      {plan.mlp.gate, {I, H}, Init::Projection, true},
      {plan.mlp.up, {I, H}, Init::Projection, true},
      {plan.mlp.down, {H, I}, Init::Projection, true},
      {plan.norm, {H}, Init::NormScale, false},
      {plan.lm_head, {head.draft_vocab_size, H}, Init::Router, false},
  };
}

void write_random_eagle3_head(const ModelConfig& target, const std::string& out_dir,
                              const RandomEagle3HeadOptions& options) {
  const int64_t V = target.vocab_size;
  const int64_t draft_vocab = options.draft_vocab_size > 0 ? options.draft_vocab_size : V;
  if (draft_vocab > V) throw Error("write_random_eagle3_head: a draft vocabulary larger than the target's");
  nlohmann::json config = {
      {"architectures", {kEagle3Architecture}},
      {"model_type", "llama"},
      {"hidden_size", target.hidden_size},
      {"target_hidden_size", target.hidden_size},
      {"intermediate_size", target.intermediate_size > 0 ? target.intermediate_size : 2 * target.hidden_size},
      {"num_hidden_layers", 1},
      {"num_attention_heads", target.num_attention_heads},
      {"num_key_value_heads", target.num_key_value_heads},
      {"head_dim", target.head_dim},
      {"hidden_act", "silu"},
      {"rms_norm_eps", target.rms_norm_eps},
      {"rope_theta", target.rope_theta},
      {"max_position_embeddings", target.max_position_embeddings},
      {"tie_word_embeddings", false},
      {"vocab_size", V},
      {"draft_vocab_size", draft_vocab},
  };
  if (!options.aux_layer_ids.empty())
    config["eagle_config"] = {{"eagle_aux_hidden_state_layer_ids", options.aux_layer_ids},
                              {"use_aux_hidden_state", true}};
  std::filesystem::create_directories(out_dir);
  std::ofstream(out_dir + "/config.json") << config.dump(2) << "\n";
  RandomCheckpointOptions random;
  random.seed = options.seed;
  random.dtype = options.dtype;
  std::vector<TensorToWrite> tensors = random_tensors_of(eagle3_head_manifest(load_eagle3_config(out_dir)), random);
  if (draft_vocab < V) {
    const Eagle3Plan plan = eagle3_plan();
    std::vector<int64_t> d2t(static_cast<size_t>(draft_vocab)), t2d(static_cast<size_t>(V), 0);
    for (int64_t d = 0; d < draft_vocab; ++d) {
      const int64_t target_id = d * V / draft_vocab;
      d2t[static_cast<size_t>(d)] = target_id - d;
      t2d[static_cast<size_t>(target_id)] = 1;
    }
    tensors.push_back(make_integer_tensor(plan.d2t, DType::I64, d2t));
    tensors.push_back(make_integer_tensor(plan.t2d, DType::Bool, t2d));
  }
  write_safetensors(out_dir + "/model.safetensors", tensors);
}

}  // namespace moe
