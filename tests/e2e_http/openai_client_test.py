"""The official `openai` npm package, run with node, against moe-serve: completions of golden prompts (token ids)
give the golden text, and chat completions of the golden chat cases give what /generate gives for the
rendered template; streamed or not, routed experts in base64 or list form equal /generate's rows, which
equal the goldens. The package is installed from the lockfile with `npm ci` into NODE_DIR (once).
Usage: openai_client_test.py PATH/TO/moe-serve [NODE_DIR]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import http_harness as hh

NODE_DIR = sys.argv.pop(2) if len(sys.argv) > 2 and not sys.argv[2].startswith("-") else hh.HERE
# Qwen3's template closes an empty thinking block when thinking is off (the goldens' chats were rendered so);
# moe-serve renders chats without it unless asked for chat_template_kwargs {"enable_thinking": false}.
EMPTY_THINKING = "<think>\n\n</think>\n\n"
CHAT_CASES = (6, 7)


def install_openai_package():
    """`npm ci` from the lockfile unless NODE_DIR already holds the locked version; fails loudly without it."""
    os.makedirs(NODE_DIR, exist_ok=True)
    for name in ("package.json", "package-lock.json", "openai_client.mjs"):
        if os.path.abspath(NODE_DIR) != hh.HERE:
            shutil.copyfile(os.path.join(hh.HERE, name), os.path.join(NODE_DIR, name))
    with open(os.path.join(hh.HERE, "package-lock.json")) as f:
        locked = json.load(f)["packages"]["node_modules/openai"]["version"]
    installed = os.path.join(NODE_DIR, "node_modules", "openai", "package.json")
    if os.path.exists(installed):
        with open(installed) as f:
            if json.load(f)["version"] == locked:
                return
    npm = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"], cwd=NODE_DIR,
                         capture_output=True, text=True, timeout=300)
    if npm.returncode != 0:
        raise RuntimeError(f"npm ci of openai@{locked} failed in {NODE_DIR} (is the npm registry reachable?):\n"
                           f"{npm.stdout}\n{npm.stderr}")


# A tool call the tiny model is driven to write (tools_test.py explains the drive): the assistant's partial
# message opens the block, and logit_bias makes the one generated token </tool_call>.
TOOL_CALL = {"kind": "tools", "body": {
    "messages": [{"role": "user", "content": "Weather in Paris?"},
                 {"role": "assistant", "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'}],
    "tools": [{"type": "function", "function": {"name": "get_weather",
                                                "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}}}}}],
    "continue_final_message": True, "logit_bias": {"151658": 100}, "max_tokens": 1, "temperature": 0}}


class OpenAINodePackage(hh.ServerTest):
    extra_flags = ("--tool-call-parser", "qwen25")

    @classmethod
    def setUpClass(cls):
        install_openai_package()
        super().setUpClass()

    def plan(self):
        max_tokens = self.golden["max_new_tokens"]
        calls = [{"kind": "completion", "case": index, "prompt_ids": case["prompt_ids"], "stream": False,
                  "format": "base64", "max_tokens": max_tokens} for index, case in enumerate(self.golden["cases"])]
        for index in (1, 4):
            for stream, form in ((True, "base64"), (False, "list"), (True, "list")):
                calls.append(dict(calls[index], stream=stream, format=form))
        for index in CHAT_CASES:
            for stream in (False, True):
                for form in ("base64", "list"):
                    calls.append({"kind": "chat", "case": index,
                                  "messages": hh.golden_chat_messages(self.golden["cases"][index]),
                                  "stream": stream, "format": form, "max_tokens": max_tokens})
                calls.append(dict(calls[-1], thinking=False))
        return calls

    def run_node(self, calls):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as plan_file:
            json.dump(calls, plan_file)
            plan_file.flush()
            node = subprocess.run(["node", os.path.join(NODE_DIR, "openai_client.mjs"), self.server.url, hh.MODEL_NAME,
                                   plan_file.name], capture_output=True, text=True, timeout=300)
        self.assertEqual(node.returncode, 0, node.stderr)
        lines = [json.loads(line) for line in node.stdout.splitlines()]
        self.assertEqual(lines[0]["models"], [hh.MODEL_NAME])
        return [(line["call"], line["result"]) for line in lines[1:]]

    def generate(self, body):
        reply = self.server.post("/generate", body)
        self.assertEqual(reply.status_code, 200, reply.text)
        reply = reply.json()
        return reply, hh.decode_routed_experts(reply["meta_info"])

    def test_completions_and_chat_equal_goldens(self):
        max_new = self.golden["max_new_tokens"]
        calls = self.plan()
        results = self.run_node(calls)
        self.assertEqual(len(results), len(calls))
        for call, result in results:
            case = self.golden["cases"][call["case"]]
            label = f'{call["kind"]} case {call["case"]} stream={call["stream"]} {call["format"]}'
            with self.subTest(label):
                if call["kind"] == "completion" or call.get("thinking") is False:
                    # Thinking off renders the golden chat prompt exactly, as transformers'
                    # apply_chat_template(..., enable_thinking=False) did: the golden tokens follow.
                    expected, rows = self.generate(hh.golden_generate(case, max_new))
                    hh.expect_golden(self, case, expected["output_ids"], rows, max_new)
                    self.assertEqual(result["text"], case["output_text"])
                    prompt_tokens = len(case["prompt_ids"])
                    if call["kind"] == "chat":
                        self.assertEqual(result["role"], "assistant")
                else:
                    prompt = case["prompt"].removesuffix(EMPTY_THINKING)
                    expected, rows = self.generate({"text": prompt, "return_routed_experts": True, "sampling_params":
                                                    {"temperature": 0, "max_new_tokens": max_new, "ignore_eos": True}})
                    self.assertEqual(result["text"], expected["text"])
                    self.assertEqual(result["role"], "assistant")
                    prompt_tokens = len(case["prompt_ids"]) - 4  # the four tokens of the empty thinking block
                self.assertEqual(expected["meta_info"]["prompt_tokens"], prompt_tokens)
                self.assertEqual(result["finish_reason"], "length")
                # Response-level rows cover the prompt; the choice's rows the generated tokens but the last.
                self.assertEqual(result["prompt_rows"], prompt_tokens)
                np.testing.assert_array_equal(np.array(result["rows"]), rows)
                if call["stream"]:
                    self.assertGreater(result["chunks"], 1)
                else:
                    self.assertEqual(result["usage"]["prompt_tokens"], prompt_tokens)
                    self.assertEqual(result["usage"]["completion_tokens"], max_new)

    def test_a_streamed_tool_call_put_together_by_the_package(self):
        (_, result), = self.run_node([TOOL_CALL])
        self.assertEqual(result["finish_reason"], "tool_calls")
        self.assertIn(result["content"], (None, ""))  # streamed deltas carry "content": "" beside the call
        self.assertEqual(len(result["tool_calls"]), 1, result)
        call = result["tool_calls"][0]
        self.assertRegex(call["id"], r"^call_[0-9a-f]{24}$")
        self.assertEqual(call["function"]["name"], "get_weather")
        self.assertEqual(json.loads(call["function"]["arguments"]), {"city": "Paris"})


if __name__ == "__main__":
    hh.run_tests()
