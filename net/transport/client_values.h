#pragma once
// Values of the client protocol (docs/zmq-protocol.md), which any msgpack library must be able to
// speak: structs are maps keyed by SGLang's field names, number lists are arrays, absent optionals
// are left out. Internal to src/transport (client_request.cpp, client_reply.cpp).
#include <optional>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "moe/enum_names.h"
#include "moe/messages.h"
#include "transport/client_protocol.h"
#include "moe/message_fields.h"
#include "transport/msgpack_io.h"

namespace moe::msg {

// The /generate request fields, by their SGLang names (routing options sit at the top level there).
template <StructOf<GenerateRequest> M, class Visit>
void visit_client_fields(M& r, Visit&& visit) {
  visit("rid", r.rid);
  visit("text", r.text);
  visit("input_ids", r.input_ids);
  visit("messages", r.messages);
  visit("chat_template_kwargs", r.chat_template_kwargs);  // the JSON text of an object
  visit("tools", r.tools);                                // the JSON text of a list
  visit("continue_final_message", r.continue_final_message);
  visit("sampling_params", r.sampling);
  visit("stream", r.stream);
  visit("return_logprob", r.return_logprob);
  visit("speculative", r.speculative);
  visit("top_logprobs_num", r.top_logprobs_num);
  visit("logprob_start_len", r.logprob_start_len);
  visit("return_routed_experts", r.routing.return_routed_experts);
  visit("routed_experts_start_len", r.routing.start_len);
  visit("routed_experts_dtype", r.routing.dtype);
  visit("routed_experts_include_last", r.routing.include_last);
  visit("return_router_weights", r.routing.return_router_weights);
  visit("router_weights_dtype", r.routing.weights_dtype);
  visit("routed_experts_raw", r.routing.raw);
  visit("return_draft_routed_experts", r.routing.return_draft_routed_experts);
  visit("routed_experts_layers", r.routing.layers);
}

// sampling_params: the same names as the struct's fields.
template <StructOf<SamplingParams> M, class Visit>
void visit_client_fields(M& params, Visit&& visit) {
  visit_fields(params, visit);
}

// One logit_bias entry: {"id", "bias"} (a list of them, as msgpack maps need no string keys).
template <StructOf<TokenBias> M, class Visit>
void visit_client_fields(M& bias, Visit&& visit) {
  visit_fields(bias, visit);
}

// A chat turn: {"role", "content", "extra_fields"} (the JSON text of the turn's other keys).
template <StructOf<ChatMessage> M, class Visit>
void visit_client_fields(M& message, Visit&& visit) {
  visit_fields(message, visit);
}

}  // namespace moe::msg

namespace moe::transport {

// The fields of an expert-load request besides its `op`.
template <msg::StructOf<ExpertLoadRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("reset", request.reset);
}

// The fields of a relabelling besides its `op`, by SGLang's names.
template <msg::StructOf<UpdateWeightVersionRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("new_version", request.new_version);
  visit("abort_all_requests", request.abort_all_requests);
  visit("admin_api_key", request.admin_api_key);
}

// The fields of the operations whose only field besides `op` is the rid: abort (the request to
// end) and get_weight_version (echoed in the answer).
template <class M, class Visit>
  requires msg::StructOf<M, AbortRequest> || msg::StructOf<M, GetWeightVersionRequest>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
}

// The fields of continue_generation besides its `op`.
template <msg::StructOf<ContinueGenerationRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("admin_api_key", request.admin_api_key);
}

// The fields of a weight update besides its `op`, by SGLang's names.
template <msg::StructOf<UpdateWeightsRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("model_path", request.update.model_path);
  visit("weight_version", request.update.weight_version);
  visit("abort_all_requests", request.update.abort_all_requests);
  visit("flush_cache", request.flush_cache);
  visit("admin_api_key", request.admin_api_key);
}

// The fields of the weight-group operations besides their `op`, by SGLang's names.
template <msg::StructOf<InitWeightGroupRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("master_address", request.update.group.master_address);
  visit("master_port", request.update.group.master_port);
  visit("rank_offset", request.update.group.rank_offset);
  visit("world_size", request.update.group.world_size);
  visit("group_name", request.update.group.group_name);
  visit("backend", request.backend);
  visit("admin_api_key", request.admin_api_key);
}

template <msg::StructOf<UpdateFromWeightGroupRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("names", request.update.group.names);
  visit("dtypes", request.update.group.dtypes);
  visit("shapes", request.update.group.shapes);
  visit("group_name", request.update.group.group_name);
  visit("weight_version", request.update.weight_version);
  visit("abort_all_requests", request.update.abort_all_requests);
  visit("flush_cache", request.flush_cache);
  visit("admin_api_key", request.admin_api_key);
}

template <msg::StructOf<DestroyWeightGroupRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("group_name", request.update.group.group_name);
  visit("admin_api_key", request.admin_api_key);
}

// The fields of a memory release or resume besides its `op` (which gives the action).
template <msg::StructOf<MemoryOccupationRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("tags", request.tags);
  visit("admin_api_key", request.admin_api_key);
}

// The fields of a pause besides its `op`, by SGLang's names.
template <msg::StructOf<PauseGenerationRequest> M, class Visit>
void visit_client_fields(M& request, Visit&& visit) {
  visit("rid", request.rid);
  visit("mode", request.mode);
  visit("admin_api_key", request.admin_api_key);
}

}  // namespace moe::transport

namespace moe::transport::detail {

// The value under `key` in a map, or null when absent or nil.
inline const msgpack::object* find_key(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& entry = map.via.map.ptr[i];
    if (entry.key.type == msgpack::type::STR && std::string_view(entry.key.via.str.ptr, entry.key.via.str.size) == key) {
      return entry.val.type == msgpack::type::NIL ? nullptr : &entry.val;
    }
  }
  return nullptr;
}

// The map that must be present under `key`.
inline const msgpack::object& require_map(const msgpack::object& map, std::string_view key, const FieldPath& path) {
  const msgpack::object* value = find_key(map, key);
  if (!value) fail(path, std::string("missing `") + std::string(key) + "`");
  if (value->type != msgpack::type::MAP) fail_type(path.field(key), "a map", *value);
  return *value;
}

// The answers to operations (client_op_replies.cpp), for decode_client_reply.
ExpertLoadReply read_expert_load(const msgpack::object& root, const FieldPath& path);
AbortReply read_abort(const msgpack::object& root, const FieldPath& path);
WeightsUpdatedReply read_weights_updated(const msgpack::object& root, const FieldPath& path);
GenerationControlReply read_generation_control(const msgpack::object& root, const FieldPath& path);

// Reads one client value into a field: scalars, optionals, arrays, and structs as maps.
template <class T>
void read_client_value(const msgpack::object& object, T& out, const FieldPath& path);

// Whether a map of T may hold `key` beside the fields its visitor lists, because the parser reads
// it itself: a request's `op`, and SGLang's `sampling_seed` beside `seed` (client_request.cpp).
template <class T>
bool read_elsewhere(std::string_view key) {
  return key == (std::is_same_v<T, msg::SamplingParams> ? "sampling_seed" : "op");
}

// Fills `out` from a map; nil values leave the default. A key it does not know is an error naming
// it (a field a client sends is never dropped silently).
template <class T>
void read_client_map(const msgpack::object& object, T& out, const FieldPath& path) {
  if (object.type != msgpack::type::MAP) fail_type(path, "a map", object);
  for (uint32_t i = 0; i < object.via.map.size; ++i) {
    const msgpack::object_kv& entry = object.via.map.ptr[i];
    if (entry.key.type != msgpack::type::STR || entry.val.type == msgpack::type::NIL) continue;
    const std::string_view key(entry.key.via.str.ptr, entry.key.via.str.size);
    bool known = read_elsewhere<T>(key);
    visit_client_fields(out, [&](std::string_view name, auto& field) {
      if (name != key) return;
      read_client_value(entry.val, field, path.field(name));
      known = true;
    });
    if (!known) fail(path.field(key), "is not a field this server knows (docs/zmq-protocol.md lists them)");
  }
}

// A client's string (str or bin): valid UTF-8, since it may come back in a reply or an error
// (a weight version in every reply's meta_info, a stop string as the match, an unknown name quoted),
// and a msgpack str clients cannot decode must never leave the server.
inline void read_text(const msgpack::object& object, std::string& out, const FieldPath& path) {
  read(object, out, path);
  if (!is_valid_utf8(out)) {
    out.clear();
    fail(path, "must be valid UTF-8");
  }
}

// (Defined after read_client_map, which it and its elements recurse into.)
template <class T>
void read_client_value(const msgpack::object& object, T& out, const FieldPath& path) {
  if constexpr (std::is_same_v<T, std::string>) {
    read_text(object, out, path);
  } else if constexpr (std::is_arithmetic_v<T>) {
    read(object, out, path);
  } else if constexpr (msg::NamedEnum<T>) {
    std::string name;
    read_text(object, name, path);
    const std::optional<T> named = msg::enum_named<T>(name);
    if (!named) fail(path, msg::not_a_name<T>(name));
    out = *named;
  } else if constexpr (kIsOptional<T>) {
    read_client_value(object, out.emplace(), path);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    // A list of strings may be given as one string (SGLang's "stop": "\n").
    if (object.type == msgpack::type::STR) {
      out.resize(1);
      read_text(object, out[0], path);
      return;
    }
    if (object.type != msgpack::type::ARRAY) fail_type(path, "a string or an array of strings", object);
    out.resize(object.via.array.size);
    for (size_t i = 0; i < out.size(); ++i) read_text(object.via.array.ptr[i], out[i], path.at(i));
  } else if constexpr (kIsVector<T>) {
    if (object.type != msgpack::type::ARRAY) fail_type(path, "an array", object);
    out.resize(object.via.array.size);
    for (size_t i = 0; i < out.size(); ++i) read_client_value(object.via.array.ptr[i], out[i], path.at(i));
  } else {
    read_client_map(object, out, path);
  }
}

// Reads `key` of `map` into `out` when present, leaving `out` alone otherwise.
template <class T>
void read_entry(const msgpack::object& map, std::string_view key, T& out, const FieldPath& path) {
  if (const msgpack::object* value = find_key(map, key)) read_client_value(*value, out, path.field(key));
}

// Packs one field the way read_client_value reads it.
template <class T>
void write_client_value(Packer& packer, const T& value);

// Packs a struct as a map of its fields, leaving out absent optionals; a request of an operation
// other than generate starts with its "op" entry.
template <class T>
void write_client_map(Packer& packer, const T& value, std::string_view op = {}) {
  uint32_t present = op.empty() ? 0 : 1;
  visit_client_fields(value, [&present](std::string_view, const auto& field) {
    if constexpr (kIsOptional<std::decay_t<decltype(field)>>) {
      present += field.has_value() ? 1 : 0;
    } else {
      ++present;
    }
  });
  packer.pack_map(present);
  if (!op.empty()) {
    write_str(packer, "op");
    write_str(packer, op);
  }
  visit_client_fields(value, [&packer](std::string_view name, const auto& field) {
    if constexpr (kIsOptional<std::decay_t<decltype(field)>>) {
      if (!field) return;
    }
    write_str(packer, name);
    write_client_value(packer, field);
  });
}

// (Defined after write_client_map, which it recurses into.)
template <class T>
void write_client_value(Packer& packer, const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    write_str(packer, value);
  } else if constexpr (msg::NamedEnum<T>) {
    write_str(packer, msg::name_of(value));
  } else if constexpr (std::is_arithmetic_v<T>) {
    packer.pack(value);
  } else if constexpr (kIsOptional<T>) {
    write_client_value(packer, *value);
  } else if constexpr (kIsVector<T>) {
    packer.pack_array(static_cast<uint32_t>(value.size()));
    for (const auto& element : value) write_client_value(packer, element);
  } else {
    write_client_map(packer, value);
  }
}

}  // namespace moe::transport::detail
