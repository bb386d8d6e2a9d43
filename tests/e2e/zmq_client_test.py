"""Starts moe-serve as a user would and talks to it with examples/zmq_client.py (run as a program
and imported as a module): golden ids and routed experts; SIGTERM gives exit code 0. Then
examples/expert_load.py: the counts it reads are the histogram of the routing the server returned
(and what HTTP's /expert_load says), --reset starts a new window, and a server without capture refuses. A
client that closes its socket before its reply frees its request at once.
Usage: zmq_client_test.py PATH/TO/moe-serve"""
import json
import os
import signal
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

import msgpack
import numpy as np
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")


class ExampleClient(unittest.TestCase):
    def test_example_client_against_moe_serve(self):
        port = sp.free_port()
        server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint", f"tcp://127.0.0.1:{port}")
        try:
            g = sp.golden()
            cases = [g["cases"][0], g["cases"][3]]
            command = [sys.executable, os.path.join(sp.REPO, "examples", "zmq_client.py"),
                       "--endpoint", f"tcp://127.0.0.1:{port}", "--max-new-tokens", str(g["max_new_tokens"]),
                       "--ignore-eos", "--routed-experts", "--json"]
            for stream in (False, True):
                flags = ["--stream"] if stream else []
                for case in cases:
                    flags += ["--input-ids", ",".join(map(str, case["prompt_ids"]))]
                run = subprocess.run(command + flags, capture_output=True, text=True, timeout=120)
                self.assertEqual(run.returncode, 0, run.stderr)
                results = [json.loads(line) for line in run.stdout.splitlines()]
                self.assertEqual(len(results), len(cases))
                for case, result in zip(cases, results):
                    self.assertEqual(result["finish_reason"]["type"], "length")
                    sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
            # A bad request is reported by the client, and the server goes on.
            bad = subprocess.run(command[:4] + ["--temperature", "-1", "--text", "hello"], capture_output=True,
                                 text=True, timeout=60)
            self.assertEqual(bad.returncode, 1)
            self.assertIn("temperature", bad.stderr)
            text = subprocess.run(command[:4] + ["--max-new-tokens", "8", "--ignore-eos", "--text", "The capital of France is"],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertIn("8 tokens", text.stdout)
            # SIGTERM after the first chunk of a streamed request: the request finishes (or is failed
            # with 503), then the exit code is 0. (24 tokens: longer runs of this random model sample
            # padding ids the tokenizer cannot decode, see the report.)
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.1:{port}")
            sock.send(msgpack.packb(dict(sp.golden_request(cases[0], g["max_new_tokens"], "in-flight"), stream=True)))
            reply = sp.wait_for_reply(self, sock, 30)
            server.send_signal(signal.SIGTERM)
            ids = reply["output_ids"]
            while "error" not in reply and reply["meta_info"]["finish_reason"] is None:
                reply = sp.wait_for_reply(self, sock, 30)
                ids += reply.get("output_ids", [])
            if "error" in reply:
                self.assertEqual(reply["error"]["code"], 503, reply)
            else:
                self.assertEqual(ids, cases[0]["output_ids"])
            sock.close()
            # Wait for the drain to end by itself: a second SIGTERM would mean "exit at once".
            output, _ = server.communicate(timeout=60)
            self.assertEqual(server.returncode, 0, output)
        finally:
            if server.poll() is None:
                sp.terminate(server)


class Shutdown(unittest.TestCase):
    def test_a_second_signal_exits_without_waiting_for_requests_in_flight(self):
        port = sp.free_port()
        server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint", f"tcp://127.0.0.1:{port}",
                          "--graceful-shutdown-timeout", "120")
        try:
            g = sp.golden()
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.1:{port}")
            long_request = dict(sp.golden_request(g["cases"][1], 4000, "long"), stream=True)
            sock.send(msgpack.packb(long_request))
            sp.wait_for_reply(self, sock, 30)  # generating
            server.send_signal(signal.SIGTERM)  # drains: the request would run for many seconds
            time.sleep(0.5)
            self.assertIsNone(server.poll(), "the first SIGTERM should wait for the request in flight")
            started = sp.now()
            server.send_signal(signal.SIGTERM)
            output, _ = server.communicate(timeout=30)
            self.assertLess(sp.now() - started, 5, output)
            self.assertNotEqual(server.returncode, 0)
            self.assertIn("exiting without waiting", output)
            sock.close()
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()


class ExpertLoadExample(unittest.TestCase):
    def example(self, zmq_port, *flags):
        return subprocess.run([sys.executable, os.path.join(sp.REPO, "examples", "expert_load.py"),
                               "--endpoint", f"tcp://127.0.0.1:{zmq_port}", *flags],
                              capture_output=True, text=True, timeout=120)

    def metrics(self, http_port):
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30) as reply:
            lines = reply.read().decode().splitlines()
        samples = {}
        for line in lines:
            if line and not line.startswith("#"):
                series, value = line.rsplit(" ", 1)
                samples.setdefault(series.split("{")[0], float(value))
        return samples

    def load_json(self, zmq_port):
        run = self.example(zmq_port, "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        return json.loads(run.stdout)

    def test_counts_are_the_served_routing_and_reset_starts_a_window(self):
        zmq_port, http_port = sp.free_port(), sp.free_port()
        server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}",
                          "--port", str(http_port))
        http_load = f"http://127.0.0.1:{http_port}/expert_load"
        try:
            g = sp.golden()
            layers = g["num_moe_layers"]
            with open(os.path.join(sp.MODEL, "config.json")) as f:
                experts = json.load(f)["num_experts"]
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.1:{zmq_port}")
            expected, tokens = np.zeros((layers, experts), dtype=np.int64), 0
            cases = g["cases"][:3] + g["cases"][2:3]
            for i, case in enumerate(cases):
                reply = sp.zmq_client.generate(sock, sp.golden_request(case, g["max_new_tokens"], f"c{i}"))
                if i == len(cases) - 1:
                    self.assertGreater(reply["meta_info"]["cached_tokens"], 0)  # the repeat hit the prefix cache
                # Prompt rows a cache hit served from the host cache were never computed, so never counted.
                computed = reply["routed_experts"][reply["meta_info"]["cached_tokens"]:]
                tokens += len(computed)
                for layer in range(layers):
                    expected[layer] += np.bincount(computed[:, layer, :].ravel(), minlength=experts)
            sock.close()
            # /metrics counts the front door's traffic, ZeroMQ's included (it used to count HTTP only).
            metrics = self.metrics(http_port)
            self.assertEqual(metrics["moe_requests_total"], len(cases))
            self.assertEqual(metrics["moe_generation_tokens_total"], len(cases) * g["max_new_tokens"])
            self.assertEqual(metrics["moe_prompt_tokens_total"], sum(len(c["prompt_ids"]) for c in cases))

            load = self.load_json(zmq_port)
            self.assertEqual((load["num_moe_layers"], load["num_experts"], load["tokens"]), (layers, experts, tokens))
            self.assertEqual(load["counts"], expected.tolist())
            with urllib.request.urlopen(http_load, timeout=30) as reply:
                self.assertEqual(json.load(reply), load)

            run = self.example(zmq_port, "--reset", "--top", "2")
            self.assertEqual(run.returncode, 0, run.stderr)
            lines = run.stdout.splitlines()
            self.assertEqual(lines[0], f"{tokens} tokens counted over {layers} MoE layers of {experts} experts")
            for layer, line in enumerate(lines[1:]):
                counts = expected[layer]
                busiest = int(np.argmax(counts))
                self.assertIn(f"imbalance {counts.max() / counts.mean():.2f} (max/mean)", line)
                self.assertIn(f"busiest {busiest} ({counts[busiest]})", line)
            self.assertEqual(len(lines), 1 + layers)

            after = self.load_json(zmq_port)
            self.assertEqual((after["tokens"], after["counts"]), (0, [[0] * experts] * layers))
            with urllib.request.urlopen(http_load, timeout=30) as reply:
                self.assertEqual(json.load(reply), after)

            # HTTP's reset reads and zeroes the same counts: one more request's rows, then nothing.
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.1:{zmq_port}")
            reply = sp.zmq_client.generate(sock, sp.golden_request(g["cases"][3], g["max_new_tokens"], "last"))
            sock.close()
            computed = reply["routed_experts"][reply["meta_info"]["cached_tokens"]:]
            with urllib.request.urlopen(urllib.request.Request(http_load + "/reset", method="POST"), timeout=30) as r:
                window = json.load(r)
            self.assertEqual(window["tokens"], len(computed))
            self.assertEqual(window["counts"], [np.bincount(computed[:, layer, :].ravel(), minlength=experts).tolist()
                                                for layer in range(layers)])
            self.assertEqual(self.load_json(zmq_port), after)
        finally:
            code, log = sp.terminate(server)
        self.assertEqual(code, 0, log)

    def test_without_capture_zeromq_and_http_refuse_with_400(self):
        zmq_port, http_port = sp.free_port(), sp.free_port()
        flags = [f for f in sp.SHARED_FLAGS if f != "--enable-return-routed-experts"]
        server = subprocess.Popen([MOE_SERVE, *flags, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint",
                                   f"tcp://127.0.0.1:{zmq_port}", "--port", str(http_port)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            run = self.example(zmq_port)
            self.assertEqual(run.returncode, 1)
            self.assertIn("400 invalid_request_error: expert_load needs a server started with "
                          "--enable-return-routed-experts", run.stderr)
            with self.assertRaises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{http_port}/expert_load", timeout=30)
            self.assertEqual(refused.exception.code, 400)
            self.assertIn("--enable-return-routed-experts", json.load(refused.exception)["error"]["message"])
        finally:
            code, log = sp.terminate(server)
        self.assertEqual(code, 0, log)


class ClientDisconnect(unittest.TestCase):
    def test_a_client_that_closes_its_socket_frees_its_request_at_once(self):
        # A non-streamed request gets no reply before its end, so its client's going away used to
        # go unnoticed: it ran to max_new_tokens, holding its KV slots (and starving others).
        zmq_port, http_port = sp.free_port(), sp.free_port()
        server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}",
                          "--port", str(http_port))
        metrics = ExpertLoadExample.metrics
        try:
            g = sp.golden()
            leaving = sp.connect(zmq_port)
            leaving.send(msgpack.packb(sp.golden_request(g["cases"][1], 4000, "leaving")))
            deadline = sp.now() + 120
            while True:  # the request waits in the socket until the server is up
                try:
                    if metrics(self, http_port).get("moe_num_running_requests") == 1:
                        break
                except urllib.error.URLError:
                    pass
                self.assertLess(sp.now(), deadline, "the long request never started")
                time.sleep(0.05)
            leaving.close()
            closed = sp.now()
            while metrics(self, http_port).get("moe_num_running_requests") != 0:
                # Its 4000 tokens take far longer than this on any machine this runs on.
                self.assertLess(sp.now() - closed, 2, "the request of a client that closed its socket kept running")
                time.sleep(0.05)
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{http_port}/flush_cache", method="POST"),
                                   timeout=30).read()
            self.assertEqual(metrics(self, http_port)["moe_kv_slots_used"], 0)
            staying = sp.connect(zmq_port)
            case = g["cases"][0]
            reply = sp.zmq_client.generate(staying, sp.golden_request(case, g["max_new_tokens"], "staying"))
            sp.expect_golden(self, case, list(reply["output_ids"]), reply["routed_experts"], g["max_new_tokens"])
            staying.close()
        finally:
            code, log = sp.terminate(server)
        self.assertEqual(code, 0, log)


if __name__ == "__main__":
    unittest.main()
