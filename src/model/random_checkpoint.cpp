#include "model/random_checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "model/architecture.h"
#include "model/model_config.h"
#include "model/random_element.h"

namespace moe {
namespace {

// One tensor as it is written: a float tensor of the manifest, or one of the GPTQ tensors that
// stand for a projection (docs/quantization.md).
struct PlannedTensor {
  enum class Kind { Float, QWeight, QZeros, Scales, GroupIndex };
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::BF16;
  Kind kind = Kind::Float;
  TensorSpec::Init init = TensorSpec::Init::Projection;
  int64_t fan_in = 0;  // the input features of the matrix it belongs to
};

// The float32 value of a uniform draw in [low, low + width).
float uniform(uint64_t bits, float low, float width) {
  return low + width / static_cast<float>(1u << 24) * static_cast<float>(bits >> 40);
}

// Uniform noise with the standard deviation each kind of tensor needs: unit-scale embeddings,
// 1/sqrt(fan_in) projections, and routers wide enough (3/sqrt(H)) that routing is decisive but
// spread over every expert.
RandomElementRule float_rule(TensorSpec::Init init, int64_t fan_in, uint64_t stream) {
  double mean = 0.0, stddev = 1.0;
  switch (init) {
    case TensorSpec::Init::Embedding: stddev = 1.0; break;
    case TensorSpec::Init::Projection: stddev = 1.0 / std::sqrt(static_cast<double>(fan_in)); break;
    case TensorSpec::Init::Router: stddev = 3.0 / std::sqrt(static_cast<double>(fan_in)); break;
    case TensorSpec::Init::NormScale: mean = 1.0; stddev = 0.1; break;
    case TensorSpec::Init::Bias: stddev = 0.1; break;
  }
  const float half_width = static_cast<float>(std::sqrt(3.0) * stddev);  // uniform [-a, a]: stddev a / sqrt(3)
  return {stream, static_cast<float>(mean) - half_width, 2.0f * half_width / static_cast<float>(1u << 24)};
}

// Tensor `index`'s draws: its elements are mix64(stream + i).
uint64_t tensor_stream(uint64_t seed, size_t index) { return mix64(seed * 0x9E3779B97F4A7C15ull + index); }

// A GPTQ tensor's element i: random packed integers, the symmetric zero point 2^(bits-1) stored
// minus one in every field, column / group_size, and scales spread ±25% about the one that gives
// uniform integers (standard deviation sqrt((4^bits - 1) / 12)) the projection's 1/sqrt(fan_in).
uint32_t gptq_word(const PlannedTensor& t, const RandomCheckpointOptions& options, uint64_t bits, int64_t i) {
  const int b = options.gptq_bits;
  switch (t.kind) {
    case PlannedTensor::Kind::QWeight: return static_cast<uint32_t>(bits);
    case PlannedTensor::Kind::QZeros: {
      uint32_t word = 0;
      for (int k = 0; k < 32 / b; ++k) word |= ((1u << (b - 1)) - 1) << (b * k);
      return word;
    }
    case PlannedTensor::Kind::GroupIndex:
      return static_cast<uint32_t>(options.gptq_group_size == -1 ? 0 : i / options.gptq_group_size);
    case PlannedTensor::Kind::Scales: {
      const double integer_stddev = std::sqrt((std::pow(4.0, b) - 1.0) / 12.0);
      const float mean = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.fan_in)) / integer_stddev);
      return float_to_f16(uniform(bits, 0.75f * mean, 0.5f * mean));
    }
    case PlannedTensor::Kind::Float: break;
  }
  return 0;
}

void fill_random(const PlannedTensor& t, const RandomCheckpointOptions& options, size_t index, uint8_t* bytes,
                 int64_t begin, int64_t end) {
  const uint64_t stream = tensor_stream(options.seed, index);
  const RandomElementRule rule = float_rule(t.init, t.fan_in, stream);
  const size_t size = dtype_size(t.dtype);
  for (int64_t i = begin; i < end; ++i) {
    uint8_t* to = bytes + size * static_cast<size_t>(i);
    if (t.kind != PlannedTensor::Kind::Float) {
      const uint32_t word = gptq_word(t, options, mix64(stream + static_cast<uint64_t>(i)), i);
      std::memcpy(to, &word, size);  // little-endian: an F16 scale is the word's low half
    } else if (t.dtype == DType::BF16) {
      const uint16_t half = float_to_bf16(random_element(rule, i));
      std::memcpy(to, &half, 2);
    } else {
      const float value = random_element(rule, i);
      std::memcpy(to, &value, 4);
    }
  }
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

int64_t byte_count(const PlannedTensor& t) { return element_count(t.shape) * static_cast<int64_t>(dtype_size(t.dtype)); }

// Fills every tensor of one shard, each thread taking an equal slice of the shard's elements.
void fill_shard(const std::vector<PlannedTensor>& planned, const std::vector<size_t>& members,
                const RandomCheckpointOptions& options, std::vector<TensorToWrite>& tensors) {
  int64_t total = 0;
  for (size_t i : members) total += element_count(planned[i].shape);
  const int num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto fill_range = [&](int64_t range_begin, int64_t range_end) {
    int64_t tensor_start = 0;
    for (size_t m = 0; m < members.size(); ++m) {
      const int64_t count = element_count(planned[members[m]].shape);
      const int64_t begin = std::max(range_begin, tensor_start), end = std::min(range_end, tensor_start + count);
      if (begin < end)
        fill_random(planned[members[m]], options, members[m], tensors[m].bytes.data(), begin - tensor_start,
                    end - tensor_start);
      tensor_start += count;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < num_threads; ++t) threads.emplace_back(fill_range, total * t / num_threads, total * (t + 1) / num_threads);
  fill_range(0, total / num_threads);
  for (std::thread& thread : threads) thread.join();
}

// What write_random_checkpoint writes for the manifest: each tensor in the float dtype, or, for a
// GPTQ checkpoint, each projection as its four GPTQ tensors.
std::vector<PlannedTensor> plan(const std::vector<TensorSpec>& specs, const RandomCheckpointOptions& options) {
  std::vector<PlannedTensor> planned;
  for (const TensorSpec& spec : specs) {
    const int64_t fan_in = spec.shape.back();
    if (!options.gptq_bits || !spec.projection) {
      planned.push_back({spec.name, spec.shape, options.dtype, PlannedTensor::Kind::Float, spec.init, fan_in});
      continue;
    }
    const int pack = 32 / options.gptq_bits;
    const int64_t rows = spec.shape[0], cols = spec.shape[1];
    const int64_t group = options.gptq_group_size == -1 ? cols : options.gptq_group_size;
    const int64_t groups = (cols + group - 1) / group;
    if (rows % pack != 0 || cols % pack != 0)
      throw Error("write_random_checkpoint: " + spec.name + " cannot be packed " + std::to_string(pack) +
                  " values to an int32");
    const std::string module = spec.name.substr(0, spec.name.size() - std::string(".weight").size());
    using Kind = PlannedTensor::Kind;
    planned.push_back({module + ".qweight", {cols / pack, rows}, DType::I32, Kind::QWeight, spec.init, fan_in});
    planned.push_back({module + ".qzeros", {groups, rows / pack}, DType::I32, Kind::QZeros, spec.init, fan_in});
    planned.push_back({module + ".scales", {groups, rows}, DType::F16, Kind::Scales, spec.init, fan_in});
    planned.push_back({module + ".g_idx", {cols}, DType::I32, Kind::GroupIndex, spec.init, fan_in});
  }
  return planned;
}

}  // namespace

TensorToWrite make_tensor(std::string name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values) {
  TensorToWrite t{std::move(name), dtype, std::move(shape), {}};
  t.bytes.resize(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(t.bytes.data() + 4 * i, &values[i], 4);
    } else if (dtype == DType::BF16) {
      const uint16_t b = float_to_bf16(values[i]);
      std::memcpy(t.bytes.data() + 2 * i, &b, 2);
    } else {
      throw Error("make_tensor: F16 output is not supported");
    }
  }
  return t;
}

std::vector<std::vector<size_t>> plan_shards(const std::vector<int64_t>& tensor_bytes, int64_t shard_bytes) {
  std::vector<std::vector<size_t>> shards(1);
  int64_t shard_size = 0;
  for (size_t i = 0; i < tensor_bytes.size(); ++i) {
    if (!shards.back().empty() && shard_size + tensor_bytes[i] > shard_bytes) {
      shards.emplace_back();
      shard_size = 0;
    }
    shards.back().push_back(i);
    shard_size += tensor_bytes[i];
  }
  return shards;
}

std::string shard_file_name(size_t shard, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", shard + 1, count);
  return name;
}

void write_checkpoint_index(const std::string& out_dir, const nlohmann::json& weight_map) {
  std::ofstream(out_dir + "/model.safetensors.index.json")
      << nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump(2) << "\n";
}

TensorToWrite make_integer_tensor(std::string name, DType dtype, const std::vector<int64_t>& values) {
  if (dtype != DType::I64 && dtype != DType::Bool) throw Error("make_integer_tensor: I64 or Bool only");
  TensorToWrite t{std::move(name), dtype, {static_cast<int64_t>(values.size())}, {}};
  t.bytes.resize(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::I64)
      std::memcpy(t.bytes.data() + 8 * i, &values[i], 8);  // little-endian, as safetensors
    else
      t.bytes[i] = values[i] != 0 ? 1 : 0;
  }
  return t;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write " + path);
  const uint64_t header_len = text.size();
  out.write(reinterpret_cast<const char*>(&header_len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!out) throw Error("failed writing " + path);
}

std::vector<TensorSpec> checkpoint_manifest(const ModelConfig& c) {
  using Init = TensorSpec::Init;
  const ModelPlan model = model_plan(c);
  const int64_t H = c.hidden_size;
  const int64_t q_width = static_cast<int64_t>(c.num_attention_heads) * c.head_dim;
  const int64_t kv_width = static_cast<int64_t>(c.num_key_value_heads) * c.head_dim;
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape, Init init, bool projection = false) {
    specs.push_back({std::move(name), std::move(shape), init, projection});
  };
  auto add_mlp = [&](const MlpTensorNames& mlp, int64_t width) {
    add(mlp.gate, {width, H}, Init::Projection, true);
    add(mlp.up, {width, H}, Init::Projection, true);
    add(mlp.down, {H, width}, Init::Projection, true);
  };
  auto add_gqa = [&](const AttentionTensorNames& n) {
    add(n.q_weight, {q_width, H}, Init::Projection, true);
    add(n.k_weight, {kv_width, H}, Init::Projection, true);
    add(n.v_weight, {kv_width, H}, Init::Projection, true);
    add(n.o_weight, {H, q_width}, Init::Projection, true);
    if (!n.q_bias.empty()) {
      add(n.q_bias, {q_width}, Init::Bias);
      add(n.k_bias, {kv_width}, Init::Bias);
      add(n.v_bias, {kv_width}, Init::Bias);
    }
    if (!n.q_norm.empty()) {
      add(n.q_norm, {c.head_dim}, Init::NormScale);
      add(n.k_norm, {c.head_dim}, Init::NormScale);
    }
  };
  auto add_mla = [&](const MlaTensorNames& n) {
    const MlaConfig& m = *c.mla;
    const int64_t heads = c.num_attention_heads;
    if (n.q_weight.empty()) {
      add(n.q_a_weight, {m.q_lora_rank, H}, Init::Projection, true);
      add(n.q_a_norm, {m.q_lora_rank}, Init::NormScale);
      add(n.q_b_weight, {heads * m.qk_head_dim(), m.q_lora_rank}, Init::Projection, true);
    } else {
      add(n.q_weight, {heads * m.qk_head_dim(), H}, Init::Projection, true);
    }
    add(n.kv_a_weight, {m.kv_lora_rank + m.qk_rope_head_dim, H}, Init::Projection, true);
    add(n.kv_a_norm, {m.kv_lora_rank}, Init::NormScale);
    add(n.kv_b_weight, {heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank}, Init::Projection, true);
    add(n.o_weight, {H, heads * m.v_head_dim}, Init::Projection, true);
  };
  auto add_moe = [&](const MoeTensorNames& n) {
    add(n.router, {c.num_experts, H}, Init::Router);
    if (!n.correction_bias.empty()) add(n.correction_bias, {c.num_experts}, Init::Bias);
    for (const MlpTensorNames& expert : n.experts) add_mlp(expert, c.moe_intermediate_size);
    if (n.shared_expert) add_mlp(*n.shared_expert, c.shared_expert_intermediate_size);
    if (!n.shared_gate.empty()) add(n.shared_gate, {1, H}, Init::Projection);
  };
  add(model.embedding, {c.vocab_size, H}, Init::Embedding);
  add(model.final_norm, {H}, Init::NormScale);
  if (!model.lm_head.empty()) add(model.lm_head, {c.vocab_size, H}, Init::Router);
  auto add_layer = [&](const LayerPlan& layer) {
    add(layer.input_norm, {H}, Init::NormScale);
    add(layer.post_attention_norm, {H}, Init::NormScale);
    switch (layer.attention) {
      case AttentionKind::Gqa: add_gqa(layer.gqa); break;
      case AttentionKind::Mla: add_mla(layer.mla); break;
    }
    switch (layer.ffn) {
      case FfnKind::Dense: add_mlp(layer.mlp, c.intermediate_size); break;
      case FfnKind::Moe: add_moe(layer.moe); break;
    }
  };
  for (const LayerPlan& layer : model.layers) add_layer(layer);
  // Last, so the tensors before it keep their index, hence their random bytes, with or without it.
  if (model.nextn) {
    const NextnPlan& n = *model.nextn;
    add(n.embedding, {c.vocab_size, H}, Init::Embedding);
    add(n.enorm, {H}, Init::NormScale);
    add(n.hnorm, {H}, Init::NormScale);
    add(n.eh_proj, {H, 2 * H}, Init::Projection, true);
    add_layer(n.layer);
    add(n.shared_head_norm, {H}, Init::NormScale);
    add(n.shared_head, {c.vocab_size, H}, Init::Router);
  }
  return specs;
}

std::map<std::string, RandomTensorRecipe> random_tensor_recipes(const ModelConfig& config, uint64_t seed) {
  const std::vector<TensorSpec> manifest = checkpoint_manifest(config);
  std::map<std::string, RandomTensorRecipe> recipes;
  for (size_t i = 0; i < manifest.size(); ++i)
    recipes[manifest[i].name] = {manifest[i].shape,
                                 float_rule(manifest[i].init, manifest[i].shape.back(), tensor_stream(seed, i))};
  return recipes;
}

std::vector<TensorToWrite> random_tensors(const ModelConfig& config, const RandomCheckpointOptions& options) {
  return random_tensors_of(checkpoint_manifest(config), options);
}

std::vector<TensorToWrite> random_tensors_of(const std::vector<TensorSpec>& manifest,
                                             const RandomCheckpointOptions& options) {
  if (options.gptq_bits != 0) throw Error("random_tensors: float tensors only");
  const std::vector<PlannedTensor> planned = plan(manifest, options);
  std::vector<TensorToWrite> tensors;
  std::vector<size_t> members;
  for (size_t i = 0; i < planned.size(); ++i) {
    tensors.push_back({planned[i].name, planned[i].dtype, planned[i].shape, {}});
    tensors.back().bytes.resize(static_cast<size_t>(byte_count(planned[i])));
    members.push_back(i);
  }
  fill_shard(planned, members, options, tensors);
  return tensors;
}

void write_random_checkpoint(const nlohmann::json& config, const std::string& out_dir,
                             const RandomCheckpointOptions& options) {
  namespace fs = std::filesystem;
  if (options.dtype == DType::F16) throw Error("write_random_checkpoint: F16 output is not supported");
  if (options.gptq_bits != 0 && options.gptq_bits != 4 && options.gptq_bits != 8)
    throw Error("write_random_checkpoint: GPTQ checkpoints of 4 or 8 bits, not " + std::to_string(options.gptq_bits));
  fs::create_directories(out_dir);
  nlohmann::json written = config;
  if (options.gptq_bits)
    written["quantization_config"] = {{"quant_method", "gptq"}, {"bits", options.gptq_bits},
                                      {"group_size", options.gptq_group_size}, {"sym", true}, {"desc_act", false},
                                      {"checkpoint_format", "gptq"}};
  std::ofstream(out_dir + "/config.json") << written.dump(2) << "\n";
  const std::vector<PlannedTensor> planned = plan(checkpoint_manifest(load_model_config(out_dir)), options);

  std::vector<int64_t> sizes;
  for (const PlannedTensor& t : planned) sizes.push_back(byte_count(t));
  const std::vector<std::vector<size_t>> shards = plan_shards(sizes, options.shard_bytes);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shard_file_name(s, shards.size());
    std::vector<TensorToWrite> tensors;
    for (size_t i : shards[s]) {
      tensors.push_back({planned[i].name, planned[i].dtype, planned[i].shape, {}});
      tensors.back().bytes.resize(static_cast<size_t>(byte_count(planned[i])));
      weight_map[planned[i].name] = name;
    }
    fill_shard(planned, shards[s], options, tensors);
    write_safetensors(out_dir + "/" + name, tensors);
  }
  write_checkpoint_index(out_dir, weight_map);
}

}  // namespace moe
