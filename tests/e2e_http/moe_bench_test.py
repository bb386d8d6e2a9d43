"""moe-bench end to end: it drives a real moe-serve over ZeroMQ and over HTTP (SGLang /generate and OpenAI
/v1/completions), with and without routed experts, in sweep and A/B compare mode, and its JSON report
says every request completed with all its tokens and ordered latencies. Against a closed port, and with
requests the server refuses, it reports failures instead of hanging.
Usage: moe_bench_test.py PATH/TO/moe-serve PATH/TO/moe-bench"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import http_harness as hh
import serve_process as sp

MOE_BENCH = sys.argv.pop(2) if len(sys.argv) > 2 else os.environ.get("MOE_BENCH", "moe-bench")

PROMPTS = 6
OUTPUT_LEN = 4
# Small runs: 6 measured prompts of 8 tokens, 4 generated tokens each, at concurrency 1 and 3.
LOAD_FLAGS = ["--num-prompts", str(PROMPTS), "--warmup-prompts", "1", "--input-len", "8",
              "--output-len", str(OUTPUT_LEN)]
# No run may take long on the tiny model; a hang is a failure.
RUN_TIMEOUT_S = 120


def run_bench(*flags):
    """Runs moe-bench with --output-json; its exit code, stderr and report."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        run = subprocess.run([MOE_BENCH, *flags, "--output-json", report.name], capture_output=True, text=True,
                             timeout=RUN_TIMEOUT_S)
        with open(report.name) as written:
            text = written.read()
    return run.returncode, run.stderr, json.loads(text) if text else None


class BenchAgainstServer(hh.ServerTest):
    zmq_endpoint = f"tcp://127.0.0.1:{sp.free_port()}"
    extra_flags = ("--zmq-endpoint", zmq_endpoint)

    def bench(self, *flags):
        code, stderr, report = run_bench(*flags)
        self.assertEqual(code, 0, stderr)
        return report

    def expect_complete(self, run, label):
        """Every request done with all its tokens; TTFT and ITL positive, mean and p50 within [min, p99]."""
        self.assertEqual(run["completed"], PROMPTS, f"{label}: {run}")
        self.assertEqual(run["failed"], 0, f"{label}: {run['first_error']}")
        self.assertEqual(run["output_tokens"], PROMPTS * OUTPUT_LEN, label)
        self.assertGreater(run["output_throughput"], 0, label)
        self.assertGreater(run["request_throughput"], 0, label)
        for name in ("ttft", "itl"):
            latency = run[name]
            self.assertGreater(latency["p50_ms"], 0, f"{label} {name}: {latency}")
            self.assertLessEqual(latency["p50_ms"], latency["p99_ms"], f"{label} {name}: {latency}")
            self.assertLessEqual(latency["mean_ms"], latency["p99_ms"], f"{label} {name}: {latency}")
        # A token cannot come before the request was sent nor the whole run be shorter than its first token.
        self.assertLessEqual(run["ttft"]["p99_ms"], 1000 * run["duration_s"], label)

    def test_sweep_over_zmq_and_http(self):
        targets = {"zmq": [self.zmq_endpoint], "http": [self.server.url],
                   "openai": [self.server.url, "--api", "openai"]}
        for name, target in targets.items():
            for experts in ([], ["--return-routed-experts"]):
                with self.subTest(transport=name, routed_experts=bool(experts)):
                    report = self.bench("--endpoint", *target, *LOAD_FLAGS, "--concurrency", "1,3", *experts)
                    self.assertEqual(sorted(report["runs"]), ["c=1", "c=3"])
                    for label, run in report["runs"].items():
                        self.expect_complete(run, f"{name} {label}")

    def test_compare_zmq_against_http(self):
        report = self.bench("--endpoint", self.zmq_endpoint, "--b-endpoint", self.server.url, *LOAD_FLAGS,
                            "--concurrency", "3", "--compare-pairs", "2", "--b-return-routed-experts")
        self.assertEqual(sorted(report["runs"]), ["A#0", "A#1", "B#0", "B#1"])
        for label, run in report["runs"].items():
            self.expect_complete(run, label)
        ratios = report["ratios_b_over_a"]
        self.assertEqual(len(ratios), 2)
        for pair, ratio in enumerate(ratios):
            a, b = report["runs"][f"A#{pair}"], report["runs"][f"B#{pair}"]
            self.assertAlmostEqual(ratio, b["output_throughput"] / a["output_throughput"], places=9)

    def test_refused_requests_are_failures_with_the_servers_message(self):
        # Prompt ids drawn from [0, 10^9) fall outside the model's vocabulary: every request gets a 400.
        for name, target in {"zmq": [self.zmq_endpoint], "http": [self.server.url],
                             "openai": [self.server.url, "--api", "openai"]}.items():
            with self.subTest(transport=name):
                report = self.bench("--endpoint", *target, *LOAD_FLAGS, "--concurrency", "3",
                                    "--vocab-size", "1000000000")
                run = report["runs"]["c=3"]
                self.assertEqual((run["completed"], run["failed"], run["output_tokens"]), (0, PROMPTS, 0))
                self.assertIn("outside the vocabulary", run["first_error"])
                if name != "zmq":
                    self.assertTrue(run["first_error"].startswith("HTTP 400: "), run["first_error"])
        # The server is still serving afterwards.
        self.expect_complete(self.bench("--endpoint", self.server.url, *LOAD_FLAGS)["runs"]["c=1"], "after errors")


class BenchAgainstClosedPort(unittest.TestCase):
    def test_closed_port_reports_failures_rather_than_hanging(self):
        port = sp.free_port()  # nothing listens there
        # HTTP: the connection is refused at once. ZeroMQ cannot tell, so the request timeout ends each request.
        for target, timeout_flags, error in (([f"http://127.0.0.1:{port}"], [], "Connection refused"),
                                             ([f"tcp://127.0.0.1:{port}"], ["--request-timeout", "0.5"],
                                              "no answer within --request-timeout 0.5 s")):
            with self.subTest(endpoint=target[0]):
                code, stderr, report = run_bench("--endpoint", *target, *LOAD_FLAGS, "--concurrency", "3",
                                                 *timeout_flags)
                self.assertEqual(code, 0, stderr)
                run = report["runs"]["c=3"]
                self.assertEqual((run["completed"], run["failed"]), (0, PROMPTS))
                self.assertIn(error, run["first_error"])
                self.assertIn(f"{PROMPTS} failed", stderr)


if __name__ == "__main__":
    hh.run_tests()
