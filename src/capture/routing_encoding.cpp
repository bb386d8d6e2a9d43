#include "capture/routing_encoding.h"

#include <immintrin.h>

#include <cstring>

#include "common/error.h"

namespace moe {

RoutedExpertsDtype parse_routed_experts_dtype(const std::string& name) {
  if (name == "int32") return RoutedExpertsDtype::Int32;
  if (name == "int16") return RoutedExpertsDtype::Int16;
  if (name == "uint8") return RoutedExpertsDtype::Uint8;
  if (name == "auto") return RoutedExpertsDtype::Auto;
  throw Error("routed_experts_dtype '" + name + "' is not one of int32, int16, uint8, auto");
}

RouterWeightsDtype parse_router_weights_dtype(const std::string& name) {
  if (name == "float32") return RouterWeightsDtype::Float32;
  if (name == "float16") return RouterWeightsDtype::Float16;
  throw Error("router_weights_dtype '" + name + "' is not one of float32, float16");
}

RoutedExpertsDtype resolve_routed_experts_dtype(RoutedExpertsDtype requested, int num_experts) {
  if (requested == RoutedExpertsDtype::Auto)
    return num_experts <= 256 ? RoutedExpertsDtype::Uint8 : RoutedExpertsDtype::Int16;
  if (requested == RoutedExpertsDtype::Uint8 && num_experts > 256)
    throw Error("routed_experts_dtype uint8 cannot hold the ids of a model with " + std::to_string(num_experts) +
                " experts; use int16, int32 or auto");
  return requested;
}

const char* dtype_name(RoutedExpertsDtype dtype) {
  switch (dtype) {
    case RoutedExpertsDtype::Int32: return "int32";
    case RoutedExpertsDtype::Int16: return "int16";
    case RoutedExpertsDtype::Uint8: return "uint8";
    case RoutedExpertsDtype::Auto: return "auto";
  }
  return "?";
}

const char* dtype_name(RouterWeightsDtype dtype) {
  return dtype == RouterWeightsDtype::Float16 ? "float16" : "float32";
}

std::string pack_routed_experts(const int16_t* ids, size_t count, RoutedExpertsDtype dtype) {
  std::string out;
  switch (dtype) {
    case RoutedExpertsDtype::Int16:
      out.assign(reinterpret_cast<const char*>(ids), count * 2);  // x86-64 is little-endian
      break;
    case RoutedExpertsDtype::Int32:
      out.resize(count * 4);
      for (size_t i = 0; i < count; ++i) {
        const int32_t v = ids[i];
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
    case RoutedExpertsDtype::Uint8:
      out.resize(count);
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<char>(static_cast<uint8_t>(ids[i]));
      break;
    case RoutedExpertsDtype::Auto:
      throw Error("pack_routed_experts: resolve the dtype first");
  }
  return out;
}

std::string pack_router_weights(const float* weights, size_t count, RouterWeightsDtype dtype) {
  if (dtype == RouterWeightsDtype::Float32) return std::string(reinterpret_cast<const char*>(weights), count * 4);
  std::string out(count * 2, '\0');
  for (size_t i = 0; i < count; ++i) {
    const uint16_t h = _cvtss_sh(weights[i], _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

}  // namespace moe
