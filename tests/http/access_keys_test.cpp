#include "http/access_keys.h"

#include <gtest/gtest.h>

#include "common/secret_compare.h"

namespace moe::http {
namespace {

TEST(AccessKeys, AdminPathsAreTheListedOnesAndThoseTheirPrefixesBegin) {
  for (const char* admin : {"/update_weights_from_disk", "/update_weights_from_tensor", "/flush_cache",
                            "/release_memory_occupation", "/resume_memory_occupation", "/pause_generation",
                            "/continue_generation", "/update_weight_version"})
    EXPECT_TRUE(is_admin_path(admin)) << admin;
  for (const char* user : {"/generate", "/abort_request", "/health", "/flush_cache/x", "/update_weights", "/v1/models",
                           "/get_server_info", "/expert_load/reset"})
    EXPECT_FALSE(is_admin_path(user)) << user;
}

TEST(AccessKeys, TheAdminKeyPassesWhereTheApiKeyDoesButNotTheOtherWayRound) {
  const AccessKeys keys{"user", "admin"};
  EXPECT_TRUE(keys.admin("Bearer admin"));
  EXPECT_FALSE(keys.admin("Bearer user"));
  EXPECT_FALSE(keys.admin(""));
  EXPECT_TRUE(keys.user("Bearer user"));
  EXPECT_TRUE(keys.user("Bearer admin"));
  EXPECT_FALSE(keys.user("Bearer wrong"));
  EXPECT_FALSE(keys.user("admin"));
}

TEST(AccessKeys, WithoutKeysEveryoneIsAUserAndNobodyAnAdmin) {
  const AccessKeys none;
  EXPECT_TRUE(none.user(""));
  EXPECT_FALSE(none.admin(""));
  EXPECT_FALSE(none.admin("Bearer "));  // an empty admin key is no key
  const AccessKeys admin_only{"", "admin"};
  EXPECT_TRUE(admin_only.user(""));
  EXPECT_TRUE(admin_only.admin("Bearer admin"));
}

TEST(SameSecret, EqualOnlyForTheSameBytesWhateverTheLengths) {
  EXPECT_TRUE(same_secret("admin-key", "admin-key"));
  EXPECT_TRUE(same_secret("", ""));
  EXPECT_FALSE(same_secret("admin-kez", "admin-key"));
  EXPECT_FALSE(same_secret("admin", "admin-key"));      // a prefix
  EXPECT_FALSE(same_secret("admin-key-and", "admin-key"));  // longer
  EXPECT_FALSE(same_secret("", "admin-key"));
  EXPECT_FALSE(same_secret(std::string_view("admin\0key", 9), "admin"));
}

}  // namespace
}  // namespace moe::http
