#include "transport/client_protocol.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "transport/client_values.h"

namespace moe::transport {
namespace {

using detail::FieldPath;
using detail::find_key;
using detail::read_entry;
using detail::require_map;
using detail::Packer;
using detail::write_str;

// SGLang's finish_reason: {"type": "stop", "matched": id or text} | {"type": "length", "length": n}
// | {"type": "abort", "message": why}.
void write_finish_reason(Packer& packer, const msg::FinishReason& reason, int32_t completion_tokens) {
  switch (reason.kind) {
    case msg::FinishKind::Stop: {
      const bool matched = reason.matched_token || reason.matched_text;
      packer.pack_map(matched ? 2 : 1);
      write_str(packer, "type");
      write_str(packer, "stop");
      if (reason.matched_token) {
        write_str(packer, "matched");
        packer.pack(*reason.matched_token);
      } else if (reason.matched_text) {
        write_str(packer, "matched");
        write_str(packer, *reason.matched_text);
      }
      return;
    }
    case msg::FinishKind::Length:
      packer.pack_map(2);
      write_str(packer, "type");
      write_str(packer, "length");
      write_str(packer, "length");
      packer.pack(completion_tokens);
      return;
    case msg::FinishKind::Abort:
      packer.pack_map(2);
      write_str(packer, "type");
      write_str(packer, "abort");
      write_str(packer, "message");
      write_str(packer, reason.message);
      return;
  }
}

// `name` (base64 str, or bin when raw), `name_shape` and `name_dtype`: three meta_info entries.
void write_encoded_array(Packer& packer, const std::string& name, const msg::EncodedArray& array) {
  write_str(packer, name);
  if (array.raw) {
    detail::write_bytes(packer, array.data);
  } else {
    write_str(packer, array.data);
  }
  write_str(packer, name + "_shape");
  detail::write_client_value(packer, array.shape);
  write_str(packer, name + "_dtype");
  write_str(packer, array.dtype);
}

// SGLang's logprob triples [logprob, token id, token text], one per token; a NaN logprob (the
// prompt's first token) is nil.
void write_triples(Packer& packer, const std::vector<float>& logprobs, const std::vector<int32_t>& ids,
                   const std::vector<std::string>& texts) {
  packer.pack_array(static_cast<uint32_t>(logprobs.size()));
  for (size_t i = 0; i < logprobs.size(); ++i) {
    packer.pack_array(3);
    if (std::isnan(logprobs[i])) {
      packer.pack_nil();
    } else {
      packer.pack(logprobs[i]);
    }
    packer.pack(i < ids.size() ? ids[i] : -1);
    if (i < texts.size()) {
      write_str(packer, texts[i]);
    } else {
      packer.pack_nil();
    }
  }
}

// Per position a list of triples, most probable first; nil where there are none (the prompt's first token).
void write_top_lists(Packer& packer, const std::vector<msg::TokenAlternatives>& tops) {
  packer.pack_array(static_cast<uint32_t>(tops.size()));
  for (const msg::TokenAlternatives& top : tops) {
    if (top.ids.empty()) {
      packer.pack_nil();
    } else {
      write_triples(packer, top.logprobs, top.ids, top.texts);
    }
  }
}

// meta_info: ids and counts always, the rest only when the request asked for it.
void write_meta_info(Packer& packer, const msg::TextOutput& output) {
  const bool input = !output.input_token_ids.empty();
  const uint32_t entries = 7 + (output.output_logprobs.empty() ? 0 : 1) + (output.output_top_logprobs.empty() ? 0 : 1) +
                           (input ? 1 : 0) + (output.input_top_logprobs.empty() ? 0 : 1) +
                           (output.routed_experts ? 3 : 0) + (output.router_weights ? 3 : 0) +
                           (output.draft_routed_experts ? 3 : 0);
  packer.pack_map(entries);
  write_str(packer, "id");
  write_str(packer, output.rid);
  write_str(packer, "index");
  packer.pack(output.index);
  write_str(packer, "prompt_tokens");
  packer.pack(output.prompt_tokens);
  write_str(packer, "completion_tokens");
  packer.pack(output.completion_tokens);
  write_str(packer, "cached_tokens");
  packer.pack(output.cached_tokens);
  write_str(packer, "weight_version");
  write_str(packer, output.weight_version);
  write_str(packer, "finish_reason");
  if (output.finish_reason) {
    write_finish_reason(packer, *output.finish_reason, output.completion_tokens);
  } else {
    packer.pack_nil();
  }
  if (!output.output_logprobs.empty()) {
    write_str(packer, "output_token_logprobs");
    write_triples(packer, output.output_logprobs, output.output_ids, output.output_token_texts);
  }
  if (!output.output_top_logprobs.empty()) {
    write_str(packer, "output_top_logprobs");
    write_top_lists(packer, output.output_top_logprobs);
  }
  if (input) {
    write_str(packer, "input_token_logprobs");
    write_triples(packer, output.input_token_logprobs, output.input_token_ids, output.input_token_texts);
  }
  if (!output.input_top_logprobs.empty()) {
    write_str(packer, "input_top_logprobs");
    write_top_lists(packer, output.input_top_logprobs);
  }
  if (output.routed_experts) write_encoded_array(packer, "routed_experts", *output.routed_experts);
  if (output.router_weights) write_encoded_array(packer, "router_weights", *output.router_weights);
  if (output.draft_routed_experts) write_encoded_array(packer, "draft_routed_experts", *output.draft_routed_experts);
}

// The inverse of write_triples into `logprobs` (NaN for nil), `ids` and `texts` (texts only when
// the triples carry them).
void read_triples(const msgpack::object& triples, const FieldPath& path, std::vector<float>& logprobs,
                  std::vector<int32_t>& ids, std::vector<std::string>& texts) {
  if (triples.type != msgpack::type::ARRAY) detail::fail_type(path, "an array", triples);
  for (uint32_t i = 0; i < triples.via.array.size; ++i) {
    const msgpack::object& triple = triples.via.array.ptr[i];
    if (triple.type != msgpack::type::ARRAY || triple.via.array.size != 3)
      detail::fail_type(path.at(i), "[logprob, token id, text]", triple);
    const msgpack::object* part = triple.via.array.ptr;
    float& logprob = logprobs.emplace_back(std::numeric_limits<float>::quiet_NaN());
    if (part[0].type != msgpack::type::NIL) detail::read(part[0], logprob, path.at(i));
    detail::read(part[1], ids.emplace_back(), path.at(i));
    if (part[2].type != msgpack::type::NIL) detail::read(part[2], texts.emplace_back(), path.at(i));
  }
}

// The inverse of write_top_lists.
void read_top_lists(const msgpack::object& lists, const FieldPath& path, std::vector<msg::TokenAlternatives>& tops) {
  if (lists.type != msgpack::type::ARRAY) detail::fail_type(path, "an array", lists);
  for (uint32_t i = 0; i < lists.via.array.size; ++i) {
    msg::TokenAlternatives& top = tops.emplace_back();
    const msgpack::object& list = lists.via.array.ptr[i];
    if (list.type != msgpack::type::NIL) read_triples(list, path.at(i), top.logprobs, top.ids, top.texts);
  }
}

// The logprob entries of meta_info, each when present.
void read_logprobs(const msgpack::object& meta, const FieldPath& meta_path, msg::TextOutput& output) {
  if (const msgpack::object* triples = find_key(meta, "output_token_logprobs")) {
    std::vector<int32_t> ids;  // output_ids has them already
    read_triples(*triples, meta_path.field("output_token_logprobs"), output.output_logprobs, ids,
                 output.output_token_texts);
  }
  if (const msgpack::object* lists = find_key(meta, "output_top_logprobs"))
    read_top_lists(*lists, meta_path.field("output_top_logprobs"), output.output_top_logprobs);
  if (const msgpack::object* triples = find_key(meta, "input_token_logprobs"))
    read_triples(*triples, meta_path.field("input_token_logprobs"), output.input_token_logprobs,
                 output.input_token_ids, output.input_token_texts);
  if (const msgpack::object* lists = find_key(meta, "input_top_logprobs"))
    read_top_lists(*lists, meta_path.field("input_top_logprobs"), output.input_top_logprobs);
}

// The inverse of write_finish_reason (the length is implied by completion_tokens).
msg::FinishReason read_finish_reason(const msgpack::object& map, const FieldPath& path) {
  std::string type;
  read_entry(map, "type", type, path);
  msg::FinishReason reason;
  if (type == "stop") {
    reason.kind = msg::FinishKind::Stop;
    if (const msgpack::object* matched = find_key(map, "matched")) {
      if (matched->type == msgpack::type::STR) {
        detail::read(*matched, reason.matched_text.emplace(), path.field("matched"));
      } else {
        detail::read(*matched, reason.matched_token.emplace(), path.field("matched"));
      }
    }
  } else if (type == "length") {
    reason.kind = msg::FinishKind::Length;
  } else if (type == "abort") {
    reason.kind = msg::FinishKind::Abort;
    read_entry(map, "message", reason.message, path);
  } else {
    detail::fail(path.field("type"), "unknown finish reason \"" + type + "\"");
  }
  return reason;
}

// The inverse of write_encoded_array; none when `name` is absent.
std::optional<msg::EncodedArray> read_encoded_array(const msgpack::object& meta, const std::string& name,
                                                    const FieldPath& path) {
  const msgpack::object* data = find_key(meta, name);
  if (!data) return std::nullopt;
  msg::EncodedArray array;
  array.raw = data->type == msgpack::type::BIN;
  detail::read(*data, array.data, path.field(name));
  read_entry(meta, name + "_shape", array.shape, path);
  read_entry(meta, name + "_dtype", array.dtype, path);
  return array;
}

// A reply map that is not an error.
msg::TextOutput read_output(const msgpack::object& root, const FieldPath& path) {
  msg::TextOutput output;
  read_entry(root, "text", output.text, path);
  read_entry(root, "output_ids", output.output_ids, path);
  const FieldPath meta_path = path.field("meta_info");
  const msgpack::object& meta = require_map(root, "meta_info", path);
  read_entry(meta, "id", output.rid, meta_path);
  read_entry(meta, "index", output.index, meta_path);
  read_entry(meta, "prompt_tokens", output.prompt_tokens, meta_path);
  read_entry(meta, "completion_tokens", output.completion_tokens, meta_path);
  read_entry(meta, "cached_tokens", output.cached_tokens, meta_path);
  read_entry(meta, "weight_version", output.weight_version, meta_path);
  if (const msgpack::object* reason = find_key(meta, "finish_reason")) {
    if (reason->type != msgpack::type::MAP) detail::fail_type(meta_path.field("finish_reason"), "a map", *reason);
    output.finish_reason = read_finish_reason(*reason, meta_path.field("finish_reason"));
  }
  read_logprobs(meta, meta_path, output);
  output.routed_experts = read_encoded_array(meta, "routed_experts", meta_path);
  output.router_weights = read_encoded_array(meta, "router_weights", meta_path);
  output.draft_routed_experts = read_encoded_array(meta, "draft_routed_experts", meta_path);
  return output;
}

// The map under "error".
msg::ErrorReply read_error(const msgpack::object& error, const FieldPath& path) {
  msg::ErrorReply reply;
  read_entry(error, "message", reply.message, path);
  read_entry(error, "code", reply.code, path);
  read_entry(error, "rid", reply.rid, path);
  return reply;
}

}  // namespace

std::string encode_client_reply(const msg::TextOutput& output) {
  detail::StringSink sink;
  Packer packer(sink);
  packer.pack_map(3);
  write_str(packer, "text");
  write_str(packer, output.text);
  write_str(packer, "output_ids");
  detail::write_client_value(packer, output.output_ids);
  write_str(packer, "meta_info");
  write_meta_info(packer, output);
  return std::move(sink.bytes);
}

std::string encode_client_error(const msg::ErrorReply& error) {
  detail::StringSink sink;
  Packer packer(sink);
  packer.pack_map(1);
  write_str(packer, "error");
  packer.pack_map(error.rid.empty() ? 3 : 4);
  write_str(packer, "message");
  write_str(packer, error.message);
  write_str(packer, "type");
  write_str(packer, error.code < 500 ? "invalid_request_error" : "server_error");
  write_str(packer, "code");
  packer.pack(error.code);
  if (!error.rid.empty()) {
    write_str(packer, "rid");
    write_str(packer, error.rid);
  }
  return std::move(sink.bytes);
}

ClientReply decode_client_reply(std::string_view frame) {
  const msgpack::object_handle handle = detail::unpack_frame(frame, "reply");
  const msgpack::object& root = handle.get();
  const FieldPath path{nullptr, "reply"};
  if (root.type != msgpack::type::MAP) detail::fail_type(path, "a map", root);
  if (find_key(root, "error")) return read_error(require_map(root, "error", path), path.field("error"));
  if (find_key(root, "expert_load")) return detail::read_expert_load(root, path);
  if (find_key(root, "abort")) return detail::read_abort(root, path);
  if (find_key(root, "success")) return detail::read_weights_updated(root, path);
  if (find_key(root, "status")) return detail::read_generation_control(root, path);
  return read_output(root, path);
}

}  // namespace moe::transport
