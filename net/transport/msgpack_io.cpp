#include "transport/msgpack_io.h"

#include "common/error.h"

namespace moe::transport::detail {
namespace {

// Deeper nesting than any message has is rejected before it can exhaust the stack.
constexpr size_t kMaxNestingDepth = 32;

}  // namespace

std::string FieldPath::str() const {
  std::string head = parent ? parent->str() : std::string();
  if (name.empty()) return head + "[" + std::to_string(index) + "]";
  return head.empty() ? std::string(name) : head + "." + std::string(name);
}

std::string_view type_name(const msgpack::object& object) {
  switch (object.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER: return "positive integer";
    case msgpack::type::NEGATIVE_INTEGER: return "negative integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "str";
    case msgpack::type::BIN: return "bin";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "unknown type";
}

void fail_type(const FieldPath& path, std::string_view expected, const msgpack::object& got) {
  fail(path, "expected " + std::string(expected) + ", got " + std::string(type_name(got)));
}

void fail(const FieldPath& path, const std::string& problem) { throw Error(path.str() + ": " + problem); }

msgpack::object_handle unpack_frame(std::string_view frame, std::string_view what) {
  const size_t size = frame.size();
  const msgpack::unpack_limit limit(size, size, size, size, size, kMaxNestingDepth);
  size_t offset = 0;
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(frame.data(), size, offset, nullptr, nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    throw Error(std::string(what) + ": truncated msgpack (" + std::to_string(size) + " bytes)");
  } catch (const msgpack::unpack_error& e) {
    throw Error(std::string(what) + ": not valid msgpack (" + e.what() + ")");
  }
  if (offset != size) {
    throw Error(std::string(what) + ": " + std::to_string(size - offset) + " stray bytes after the msgpack value");
  }
  return handle;
}

void read(const msgpack::object& object, bool& out, const FieldPath& path) {
  if (object.type != msgpack::type::BOOLEAN) fail_type(path, "a bool", object);
  out = object.via.boolean;
}

void read(const msgpack::object& object, std::string& out, const FieldPath& path) {
  if (object.type == msgpack::type::STR) {
    out.assign(object.via.str.ptr, object.via.str.size);
  } else if (object.type == msgpack::type::BIN) {
    out.assign(object.via.bin.ptr, object.via.bin.size);
  } else {
    fail_type(path, "a string", object);
  }
}

void write_str(Packer& packer, std::string_view text) {
  packer.pack_str(static_cast<uint32_t>(text.size()));
  packer.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

void write_bytes(Packer& packer, std::string_view bytes) {
  packer.pack_bin(static_cast<uint32_t>(bytes.size()));
  packer.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size()));
}

}  // namespace moe::transport::detail
