// examples/routed_experts.py, the Python helper users decode replies with, run by /usr/bin/python3:
// its self-test, and its decoding of a real reply (base64 int16 ids and float16 weights) against
// the golden routing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_serving_test.h"

namespace moe::testing {
namespace {

using PythonDecoder = GoldenServingTest;

const std::string kHelper = std::string(MOE_TEST_DATA_DIR) + "/../../examples/routed_experts.py";

int run_helper(const std::string& arguments) {
  return std::system(("/usr/bin/python3 " + kHelper + " " + arguments + " > /dev/null").c_str());
}

nlohmann::json encoded(const msg::EncodedArray& array) {
  return {{"data", array.data}, {"shape", array.shape}, {"dtype", array.dtype}};
}

TEST(PythonDecoderSelfTest, Passes) { EXPECT_EQ(run_helper("--self-test"), 0); }

TEST_F(PythonDecoder, DecodesARealReplyToTheGoldenRowsAndWeights) {
  auto h = make_pipeline({});
  const size_t c = 7;  // no router near-tie in this case: ids and weights must match exactly / closely
  auto request = greedy_request("py", golden_.cases[c].prompt_ids, golden_.max_new_tokens);
  request.routing.raw = false;
  request.routing.return_router_weights = true;
  request.routing.weights_dtype = msg::RouterWeightsDtype::Float16;
  const auto outputs = h->run({request});
  ASSERT_EQ(outputs.size(), 1u);
  const auto ids = encoded(*outputs[0].routed_experts), weights = encoded(*outputs[0].router_weights);

  const int64_t rows = outputs[0].routed_experts->shape[0];
  const auto& golden_case = golden_.cases[c];
  nlohmann::json file = {
      {"meta_info",
       {{"routed_experts", ids["data"]}, {"routed_experts_shape", ids["shape"]}, {"routed_experts_dtype", ids["dtype"]},
        {"router_weights", weights["data"]}, {"router_weights_shape", weights["shape"]},
        {"router_weights_dtype", weights["dtype"]}}},
      {"expected_routed_experts", std::vector(golden_case.routed_experts.begin(), golden_case.routed_experts.begin() + rows)},
      {"expected_router_weights", std::vector(golden_case.routed_weights.begin(), golden_case.routed_weights.begin() + rows)}};
  const auto path = std::filesystem::temp_directory_path() / ("moe_python_decoder_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << file.dump();
  EXPECT_EQ(run_helper("--check " + path.string()), 0);
  // A wrong expectation must fail: the check is not vacuous.
  file["expected_routed_experts"][0][0][0] = file["expected_routed_experts"][0][0][0].get<int>() + 1;
  std::ofstream(path) << file.dump();
  EXPECT_NE(run_helper("--check " + path.string()), 0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace moe::testing
