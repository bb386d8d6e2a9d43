"""What a new user meets first names the real problem: moe-serve and moe-cli started with a model
directory that does not exist, a Hugging Face hub id, or a --tokenizer-path that is wrong or has no
tokenizer.json each stop with an error naming the flag and its value (and, for a hub id, how to
download the model); moe-serve --port 0 without --zmq-endpoint is refused at start; moe-cli generate
--prompt-ids runs without a tokenizer (ids only); a weight update that names no weight_version says,
in its reply and the server's log, that the old label stays.
Usage: first_run_test.py PATH/TO/moe-serve PATH/TO/moe-cli"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import http_harness as hh
import serve_process as sp

MOE_CLI = "moe-cli"
HUB_ID = "Qwen/Qwen3-30B-A3B"
DOWNLOAD = f"huggingface-cli download {HUB_ID} --local-dir ./Qwen3-30B-A3B"


def run(*command, cwd=None):
    """Exit code and stdout + stderr of a program that is expected to stop at once."""
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


class StartErrors(unittest.TestCase):
    """Each case: the flags, and the words the error must hold. moe-serve and moe-cli generate alike."""

    def setUp(self):
        self.cwd = tempfile.mkdtemp(prefix="moe-first-run-")  # where no ./Qwen exists

    def cases(self):
        return [
            (["--model-path", "/nonexistent", "--tokenizer-path", sp.TOKENIZER],
             ["--model-path /nonexistent does not exist"]),
            (["--model-path", "/nonexistent"], ["--model-path /nonexistent does not exist"]),
            (["--model-path", HUB_ID, "--tokenizer-path", sp.TOKENIZER],
             [f"--model-path {HUB_ID} does not exist", "local directories", DOWNLOAD]),
            (["--model-path", sp.MODEL, "--tokenizer-path", "/nonexistent-tokenizer"],
             ["--tokenizer-path /nonexistent-tokenizer does not exist"]),
            (["--model-path", sp.MODEL, "--tokenizer-path", sp.MODEL],
             [f"--tokenizer-path {sp.MODEL} has no tokenizer.json"]),
            (["--model-path", sp.MODEL], [f"--model-path {sp.MODEL} has no tokenizer.json: pass --tokenizer-path"]),
        ]

    def expect(self, command, words):
        code, output = run(*command, cwd=self.cwd)
        self.assertNotEqual(code, 0, output)
        for word in words:
            self.assertIn(word, output)
        if "tokenizer.json" not in " ".join(words):
            self.assertNotIn("tokenizer.json", output)

    def test_moe_serve(self):
        for flags, words in self.cases():
            with self.subTest(flags=flags):
                self.expect([hh.MOE_SERVE, "--port", str(sp.free_port())] + flags, words)

    def test_moe_serve_worker(self):
        self.expect([hh.MOE_SERVE, "--role", "worker", "--model-path", HUB_ID, "--worker-endpoint",
                     "tcp://127.0.0.1:1", "--scheduler-endpoint", "tcp://127.0.0.1:2"], [DOWNLOAD])

    def test_moe_cli_generate(self):
        for flags, words in self.cases():
            with self.subTest(flags=flags):
                self.expect([MOE_CLI, "generate", "--prompt", "Hello", "--max-new-tokens", "2"] + flags, words)

    def test_moe_cli_tokenizer_commands(self):
        self.expect([MOE_CLI, "tokenize", "--tokenizer-path", "/nonexistent-tokenizer", "--text", "hi"],
                    ["--tokenizer-path /nonexistent-tokenizer does not exist"])
        self.expect([MOE_CLI, "chat-template", "--tokenizer-path", HUB_ID, "--messages", "m.json"], [DOWNLOAD])

    def test_port_0_without_a_zmq_endpoint_is_refused(self):
        code, output = run(hh.MOE_SERVE, "--model-path", sp.MODEL, "--tokenizer-path", sp.TOKENIZER, "--port", "0")
        self.assertNotEqual(code, 0, output)
        self.assertIn("--port 0 serves no HTTP and no --zmq-endpoint was given", output)


class PromptIdsWithoutTokenizer(unittest.TestCase):
    def test_generate_prints_the_golden_ids(self):
        case = sp.golden()["cases"][0]
        ids = ",".join(map(str, case["prompt_ids"]))
        code, output = run(MOE_CLI, "generate", "--model-path", sp.MODEL, "--prompt-ids", ids, "--max-new-tokens", "6",
                           "--ignore-eos", "--json")
        self.assertEqual(code, 0, output)
        reply = json.loads(output.strip().splitlines()[-1])
        self.assertEqual(reply["output_ids"], case["output_ids"][:6])
        self.assertNotIn("text", reply)
        code, output = run(MOE_CLI, "generate", "--model-path", sp.MODEL, "--prompt-ids", ids, "--max-new-tokens", "2")
        self.assertEqual(code, 0, output)
        self.assertIn("(no tokenizer: ids only)", output)
        # A prompt of text still needs one.
        code, output = run(MOE_CLI, "generate", "--model-path", sp.MODEL, "--prompt", "Hello")
        self.assertNotEqual(code, 0, output)
        self.assertIn("has no tokenizer.json: pass --tokenizer-path", output)


class UpdateWithoutWeightVersion(hh.ServerTest):
    extra_flags = ("--weight-version", "step-1")

    def test_the_reply_and_the_log_say_the_label_stays(self):
        reply = self.server.post("/update_weights_from_disk", {"model_path": sp.MODEL})
        self.assertEqual(reply.status_code, 200, reply.text)
        answer = reply.json()
        self.assertTrue(answer["success"], answer)
        self.assertEqual(answer["weight_version"], "step-1")
        self.assertIn("keeping the old weight version label 'step-1' (the update gave no weight_version)",
                      answer["message"])
        self.assertIn("keep the old weight version label 'step-1'", self.server.log_text())
        named = self.server.post("/update_weights_from_disk", {"model_path": sp.MODEL, "weight_version": "step-2"})
        self.assertIn("as weight version 'step-2'", named.json()["message"])


if __name__ == "__main__":
    hh.MOE_SERVE, MOE_CLI = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
