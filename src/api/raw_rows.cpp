#include "api/raw_rows.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "capture/routing_encoding.h"

namespace moe::api {
namespace {

// Bytes per element of the dtypes routing is sent in (capture/routing_encoding.h).
size_t item_size(const std::string& dtype) {
  if (dtype == "int32" || dtype == "float32") return 4;
  if (dtype == "int16" || dtype == "float16") return 2;
  if (dtype == "uint8") return 1;
  throw std::logic_error("routing array of unknown dtype \"" + dtype + "\"");
}

// Element `i` of a little-endian integer array of `dtype`.
int64_t integer_at(const std::string& bytes, const std::string& dtype, size_t i) {
  if (dtype == "int32") {
    int32_t v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    return v;
  }
  if (dtype == "int16") {
    int16_t v;
    std::memcpy(&v, bytes.data() + 2 * i, 2);
    return v;
  }
  if (dtype == "uint8") return static_cast<uint8_t>(bytes[i]);
  throw std::logic_error("routing rows of dtype \"" + dtype + "\" cannot be listed as integers");
}

}  // namespace

RawRows RawRows::from(const msg::EncodedArray& array) {
  if (array.shape.empty()) throw std::logic_error("routing array without a shape");
  RawRows rows;
  rows.bytes_ = array.raw ? array.data : base64_decode(array.data);
  rows.dtype_ = array.dtype;
  rows.row_shape_.assign(array.shape.begin() + 1, array.shape.end());
  rows.row_bytes_ = item_size(array.dtype) * std::accumulate(rows.row_shape_.begin(), rows.row_shape_.end(), size_t{1},
                                                             std::multiplies<>());
  if (rows.bytes_.size() != rows.row_bytes_ * static_cast<size_t>(array.shape.front())) {
    throw std::logic_error("routing array of " + std::to_string(rows.bytes_.size()) + " bytes does not match its shape");
  }
  return rows;
}

void RawRows::append(const RawRows& more) {
  if (dtype_.empty()) {
    *this = more;
    return;
  }
  if (more.dtype_ != dtype_ || more.row_shape_ != row_shape_) {
    throw std::logic_error("routing rows of one request changed dtype or shape between chunks");
  }
  bytes_ += more.bytes_;
}

RawRows RawRows::slice(int64_t begin, int64_t end) const {
  RawRows part = *this;
  const int64_t first = std::clamp<int64_t>(begin, 0, rows());
  const int64_t last = std::clamp<int64_t>(end, first, rows());
  part.bytes_ = bytes_.substr(first * row_bytes_, (last - first) * row_bytes_);
  return part;
}

std::vector<int64_t> RawRows::shape() const {
  std::vector<int64_t> shape{rows()};
  shape.insert(shape.end(), row_shape_.begin(), row_shape_.end());
  return shape;
}

void put_base64(nlohmann::json& object, const std::string& name, const RawRows& rows) {
  object[name] = base64_encode(rows.bytes());
  object[name + "_shape"] = rows.shape();
  object[name + "_dtype"] = rows.dtype();
}

void put_list(nlohmann::json& object, const std::string& name, const RawRows& rows) {
  const std::vector<int64_t> shape = rows.shape();
  const int64_t layers = shape.size() > 1 ? shape[1] : 1;
  const int64_t top_k = shape.size() > 2 ? shape[2] : 1;
  nlohmann::json list = nlohmann::json::array();
  size_t element = 0;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t l = 0; l < layers; ++l) {
      nlohmann::json experts = nlohmann::json::array();
      for (int64_t k = 0; k < top_k; ++k) experts.push_back(integer_at(rows.bytes(), rows.dtype(), element++));
      row.push_back(std::move(experts));
    }
    list.push_back(std::move(row));
  }
  object[name] = std::move(list);
}

}  // namespace moe::api
