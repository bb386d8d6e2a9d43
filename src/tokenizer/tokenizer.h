#pragma once
// A Hugging Face byte-level BPE tokenizer (Qwen2/3, Llama-3, DeepSeek-V3, GPT-2) loaded from
// tokenizer.json, giving exactly the ids and text of the `tokenizers` library.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moe::tokenizer {

struct TokenizerParts;

// Text ↔ token ids. Immutable once loaded; copies share the loaded data and every method is
// thread-safe (the word cache behind encode locks internally).
class Tokenizer {
 public:
  // Loads DIR/tokenizer.json, or the file itself when given a file. Throws moe::Error naming the file
  // when it is not JSON, or naming the unsupported model / normalizer / pre-tokenizer / decoder type
  // together with the supported ones.
  static Tokenizer load(const std::string& dir_or_file);
  // A tokenizer that knows none of the ids [0, model_vocab_size): each decodes to nothing (it holds
  // only the 256 byte tokens every byte-level BPE has, at ids from model_vocab_size on). For running
  // on token ids alone (moe-cli generate --prompt-ids) where the model comes without a tokenizer.
  static Tokenizer without_vocabulary(int32_t model_vocab_size);

  // The ids of `text` as tokenizers' encode(text, add_special_tokens=False) gives them. With
  // parse_special, special tokens written in the text become their ids; without, they are plain text
  // (transformers' split_special_tokens=True). Non-special added tokens are recognised either way.
  // Invalid UTF-8 (which tokenizers cannot even receive) is not an error: each maximal ill-formed
  // subpart is replaced by U+FFFD first, as Rust's String::from_utf8_lossy does.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;

  // The text of `ids` as tokenizers' decode gives it: the tokens' bytes joined, then any ill-formed
  // UTF-8 replaced by U+FFFD. skip_special leaves out special tokens. An id the tokenizer does not
  // know decodes to nothing, as in tokenizers (a model's embedding table is often larger than its
  // vocabulary, and it may sample those rows); a negative id, which tokenizers cannot even hold, is
  // a moe::Error naming it.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  // One past the largest id the tokenizer knows (added tokens included); the model's embedding
  // table may be larger.
  int32_t vocab_size() const;

  // The id of a token spelled as in the file ("Ġthe", "<|im_end|>"), added tokens first.
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The spelling of a token as in the file; throws moe::Error for an unknown id.
  const std::string& id_to_token(int32_t id) const;
  // The raw bytes a token decodes to (what the incremental detokenizer concatenates); may be a
  // fragment of a UTF-8 character. Throws moe::Error for an unknown id.
  const std::string& token_bytes(int32_t id) const;
  // Whether an id is an added token marked special (false for unknown ids).
  bool is_special(int32_t id) const;
  // Whether the id names a token (a vocabulary entry or an added token).
  bool knows(int32_t id) const;

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerParts> parts) : parts_(std::move(parts)) {}
  // Throws moe::Error unless the id is a known token.
  void check_id(int32_t id) const;

  std::shared_ptr<const TokenizerParts> parts_;
};

}  // namespace moe::tokenizer
