#include "support/eagle3_heads.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/json_file.h"
#include "model/architectures/llama_eagle3.h"
#include "model/eagle3_config.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace moe::testing {

namespace fs = std::filesystem;

std::string eagle3_test_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("moe_eagle3_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string random_eagle3_head(const std::string& target_dir, const std::string& name,
                               const RandomEagle3HeadOptions& options) {
  const std::string dir = eagle3_test_dir(name);
  if (!fs::exists(fs::path(dir) / "model.safetensors"))
    write_random_eagle3_head(load_model_config(target_dir), dir, options);
  return dir;
}

std::string edited_eagle3_head(const std::string& source, const std::string& name,
                               const std::function<void(nlohmann::json&)>& edit_config,
                               const std::function<void(const std::string&, std::vector<float>&)>& edit_tensor,
                               const std::vector<int64_t>& d2t) {
  const std::string dir = eagle3_test_dir(name);
  fs::create_directories(dir);
  const Eagle3Config head = load_eagle3_config(source);
  const Checkpoint ckpt = Checkpoint::open(source);
  std::vector<TensorToWrite> tensors;
  for (const TensorSpec& spec : eagle3_head_manifest(head)) {
    std::vector<float> values = ckpt.floats(spec.name, spec.shape);
    edit_tensor(spec.name, values);
    tensors.push_back(make_tensor(spec.name, DType::F32, spec.shape, values));
  }
  const Eagle3Plan plan = eagle3_plan();
  if (!d2t.empty())
    tensors.push_back(make_integer_tensor(plan.d2t, DType::I64, d2t));
  else if (ckpt.has(plan.d2t))
    tensors.push_back(make_integer_tensor(plan.d2t, DType::I64, ckpt.int64s(plan.d2t, head.draft_vocab_size)));
  write_safetensors(dir + "/model.safetensors", tensors);
  nlohmann::json config = read_json_file(source + "/config.json");
  edit_config(config);
  std::ofstream(dir + "/config.json") << config.dump(2) << "\n";
  return dir;
}

}  // namespace moe::testing
