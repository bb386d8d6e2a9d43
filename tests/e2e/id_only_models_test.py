"""moe-serve on the fixtures that come without a tokenizer (GLM-4.5's and DeepSeek-V3's families), as
SGLang serves them: --skip-tokenizer-init. Through HTTP /generate and ZeroMQ: golden ids and routing
rows alone, batched, chunked and on a prefix-cache hit; the layer axis of routed_experts (every decoder
layer, the dense first layer's entries 0, as SGLang returns them; or the MoE layers only, by flag and by
request field); answers without text; text prompts, chat messages and stop strings refused naming the
flag, the server serving on. SIGTERM gives exit code 0.
Usage: id_only_models_test.py PATH/TO/moe-serve"""
import base64
import json
import os
import subprocess
import sys
import unittest

import numpy as np
import requests

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
FIXTURES = ["glm4-moe-tiny", "deepseek-v3-tiny"]


def fixture_golden(name):
    with open(os.path.join(sp.DATA, name, "golden.json")) as f:
        return json.load(f)


def http_rows(meta):
    """meta_info's routed_experts as numpy, shaped as routed_experts_shape says."""
    raw = base64.b64decode(meta["routed_experts"])
    return np.frombuffer(raw, dtype=meta["routed_experts_dtype"]).reshape(meta["routed_experts_shape"])


class IdOnlyServer:
    """moe-serve on `fixture` with --skip-tokenizer-init, HTTP and ZeroMQ."""

    def __init__(self, fixture, *flags):
        self.http_port, self.zmq_port = sp.free_port(), sp.free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.process = subprocess.Popen(
            [MOE_SERVE, "--model-path", os.path.join(sp.DATA, fixture), "--skip-tokenizer-init",
             "--enable-return-routed-experts", "--max-total-tokens", "4096", "--port", str(self.http_port),
             "--zmq-endpoint", f"tcp://127.0.0.1:{self.zmq_port}", "--log-level",
             os.environ.get("MOE_E2E_LOG_LEVEL", "warn"), *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sp.wait_until_healthy(self.process, self.url, 60, lambda: sp.terminate(self.process)[1])

    def generate(self, body):
        return requests.post(self.url + "/generate", json=body, timeout=120)

    def stop(self):
        return sp.terminate(self.process)


def golden_body(golden, cases, **fields):
    """One /generate body for `cases` (a list of prompts, or one prompt for a single case)."""
    ids = [c["prompt_ids"] for c in cases]
    return dict({"input_ids": ids if len(ids) > 1 else ids[0], "return_routed_experts": True,
                 "sampling_params": {"temperature": 0, "max_new_tokens": golden["max_new_tokens"], "ignore_eos": True}},
                **fields)


class IdOnlyModels(unittest.TestCase):
    def check_all_layers(self, golden, case, reply):
        """An answer with rows of every decoder layer: ids only, MoE layers' rows golden, dense layers' 0."""
        self.assertNotIn("text", reply)
        meta = reply["meta_info"]
        rows = http_rows(meta)
        self.assertEqual(meta["routed_experts_shape"],
                         [len(case["prompt_ids"]) + golden["max_new_tokens"] - 1, golden["num_hidden_layers"],
                          golden["top_k"]])
        dense = [layer for layer in range(golden["num_hidden_layers"]) if layer not in golden["moe_layer_ids"]]
        self.assertTrue(dense, "the fixture has a dense layer")
        self.assertTrue((rows[:, dense, :] == 0).all())
        sp.expect_golden(self, case, reply["output_ids"], rows[:, golden["moe_layer_ids"], :].tolist(),
                         golden["max_new_tokens"])

    def test_fixtures_over_http_and_zeromq(self):
        for fixture in FIXTURES:
            with self.subTest(fixture=fixture):
                golden = fixture_golden(fixture)
                cases = golden["cases"]
                server = IdOnlyServer(fixture)
                try:
                    # Alone, then again (a prefix-cache hit): the same ids and rows.
                    for attempt in range(2):
                        reply = server.generate(golden_body(golden, cases[1:2]))
                        self.assertEqual(reply.status_code, 200, reply.text)
                        self.check_all_layers(golden, cases[1], reply.json())
                    self.assertGreater(reply.json()["meta_info"]["cached_tokens"], 0)
                    # Batched, the MoE layers only by request field.
                    reply = server.generate(golden_body(golden, cases, routed_experts_layers="moe"))
                    self.assertEqual(reply.status_code, 200, reply.text)
                    for case, answer in zip(cases, reply.json()):
                        meta = answer["meta_info"]
                        self.assertEqual(meta["routed_experts_shape"][1], golden["num_moe_layers"])
                        sp.expect_golden(self, case, answer["output_ids"], http_rows(meta).tolist(),
                                         golden["max_new_tokens"])
                    # ZeroMQ: the same rows, both layer axes.
                    sock = sp.connect(server.zmq_port)
                    for i, case in enumerate(cases):
                        request = sp.golden_request(case, golden["max_new_tokens"], f"zmq{i}")
                        result = sp.zmq_client.generate(sock, request)
                        self.assertEqual(result["text"], "")
                        sp.expect_golden(self, case, list(result["output_ids"]), result["routed_experts"].tolist(),
                                         golden["max_new_tokens"])
                        every_layer = sp.zmq_client.generate(sock, dict(request, rid=f"zmq-all{i}",
                                                                        routed_experts_layers="all"))
                        np.testing.assert_array_equal(every_layer["routed_experts"][:, golden["moe_layer_ids"], :],
                                                      result["routed_experts"])
                    sock.close()
                    # What needs a tokenizer is refused naming the flag; the server goes on.
                    for body in ({"text": "hello"}, {"input_ids": [1, 2], "sampling_params": {"stop": "x"}}):
                        refused = server.generate(body)
                        self.assertEqual(refused.status_code, 400, refused.text)
                        self.assertIn("--skip-tokenizer-init", refused.text)
                    chat = requests.post(server.url + "/v1/chat/completions",
                                         json={"messages": [{"role": "user", "content": "hi"}]}, timeout=60)
                    self.assertEqual(chat.status_code, 400, chat.text)
                    self.assertIn("--skip-tokenizer-init", chat.text)
                    bad_axis = server.generate(dict(golden_body(golden, cases[:1]), routed_experts_layers="dense"))
                    self.assertEqual(bad_axis.status_code, 400, bad_axis.text)
                    self.assertIn("routed_experts_layers", bad_axis.text)
                    self.check_all_layers(golden, cases[0], server.generate(golden_body(golden, cases[:1])).json())
                finally:
                    code, log = server.stop()
                self.assertEqual(code, 0, log)

    def test_chunked_prefill_and_moe_layers_by_flag(self):
        for fixture in FIXTURES:
            with self.subTest(fixture=fixture):
                golden = fixture_golden(fixture)
                server = IdOnlyServer(fixture, "--chunked-prefill-size", "4", "--routed-experts-layers", "moe")
                try:
                    reply = server.generate(golden_body(golden, golden["cases"]))
                    self.assertEqual(reply.status_code, 200, reply.text)
                    for case, answer in zip(golden["cases"], reply.json()):
                        self.assertNotIn("text", answer)
                        meta = answer["meta_info"]
                        self.assertEqual(meta["routed_experts_shape"][1], golden["num_moe_layers"])
                        sp.expect_golden(self, case, answer["output_ids"], http_rows(meta).tolist(),
                                         golden["max_new_tokens"])
                finally:
                    code, log = server.stop()
                self.assertEqual(code, 0, log)


if __name__ == "__main__":
    unittest.main()
