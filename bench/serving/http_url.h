#pragma once
// The HTTP address moe-bench is pointed at: `http://HOST[:PORT][/PREFIX]`.
#include <string>

namespace moe::bench {

struct HttpUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // put before the API's path; empty or "/..." without a trailing '/'
};

// Splits `url`; anything but a plain http:// URL (https, user info, a query) is a moe::Error.
HttpUrl parse_http_url(const std::string& url);

}  // namespace moe::bench
