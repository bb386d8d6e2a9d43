"""Tools, tool calls and reasoning on /v1/chat/completions, called with Python requests against moe-serve
started with --tool-call-parser qwen25 and --reasoning-parser qwen3 on the fixture model.

The tiny random model never writes a tool call by itself, so the tests drive it: the request continues a
partial assistant message (vLLM's continue_final_message) that opens a <tool_call> block and writes the
call's JSON, and logit_bias pushes </tool_call> (one token of the Qwen3 vocabulary) to the top, so the
model's one generated token closes the block. The parser reads the continued message first, so the block
it opened and the model closed becomes a tool call. Any break in rendering, parsing or answering fails.
Usage: tools_test.py PATH/TO/moe-serve"""
import json
import unittest

import requests

import http_harness as hh

TOOL_CALL_END = 151658  # </tool_call>
THINK_END = 151668      # </think>

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                           "parameters": {"type": "object",
                                                          "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
QUESTION = {"role": "user", "content": "Weather in Paris?"}
OPEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'


def chat(messages, **extra):
    body = {"model": hh.MODEL_NAME, "messages": messages, "temperature": 0}
    body.update(extra)
    return body


def forced_call(partial=OPEN_CALL, **extra):
    """A chat whose assistant turn is `partial`, continued by one forced </tool_call>."""
    return chat([QUESTION, {"role": "assistant", "content": partial}], tools=TOOLS, continue_final_message=True,
                logit_bias={str(TOOL_CALL_END): 100}, max_tokens=1, **extra)


def expected_prompt(partial):
    """The Qwen3 template's rendering of forced_call's chat, as transformers' apply_chat_template(...,
    tools=TOOLS, continue_final_message=True) writes it: tool | tojson is json.dumps with its default
    separators, and the last assistant turn gets the empty think block before its content."""
    return ("<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            + json.dumps(TOOLS[0]) +
            "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n" + partial)


def stream_chunks(url, body):
    """The JSON chunks of a streamed chat answer, checking the closing [DONE]."""
    chunks = []
    with requests.post(url + "/v1/chat/completions", json=dict(body, stream=True), stream=True, timeout=120) as reply:
        assert reply.status_code == 200, reply.text
        lines = [line for line in reply.iter_lines() if line]
    assert lines[-1] == b"data: [DONE]", lines[-1]
    for line in lines[:-1]:
        chunks.append(json.loads(line[len(b"data: "):]))
    return chunks


class ToolCalls(hh.ServerTest):
    routed_experts = False
    extra_flags = ("--tool-call-parser", "qwen25", "--reasoning-parser", "qwen3")

    def post(self, body):
        return self.server.post("/v1/chat/completions", body)

    def test_tools_are_rendered_as_transformers_renders_them(self):
        reply = self.post(forced_call())
        self.assertEqual(reply.status_code, 200, reply.text)
        expected = self.server.post("/tokenize", {"text": expected_prompt(OPEN_CALL)}).json()
        self.assertEqual(reply.json()["usage"]["prompt_tokens"], expected["count"])
        # Same tokens in the same order, not only as many: the expected text hits the prefix cache the
        # chat's prompt left (keys in another order would end the match inside the tools' JSON).
        again = self.server.post("/generate", {"input_ids": expected["tokens"], "sampling_params": {"max_new_tokens": 1}})
        self.assertGreaterEqual(again.json()["meta_info"]["cached_tokens"], expected["count"] - 1)

    def test_a_closed_block_becomes_a_tool_call(self):
        reply = self.post(forced_call(logprobs=True, return_tokens_as_token_ids=True))
        self.assertEqual(reply.status_code, 200, reply.text)
        choice = reply.json()["choices"][0]
        self.assertEqual(choice["logprobs"]["content"][0]["token"], f"token_id:{TOOL_CALL_END}")
        self.assertEqual(choice["finish_reason"], "tool_calls")
        message = choice["message"]
        self.assertIsNone(message["content"])
        self.assertEqual(len(message["tool_calls"]), 1, message)
        call = message["tool_calls"][0]
        self.assertRegex(call["id"], r"^call_[0-9a-f]{24}$")
        self.assertEqual(call["type"], "function")
        self.assertEqual(call["function"]["name"], "get_weather")
        self.assertEqual(json.loads(call["function"]["arguments"]), {"city": "Paris"})

    def test_a_streamed_call_comes_as_openai_deltas(self):
        chunks = stream_chunks(self.server.url, forced_call())
        deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
        self.assertEqual(deltas[0]["role"], "assistant")
        calls = [call for delta in deltas for call in delta.get("tool_calls", [])]
        self.assertEqual(len(calls), 1, deltas)
        self.assertEqual(calls[0]["index"], 0)
        self.assertRegex(calls[0]["id"], r"^call_[0-9a-f]{24}$")
        self.assertEqual(calls[0]["type"], "function")
        self.assertEqual(calls[0]["function"]["name"], "get_weather")
        self.assertEqual(json.loads(calls[0]["function"]["arguments"]), {"city": "Paris"})
        self.assertEqual("".join(delta.get("content") or "" for delta in deltas), "")
        self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "tool_calls")

    def test_a_malformed_block_stays_in_the_content(self):
        partial = '<tool_call>\n{"name": "get_weather", "arguments": {"city": '
        reply = self.post(forced_call(partial))
        self.assertEqual(reply.status_code, 200, reply.text)
        choice = reply.json()["choices"][0]
        self.assertEqual(choice["message"]["content"], partial + "</tool_call>")
        self.assertNotIn("tool_calls", choice["message"])
        self.assertEqual(choice["finish_reason"], "length")

    def test_tool_choice_none_renders_the_tools_and_parses_nothing(self):
        reply = self.post(forced_call(tool_choice="none"))
        self.assertEqual(reply.status_code, 200, reply.text)
        message = reply.json()["choices"][0]["message"]
        self.assertEqual(message["content"], "</tool_call>")
        self.assertNotIn("tool_calls", message)

    def test_unsupported_tool_choices_are_refused_naming_the_field(self):
        for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}, "maybe"):
            with self.subTest(tool_choice=choice):
                reply = self.post(forced_call(tool_choice=choice))
                self.assertEqual(reply.status_code, 400, reply.text)
                self.assertEqual(reply.json()["error"]["param"], "tool_choice")
        reply = self.post(dict(forced_call(), tools=[{"type": "function", "function": {}}]))
        self.assertEqual(reply.status_code, 400, reply.text)
        self.assertEqual(reply.json()["error"]["param"], "tools[0].function.name")

    def test_a_past_tool_exchange_reaches_the_template(self):
        # The assistant's earlier call (arguments as JSON text, as OpenAI clients send them) and the tool's
        # result are rendered: the prompt grows by exactly their turns' tokens.
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
        history = [QUESTION, {"role": "assistant", "content": None, "tool_calls": [call]},
                   {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
        reply = self.post(chat(history, tools=TOOLS, max_tokens=1))
        self.assertEqual(reply.status_code, 200, reply.text)
        text = (expected_prompt("").removesuffix("<think>\n\n</think>\n\n")
                + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n'
                  "<|im_start|>user\n<tool_response>\n21 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n")
        expected = self.server.post("/tokenize", {"text": text}).json()
        self.assertEqual(reply.json()["usage"]["prompt_tokens"], expected["count"])


class Reasoning(hh.ServerTest):
    routed_experts = False
    extra_flags = ("--tool-call-parser", "qwen25", "--reasoning-parser", "qwen3")

    def continued_thought(self, **extra):
        return chat([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "<think>\nplan"}],
                    continue_final_message=True, ignore_eos=True, **extra)

    def test_text_inside_the_think_block_is_reasoning(self):
        # The same prompt through /v1/completions gives the raw text the parser splits.
        prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<think>\nplan"
        raw = self.server.post("/v1/completions", {"model": hh.MODEL_NAME, "prompt": prompt, "max_tokens": 6,
                                                   "temperature": 0, "ignore_eos": True}).json()
        text = raw["choices"][0]["text"]
        self.assertNotIn("</think>", text)
        reply = self.server.post("/v1/chat/completions", self.continued_thought(max_tokens=6))
        self.assertEqual(reply.status_code, 200, reply.text)
        self.assertEqual(reply.json()["usage"]["prompt_tokens"], raw["usage"]["prompt_tokens"])
        message = reply.json()["choices"][0]["message"]
        self.assertEqual(message["reasoning_content"], text)
        self.assertIsNone(message["content"])
        chunks = stream_chunks(self.server.url, self.continued_thought(max_tokens=6))
        deltas = [chunk["choices"][0]["delta"] for chunk in chunks[1:]]
        self.assertEqual("".join(delta.get("reasoning_content", "") for delta in deltas), text)
        self.assertEqual("".join(delta["content"] for delta in deltas), "")

    def test_text_after_the_think_block_is_content(self):
        reply = self.server.post("/v1/chat/completions",
                                 self.continued_thought(max_tokens=3, logit_bias={str(THINK_END): 100}))
        self.assertEqual(reply.status_code, 200, reply.text)
        message = reply.json()["choices"][0]["message"]
        self.assertIsNone(message["reasoning_content"])
        self.assertEqual(message["content"], "</think></think>")

    def test_enable_thinking_false_leaves_everything_content(self):
        max_new = self.golden["max_new_tokens"]
        for index in (6, 7):
            case = self.golden["cases"][index]
            body = chat(hh.golden_chat_messages(case), max_tokens=max_new, ignore_eos=True,
                        chat_template_kwargs={"enable_thinking": False})
            with self.subTest(case=index):
                message = self.server.post("/v1/chat/completions", body).json()["choices"][0]["message"]
                self.assertEqual(message["content"], case["output_text"])
                self.assertIsNone(message["reasoning_content"])
                deltas = [chunk["choices"][0]["delta"] for chunk in stream_chunks(self.server.url, body)]
                self.assertEqual("".join(delta["content"] for delta in deltas), case["output_text"])
                self.assertFalse(any("reasoning_content" in delta for delta in deltas))


class WithoutParsers(hh.ServerTest):
    routed_experts = False

    def test_tools_need_a_parser_unless_tool_choice_is_none(self):
        reply = self.server.post("/v1/chat/completions", forced_call())
        self.assertEqual(reply.status_code, 400, reply.text)
        self.assertEqual(reply.json()["error"]["param"], "tool_choice")
        self.assertIn("--tool-call-parser", reply.json()["error"]["message"])
        reply = self.server.post("/v1/chat/completions", forced_call(tool_choice="none"))
        self.assertEqual(reply.status_code, 200, reply.text)
        message = reply.json()["choices"][0]["message"]
        self.assertEqual(message, {"role": "assistant", "content": "</tool_call>"})


class UnknownParsers(unittest.TestCase):
    def test_unknown_parser_names_stop_the_start_naming_the_flag(self):
        for flag in ("--tool-call-parser", "--reasoning-parser"):
            with self.subTest(flag=flag):
                with self.assertRaises(RuntimeError) as failure:
                    hh.Server(routed_experts=False, extra_flags=(flag, "bogus"))
                self.assertIn(flag, str(failure.exception))
                self.assertIn("bogus", str(failure.exception))


if __name__ == "__main__":
    hh.run_tests()
