"""Every error a client can cause gets OpenAI's error shape with the right status and names the bad field,
and a good request right after it still succeeds: malformed JSON, bad sampling values, an unknown model or
path, an oversized body, and routed experts asked of a server started without capture. A bad kernel setting
in the environment stops the start with a message naming it, rather than failing every request later.
Usage: errors_test.py PATH/TO/moe-serve"""
import os
import subprocess
import unittest

import requests

import http_harness as hh

# moe-serve's request-body limit; one byte more must be refused with 413.
BODY_LIMIT_BYTES = 64 << 20


class ErrorsThenGoodRequest(hh.ServerTest):
    def expect_error(self, reply, status, field=None):
        """The status, OpenAI's {"error": {message, type, param, code}} shape, and the field named."""
        self.assertEqual(reply.status_code, status, reply.text)
        error = reply.json()["error"]
        self.assertTrue({"message", "type", "param", "code"} <= error.keys(), error)
        if field:
            self.assertIn(field.rsplit(".", 1)[-1], error["message"])
            self.assertEqual(error["param"], field)
        self.good_request_succeeds()

    def good_request_succeeds(self):
        case = self.golden["cases"][0]
        body = hh.golden_generate(case, 4)
        body["return_routed_experts"] = self.routed_experts
        reply = self.server.post("/generate", body)
        self.assertEqual(reply.status_code, 200, reply.text)
        self.assertEqual(reply.json()["output_ids"], case["output_ids"][:4])

    def test_malformed_json(self):
        for payload in (b"{bad", b"", b"[1, 2", b"\xff\xfe", b'{"text": "hi", "sampling_params": 7}'):
            with self.subTest(payload=payload):
                reply = requests.post(self.server.url + "/generate", data=payload,
                                      headers={"Content-Type": "application/json"}, timeout=30)
                self.expect_error(reply, 400)

    def test_bad_sampling_values_name_the_field(self):
        for name, value in (("temperature", -1), ("top_p", 0), ("max_new_tokens", 0)):
            with self.subTest(field=name):
                reply = self.server.post("/generate", {"text": "hi", "sampling_params": {name: value}})
                self.expect_error(reply, 400, "sampling_params." + name)
        reply = self.server.post("/v1/completions", {"model": hh.MODEL_NAME, "prompt": "hi", "temperature": -1})
        self.expect_error(reply, 400, "temperature")

    def test_unknown_model_name(self):
        for path, body in (("/v1/completions", {"prompt": "hi"}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})):
            with self.subTest(path=path):
                reply = self.server.post(path, dict(body, model="no-such-model", max_tokens=2))
                self.expect_error(reply, 404)
                self.assertEqual(reply.json()["error"]["code"], "model_not_found")

    def test_oversized_body(self):
        reply = requests.post(self.server.url + "/generate", data=b" " * (BODY_LIMIT_BYTES + 1),
                              headers={"Content-Type": "application/json"}, timeout=60)
        self.expect_error(reply, 413)

    def test_unknown_path(self):
        self.expect_error(requests.get(self.server.url + "/no/such/endpoint", timeout=30), 404)
        self.expect_error(self.server.post("/v1/embeddings", {"input": "hi"}), 404)


class RoutedExpertsWithoutCapture(ErrorsThenGoodRequest):
    """The same server behaviour without --enable-return-routed-experts, plus the clear refusal of routing."""
    routed_experts = False

    def test_routed_experts_refused_clearly(self):
        requests_asking_routing = (
            ("/generate", {"text": "hi", "return_routed_experts": True}),
            ("/v1/completions", {"model": hh.MODEL_NAME, "prompt": "hi", "max_tokens": 2,
                                 "return_routed_experts": True}),
            ("/v1/chat/completions", {"model": hh.MODEL_NAME, "max_tokens": 2, "return_routed_experts": True,
                                      "messages": [{"role": "user", "content": "hi"}]}))
        for path, body in requests_asking_routing:
            with self.subTest(path=path):
                reply = self.server.post(path, body)
                self.assertEqual(reply.status_code, 400, reply.text)
                self.assertIn("--enable-return-routed-experts", reply.json()["error"]["message"])
                self.good_request_succeeds()


class StartupErrors(unittest.TestCase):
    def test_unknown_gemm_instruction_set_stops_the_start(self):
        environment = dict(os.environ, MOE_GEMM_ISA="avx3")
        command = [hh.MOE_SERVE, "--model-path", hh.sp.MODEL, "--tokenizer-path", hh.sp.TOKENIZER,
                   "--port", str(hh.sp.free_port())]
        done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("MOE_GEMM_ISA=avx3: expected avx2, avx512 or avx512bf16", done.stdout + done.stderr)


if __name__ == "__main__":
    hh.run_tests()
