#include "http/access_keys.h"

#include "common/secret_compare.h"

namespace moe::http {

bool is_admin_path(std::string_view path) {
  for (const std::string_view admin : kAdminPaths)
    if (admin.ends_with('_') ? path.starts_with(admin) : path == admin) return true;
  return false;
}

bool AccessKeys::admin(const std::string& authorization) const {
  return !admin_api_key.empty() && same_secret(authorization, "Bearer " + admin_api_key);
}

bool AccessKeys::user(const std::string& authorization) const {
  return api_key.empty() || same_secret(authorization, "Bearer " + api_key) || admin(authorization);
}

}  // namespace moe::http
