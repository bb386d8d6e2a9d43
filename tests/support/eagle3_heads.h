#pragma once
// EAGLE-3 heads written for tests over tests/data/qwen3-moe-tiny: random ones (moe-make-checkpoint's
// writer) and copies with some tensors or config fields replaced.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/random_eagle3_head.h"

namespace moe::testing {

// A fresh directory under the temporary directory, named after `name` and this process.
std::string eagle3_test_dir(const std::string& name);

// A random head for the target in target_dir, written into eagle3_test_dir(name) once per process.
std::string random_eagle3_head(const std::string& target_dir, const std::string& name,
                               const RandomEagle3HeadOptions& options);

// A copy of the head in `source` as `name`: config.json passed through edit_config, each float tensor
// through edit_tensor(name, values) (shape as eagle3_head_manifest says), and d2t replaced by `d2t`
// when given (empty: as it was, or none).
std::string edited_eagle3_head(const std::string& source, const std::string& name,
                               const std::function<void(nlohmann::json&)>& edit_config,
                               const std::function<void(const std::string&, std::vector<float>&)>& edit_tensor,
                               const std::vector<int64_t>& d2t = {});

}  // namespace moe::testing
