#pragma once
// Ids for requests that bring none (SGLang's rid is optional, OpenAI has none): the server needs
// one to route outputs and to abort a request whose client went away.
#include <random>
#include <string>

namespace moe::api {

class RequestIdGenerator {
 public:
  // Seeded from std::random_device, so that two servers do not hand out the same ids.
  RequestIdGenerator();
  // 32 lowercase hex digits (128 random bits), as SGLang's uuid4().hex.
  std::string next();

 private:
  std::mt19937_64 random_;
};

}  // namespace moe::api
