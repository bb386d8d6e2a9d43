#pragma once
// The engine's one exception type: every failure a user can cause (a bad file, a bad request,
// a bad flag) is reported as a moe::Error whose message names what was wrong and where.
#include <stdexcept>
#include <string>
#include <utility>

namespace moe {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A refused request whose fault lies in one field; `field` is its JSON path (OpenAI's error.param).
class FieldError : public Error {
 public:
  FieldError(std::string field, const std::string& what) : Error(what), field_(std::move(field)) {}
  // The refusal "`field` problem", naming the field as the client sent it.
  static FieldError about(const std::string& field, const std::string& problem) {
    return FieldError(field, "`" + field + "` " + problem);
  }
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace moe
