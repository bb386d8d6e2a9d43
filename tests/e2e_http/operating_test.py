"""Operating flags of moe-serve, called with Python requests: --api-key (Bearer, 401 otherwise; /health and
/metrics stay open), --random-seed (servers started with the same seed sample alike for requests that
bring no seed of their own), --log-requests (one line per finished request) and the latency histograms
and weight-version gauge of /metrics, and the periodic stats line (--decode-log-interval).
Usage: operating_test.py PATH/TO/moe-serve"""
import os
import re
import unittest

import http_harness as hh

SAMPLED = {"text": "Once upon a time", "sampling_params": {"temperature": 1.0, "max_new_tokens": 12, "ignore_eos": True}}


class ApiKey(hh.ServerTest):
    extra_flags = ("--api-key", "s3cret")

    def test_every_endpoint_but_health_and_metrics_needs_the_key(self):
        self.assertEqual(self.server.post("/generate", SAMPLED, headers={"Authorization": "Bearer s3cret"}).status_code,
                         200)
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            with self.subTest(headers=headers):
                for path, body in (("/generate", SAMPLED), ("/v1/completions", {"prompt": "x", "max_tokens": 1}),
                                   ("/flush_cache", {})):
                    reply = self.server.post(path, body, headers=headers)
                    self.assertEqual(reply.status_code, 401, reply.text)
                    self.assertEqual(reply.headers["WWW-Authenticate"], "Bearer")
                    self.assertIn("API key", reply.json()["error"]["message"])
                get = hh.requests.get(self.server.url + "/v1/models", headers=headers, timeout=10)
                self.assertEqual(get.status_code, 401)
        self.assertEqual(hh.requests.get(self.server.url + "/health", timeout=10).status_code, 200)
        self.assertEqual(hh.requests.get(self.server.url + "/metrics", timeout=10).status_code, 200)
        info = hh.requests.get(self.server.url + "/get_server_info", headers={"Authorization": "Bearer s3cret"},
                               timeout=10).json()
        self.assertTrue(info["api_key_required"])
        self.assertNotIn("s3cret", str(info))


class RequestLogsAndMetrics(hh.ServerTest):
    extra_flags = ("--log-requests", "--weight-version", "v9", "--decode-log-interval", "2")

    @classmethod
    def setUpClass(cls):
        previous = os.environ.get("MOE_E2E_LOG_LEVEL")
        os.environ["MOE_E2E_LOG_LEVEL"] = "info"  # --log-requests logs at info
        try:
            super().setUpClass()
        finally:
            if previous is None:
                del os.environ["MOE_E2E_LOG_LEVEL"]
            else:
                os.environ["MOE_E2E_LOG_LEVEL"] = previous

    def test_each_request_is_logged_and_timed(self):
        body = {"rid": "logged-1", "text": "Hello there", "sampling_params": {"max_new_tokens": 5, "ignore_eos": True}}
        self.assertEqual(self.server.post("/generate", body).status_code, 200)
        stream = hh.StreamReader(self.server.url, dict(body, rid="logged-2", stream=True))
        self.assertTrue(stream.join(60))
        before = self.server.metrics()
        self.assertGreaterEqual(before["moe_time_to_first_token_seconds_count"], 2)
        self.assertGreaterEqual(before["moe_e2e_request_latency_seconds_count"], 2)
        self.assertGreaterEqual(before["moe_inter_token_latency_seconds_count"], 4)  # the stream's later tokens
        text = hh.requests.get(self.server.url + "/metrics", timeout=10).text
        self.assertRegex(text, r'moe_weight_version_info\{model_name="[^"]*",weight_version="v9"\} 1')
        log = self.server.log_text()
        self.assertRegex(log, r"#running-req: \d+, #queue-req: \d+, #token: \d+, token usage: [0-9.]+, "
                              r"gen throughput \(token/s\): [0-9.]+")
        for rid in ("logged-1", "logged-2"):
            self.assertRegex(log, re.escape(f"request rid={rid} prompt_tokens=") +
                             r"\d+ completion_tokens=5 cached_tokens=\d+ ttft=[0-9.]+s e2e=[0-9.]+s finish=length")


class RandomSeed(unittest.TestCase):
    def outputs(self, seed):
        server = hh.Server(extra_flags=("--random-seed", str(seed)))
        try:
            return [server.post("/generate", SAMPLED).json()["output_ids"] for _ in range(3)]
        finally:
            code, log = server.stop()
            self.assertEqual(code, 0, log)

    def test_the_same_seed_samples_alike(self):
        first, again, other = self.outputs(7), self.outputs(7), self.outputs(8)
        self.assertEqual(first, again)
        self.assertNotEqual(first, other)
        self.assertEqual(len({tuple(ids) for ids in first}), 3)  # each request still draws its own seed


if __name__ == "__main__":
    hh.run_tests()
