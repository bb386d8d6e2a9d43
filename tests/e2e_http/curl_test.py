"""moe-serve's HTTP endpoints called with curl, as an operator would: /generate by input_ids gives the golden
ids and routing, /health, /v1/models, /metrics (Prometheus text) and /expert_load agree with what was served,
and one keep-alive connection serves several requests.
Usage: curl_test.py PATH/TO/moe-serve"""
import json
import subprocess

import numpy as np

import http_harness as hh


def curl(url, *args):
    """Status code and body of one curl call."""
    run = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", *args, url], capture_output=True, text=True,
                         timeout=120, check=True)
    body, _, status = run.stdout.rpartition("\n")
    return int(status), body


class CurlEndpoints(hh.ServerTest):
    def test_generate_then_bookkeeping_endpoints(self):
        case = self.golden["cases"][1]
        max_new = self.golden["max_new_tokens"]
        status, body = curl(self.server.url + "/generate", "-H", "Content-Type: application/json",
                            "-d", json.dumps(hh.golden_generate(case, max_new)))
        self.assertEqual(status, 200, body)
        reply = json.loads(body)
        experts = hh.decode_routed_experts(reply["meta_info"])
        hh.expect_golden(self, case, reply["output_ids"], experts, max_new)
        self.assertEqual(reply["meta_info"]["prompt_tokens"], len(case["prompt_ids"]))
        self.assertEqual(reply["meta_info"]["completion_tokens"], max_new)
        self.assertEqual(reply["meta_info"]["finish_reason"]["type"], "length")

        self.assertEqual(curl(self.server.url + "/health")[0], 200)

        status, body = curl(self.server.url + "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual([model["id"] for model in json.loads(body)["data"]], [hh.MODEL_NAME])

        status, body = curl(self.server.url + "/metrics")
        self.assertEqual(status, 200)
        served_tokens = len(case["prompt_ids"]) + max_new
        expected = {"moe_requests_total": 1, "moe_prompt_tokens_total": len(case["prompt_ids"]),
                    "moe_generation_tokens_total": max_new, "moe_num_running_requests": 0,
                    "moe_num_waiting_requests": 0}
        for name, value in expected.items():
            self.assertIn(f'{name}{{model_name="{hh.MODEL_NAME}"}} {value}\n', body)
        self.assertIn("# TYPE moe_step_time_seconds histogram", body)
        self.assertIn("moe_kv_slots_used{", body)
        self.assertIn("moe_routed_experts_capture_bytes_total{", body)

        # The load statistics count exactly the routing this one request reported: P+G-1 tokens.
        status, body = curl(self.server.url + "/expert_load")
        self.assertEqual(status, 200)
        load = json.loads(body)
        top_k = self.golden["top_k"]
        self.assertEqual(load["tokens"], served_tokens - 1)
        self.assertEqual(load["num_moe_layers"], self.golden["num_moe_layers"])
        counts = np.array(load["counts"])
        self.assertEqual(counts.sum(axis=1).tolist(), [load["tokens"] * top_k] * load["num_moe_layers"])
        for layer in range(load["num_moe_layers"]):
            histogram = np.bincount(experts[:, layer, :].ravel(), minlength=load["num_experts"])
            self.assertEqual(counts[layer].tolist(), histogram.tolist(), f"layer {layer}")

    def test_keep_alive_serves_several_requests_on_one_connection(self):
        urls = [self.server.url + path for path in ("/health", "/v1/models", "/metrics")]
        run = subprocess.run(["curl", "-sv", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", *urls],
                             capture_output=True, text=True, timeout=60, check=True)
        self.assertEqual(run.stderr.count("HTTP/1.1 200 OK"), len(urls), run.stderr)
        self.assertEqual(run.stderr.count("Re-using existing connection"), len(urls) - 1, run.stderr)


if __name__ == "__main__":
    hh.run_tests()
