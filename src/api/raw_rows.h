#pragma once
// Routing rows (routed-expert ids or router weights) as the raw little-endian bytes of a flat
// [rows, num_moe_layers, top_k] array, so the HTTP layer can concatenate streamed pieces, split
// prompt rows from completion rows, and encode them as base64 (SGLang) or nested lists (vLLM).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "moe/messages.h"

namespace moe::api {

class RawRows {
 public:
  // The rows of one EncodedArray: raw bytes as they are, base64 text decoded. An array whose size
  // does not match its shape and dtype is an engine fault (std::logic_error).
  static RawRows from(const msg::EncodedArray& array);

  // Appends rows of the same dtype and row shape (an empty RawRows takes those of `more`).
  void append(const RawRows& more);
  // Rows [begin, end), clamped to the rows held.
  RawRows slice(int64_t begin, int64_t end) const;

  int64_t rows() const { return row_bytes_ == 0 ? 0 : static_cast<int64_t>(bytes_.size() / row_bytes_); }
  const std::string& bytes() const { return bytes_; }
  const std::string& dtype() const { return dtype_; }
  // [rows, num_moe_layers, top_k].
  std::vector<int64_t> shape() const;

 private:
  std::string bytes_;
  std::string dtype_;
  std::vector<int64_t> row_shape_;  // the shape after the row axis
  size_t row_bytes_ = 0;
};

// Adds SGLang's fields `name` (base64), `name_shape` and `name_dtype` to `object`.
void put_base64(nlohmann::json& object, const std::string& name, const RawRows& rows);
// Adds `name` as nested lists [rows][layers][top_k] of integers (vLLM's form); ids only.
void put_list(nlohmann::json& object, const std::string& name, const RawRows& rows);

}  // namespace moe::api
