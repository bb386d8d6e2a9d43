"""Faults of a split deployment (the front and a `moe-serve --role worker` process over tcp://), with
real processes and signals: the worker killed while replies stream, the front killed while the worker
lives (the worker waits; a new front on the same endpoints serves), the worker stopped (SIGSTOP) for
longer than the heartbeat timeout and continued, also under load (while no worker answers, /health and
new requests answer 503 naming the worker at once). A fault may fail requests; every reply that
completes, and every token streamed before a failure, must equal transformers' goldens (ids and
routing).
Usage: fault_matrix_test.py PATH/TO/moe-serve"""
import json
import os
import signal
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

import msgpack
import numpy as np

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
WORKER_TIMEOUT_MS = 2000


class FaultMatrix(unittest.TestCase):
    def setUp(self):
        worker_port, scheduler_port = sp.free_port(), sp.free_port()
        self.client_port, self.http_port = sp.free_port(), sp.free_port()
        self.links = ["--worker-endpoint", f"tcp://127.0.0.1:{worker_port}",
                      "--scheduler-endpoint", f"tcp://127.0.0.1:{scheduler_port}"]
        self.worker = sp.start(MOE_SERVE, "--role", "worker", *self.links)
        self.server = self.start_front()
        self.sock = self.connect()
        self.g = sp.golden()

    def start_front(self):
        return sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, *self.links, "--port", str(self.http_port),
                        "--zmq-endpoint", f"tcp://127.0.0.1:{self.client_port}",
                        "--worker-timeout-ms", str(WORKER_TIMEOUT_MS))

    def connect(self):
        return sp.connect(self.client_port)

    def tearDown(self):
        self.sock.close()
        for process in (self.server, self.worker):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)  # a stopped process cannot take the SIGKILL's exit
                process.kill()
            process.communicate()

    def health(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/health", timeout=10) as reply:
                return reply.status
        except urllib.error.HTTPError as e:
            return e.code

    def http_get(self, path):
        """(status, body) of GET path."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=10) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def http_generate(self, case, max_new_tokens):
        """(status, error message or None, seconds taken) of a greedy /generate of the case's prompt."""
        body = json.dumps({"input_ids": case["prompt_ids"],
                           "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens}}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}/generate", data=body,
                                         headers={"Content-Type": "application/json"})
        started = sp.now()
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                reply.read()
                return reply.status, None, sp.now() - started
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())["error"]["message"], sp.now() - started

    def golden_reply(self, case, rid, deadline_s=30):
        """The reply to a golden request, sent again while the front answers 503 (no usable worker yet)."""
        deadline = sp.now() + deadline_s
        while True:
            self.sock.send(msgpack.packb(sp.golden_request(case, self.g["max_new_tokens"], rid)))
            reply = sp.wait_for_reply(self, self.sock, deadline_s)
            if "error" not in reply or reply["error"]["code"] != 503 or sp.now() > deadline:
                return reply
            time.sleep(0.2)
            rid += "+"

    def expect_golden_reply(self, case, reply):
        self.assertNotIn("error", reply)
        experts = sp.zmq_client.routed_experts(reply["meta_info"])
        sp.expect_golden(self, case, reply["output_ids"], experts, self.g["max_new_tokens"])

    def expect_golden_prefix(self, case, ids, rows):
        """Tokens and routing rows streamed so far agree with the goldens as far as they reach."""
        known = min(len(ids), len(case["output_ids"]))
        self.assertEqual(ids[:known], case["output_ids"][:known])
        for position in range(min(len(rows), len(case["routed_experts"]))):
            if case["router_min_gap"][position] >= 1e-3:
                self.assertEqual([list(layer) for layer in rows[position]], case["routed_experts"][position],
                                 f"row {position}")

    def test_worker_killed_mid_stream_ends_every_stream_with_an_error(self):
        case = self.g["cases"][1]
        streams = {f"s{i}": ([], []) for i in range(3)}
        for rid in streams:
            request = dict(sp.golden_request(case, 4000, rid), stream=True)
            self.sock.send(msgpack.packb(request))
        ended = {}

        def take(reply):
            if "error" in reply:
                ended[reply["error"]["rid"]] = reply["error"]
                return
            rid = reply["meta_info"]["id"]
            streams[rid][0].extend(reply["output_ids"])
            experts = sp.zmq_client.routed_experts(reply["meta_info"])
            if experts is not None:
                streams[rid][1].extend(experts)
            self.assertIsNone(reply["meta_info"]["finish_reason"], "a stream finished although its worker was killed")

        while min(len(ids) for ids, _ in streams.values()) < 8:  # every stream is under way
            take(sp.wait_for_reply(self, self.sock, 20))
        self.worker.send_signal(signal.SIGKILL)
        killed_at = sp.now()
        while len(ended) < len(streams):
            take(sp.wait_for_reply(self, self.sock, 10))
        print(f"streams ended with an error {sp.now() - killed_at:.2f} s after the worker was killed")
        for rid, (ids, rows) in streams.items():
            self.assertIn("worker", ended[rid]["message"])
            self.expect_golden_prefix(case, ids, np.array(rows).tolist())
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)

    def test_front_killed_worker_waits_and_serves_a_new_front(self):
        cases = self.g["cases"][:3]
        self.expect_golden_reply(cases[0], self.golden_reply(cases[0], "before"))
        self.server.send_signal(signal.SIGKILL)
        self.server.communicate()
        time.sleep(2 * WORKER_TIMEOUT_MS / 1000)
        self.assertIsNone(self.worker.poll(), "the worker exited when its front died")
        self.sock.close()
        self.server = self.start_front()
        self.sock = self.connect()
        for i, case in enumerate(cases):
            self.expect_golden_reply(case, self.golden_reply(case, f"after{i}"))
        self.assertEqual(self.health(), 200)
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)
        code, log = sp.terminate(self.worker)
        self.assertEqual(code, 0, log)

    def test_stopped_worker_fails_requests_then_serves_exactly_after_sigcont(self):
        cases = self.g["cases"][:4]
        for i, case in enumerate(cases):  # every prompt sits in the front's prefix cache
            self.expect_golden_reply(case, self.golden_reply(case, f"first{i}"))
        for i in range(2):
            self.sock.send(msgpack.packb(sp.golden_request(cases[1], 4000, f"long{i}")))
        time.sleep(0.3)
        os.kill(self.worker.pid, signal.SIGSTOP)
        stopped_at = sp.now()
        failed = set()
        while len(failed) < 2:
            reply = sp.wait_for_reply(self, self.sock, 10 + WORKER_TIMEOUT_MS / 1000)
            self.assertIn("error", reply, "a request finished although its worker was stopped")
            failed.add(reply["error"]["rid"])
        print(f"requests failed {sp.now() - stopped_at:.2f} s after the worker was stopped")
        self.assertEqual(self.health(), 503)
        time.sleep(1)
        os.kill(self.worker.pid, signal.SIGCONT)
        golden, errors = 0, 0
        for attempt in range(12):
            case = cases[attempt % len(cases)]
            reply = self.golden_reply(case, f"after{attempt}")
            if "error" in reply:  # met the stall's aftermath: failed, never answered wrongly
                errors += 1
                time.sleep(0.3)
                continue
            self.expect_golden_reply(case, reply)
            golden += 1
        print(f"after SIGCONT: {errors} request(s) failed, {golden} golden")
        self.assertGreaterEqual(golden, 8)
        self.assertEqual(self.health(), 200)
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)

    def test_frozen_worker_under_load_answers_503_naming_it_then_serves_after_sigcont(self):
        cases = self.g["cases"][:4]
        self.expect_golden_reply(cases[0], self.golden_reply(cases[0], "warm"))
        worker_name = f"model worker at {self.links[1]}"
        results, stop_load = [], threading.Event()  # (sent at, status, message, seconds)

        def load(thread):
            while not stop_load.is_set():
                sent = sp.now()
                status, message, took = self.http_generate(cases[thread % len(cases)], 24)
                results.append((sent, status, message, took))
                if status != 200:
                    time.sleep(0.05)  # refused at once: a client would not retry in a tight loop

        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(1.5)  # the load runs: steps in flight, requests queued
        os.kill(self.worker.pid, signal.SIGSTOP)
        stopped_at = sp.now()
        # Past the timeout (plus the half second the front's watch may take), until the SIGCONT.
        settled_at = stopped_at + WORKER_TIMEOUT_MS / 1000 + 0.6
        time.sleep(settled_at - sp.now())
        health = []
        while sp.now() < stopped_at + 10:
            health.append(self.http_get("/health"))
            time.sleep(0.25)
        os.kill(self.worker.pid, signal.SIGCONT)
        continued_at = sp.now()
        stop_load.set()
        for thread in threads:
            thread.join()

        self.assertGreater(len(health), 20)
        unhealthy = [(status, body) for status, body in health if status != 503 or worker_name not in body]
        self.assertEqual(unhealthy, [], f"/health while the worker was stopped: {len(unhealthy)} of {len(health)} "
                                        f"not 503 naming the {worker_name}")
        while_stopped = [r for r in results if settled_at <= r[0] and r[0] + r[3] < continued_at]
        self.assertGreater(len(while_stopped), 20, "the load stopped while the worker was stopped")
        wrong = [r for r in while_stopped if r[1] != 503 or worker_name not in r[2] or r[3] > 2.0]
        self.assertEqual(wrong, [], f"{len(wrong)} of {len(while_stopped)} new requests were not refused at once "
                                    f"with 503 naming the {worker_name} within 2 s")
        caught = [r for r in results if r[0] < stopped_at and r[0] + r[3] > stopped_at]
        for sent, status, message, took in caught:  # in flight at the SIGSTOP: done before it, or failed naming it
            if status != 200:
                self.assertEqual(status, 500, message)
                self.assertIn(f"{worker_name} stopped responding", message)
        print(f"stopped worker: {len(health)} /health checks 503, {len(while_stopped)} new requests 503 "
              f"(slowest {max(r[3] for r in while_stopped):.3f} s), {len(caught)} in flight failed")

        deadline = sp.now() + 20
        while self.health() != 200:
            self.assertLess(sp.now(), deadline, "/health did not come back after SIGCONT")
            time.sleep(0.2)
        print(f"/health 200 again {sp.now() - continued_at:.2f} s after SIGCONT")
        for i, case in enumerate(cases):
            self.expect_golden_reply(case, self.golden_reply(case, f"after{i}"))
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)


if __name__ == "__main__":
    unittest.main()
