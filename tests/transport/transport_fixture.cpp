#include "transport_fixture.h"

#include <cstdlib>

namespace moe::test {

void TransportTest::SetUp() {
  if (GetParam() != "ipc") return;
  std::string pattern = (std::filesystem::temp_directory_path() / "moe-transport-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  ipc_dir_ = pattern;
}

void TransportTest::TearDown() {
  if (!ipc_dir_.empty()) std::filesystem::remove_all(ipc_dir_);
}

std::string TransportTest::bind_address(const std::string& name) const {
  if (GetParam() == "inproc") return "inproc://" + name;
  if (GetParam() == "ipc") return "ipc://" + (ipc_dir_ / (name + ".sock")).string();
  return "tcp://127.0.0.1:0";
}

// Every TEST_P(TransportTest, ...) of the suite runs once per transport.
INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values("inproc", "ipc", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace moe::test
