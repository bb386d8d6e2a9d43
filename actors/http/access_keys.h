#pragma once
// Who may call what over HTTP. --api-key guards every endpoint but /health and /metrics;
// --admin-api-key guards the admin endpoints, which change what the server serves or end other
// clients' work: with it set they need "Authorization: Bearer <admin key>" (the API key alone is not
// enough), and the admin key passes everywhere the API key does. Without --admin-api-key the admin
// endpoints are guarded like the rest (by --api-key when it is set, else open) and an HTTP abort
// reaches only HTTP requests.
#include <array>
#include <string>
#include <string_view>

namespace moe::http {

// The admin endpoints, the one list: an entry ending in '_' covers every path it begins
// (/update_weights_from_disk and any other /update_weights_...). POST /abort_request with
// "abort_all" is an admin call too, and by rid reaches other clients' requests only with the admin
// key; the router decides that from its body.
inline constexpr std::array<std::string_view, 9> kAdminPaths = {
    "/update_weights_",        "/flush_cache",         "/release_memory_",          "/resume_memory_",
    "/pause_generation",       "/continue_generation", "/update_weight_version",    "/init_weights_update_group",
    "/destroy_weights_update_group"};

bool is_admin_path(std::string_view path);

struct AccessKeys {
  std::string api_key;        // --api-key; empty = none
  std::string admin_api_key;  // --admin-api-key; empty = none

  // Whether an Authorization header value carries the admin key (false when there is none).
  bool admin(const std::string& authorization) const;
  // Whether it may call the endpoints that are not admin ones.
  bool user(const std::string& authorization) const;
};

}  // namespace moe::http
