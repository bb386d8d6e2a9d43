#pragma once
// Every message the actors exchange: one plain struct per kind, tagged with its kind. A request is
// described once: the client's sampling, stop and output settings (RequestOptions) travel embedded
// from the front door to the detokenizer, never re-described field by field.
// The msgpack codec lives in net/transport; this header stays free of msgpack and ZeroMQ so that
// clients, actors and tests can use the structs without pulling either in.
// Members that end in `{}` may be left out of a brace initialisation without a warning
// (-Wmissing-field-initializers): they were added after code that initialises the rest by position.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace moe::msg {

// Bumped whenever a struct below changes shape; a frame of another version is rejected.
inline constexpr uint32_t kProtocolVersion = 21;

// The tag carried by every frame; values are part of the wire format, never reuse one.
enum class MessageKind : uint8_t {
  GenerateRequest = 1,
  TokenizedRequest = 2,
  WorkerBatch = 3,
  WorkerResult = 4,
  DetokenizeBatch = 5,
  TextOutputBatch = 6,
  Abort = 7,
  ErrorReply = 8,
  // 9 and 10 were HealthCheck and HealthReply, 12 was Shutdown: retired unused; never reuse them.
  Ready = 11,
  Heartbeat = 13,
  RoutingUpdate = 14,
  UpdateWeights = 15,
  WeightsUpdated = 16,
};

// A number added to one token's logit before the draw (OpenAI's logit_bias).
struct TokenBias {
  int32_t id = 0;
  float bias = 0.0f;  // in [-100, 100]
  bool operator==(const TokenBias&) const = default;
};

// How one token is drawn from a row of logits, as SGLang and vLLM name the settings. The penalties
// count the tokens generated so far (SGLang's semantics; src/sampling/logit_adjustments.h).
struct DrawSettings {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;        // keep the smallest most-probable set whose mass reaches top_p; in (0, 1]
  int32_t top_k = -1;        // keep the k most probable tokens; -1 or 0 = off
  float min_p = 0.0f;        // drop tokens less probable than min_p x the top token's probability
  float presence_penalty = 0.0f;    // subtracted once from each generated token's logit; in [-2, 2]
  float frequency_penalty = 0.0f;   // subtracted per occurrence among the generated tokens; in [-2, 2]
  float repetition_penalty = 1.0f;  // divides a generated token's positive logit, multiplies a negative one; (0, 2]
  std::vector<TokenBias> logit_bias{};
  bool operator==(const DrawSettings&) const = default;
};

// The most probable tokens at one position, most probable first, with their log-probabilities
// (top_logprobs); `texts` are the tokens decoded alone, filled in by the detokenizer.
struct TokenAlternatives {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  std::vector<std::string> texts;
  bool operator==(const TokenAlternatives&) const = default;
};

// The client's sampling settings, named and defaulted as SGLang's /generate sampling_params: how a
// token is drawn, and when generation stops.
struct SamplingParams : DrawSettings {
  int32_t max_new_tokens = 128;
  int32_t min_new_tokens = 0;
  std::vector<std::string> stop;        // stop strings
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  int32_t n = 1;                        // completions of the same prompt
  std::optional<uint64_t> seed;         // none = the engine picks one
  bool operator==(const SamplingParams&) const = default;
};

// The type routed-expert ids are returned in; Auto = the smallest that holds the model's ids (uint8
// up to 256 experts, else int16). Clients name them as numpy does (moe/enum_names.h).
enum class RoutedExpertsDtype : uint8_t { Int32 = 0, Int16 = 1, Uint8 = 2, Auto = 3 };
// The type router weights are returned in.
enum class RouterWeightsDtype : uint8_t { Float32 = 0, Float16 = 1 };
// The layer axis of routed_experts for a model with dense decoder layers (DeepSeek's
// first_k_dense_replace): All = one entry per decoder layer, dense layers 0 (SGLang's rows); Moe =
// the MoE layers only. Equal for models whose every layer is MoE.
enum class RoutedExpertsLayers : uint8_t { All = 0, Moe = 1 };

// What a client asked for about routed experts, carried unchanged to the detokenizer.
struct RoutingOptions {
  bool return_routed_experts = false;
  int32_t start_len = 0;                  // skip the first rows (multi-turn)
  RoutedExpertsDtype dtype = RoutedExpertsDtype::Int32;
  bool include_last = false;              // P+G rows instead of P+G-1
  bool return_router_weights = false;
  RouterWeightsDtype weights_dtype = RouterWeightsDtype::Float32;
  bool raw = false;                       // bytes instead of base64 (ZeroMQ clients and the HTTP front)
  // With return_routed_experts, on a server with an MoE STANDALONE draft: the draft model's routing
  // of the same positions (draft_routed_experts), never mixed into the target's rows.
  bool return_draft_routed_experts{};
  // None = the server's --routed-experts-layers; the front door fills it in.
  std::optional<RoutedExpertsLayers> layers{};
  // The reply has the last generated token's row too: it is fed once more, without sampling.
  bool routes_last_token() const { return return_routed_experts && include_last; }
  bool operator==(const RoutingOptions&) const = default;
};

// One turn of a chat conversation, for the chat endpoint.
struct ChatMessage {
  std::string role;
  std::string content;
  // The turn's other keys for the template (an assistant's tool_calls and reasoning_content, a tool
  // result's tool_call_id and name): the text of a JSON object; empty = none.
  std::string extra_fields{};
  bool operator==(const ChatMessage&) const = default;
};

// Everything a client asks of a request besides its prompt: the one description of a request that
// travels from the front door to the scheduler and, with a completion's first item, to the detokenizer.
struct RequestOptions {
  SamplingParams sampling;
  bool stream = false;
  bool return_logprob = false;
  int32_t top_logprobs_num = 0;  // with return_logprob: the most probable alternatives at each output token
  RoutingOptions routing;
  bool speculative = true;  // false: never speculate for this request, even on a speculating server
  // With return_logprob: the prompt tokens' logprobs from this position on (SGLang's
  // logprob_start_len); -1 = none. The front door keeps it below the prompt's length.
  int32_t logprob_start_len{-1};
  bool operator==(const RequestOptions&) const = default;
};

// The names a client gave the fields the front door checks, so that its refusal names a field as
// that client sent it: `sampling_params[1].top_p` in a /generate batch, `top_p` and `max_tokens` in
// OpenAI's APIs. The defaults are /generate's and the ZeroMQ protocol's; the transport's parser sets
// them, the front door (RequestPreparer) alone checks the values.
struct RequestFieldNames {
  std::string sampling = "sampling_params.";  // put before each sampling field's own name
  // The field the client set sampling.max_new_tokens with; empty = not given: the endpoint's default,
  // which the scheduler clamps to the room the prompt leaves, while a limit the client gave is
  // refused when the context cannot hold it.
  std::string max_new_tokens{};
  std::string min_new_tokens = "sampling_params.min_new_tokens";
  std::string top_logprobs = "top_logprobs_num";
  std::string logprob_start_len = "logprob_start_len";
  bool operator==(const RequestFieldNames&) const = default;
};

// A client's request as it enters the tokenizer actor: exactly one of text, input_ids, messages.
struct GenerateRequest : RequestOptions {
  static constexpr MessageKind kind = MessageKind::GenerateRequest;
  std::string rid;  // empty = the tokenizer assigns one
  std::optional<std::string> text;
  std::optional<std::vector<int32_t>> input_ids;
  std::optional<std::vector<ChatMessage>> messages;
  // Further variables for the chat template (OpenAI's chat_template_kwargs, e.g. Qwen3's
  // {"enable_thinking": false}): the text of a JSON object; empty = none.
  std::string chat_template_kwargs;
  // OpenAI's tools, rendered by the chat template: the text of a JSON array; empty = none.
  std::string tools{};
  // vLLM's continue_final_message: the prompt ends inside the last (assistant) message, which the
  // model continues, instead of opening a new assistant turn.
  bool continue_final_message{};
  RequestFieldNames field_names{};
  bool operator==(const GenerateRequest&) const = default;
};

// A validated, tokenized request, from the tokenizer to the scheduler: every check a request can
// fail was made at the front door (RequestPreparer), so later stages only assert.
struct TokenizedRequest : RequestOptions {
  static constexpr MessageKind kind = MessageKind::TokenizedRequest;
  std::string rid;
  std::vector<int32_t> input_ids;
  bool operator==(const TokenizedRequest&) const = default;
};

// One token's draw as the worker makes it; `step` is the request's output-token index, which with
// `seed` fixes the random draw so a recomputed request samples the same tokens.
struct TokenSampling : DrawSettings {
  uint64_t seed = 0;
  uint64_t step = 0;
  bool return_logprob = false;
  int32_t top_logprobs = 0;              // also return this many most probable tokens, in [0, 20]
  std::vector<int32_t> generated_ids{};    // the tokens generated so far; sent only when a penalty needs them
  std::vector<int32_t> suppressed_ids{};   // may not be drawn (stop tokens before min_new_tokens)
  bool operator==(const TokenSampling&) const = default;
};

// One sequence of a worker batch. Its KV slot table (the slot of every position 0 .. prefix +
// num_new_tokens - 1, as the model's ForwardBatch reads it) is held by the worker between steps,
// keyed by `id`: a step carries only how much of the held table still stands and the slots after it.
struct WorkerSequence {
  uint64_t id = 0;  // the scheduler's name for the sequence (a completion, from admission to its end)
  int32_t num_new_tokens = 0;
  // The first kept_slots entries of the worker's table for `id` stay; 0 starts a new table (a new or
  // re-admitted sequence: its prefix-cache slots travel then, once). A worker that holds fewer
  // refuses the step.
  int32_t kept_slots = 0;
  // The slots appended after them; their last num_new_tokens are the new tokens' (always sent).
  std::vector<int32_t> new_slots;
  bool needs_logits = false;      // sample after its last new token (verify the tree, with a tree)
  TokenSampling sampling;
  // A speculative draft tree over the new tokens (ForwardBatch's tree_parents); empty: none.
  std::vector<int32_t> tree_parents{};
  // STANDALONE speculation (draft-then-verify): > 0 asks the worker's draft model to choose the tree's
  // tokens and parents first, with at most this many children per node; the first token (the root)
  // is given, the others are placeholders whose tree_parents only fix each node's depth.
  int32_t draft_topk{};
  // Prompt logprobs: the prompt tokens that follow the last prompt_logprob_ids.size() new tokens
  // before the sampled one (or before the end, for a sequence that samples nothing). The worker
  // returns each one's logprob under the logits of the token before it (and, with
  // sampling.top_logprobs, that row's top alternatives). Never with a tree.
  std::vector<int32_t> prompt_logprob_ids{};
  bool operator==(const WorkerSequence&) const = default;
};

// A token the scheduler does not know yet: the one an earlier step, still in flight, samples for a
// request (overlapped scheduling plans step n+1 before step n's result is back). The worker writes
// that step's sample `sample` (its index among the step's sampled ids) at token_ids[token_index].
inline constexpr int32_t kFutureTokenId = -1;  // what token_ids holds where a FutureToken goes
struct FutureToken {
  int32_t token_index = 0;
  uint64_t step = 0;
  int32_t sample = 0;
  bool operator==(const FutureToken&) const = default;
};

// One forward step, from the scheduler to a model worker.
struct WorkerBatch {
  static constexpr MessageKind kind = MessageKind::WorkerBatch;
  uint64_t step = 0;
  std::vector<int32_t> token_ids;  // [T], sequences' new tokens back to back
  std::vector<int32_t> positions;  // [T]
  std::vector<WorkerSequence> sequences;
  bool capture_routing = false;         // capture is on: every step is captured
  bool capture_router_weights = false;  // capture keeps router weights too
  int32_t max_tree_experts = 0;         // expert limit of the step's verify tokens; 0 = off
  // The worker instance of each pipeline stage (one entry without pipeline parallelism) the
  // scheduler planned this step for; a stage whose instance differs drops it (a restarted stage
  // must not run a step queued for its predecessor, over KV it does not have).
  std::vector<uint64_t> stage_instances;
  std::vector<FutureToken> future_tokens{};  // token_ids entries the worker fills in (placeholders: -1)
  // Sequences that ended (finished, aborted, preempted) since the previous step: the worker drops
  // their tables before applying this step's sequences.
  std::vector<uint64_t> ended_sequences{};
  // The scheduler that planned the step (random per scheduler): a worker whose tables another
  // scheduler made (the front restarted) drops them all, as that scheduler will never end them.
  uint64_t scheduler_instance = 0;
  bool operator==(const WorkerBatch&) const = default;
};

// Routed-expert rows: row r, layer l, slot k at [(r * num_layers + l) * top_k + k].
struct RoutingRows {
  int32_t num_layers = 0;
  int32_t top_k = 0;
  std::vector<int16_t> expert_ids;  // [rows, num_layers, top_k]
  std::vector<float> weights;       // same shape, or empty when weights were not captured
  int64_t num_rows() const {
    const int64_t row_size = int64_t{num_layers} * top_k;
    return row_size == 0 ? 0 : static_cast<int64_t>(expert_ids.size()) / row_size;
  }
  bool operator==(const RoutingRows&) const = default;
};

// The rows of one step's tokens in its batch order; the copy engine may deliver them a step late.
// A pipeline stage sends the slice of its own MoE layers: layers [first_layer, first_layer +
// rows.num_layers) of the full row.
struct StepRouting {
  uint64_t step = 0;
  RoutingRows rows;
  int32_t first_layer = 0;
  bool operator==(const StepRouting&) const = default;
};

// A worker's answer to a WorkerBatch: the tokens sampled for each sequence that needed logits, in
// order: one, or for a draft tree its accepted draft tokens then one more.
struct WorkerResult {
  static constexpr MessageKind kind = MessageKind::WorkerResult;
  uint64_t step = 0;
  std::vector<int32_t> sampled_ids;
  std::vector<float> logprobs;      // aligned with sampled_ids; empty when nobody asked
  // How many of sampled_ids each sequence that needed logits has; empty: one each (no tree).
  std::vector<int32_t> sampled_counts{};
  // Per MoE layer, how many distinct experts the step's draft-tree tokens used; empty without trees.
  std::vector<int32_t> verify_experts{};
  std::vector<TokenAlternatives> top_logprobs{};  // aligned with sampled_ids; empty when nobody asked
  std::vector<StepRouting> routing;  // rows whose copies completed, oldest step first
  uint64_t worker_instance = 0;      // the Heartbeat's: which worker (and so which KV cache) computed it
  // The trees the draft model chose for the sequences with draft_topk > 0, in batch order: every
  // node's token and parent, root included (as many nodes as each sequence's placeholder tree).
  std::vector<int32_t> drafted_tokens{};
  std::vector<int32_t> drafted_parents{};
  // The batch's prompt_logprob_ids' logprobs (and top alternatives, for sequences that asked), in
  // batch order; empty when no sequence has any.
  std::vector<float> prompt_logprobs{};
  std::vector<TokenAlternatives> prompt_top_logprobs{};
  // The draft model's routing of every token of this step, in batch order, from its shadow of the
  // step's forward: present when the step was captured and the STANDALONE draft is an MoE.
  RoutingRows draft_routing{};
  bool operator==(const WorkerResult&) const = default;
};

// Routing rows whose copy finished while the worker had no step to answer: sent on their own.
struct RoutingUpdate {
  static constexpr MessageKind kind = MessageKind::RoutingUpdate;
  std::vector<StepRouting> routing;  // oldest step first
  uint64_t worker_instance = 0;
  bool operator==(const RoutingUpdate&) const = default;
};

// Why a request finished, as SGLang's meta_info.finish_reason.type spells it.
enum class FinishKind : uint8_t { Stop = 0, Length = 1, Abort = 2 };

// A finished request's reason; `matched_*` for Stop, `message` for Abort.
struct FinishReason {
  FinishKind kind = FinishKind::Length;
  std::optional<int32_t> matched_token;
  std::optional<std::string> matched_text;
  std::string message;
  bool operator==(const FinishReason&) const = default;

  static FinishReason length() { return {}; }
  static FinishReason stop_token(int32_t token) { return {FinishKind::Stop, token, std::nullopt, {}}; }
  static FinishReason stop_string(std::string text) { return {FinishKind::Stop, std::nullopt, std::move(text), {}}; }
  static FinishReason abort(std::string why) { return {FinishKind::Abort, std::nullopt, std::nullopt, std::move(why)}; }
};

// One sequence's result since its previous record: the one record of a token's result, which the
// scheduler fills from a worker's step (ids, logprobs, prompt logprobs, finish reason), the
// detokenizer extends with text (TextOutput) and the front turns into the client's answer. Each field
// keeps its name on every hop.
struct SequenceOutput {
  std::string rid;
  int32_t index = 0;                                 // which of the n completions
  std::vector<int32_t> output_ids;                   // new output tokens
  std::vector<float> output_logprobs;                // aligned with output_ids; empty when not asked
  std::vector<TokenAlternatives> output_top_logprobs;  // aligned with output_ids when top_logprobs_num > 0
  std::optional<FinishReason> finish_reason;         // set on the last record
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;
  std::string weight_version;  // the weights that computed its tokens (SGLang's meta_info.weight_version)
  // Prompt logprobs (logprob_start_len >= 0), once, on the record of the completion's first token:
  // the prompt's tokens from logprob_start_len on, each one's logprob (NaN for the prompt's first
  // token, which has no context) and, with top_logprobs_num, the alternatives at its position
  // (empty for the first token).
  std::vector<int32_t> input_token_ids;
  std::vector<float> input_token_logprobs;
  std::vector<TokenAlternatives> input_top_logprobs;
  bool operator==(const SequenceOutput&) const = default;
};

// The record as the scheduler sends it to the detokenizer: with the routing rows it covers.
struct DetokenizeItem : SequenceOutput {
  std::optional<RequestOptions> options;  // present on the completion's first item
  RoutingRows routed_experts;             // rows covered since the previous item
  RoutingRows draft_routed_experts;       // the draft model's rows of the same positions, when asked
  bool operator==(const DetokenizeItem&) const = default;
};

// From the scheduler to the detokenizer, once per step.
struct DetokenizeBatch {
  static constexpr MessageKind kind = MessageKind::DetokenizeBatch;
  std::vector<DetokenizeItem> items;
  bool operator==(const DetokenizeBatch&) const = default;
};

// A numeric array ready for a client: base64 text, or raw little-endian bytes when asked.
struct EncodedArray {
  std::string data;
  bool raw = false;
  std::vector<int64_t> shape;
  std::string dtype;  // numpy's name: int32, int16, uint8, float32, float16
  bool operator==(const EncodedArray&) const = default;
};

// The record as the detokenizer sends it on, for a client (one reply, or one streamed chunk): with
// the new text, each token's text (when logprobs were asked; top alternatives' texts inside their
// TokenAlternatives) and the routing rows encoded as the client asked.
struct TextOutput : SequenceOutput {
  std::string text;
  std::vector<std::string> output_token_texts;
  int32_t completion_tokens = 0;  // total so far
  std::optional<EncodedArray> routed_experts;
  std::optional<EncodedArray> router_weights;
  std::optional<EncodedArray> draft_routed_experts;  // the draft model's rows of routed_experts' positions
  std::vector<std::string> input_token_texts;
  bool operator==(const TextOutput&) const = default;
};

// From the detokenizer to the tokenizer, which routes each output to its client.
struct TextOutputBatch {
  static constexpr MessageKind kind = MessageKind::TextOutputBatch;
  std::vector<TextOutput> outputs;
  bool operator==(const TextOutputBatch&) const = default;
};

// Stop a request: its client went away, or the detokenizer matched a stop string.
struct Abort {
  static constexpr MessageKind kind = MessageKind::Abort;
  std::string rid;
  std::string reason;
  int32_t index = -1;        // one completion of an n > 1 request; -1 = all of them
  bool stop_string = false;  // the detokenizer ended the reply (a stop string, or its own error)
  int64_t kept_tokens = -1;  // stop_string: output tokens the reply kept; -1 = all of them
  bool operator==(const Abort&) const = default;
};

// A failed request (or, with an empty rid, a failed actor); `code` follows HTTP (400, 500, 503).
struct ErrorReply {
  static constexpr MessageKind kind = MessageKind::ErrorReply;
  std::string rid;
  std::string message;
  int32_t code = 500;
  std::string source;  // the actor that reported it
  std::string param;   // the request field at fault, as a JSON path (OpenAI's error.param); empty: none
  bool operator==(const ErrorReply&) const = default;
};

// An actor telling the launcher it has bound its sockets and can take work.
struct Ready {
  static constexpr MessageKind kind = MessageKind::Ready;
  std::string actor;
  int64_t pid = 0;
  bool operator==(const Ready&) const = default;
};

// What a model worker serves. The scheduler compares a worker's settings with its own before it
// sends the worker any step, and refuses a worker that differs (naming the setting).
struct WorkerSettings {
  uint64_t model_fingerprint = 0;  // config.json, the safetensors headers and samples of every tensor's bytes
  int64_t kv_slots = 0;            // the KV cache's token slots, padding slot included
  int64_t max_batch_tokens = 0;    // tokens one step may hold (the capture buffer's rows)
  bool capture_routing = false;
  bool capture_router_weights = false;
  int32_t ep_size = 1;
  int32_t tp_size = 1;      // tensor-parallel ranks
  int32_t pp_size = 1;      // pipeline stages the model is split into
  int32_t pp_rank = 0;      // which of them this worker runs
  int32_t layer_begin = 0;  // its decoder layers [layer_begin, layer_end)
  int32_t layer_end = 0;
  uint64_t draft_fingerprint = 0;  // the STANDALONE draft's checkpoint (model_fingerprint); 0: no draft
  // How it computes (each changes its tokens or routing rows), as the flags name them, resolved:
  std::string device = "cpu";          // --device
  std::string moe_backend = "grouped";  // --moe-runner-backend, "auto" resolved: reference | grouped | cuda
  std::string quantization = "none";   // --quantization: none | int8 | int4
  int64_t quantization_group_size = 0;  // --quantization-group-size where int4 quantizes at load; else 0
  std::string kernel_dtype = "float32";  // --kernel-dtype: float32 | bf16 | int8
  // Speculative decoding: "" (off) | NGRAM | STANDALONE; with it, the tree's limits (0 without).
  std::string speculative_algorithm{};
  int32_t speculative_num_steps = 0;
  int32_t speculative_eagle_topk = 0;
  int32_t speculative_num_draft_tokens = 0;
  int32_t max_tree_experts = 0;
  std::string draft_quantization{};  // STANDALONE: the draft's own, resolved (none | int8 | int4); "" otherwise
  bool operator==(const WorkerSettings&) const = default;
};

// The model worker (each pipeline stage) saying it is alive, every half second from its own loop;
// settings.pp_rank says which stage. `instance` is drawn at the worker's start: a new value means a new worker, whose KV cache holds nothing the
// scheduler believes it holds.
struct Heartbeat {
  static constexpr MessageKind kind = MessageKind::Heartbeat;
  uint64_t instance = 0;
  WorkerSettings settings{};
  bool operator==(const Heartbeat&) const = default;
};

// What /pause_generation does with the requests in the engine (SGLang's `mode`): Abort ends them
// (finish reason abort), Retract frees their KV and queues them again to be recomputed after
// /continue_generation, InPlace keeps them as they are. In every mode no step starts until then.
enum class PauseMode : uint8_t { Abort, Retract, InPlace };

// What an UpdateWeights asks of the worker's memory instead of a load: SGLang's
// /release_memory_occupation (Release) and /resume_memory_occupation (Resume) of the tagged memory.
enum class MemoryAction : uint8_t { None, Release, Resume };
// SGLang's tags of that memory: the model's weights, the KV pool, and the CUDA graphs (kept here:
// the memory they address keeps its addresses, so the tag asks for nothing).
enum class MemoryTag : uint8_t { Weights, KvCache, CudaGraph };

// What an UpdateWeights asks of a weight group, the NCCL group a trainer broadcasts new weights in
// (SGLang's /init_weights_update_group, /update_weights_from_distributed,
// /destroy_weights_update_group; docs/rl.md): Join it, Receive the named tensors by broadcast from
// the trainer's rank 0 and serve them, or Leave it.
enum class WeightGroupAction : uint8_t { None, Join, Receive, Leave };

// The group call's fields, by SGLang's names; which are read depends on the action.
struct WeightGroupCall {
  WeightGroupAction action{};
  std::string group_name;      // every action
  std::string master_address;  // Join: the trainer's TCPStore (its init_method tcp://ADDRESS:PORT)
  int32_t master_port = 0;
  int32_t rank_offset = 0;  // Join: this engine's rank in the group (the trainer is rank 0)
  int32_t world_size = 0;   // Join: the trainer and every engine's ranks
  std::vector<std::string> names;                // Receive: the tensors, in the order they are broadcast
  std::vector<std::string> dtypes;               // Receive: torch's names, e.g. "bfloat16"
  std::vector<std::vector<int64_t>> shapes;      // Receive
  bool operator==(const WeightGroupCall&) const = default;
};

// Load new weights of the same architecture without a restart (SGLang's update_weights_from_disk):
// from a client to the tokenizer, which sets `id`, on to the scheduler, which sends it to the model
// worker once no step is in flight (and plans none until the answer is back). With `memory` set it
// releases or resumes memory instead, by the same path: a change to the worker's weights between
// steps, answered by WeightsUpdated (model_path is then the scheduler's: the weights to restore).
// With `group.action` set it acts on a weight group instead (a Receive is a load: what it received
// serves, and the answer's model_path names the checkpoint that now holds those weights).
struct UpdateWeights {
  static constexpr MessageKind kind = MessageKind::UpdateWeights;
  uint64_t id = 0;                            // set by the front door: matches the answer to its requester
  std::string model_path;                     // a checkpoint directory as --model-path takes it
  std::optional<std::string> weight_version;  // the new weights' label; none keeps the current one (SGLang)
  bool abort_all_requests = false;            // also abort the queued requests no step has run yet
  uint64_t worker_instance = 0;               // set by the scheduler: the worker it asks
  MemoryAction memory{};                      // None: load model_path
  bool weights_tag{};                         // memory: SGLang's tag "weights" (the model's weights)
  bool kv_cache_tag{};                        // memory: SGLang's tag "kv_cache" (the KV pool)
  WeightGroupCall group{};                    // action None: not a group call
  bool operator==(const UpdateWeights&) const = default;
};

// Whether `update` changes the weights that serve (a load from disk or a Receive), rather than
// memory or a group's membership.
inline bool loads_weights(const UpdateWeights& update) {
  return update.memory == MemoryAction::None &&
         (update.group.action == WeightGroupAction::None || update.group.action == WeightGroupAction::Receive);
}

// What `tags` asks of a release or a resume; every tag when none is given (SGLang's default).
inline void set_memory_tags(UpdateWeights& update, const std::optional<std::vector<MemoryTag>>& tags) {
  update.weights_tag = update.kv_cache_tag = !tags;
  for (MemoryTag tag : tags.value_or(std::vector<MemoryTag>{})) {
    if (tag == MemoryTag::Weights) update.weights_tag = true;
    if (tag == MemoryTag::KvCache) update.kv_cache_tag = true;
  }
}

// The answer to UpdateWeights: from the worker to the scheduler, which applies it and passes it on
// to the tokenizer with the version now in effect.
struct WeightsUpdated {
  static constexpr MessageKind kind = MessageKind::WeightsUpdated;
  UpdateWeights request;           // what was asked, echoed by the worker
  bool success = false;            // false: the old weights still serve
  std::string message;             // why it failed, or what the update did
  uint64_t model_fingerprint = 0;  // the new checkpoint's (on success)
  std::string weight_version;      // set by the scheduler: the version in effect after the answer
  uint64_t worker_instance = 0;    // the worker that answered
  bool operator==(const WeightsUpdated&) const = default;
};

// Any message; what the codec decodes a frame into.
using Message = std::variant<GenerateRequest, TokenizedRequest, WorkerBatch, WorkerResult, DetokenizeBatch,
                             TextOutputBatch, Abort, ErrorReply, Ready, Heartbeat, RoutingUpdate, UpdateWeights,
                             WeightsUpdated>;

// The kind of a message held in the variant.
inline MessageKind kind_of(const Message& message) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kind; }, message);
}

// A kind's name, for logs and error messages ("unknown" for a value no struct has).
inline std::string_view kind_name(MessageKind kind) {
  switch (kind) {
    case MessageKind::GenerateRequest: return "GenerateRequest";
    case MessageKind::TokenizedRequest: return "TokenizedRequest";
    case MessageKind::WorkerBatch: return "WorkerBatch";
    case MessageKind::WorkerResult: return "WorkerResult";
    case MessageKind::DetokenizeBatch: return "DetokenizeBatch";
    case MessageKind::TextOutputBatch: return "TextOutputBatch";
    case MessageKind::Abort: return "Abort";
    case MessageKind::ErrorReply: return "ErrorReply";
    case MessageKind::Ready: return "Ready";
    case MessageKind::Heartbeat: return "Heartbeat";
    case MessageKind::RoutingUpdate: return "RoutingUpdate";
    case MessageKind::UpdateWeights: return "UpdateWeights";
    case MessageKind::WeightsUpdated: return "WeightsUpdated";
  }
  return "unknown";
}

}  // namespace moe::msg
