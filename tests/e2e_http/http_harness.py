"""Shared by the HTTP end-to-end tests: start moe-serve with an HTTP port on the fixture model, wait until
/health answers, stop it with SIGTERM (exit code 0 required), read its metrics and memory, and decode
routed experts the way SGLang's documentation shows."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import serve_process as sp  # noqa: E402  (free ports, goldens and SIGTERM handling shared with the ZeroMQ tests)

# The name OpenAI clients send as `model`; set with --served-model-name so the flag is exercised too.
MODEL_NAME = "qwen3-moe-tiny"
# Path of the moe-serve binary under test: the first command-line argument (see run_tests).
MOE_SERVE = os.environ.get("MOE_SERVE", "moe-serve")


class Server:
    """One moe-serve process with an HTTP port; its log goes to a file so a chatty server never blocks."""

    def __init__(self, routed_experts=True, startup_timeout_s=60, extra_flags=(), model_path=sp.MODEL,
                 tokenizer_path=sp.TOKENIZER):
        """tokenizer_path None: the model directory's own tokenizer."""
        port = sp.free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile(prefix="moe-serve-http-", suffix=".log")
        command = [MOE_SERVE, "--model-path", model_path, "--port", str(port),
                   "--served-model-name", MODEL_NAME, "--log-level", os.environ.get("MOE_E2E_LOG_LEVEL", "warn")]
        if tokenizer_path:
            command += ["--tokenizer-path", tokenizer_path]
        if routed_experts:
            command.append("--enable-return-routed-experts")
        command += list(extra_flags)
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        sp.wait_until_healthy(self.process, self.url, startup_timeout_s, self.log_text)

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()[-6000:]

    def stop(self):
        """SIGTERM; the exit code and the tail of the log."""
        code, _ = sp.terminate(self.process)
        return code, self.log_text()

    def rss_bytes(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS in /proc status")

    def metrics(self):
        """Prometheus samples without labels or histogram buckets: name -> value."""
        reply = requests.get(self.url + "/metrics", timeout=10)
        reply.raise_for_status()
        samples = {}
        for line in reply.text.splitlines():
            if line and not line.startswith("#"):
                series, value = line.rsplit(" ", 1)
                samples.setdefault(series.split("{")[0], float(value))
        return samples

    def post(self, path, body, **kwargs):
        return requests.post(self.url + path, json=body, timeout=kwargs.pop("timeout", 120), **kwargs)


def serve_for(test, model_path, *flags):
    """A server on the model directory (its own tokenizer) that stops when the test ends, exiting with 0."""
    server = Server(model_path=model_path, tokenizer_path=None, extra_flags=flags)

    def stop():
        code, log = server.stop()
        test.assertEqual(code, 0, log)
    test.addCleanup(stop)
    return server


class ServerTest(unittest.TestCase):
    """A test class sharing one server; tearDown of the class fails when moe-serve does not exit with 0."""
    routed_experts = True
    extra_flags = ()  # more moe-serve flags, e.g. a --zmq-endpoint beside the HTTP port

    @classmethod
    def setUpClass(cls):
        cls.server = Server(cls.routed_experts, extra_flags=cls.extra_flags)
        cls.golden = sp.golden()

    @classmethod
    def tearDownClass(cls):
        code, log = cls.server.stop()
        if code != 0:
            raise AssertionError(f"moe-serve exited with {code} after SIGTERM:\n{log}")

    def queued_request(self, body, held_by):
        """A /generate sent while the engine runs no step (`held_by`: a pause, a release), on its own
        thread: (thread, done); done["reply"] holds its reply once answered, which must not be at once."""
        done = {}

        def ask():
            done["reply"] = self.server.post("/generate", dict(body, stream=False))
        thread = threading.Thread(target=ask)
        thread.start()
        time.sleep(0.8)
        self.assertNotIn("reply", done, f"a request sent during {held_by} was answered")
        return thread, done

    def assert_stopped(self, streams, held_by):
        """No stream gets a new event for a second (the steps in flight at the stop may end first), and
        some stream was still going."""
        time.sleep(0.3)
        before = [len(s.events) for s in streams]
        time.sleep(1.0)
        self.assertEqual([len(s.events) for s in streams], before, f"tokens were generated during {held_by}")
        self.assertTrue(any(s.events[-1]["meta_info"]["finish_reason"] is None for s in streams),
                        f"every stream finished before {held_by}: nothing was held")


class StreamReader:
    """A streamed /generate read on its own thread: `events` fills with its JSON events, `started` is set
    by the first one, join() waits for the end of the stream."""

    def __init__(self, url, body):
        self.events, self.started = [], threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url, body))
        self._thread.start()

    def _read(self, url, body):
        with requests.post(url + "/generate", json=body, stream=True, timeout=300) as reply:
            for line in reply.iter_lines():
                if line.startswith(b"data: {"):
                    self.events.append(json.loads(line[len(b"data: "):]))
                    self.started.set()

    def join(self, timeout_s):
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def decode_routed_experts(meta, key="routed_experts"):
    """SGLang's documented decoding: base64 of a little-endian array, reshaped to (tokens, layers, top_k)."""
    dtype = np.dtype(meta.get(key + "_dtype", "int32"))
    return np.frombuffer(base64.b64decode(meta[key]), dtype=dtype).reshape(meta[key + "_shape"])


def golden_generate(case, max_new_tokens, **extra):
    """A /generate body reproducing a golden case: its prompt ids, greedy, ignore_eos."""
    body = {"input_ids": case["prompt_ids"], "return_routed_experts": True,
            "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens, "ignore_eos": True}}
    body.update(extra)
    return body


def golden_reply(server, case, max_new_tokens):
    """The /generate reply (JSON) to a golden case, greedy; a failed request stops the test."""
    reply = server.post("/generate", golden_generate(case, max_new_tokens))
    assert reply.status_code == 200, reply.text
    return reply.json()


def expect_same_reply(test, reply, expected):
    """Two /generate replies with the same output ids and routing rows."""
    test.assertEqual(reply["output_ids"], expected["output_ids"])
    test.assertEqual(decode_routed_experts(reply["meta_info"]).tolist(),
                     decode_routed_experts(expected["meta_info"]).tolist())


def golden_answers(server, golden, max_new_tokens=6):
    """(output ids, routing rows) of every golden case, greedy."""
    out = []
    for case in golden["cases"]:
        reply = server.post("/generate", golden_generate(case, max_new_tokens))
        reply.raise_for_status()
        body = reply.json()
        out.append((body["output_ids"], decode_routed_experts(body["meta_info"]).tolist()))
    return out


def expect_golden(test, case, output_ids, experts, max_new_tokens):
    """Golden ids and routing rows (numpy or lists), near ties excepted."""
    sp.expect_golden(test, case, output_ids, np.asarray(experts).tolist(), max_new_tokens)


def golden_chat_messages(case):
    """The messages of a golden chat case, whose `prompt` is their rendering by the Qwen3 template."""
    return [{"role": turn.removeprefix("<|im_start|>").split("\n", 1)[0], "content": turn.split("\n", 1)[1]}
            for turn in case["prompt"].split("<|im_end|>\n")[:-1]]


def run_tests():
    """unittest.main with the moe-serve path taken from argv[1], as CTest passes it."""
    global MOE_SERVE
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
        MOE_SERVE = sys.argv.pop(1)
    unittest.main()
