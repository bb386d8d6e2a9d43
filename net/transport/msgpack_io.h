#pragma once
// Reading and writing msgpack values with errors that name the offending field
// ("WorkerBatch.sequences[2].kv_slots: expected bin, got array"). Shared by the internal message
// codec and the client protocol; only src/transport includes it (msgpack stays out of other headers).
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <msgpack.hpp>

namespace moe::transport::detail {

static_assert(std::endian::native == std::endian::little,
              "numeric bins are little-endian on the wire and copied as-is");

// The packer's output stream: appends straight into the string that becomes the ZeroMQ frame.
struct StringSink {
  std::string bytes;
  void write(const char* data, size_t size) { bytes.append(data, size); }
};

using Packer = msgpack::packer<StringSink>;

// Type tests the struct codecs dispatch on.
template <class T>
constexpr bool kIsOptional = false;
template <class T>
constexpr bool kIsOptional<std::optional<T>> = true;
template <class T>
constexpr bool kIsVector = false;
template <class T>
constexpr bool kIsVector<std::vector<T>> = true;
template <class T>
constexpr bool kIsNumericVector = false;
template <class T>
  requires std::is_arithmetic_v<T>
constexpr bool kIsNumericVector<std::vector<T>> = true;

// Where a value sits in a message: a chain of field names and indices living on the caller's stack,
// turned into text only when an error is reported.
struct FieldPath {
  const FieldPath* parent = nullptr;
  std::string_view name;  // empty for an array element
  int64_t index = -1;

  FieldPath field(std::string_view child) const { return {this, child, -1}; }
  FieldPath at(int64_t element) const { return {this, {}, element}; }
  std::string str() const;
};

// msgpack's name for the type an object holds ("str", "array", "positive integer", ...).
std::string_view type_name(const msgpack::object& object);

// Throws moe::Error "<path>: expected <expected>, got <type>".
[[noreturn]] void fail_type(const FieldPath& path, std::string_view expected, const msgpack::object& got);
// Throws moe::Error "<path>: <problem>".
[[noreturn]] void fail(const FieldPath& path, const std::string& problem);

// Parses `frame` as exactly one msgpack value. Sizes are capped by the frame length (every element
// takes at least a byte), so a tiny hostile frame cannot make the parser allocate gigabytes.
// Throws moe::Error starting with `what` for truncated, malformed or trailing bytes.
msgpack::object_handle unpack_frame(std::string_view frame, std::string_view what);

void read(const msgpack::object& object, bool& out, const FieldPath& path);
// Accepts str and bin (bin carries raw bytes).
void read(const msgpack::object& object, std::string& out, const FieldPath& path);

// Integers of any width, range-checked against T.
template <class T>
  requires(std::integral<T> && !std::same_as<T, bool>)
void read(const msgpack::object& object, T& out, const FieldPath& path) {
  if (object.type == msgpack::type::POSITIVE_INTEGER) {
    if (object.via.u64 > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      fail(path, std::to_string(object.via.u64) + " is out of range");
    }
    out = static_cast<T>(object.via.u64);
  } else if (object.type == msgpack::type::NEGATIVE_INTEGER) {
    if (std::is_unsigned_v<T> || object.via.i64 < static_cast<int64_t>(std::numeric_limits<T>::min())) {
      fail(path, std::to_string(object.via.i64) + " is out of range");
    }
    out = static_cast<T>(object.via.i64);
  } else {
    fail_type(path, "an integer", object);
  }
}

// Floats, and integers standing for floats (a client writing temperature 0 sends an integer).
template <std::floating_point T>
void read(const msgpack::object& object, T& out, const FieldPath& path) {
  switch (object.type) {
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: out = static_cast<T>(object.via.f64); return;
    case msgpack::type::POSITIVE_INTEGER: out = static_cast<T>(object.via.u64); return;
    case msgpack::type::NEGATIVE_INTEGER: out = static_cast<T>(object.via.i64); return;
    default: fail_type(path, "a number", object);
  }
}

// A vector of fixed-width numbers as one bin of their little-endian bytes.
template <class T>
  requires std::is_arithmetic_v<T>
void write_bin(Packer& packer, const std::vector<T>& values) {
  const size_t bytes = values.size() * sizeof(T);
  packer.pack_bin(static_cast<uint32_t>(bytes));
  packer.pack_bin_body(reinterpret_cast<const char*>(values.data()), static_cast<uint32_t>(bytes));
}

// The inverse of write_bin; a length that is not a whole number of values is an error.
template <class T>
  requires std::is_arithmetic_v<T>
void read_bin(const msgpack::object& object, std::vector<T>& out, const FieldPath& path) {
  if (object.type != msgpack::type::BIN) fail_type(path, "bin", object);
  const size_t bytes = object.via.bin.size;
  if (bytes % sizeof(T) != 0) {
    fail(path, "bin of " + std::to_string(bytes) + " bytes is not a whole number of " +
                   std::to_string(sizeof(T)) + "-byte values");
  }
  out.resize(bytes / sizeof(T));
  if (bytes != 0) std::memcpy(out.data(), object.via.bin.ptr, bytes);
}

// Packs a string as msgpack str.
void write_str(Packer& packer, std::string_view text);
// Packs bytes as msgpack bin.
void write_bytes(Packer& packer, std::string_view bytes);

}  // namespace moe::transport::detail
