// Calls moe-serve with the official `openai` npm package, as a Node user would: completions (prompts of
// token ids) and chat completions, streamed and not, routed experts in base64 and list form through the
// package's support for extra body fields, and a streamed tool call put together by the package. Prints one JSON line per call for openai_client_test.py to check.
// Usage: node openai_client.mjs BASE_URL MODEL_NAME PLAN_JSON_FILE
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

// The server, the model name it serves, and the calls to make (written by openai_client_test.py).
const [baseURL, model, planFile] = process.argv.slice(2);
// No retries: a failed call must show, not be hidden by a second try.
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const plan = JSON.parse(readFileSync(planFile, 'utf8'));

// The routing dtypes the server may send, as typed arrays.
const TYPED_ARRAYS = { int32: Int32Array, int16: Int16Array, uint8: Uint8Array };

// Base64 of a little-endian (tokens, layers, top_k) array, as the server sends it, to nested lists.
function decodeRows(base64, shape, dtype) {
  const bytes = Buffer.from(base64, 'base64');
  // Copy: a Buffer may sit at an offset of a shared pool that is not aligned for the element type.
  const flat = new TYPED_ARRAYS[dtype](bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const [tokens, layers, topK] = shape;
  const row = (t, l) => Array.from(flat.subarray((t * layers + l) * topK, (t * layers + l + 1) * topK));
  return Array.from({ length: tokens }, (_, t) => Array.from({ length: layers }, (_, l) => row(t, l)));
}

// The rows under `key` of an object, in either form; none when the object does not carry them.
function rowsOf(holder, key) {
  const value = holder[key];
  if (value === undefined || value === null) return [];
  if (typeof value !== 'string') return value;
  return value === '' ? [] : decodeRows(value, holder[`${key}_shape`], holder[`${key}_dtype`]);
}

// Extra (non-OpenAI) body fields, passed through the package as-is; `thinking: false` asks Qwen3's
// template to close an empty thinking block (chat_template_kwargs, as vLLM and SGLang take it).
function extras(call) {
  const fields = { return_routed_experts: true, routed_experts_format: call.format, ignore_eos: true };
  if (call.thinking === false) fields.chat_template_kwargs = { enable_thinking: false };
  return fields;
}

// What differs between the two endpoints: the method, the prompt field, and where a choice keeps its text.
const ENDPOINTS = {
  completion: { create: (request) => client.completions.create(request),
                prompt: (call) => ({ prompt: call.prompt_ids }), text: (choice) => choice.text },
  chat: { create: (request) => client.chat.completions.create(request), prompt: (call) => ({ messages: call.messages }),
          text: (choice) => (choice.message ?? choice.delta).content ?? '' },
};

// One call, streamed or not: a whole reply is read as a stream of one chunk.
async function run(call) {
  const endpoint = ENDPOINTS[call.kind];
  const reply = await endpoint.create({ model, ...endpoint.prompt(call), max_tokens: call.max_tokens, temperature: 0,
                                        stream: call.stream, ...extras(call) });
  const chunks = [];
  if (call.stream) {
    for await (const chunk of reply) chunks.push(chunk);
  } else {
    chunks.push(reply);
  }
  const result = { text: '', role: null, finish_reason: null, rows: [], prompt_rows: 0, chunks: chunks.length,
                   usage: chunks.at(-1).usage };
  for (const chunk of chunks) {
    const promptRows = rowsOf(chunk, 'prompt_routed_experts');
    result.prompt_rows += promptRows.length;
    result.rows.push(...promptRows);
    for (const choice of chunk.choices) {
      result.text += endpoint.text(choice);
      result.role = (choice.message ?? choice.delta)?.role ?? result.role;
      result.finish_reason = choice.finish_reason ?? result.finish_reason;
      result.rows.push(...rowsOf(choice, 'routed_experts'));
    }
  }
  return result;
}

// A chat with tools, streamed through the package's own accumulator (ChatCompletionStream), which
// puts the streamed tool-call deltas together as the package's users get them. `call.body` holds the
// rest of the request (messages, tools, logit_bias, continue_final_message, ...).
async function runTools(call) {
  const stream = client.beta.chat.completions.stream({ model, ...call.body, stream: true });
  const completion = await stream.finalChatCompletion();
  const choice = completion.choices[0];
  return { finish_reason: choice.finish_reason, content: choice.message.content ?? null,
           tool_calls: choice.message.tool_calls ?? [] };
}

// The model list first, then one JSON line per planned call.
const models = await client.models.list();
console.log(JSON.stringify({ models: models.data.map((entry) => entry.id) }));
for (const call of plan) {
  console.log(JSON.stringify({ call, result: call.kind === 'tools' ? await runTools(call) : await run(call) }));
}
