#pragma once
// The engine's one exception type: every failure a user can cause (a bad file, a bad request,
// a bad flag) is reported as a moe::Error whose message names what was wrong and where.
#include <stdexcept>
#include <string>

namespace moe {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace moe
