#include "serving/http_url.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "common/error.h"

namespace moe::bench {
namespace {

constexpr std::string_view kScheme = "http://";

[[noreturn]] void reject(const std::string& url, const std::string& why) {
  throw Error("moe-bench: cannot use the URL \"" + url + "\": " + why);
}

}  // namespace

HttpUrl parse_http_url(const std::string& url) {
  if (url.rfind(kScheme, 0) != 0) reject(url, "only http:// is supported");
  const std::string rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#@") != std::string::npos) reject(url, "a query, fragment or user name is not supported");
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  HttpUrl parsed;
  if (slash != std::string::npos) parsed.base_path = rest.substr(slash);
  while (!parsed.base_path.empty() && parsed.base_path.back() == '/') parsed.base_path.pop_back();
  const size_t colon = authority.rfind(':');
  parsed.host = authority.substr(0, colon);
  if (colon != std::string::npos) parsed.port = authority.substr(colon + 1);
  if (parsed.host.empty()) reject(url, "no host");
  const bool numeric_port = !parsed.port.empty() && std::all_of(parsed.port.begin(), parsed.port.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (!numeric_port) reject(url, "the port must be a number");
  return parsed;
}

}  // namespace moe::bench
