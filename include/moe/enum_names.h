#pragma once
// The names clients give the enums of a request: each transport reads them once, where it decodes
// a request (api/request_fields.cpp for JSON, transport/client_values.h for msgpack), and replies
// write them back with name_of. Standard library only, as messages.h.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "moe/messages.h"

namespace moe::msg {

// kNames: every value of E with its name, in the order an error lists them.
template <class E>
struct EnumNames;

template <>
struct EnumNames<RoutedExpertsDtype> {
  static constexpr std::array<std::pair<RoutedExpertsDtype, std::string_view>, 4> kNames{{
      {RoutedExpertsDtype::Int32, "int32"},
      {RoutedExpertsDtype::Int16, "int16"},
      {RoutedExpertsDtype::Uint8, "uint8"},
      {RoutedExpertsDtype::Auto, "auto"},
  }};
};

template <>
struct EnumNames<RouterWeightsDtype> {
  static constexpr std::array<std::pair<RouterWeightsDtype, std::string_view>, 2> kNames{{
      {RouterWeightsDtype::Float32, "float32"},
      {RouterWeightsDtype::Float16, "float16"},
  }};
};

template <>
struct EnumNames<RoutedExpertsLayers> {
  static constexpr std::array<std::pair<RoutedExpertsLayers, std::string_view>, 2> kNames{{
      {RoutedExpertsLayers::All, "all"},
      {RoutedExpertsLayers::Moe, "moe"},
  }};
};

template <>
struct EnumNames<PauseMode> {
  static constexpr std::array<std::pair<PauseMode, std::string_view>, 3> kNames{{
      {PauseMode::Abort, "abort"},
      {PauseMode::Retract, "retract"},
      {PauseMode::InPlace, "in_place"},
  }};
};

template <>
struct EnumNames<MemoryTag> {
  static constexpr std::array<std::pair<MemoryTag, std::string_view>, 3> kNames{{
      {MemoryTag::Weights, "weights"},
      {MemoryTag::KvCache, "kv_cache"},
      {MemoryTag::CudaGraph, "cuda_graph"},
  }};
};

// The enums that have names (fields a client sets by name).
template <class E>
concept NamedEnum = requires { EnumNames<E>::kNames; };

template <NamedEnum E>
std::string_view name_of(E value) {
  for (const auto& [each, name] : EnumNames<E>::kNames)
    if (each == value) return name;
  return "?";
}

template <NamedEnum E>
std::optional<E> enum_named(std::string_view name) {
  for (const auto& [value, each] : EnumNames<E>::kNames)
    if (each == name) return value;
  return std::nullopt;
}

// What a client is told when it gives `name`, which names no value of E: "must be one of int32,
// int16, uint8, auto, got \"int64\"" (the caller puts the field in front).
template <NamedEnum E>
std::string not_a_name(std::string_view name) {
  std::string text = "must be one of ";
  for (size_t i = 0; i < EnumNames<E>::kNames.size(); ++i)
    text += (i ? ", " : "") + std::string(EnumNames<E>::kNames[i].second);
  return text + ", got \"" + std::string(name) + "\"";
}

}  // namespace moe::msg
