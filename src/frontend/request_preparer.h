#pragma once
// The front door: validates a client's request (request_checks.h, then the checks that need its
// prompt), applies the chat template, tokenizes, and gives it a request id. Every check a request can
// fail is made here, once, whichever transport brought it; every refusal is a moe::Error, naming the
// field where there is one (an HTTP 400). Stages after it only assert.
#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "frontend/request_checks.h"
#include "moe/messages.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace moe {

// How chat messages become a prompt; an empty template refuses requests with `messages`.
struct PromptFormat {
  std::string chat_template;
  std::optional<std::string> bos_token, eos_token;
};

// The 400 of a request prepare() refused: the error's message and, for a moe::FieldError, the field.
msg::ErrorReply refusal_reply(const std::string& rid, const Error& error, const std::string& source);

class RequestPreparer {
 public:
  // No byte-level BPE token of the supported tokenizers spans more bytes than this, so a text longer
  // than max_sequence_len of them cannot fit.
  static constexpr size_t kMaxBytesPerToken = 256;

  RequestPreparer(tokenizer::Tokenizer tokenizer, const PromptFormat& format, const RequestLimits& limits);

  msg::TokenizedRequest prepare(const msg::GenerateRequest& request);
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  // The ids `text` becomes (a request's text, the /tokenize endpoint). A text longer than any prompt
  // this server can take (max_prompt_bytes) is a moe::Error naming `field`, made before tokenizing:
  // 50 MB would otherwise hold the front door (and every client behind it) for seconds.
  std::vector<int32_t> tokenize(const std::string& text, const std::string& field = "text") const;
  // The most bytes a prompt's text may have: kMaxBytesPerToken for each position of max_sequence_len.
  size_t max_prompt_bytes() const { return static_cast<size_t>(limits_.max_sequence_len) * kMaxBytesPerToken; }
  // The text of `ids`, special tokens kept (the /detokenize endpoint); an id outside the model's
  // vocabulary is a moe::Error naming `field`, as it is in a request's input_ids.
  std::string detokenize(const std::vector<int32_t>& ids, const std::string& field) const;
  // The longest prompt + output a request may reach.
  int64_t max_sequence_len() const { return limits_.max_sequence_len; }

 private:
  void check_token_ids(const std::vector<int32_t>& ids, const std::string& field) const;
  // A moe::FieldError naming `field` and the flag when the server runs without a tokenizer.
  void require_tokenizer(const std::string& field) const;
  // A moe::Error naming `field` when `bytes` is more than max_prompt_bytes().
  void check_prompt_bytes(size_t bytes, const std::string& field) const;
  // The chat's text (its messages, tools and template kwargs) within max_prompt_bytes(), checked before
  // it is parsed and rendered.
  void check_chat_bytes(const msg::GenerateRequest& request) const;
  std::vector<int32_t> prompt_ids(const msg::GenerateRequest& request) const;
  // The checks that need the prompt's length; `names.max_new_tokens` names a limit the client gave.
  void check_length(const msg::TokenizedRequest& request, const msg::RequestFieldNames& names) const;

  tokenizer::Tokenizer tokenizer_;
  std::optional<tokenizer::ChatTemplate> chat_template_;
  std::optional<std::string> bos_token_, eos_token_;
  RequestLimits limits_;
};

}  // namespace moe
