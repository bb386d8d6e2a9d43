#pragma once
// The tokenizer actor's logic: validates a client's request, applies the chat template, tokenizes,
// and gives it a request id. Every refusal is a moe::Error naming the field (an HTTP 400).
#include <cstdint>
#include <optional>
#include <string>

#include "moe/messages.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace moe {

class RequestPreparer {
 public:
  // chat_template may be empty (then requests with `messages` are refused).
  RequestPreparer(tokenizer::Tokenizer tokenizer, const std::string& chat_template,
                  std::optional<std::string> bos_token, std::optional<std::string> eos_token, int64_t vocab_size,
                  int64_t context_length);

  msg::TokenizedRequest prepare(const msg::GenerateRequest& request);
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  std::vector<int32_t> prompt_ids(const msg::GenerateRequest& request) const;

  tokenizer::Tokenizer tokenizer_;
  std::optional<tokenizer::ChatTemplate> chat_template_;
  std::optional<std::string> bos_token_, eos_token_;
  int64_t vocab_size_;
  int64_t context_length_;
  std::string rid_prefix_;  // random per process, so generated ids do not collide with clients'
  uint64_t next_rid_ = 1;
};

}  // namespace moe
