// Minted request ids: 128 random bits as 32 hex digits, never repeated.
#include "frontend/request_ids.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace moe {
namespace {

TEST(RequestIds, AreHexAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_request_id();
    ASSERT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

}  // namespace
}  // namespace moe
