#include "api/response_builder.h"

#include <algorithm>
#include <cmath>

#include "api/chat_choice_parser.h"
#include "api/raw_rows.h"

namespace moe::api {
namespace {

using nlohmann::json;

// The expert-id arrays an answer may carry, split at the prompt alike: the target's rows, and the
// STANDALONE draft's rows of the same positions.
struct RowsField {
  const char* name;
  std::optional<RawRows> CompletionState::*joined;
  std::optional<msg::EncodedArray> msg::TextOutput::*chunk;
};
constexpr RowsField kRowsFields[] = {
    {"routed_experts", &CompletionState::routed_experts, &msg::TextOutput::routed_experts},
    {"draft_routed_experts", &CompletionState::draft_routed_experts, &msg::TextOutput::draft_routed_experts}};

// OpenAI's finish_reason: "stop", "length", or (vLLM's) "abort"; "tool_calls" when the choice's
// output made a tool call, as vLLM answers whatever ended it; null while unfinished.
json finish_reason(const std::optional<msg::FinishReason>& reason, bool called_tools) {
  if (!reason) return nullptr;
  if (called_tools) return "tool_calls";
  switch (reason->kind) {
    case msg::FinishKind::Stop: return "stop";
    case msg::FinishKind::Length: return "length";
    case msg::FinishKind::Abort: return "abort";
  }
  return nullptr;
}

// vLLM's stop_reason: the stop token id or stop string matched, else null.
json stop_reason(const std::optional<msg::FinishReason>& reason) {
  if (reason && reason->matched_token) return *reason->matched_token;
  if (reason && reason->matched_text) return *reason->matched_text;
  return nullptr;
}

// The logprobs of some tokens: ids[i] with logprobs[i] (NaN for the prompt's first token), texts[i]
// (the token decoded alone) and, when asked, top[i] (the most probable tokens at that position;
// none for the prompt's first token).
struct LogprobsPart {
  const std::vector<int32_t>& ids;
  const std::vector<float>& logprobs;
  const std::vector<std::string>& texts;
  const std::vector<msg::TokenAlternatives>& top;
};

// Two parts one after the other (echo: the prompt's, then the output's).
struct JoinedLogprobs {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  std::vector<std::string> texts;
  std::vector<msg::TokenAlternatives> top;

  JoinedLogprobs(const LogprobsPart& first, const LogprobsPart& second) {
    for (const LogprobsPart* part : {&first, &second}) {
      ids.insert(ids.end(), part->ids.begin(), part->ids.end());
      logprobs.insert(logprobs.end(), part->logprobs.begin(), part->logprobs.end());
      texts.insert(texts.end(), part->texts.begin(), part->texts.end());
      top.insert(top.end(), part->top.begin(), part->top.end());
    }
  }
  LogprobsPart part() const { return {ids, logprobs, texts, top}; }
};

const std::vector<int32_t> kNoIds;
const std::vector<float> kNoFloats;
const std::vector<std::string> kNoTexts;
const std::vector<msg::TokenAlternatives> kNoTops;
const LogprobsPart kNoLogprobs{kNoIds, kNoFloats, kNoTexts, kNoTops};

// A logprob, or null where there is none (NaN: the prompt's first token).
json logprob_value(float logprob) { return std::isnan(logprob) ? json() : json(logprob); }

// How logprobs name a token: its text, as vLLM, or "token_id:N" (vLLM's return_tokens_as_token_ids).
std::string token_name(int32_t id, const std::string& text, bool as_ids) {
  return as_ids ? "token_id:" + std::to_string(id) : text;
}

// A chat logprob entry: the token, its logprob and its UTF-8 bytes (none when named by id).
json chat_token(int32_t id, const std::string& text, float logprob, bool as_ids) {
  json bytes = nullptr;
  if (!as_ids) {
    bytes = json::array();
    for (unsigned char byte : text) bytes.push_back(byte);
  }
  return {{"token", token_name(id, text, as_ids)}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

// The logprobs of `part`'s tokens, in the completions or the chat form.
json logprobs_json(bool chat, const LogprobsPart& part, bool as_ids) {
  const size_t count = part.logprobs.size();
  if (chat) {
    json content = json::array();
    for (size_t i = 0; i < count; ++i) {
      json entry = chat_token(part.ids.at(i), part.texts.at(i), part.logprobs[i], as_ids);
      entry["top_logprobs"] = json::array();
      if (i < part.top.size()) {
        const msg::TokenAlternatives& top = part.top[i];
        for (size_t k = 0; k < top.ids.size(); ++k)
          entry["top_logprobs"].push_back(chat_token(top.ids[k], top.texts.at(k), top.logprobs.at(k), as_ids));
      }
      content.push_back(std::move(entry));
    }
    return {{"content", std::move(content)}};
  }
  json tokens = json::array(), token_logprobs = json::array();
  for (size_t i = 0; i < count; ++i) {
    tokens.push_back(token_name(part.ids.at(i), part.texts.at(i), as_ids));
    token_logprobs.push_back(logprob_value(part.logprobs[i]));
  }
  json result = {{"tokens", std::move(tokens)}, {"token_logprobs", std::move(token_logprobs)}};
  if (!part.top.empty()) {
    json top_logprobs = json::array();
    for (const msg::TokenAlternatives& top : part.top) {
      if (top.ids.empty()) {  // the prompt's first token (echo), as OpenAI: null
        top_logprobs.push_back(nullptr);
        continue;
      }
      json alternatives = json::object();
      for (size_t k = 0; k < top.ids.size(); ++k)
        alternatives[token_name(top.ids[k], top.texts.at(k), as_ids)] = top.logprobs.at(k);
      top_logprobs.push_back(std::move(alternatives));
    }
    result["top_logprobs"] = std::move(top_logprobs);
  }
  return result;
}

// Gathers the outputs of an OpenAI call into its objects and chunks.
class OpenAiResponseBuilder final : public ResponseBuilder {
 public:
  OpenAiResponseBuilder(const GenerationCall& call, const std::string& response_id, int64_t created)
      : ResponseBuilder(call),
        chat_(call.api == ApiKind::ChatCompletion),
        id_((chat_ ? "chatcmpl-" : "cmpl-") + response_id),
        created_(created),
        model_(call.model),
        include_usage_(call.include_usage),
        list_form_(call.routing_format == RoutingFormat::List),
        logprobs_(call.requests.front().return_logprob),
        tokens_as_ids_(call.tokens_as_ids),
        n_(static_cast<size_t>(call.requests.front().sampling.n)),
        parsing_(call.output_parsing),
        parses_(chat_ && (parsing_.reasoning || parsing_.tool_calls)),
        rows_sent_(call.requests.size() * n_, 0),
        role_sent_(call.requests.size() * n_, false),
        echoed_(call.requests.size() * n_, false) {
    if (parses_ && stream_) choice_parsers_.assign(call.requests.size() * n_, ChatChoiceParser(parsing_));
    if (call.echo)
      for (const msg::GenerateRequest& request : call.requests) echo_texts_.push_back(request.text.value_or(""));
  }

  std::vector<json> add(size_t prompt, const msg::TextOutput& output) override {
    const CompletionState& completion = grid_.record(prompt, output);
    if (!stream_) return {};
    const size_t choice = prompt * n_ + static_cast<size_t>(output.index);
    std::vector<json> payloads;
    if (chat_ && !role_sent_[choice]) {
      role_sent_[choice] = true;
      payloads.push_back(chunk({{"index", choice},
                                {"delta", {{"role", "assistant"}, {"content", ""}}},
                                {"logprobs", nullptr},
                                {"finish_reason", nullptr}}));
    }
    // echo: the choice's first chunk starts with the prompt, its text and (with logprobs) its tokens.
    const bool echo_now = !echo_texts_.empty() && !echoed_[choice];
    if (echo_now) echoed_[choice] = true;
    json body = chat_ ? json{{"content", output.text}} : json((echo_now ? echo_texts_[prompt] : "") + output.text);
    bool called_tools = false;
    if (parses_) {
      body = choice_parsers_[choice].delta(output.text, completion.finish_reason.has_value());
      called_tools = choice_parsers_[choice].called_tools();
    }
    const LogprobsPart new_tokens{output.output_ids, output.output_logprobs, output.output_token_texts,
                                  output.output_top_logprobs};
    const JoinedLogprobs echoed(
        echo_now ? LogprobsPart{output.input_token_ids, output.input_token_logprobs, output.input_token_texts,
                                output.input_top_logprobs}
                 : kNoLogprobs,
        new_tokens);
    json payload = chunk(choice_json(choice, std::move(body), echoed.part(), completion.finish_reason, called_tools, true));
    payload["metadata"] = metadata(output.weight_version);
    if (output.routed_experts) add_chunk_rows(payload, choice, output);
    payloads.push_back(std::move(payload));
    return payloads;
  }

  std::vector<json> closing_payloads() const override {
    if (!include_usage_) return {};
    json last = header(chat_ ? "chat.completion.chunk" : "text_completion");
    last["choices"] = json::array();
    last["usage"] = usage();
    return {last};
  }

  json response() const override {
    json body = header(chat_ ? "chat.completion" : "text_completion");
    body["choices"] = json::array();
    for (size_t prompt = 0; prompt < grid_.num_prompts(); ++prompt) {
      for (const CompletionState& completion : grid_.completions(prompt)) {
        const bool echo = !echo_texts_.empty();
        json answer = chat_ ? json{{"role", "assistant"}, {"content", completion.text}}
                            : json((echo ? echo_texts_[prompt] : "") + completion.text);
        bool called_tools = false;
        if (parses_) {
          ChatChoiceParser parser(parsing_);
          answer = parser.message(completion.text);
          called_tools = parser.called_tools();
        }
        const JoinedLogprobs logprobs(
            echo ? LogprobsPart{completion.input_token_ids, completion.input_token_logprobs,
                                completion.input_token_texts, completion.input_top_logprobs}
                 : kNoLogprobs,
            {completion.output_ids, completion.output_logprobs, completion.output_token_texts,
             completion.output_top_logprobs});
        json choice = choice_json(prompt * n_ + static_cast<size_t>(completion.index), std::move(answer),
                                  logprobs.part(), completion.finish_reason, called_tools, false);
        for (const RowsField& field : kRowsFields)
          if (const std::optional<RawRows>& rows = completion.*field.joined)
            put_rows(choice, field.name, rows->slice(completion.prompt_tokens, rows->rows()));
        body["choices"].push_back(std::move(choice));
      }
    }
    body["usage"] = usage();
    // Every completion of a call ran on one version: a weight update ends the requests it interrupts.
    body["metadata"] = metadata(grid_.completions(0).front().weight_version);
    for (const RowsField& field : kRowsFields)
      if (grid_.completions(0).front().*field.joined) put_prompt_rows(body, field);
    return body;
  }

 private:
  // The fields every object and chunk starts with.
  json header(const char* object) const {
    return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
  }

  // SGLang's extra object: the version of the weights that computed the tokens.
  static json metadata(const std::string& weight_version) { return {{"weight_version", weight_version}}; }

  // A streamed chunk of one choice.
  json chunk(json choice) const {
    json payload = header(chat_ ? "chat.completion.chunk" : "text_completion");
    payload["choices"] = json::array({std::move(choice)});
    if (include_usage_) payload["usage"] = nullptr;  // as OpenAI: null on every chunk but the last
    return payload;
  }

  // A choice with its `body`: a completion's text, or chat's assistant `message` (its `delta` when
  // streaming).
  json choice_json(size_t choice, json body, const LogprobsPart& logprobs,
                   const std::optional<msg::FinishReason>& reason, bool called_tools, bool delta) const {
    json result = {{"index", choice},
                   {"logprobs", logprobs_ ? logprobs_json(chat_, logprobs, tokens_as_ids_) : json()},
                   {"finish_reason", finish_reason(reason, called_tools)},
                   {"stop_reason", stop_reason(reason)}};
    result[!chat_ ? "text" : delta ? "delta" : "message"] = std::move(body);
    return result;
  }

  // Rows in the requested form: base64 with shape and dtype, or nested lists.
  void put_rows(json& object, const std::string& name, const RawRows& rows) const {
    if (list_form_) {
      put_list(object, name, rows);
    } else {
      put_base64(object, name, rows);
    }
  }

  // A streamed chunk's rows: those before prompt_tokens go to `prompt_<name>` (sent by sample 0
  // only: every sample has the same prompt rows), the rest to the choice.
  void add_chunk_rows(json& payload, size_t choice, const msg::TextOutput& output) {
    const int64_t first = rows_sent_[choice];
    for (const RowsField& field : kRowsFields) {
      if (!(output.*field.chunk)) continue;
      const RawRows rows = RawRows::from(*(output.*field.chunk));
      const int64_t prompt_rows = std::clamp<int64_t>(output.prompt_tokens - first, 0, rows.rows());
      if (output.index == 0 && prompt_rows > 0)
        put_rows(payload, std::string("prompt_") + field.name, rows.slice(0, prompt_rows));
      put_rows(payload["choices"][0], field.name, rows.slice(prompt_rows, rows.rows()));
    }
    rows_sent_[choice] += output.routed_experts->shape.front();
  }

  // The prompt rows of `field` at the response level: plain fields for one prompt, lists aligned
  // with the prompts for several.
  void put_prompt_rows(json& body, const RowsField& field) const {
    std::vector<json> parts;
    for (size_t prompt = 0; prompt < grid_.num_prompts(); ++prompt) {
      const CompletionState& first = grid_.completions(prompt).front();
      const std::optional<RawRows>& joined = first.*field.joined;
      const RawRows rows = joined ? joined->slice(0, first.prompt_tokens) : RawRows();
      put_rows(parts.emplace_back(json::object()), std::string("prompt_") + field.name, rows);
    }
    if (parts.size() == 1) {
      body.update(parts.front());
      return;
    }
    for (const json& part : parts) {
      for (const auto& [key, value] : part.items()) body[key].push_back(value);
    }
  }

  // Token counts: each prompt once (its samples share it), every completion.
  json usage() const {
    int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
    for (size_t prompt = 0; prompt < grid_.num_prompts(); ++prompt) {
      const std::vector<CompletionState>& completions = grid_.completions(prompt);
      prompt_tokens += completions.front().prompt_tokens;
      cached_tokens += completions.front().cached_tokens;
      for (const CompletionState& completion : completions) completion_tokens += completion.completion_tokens;
    }
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  }

  bool chat_;
  std::string id_;
  int64_t created_;
  std::string model_;
  bool include_usage_;
  bool list_form_;
  bool logprobs_;
  bool tokens_as_ids_;
  size_t n_;
  GenerationCall::OutputParsing parsing_;
  bool parses_;                                  // chat with a reasoning or tool-call parser on
  std::vector<ChatChoiceParser> choice_parsers_;  // streaming with parsers: per choice
  std::vector<int64_t> rows_sent_;  // per choice: routing rows streamed so far
  std::vector<bool> role_sent_;     // per choice: the chat role chunk went out
  std::vector<std::string> echo_texts_;  // echo: each prompt's text; empty without echo
  std::vector<bool> echoed_;        // per choice: streaming with echo, the prompt went out
};

}  // namespace

json model_list(const std::string& model, int64_t created, int64_t max_model_len) {
  return {{"object", "list"},
          {"data", json::array({{{"id", model},
                                 {"object", "model"},
                                 {"created", created},
                                 {"owned_by", "moe-engine"},
                                 {"max_model_len", max_model_len}}})}};
}

std::unique_ptr<ResponseBuilder> make_openai_builder(const GenerationCall& call, const std::string& response_id,
                                                     int64_t created) {
  return std::make_unique<OpenAiResponseBuilder>(call, response_id, created);
}

}  // namespace moe::api
