#include "transport/message_codec.h"

#include <optional>
#include <variant>
#include <vector>

#include "common/error.h"
#include "moe/message_fields.h"
#include "transport/msgpack_io.h"

namespace moe::transport {
namespace {

using detail::FieldPath;
using detail::kIsNumericVector;
using detail::kIsOptional;
using detail::kIsVector;
using detail::Packer;

// The largest valid value of each enum that travels in a message body, for range checks.
template <class E>
constexpr E kLastEnumValue = E{};
template <>
constexpr msg::FinishKind kLastEnumValue<msg::FinishKind> = msg::FinishKind::Abort;
template <>
constexpr msg::RoutedExpertsDtype kLastEnumValue<msg::RoutedExpertsDtype> = msg::RoutedExpertsDtype::Auto;
template <>
constexpr msg::RouterWeightsDtype kLastEnumValue<msg::RouterWeightsDtype> = msg::RouterWeightsDtype::Float16;
template <>
constexpr msg::RoutedExpertsLayers kLastEnumValue<msg::RoutedExpertsLayers> = msg::RoutedExpertsLayers::Moe;
template <>
constexpr msg::MemoryAction kLastEnumValue<msg::MemoryAction> = msg::MemoryAction::Resume;
template <>
constexpr msg::WeightGroupAction kLastEnumValue<msg::WeightGroupAction> = msg::WeightGroupAction::Leave;

// How many fields a struct has, counted once by visiting a default instance.
template <class T>
size_t field_count() {
  static const size_t count = [] {
    size_t n = 0;
    T probe{};
    visit_fields(probe, [&n](std::string_view, auto&) { ++n; });
    return n;
  }();
  return count;
}

// Packs any field type of the message structs (the encoding is in message_codec.h).
template <class T>
void write_value(Packer& packer, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    packer.pack(value);
  } else if constexpr (std::is_enum_v<T>) {
    packer.pack(static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (std::is_same_v<T, float>) {
    packer.pack_float(value);
  } else if constexpr (std::is_same_v<T, double>) {
    packer.pack_double(value);
  } else if constexpr (std::is_integral_v<T>) {
    packer.pack(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    detail::write_str(packer, value);
  } else if constexpr (kIsOptional<T>) {
    if (value) {
      write_value(packer, *value);
    } else {
      packer.pack_nil();
    }
  } else if constexpr (kIsNumericVector<T>) {
    detail::write_bin(packer, value);
  } else if constexpr (kIsVector<T>) {
    packer.pack_array(static_cast<uint32_t>(value.size()));
    for (const auto& element : value) write_value(packer, element);
  } else {
    packer.pack_array(static_cast<uint32_t>(field_count<T>()));
    visit_fields(value, [&packer](std::string_view, const auto& field) { write_value(packer, field); });
  }
}

// The inverse of write_value; a mismatch throws moe::Error naming `path`.
template <class T>
void read_value(const msgpack::object& object, T& out, const FieldPath& path) {
  if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    detail::read(object, out, path);
  } else if constexpr (std::is_enum_v<T>) {
    std::underlying_type_t<T> raw{};
    detail::read(object, raw, path);
    if (raw > static_cast<std::underlying_type_t<T>>(kLastEnumValue<T>)) {
      detail::fail(path, "unknown value " + std::to_string(raw));
    }
    out = static_cast<T>(raw);
  } else if constexpr (kIsOptional<T>) {
    if (object.type == msgpack::type::NIL) {
      out.reset();
    } else {
      read_value(object, out.emplace(), path);
    }
  } else if constexpr (kIsNumericVector<T>) {
    detail::read_bin(object, out, path);
  } else if constexpr (kIsVector<T>) {
    if (object.type != msgpack::type::ARRAY) detail::fail_type(path, "array", object);
    out.resize(object.via.array.size);
    for (size_t i = 0; i < out.size(); ++i) read_value(object.via.array.ptr[i], out[i], path.at(i));
  } else {
    if (object.type != msgpack::type::ARRAY) detail::fail_type(path, "array", object);
    if (object.via.array.size != field_count<T>()) {
      detail::fail(path, "expected " + std::to_string(field_count<T>()) + " fields, got " +
                             std::to_string(object.via.array.size));
    }
    size_t i = 0;
    visit_fields(out, [&](std::string_view name, auto& field) {
      read_value(object.via.array.ptr[i++], field, path.field(name));
    });
  }
}

// Decodes `body` as the variant alternative whose kind is `kind`, trying them in order.
template <size_t I = 0>
msg::Message decode_body(uint64_t kind, const msgpack::object& body) {
  if constexpr (I == std::variant_size_v<msg::Message>) {
    throw Error("message frame: unknown message kind " + std::to_string(kind));
  } else {
    using T = std::variant_alternative_t<I, msg::Message>;
    if (kind != static_cast<uint64_t>(T::kind)) return decode_body<I + 1>(kind, body);
    T message;
    read_value(body, message, FieldPath{nullptr, msg::kind_name(T::kind)});
    return message;
  }
}

}  // namespace

std::string encode_message(const msg::Message& message) {
  detail::StringSink sink;
  Packer packer(sink);
  packer.pack_array(3);
  packer.pack(msg::kProtocolVersion);
  packer.pack(static_cast<uint8_t>(msg::kind_of(message)));
  std::visit([&packer](const auto& body) { write_value(packer, body); }, message);
  return std::move(sink.bytes);
}

msg::Message decode_message(std::string_view frame) {
  const msgpack::object_handle handle = detail::unpack_frame(frame, "message frame");
  const msgpack::object& root = handle.get();
  const FieldPath path{nullptr, "message frame"};
  if (root.type != msgpack::type::ARRAY || root.via.array.size != 3) {
    detail::fail(path, "expected the array [version, kind, body], got " + std::string(detail::type_name(root)) +
                           (root.type == msgpack::type::ARRAY ? " of " + std::to_string(root.via.array.size) : ""));
  }
  uint32_t version = 0;
  detail::read(root.via.array.ptr[0], version, path.field("version"));
  if (version != msg::kProtocolVersion) {
    throw Error("message frame: protocol version " + std::to_string(version) + ", this build speaks version " +
                std::to_string(msg::kProtocolVersion));
  }
  uint64_t kind = 0;
  detail::read(root.via.array.ptr[1], kind, path.field("kind"));
  return decode_body(kind, root.via.array.ptr[2]);
}

}  // namespace moe::transport
