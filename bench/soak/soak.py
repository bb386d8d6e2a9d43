#!/usr/bin/python3
"""Soak: a split deployment (front + `moe-serve --role worker` over tcp://) under mixed load for a
while, with the worker killed and restarted on a timer. Every completed reply is checked against
transformers' goldens (ids, and routing where asked): a wrong reply is the one failure that must
never happen; failed requests are counted by kind. RSS of both processes and the KV-slot gauges are
sampled every minute. Not a test (it runs for minutes); its figures go to bench/RESULTS.md.

    bench/soak/soak.py build/actors/moe-serve --minutes 20 [--restart-every 240] [--clients 4]

Load, picked at random by each client thread: a golden request over ZeroMQ (routing on or off,
streamed or not), n = 2 over HTTP, a long streamed request aborted by its client after its first
chunk, a request whose client disconnects at once, and bad input (garbage frames, a 1e999, malformed
JSON). Exit code 1 when a reply was wrong, a bad input was not answered 400, or a request got no
answer at all."""
import argparse
import collections
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import uuid

import msgpack
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "e2e"))
import serve_process as sp  # noqa: E402  (process start-up and golden checks shared with the e2e tests)

REPLY_TIMEOUT_S = 60


class Mismatch(AssertionError):
    pass


class Checker:
    """What sp.expect_golden asks of a unittest.TestCase, raising Mismatch instead."""

    def assertEqual(self, a, b, msg=None):  # noqa: N802 (unittest's name)
        if a != b:
            raise Mismatch(msg or f"{a!r} != {b!r}")


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()

    def add(self, kind, n=1):
        with self.lock:
            self.counts[kind] += n


class Deployment:
    def __init__(self, moe_serve, log):
        self.moe_serve = moe_serve
        self.log = log  # both processes' output, appended (never a pipe: nobody reads it for minutes)
        worker_port, scheduler_port = sp.free_port(), sp.free_port()
        self.client_port, self.http_port = sp.free_port(), sp.free_port()
        self.links = ["--worker-endpoint", f"tcp://127.0.0.1:{worker_port}",
                      "--scheduler-endpoint", f"tcp://127.0.0.1:{scheduler_port}"]
        self.worker = self.start_worker()
        self.front = sp.start(moe_serve, "--tokenizer-path", sp.TOKENIZER, *self.links, "--port", str(self.http_port),
                              "--zmq-endpoint", f"tcp://127.0.0.1:{self.client_port}", "--worker-timeout-ms", "2000",
                              log=self.log)
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.wait_healthy(120)

    def start_worker(self):
        return sp.start(self.moe_serve, "--role", "worker", *self.links, log=self.log)

    def restart_worker(self):
        self.worker.send_signal(signal.SIGKILL)
        self.worker.communicate()
        self.worker = self.start_worker()

    def wait_healthy(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise RuntimeError("the deployment did not become healthy")

    def metrics(self):
        samples = {}
        for line in requests.get(self.url + "/metrics", timeout=10).text.splitlines():
            if line and not line.startswith("#"):
                series, value = line.rsplit(" ", 1)
                samples.setdefault(series.split("{")[0], float(value))
        return samples

    @staticmethod
    def rss_mib(process):
        with open(f"/proc/{process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        for process in (self.front, self.worker):
            sp.terminate(process)


class Client:
    """One client thread's load."""

    def __init__(self, deployment, golden, tally, stop_at, seed):
        self.d, self.g, self.tally, self.stop_at = deployment, golden, tally, stop_at
        self.random = random.Random(seed)
        self.sock = self.connect()
        self.check = Checker()

    def connect(self):
        return sp.connect(self.d.client_port)

    def run(self):
        scenarios = [(self.golden_zmq, 5), (self.n2_http, 2), (self.abort_stream, 1), (self.disconnect, 1),
                     (self.bad_input, 1)]
        population = [f for f, weight in scenarios for _ in range(weight)]
        while time.monotonic() < self.stop_at:
            scenario = self.random.choice(population)
            try:
                scenario()
            except Mismatch as e:
                self.tally.add("WRONG reply")
                print(f"WRONG reply in {scenario.__name__}: {e}", flush=True)
            except TimeoutError as e:
                self.tally.add("UNANSWERED request")
                print(f"no answer in {scenario.__name__}: {e}", flush=True)
                self.sock.close()
                self.sock = self.connect()
        self.sock.close()

    def wait(self, rid):
        """The next frame for `rid` on this client's socket (frames of requests given up on are skipped)."""
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sock.poll(int(left * 1000)):
                raise TimeoutError(f"no reply to {rid} within {REPLY_TIMEOUT_S} s")
            reply = msgpack.unpackb(self.sock.recv(), raw=False)
            got = reply["error"].get("rid") if "error" in reply else reply.get("meta_info", {}).get("id")
            if got == rid:
                return reply

    def count_error(self, error):
        kind = "worker lost or restarted" if "worker" in error["message"] else error["message"][:60]
        self.tally.add(f"failed ({error['code']}): {kind}")

    def golden_zmq(self):
        case = self.random.choice(self.g["cases"])
        routing, stream = self.random.random() < 0.7, self.random.random() < 0.4
        rid = uuid.uuid4().hex
        request = dict(sp.golden_request(case, self.g["max_new_tokens"], rid), stream=stream,
                       return_routed_experts=routing)
        self.sock.send(msgpack.packb(request))
        ids, rows = [], []
        while True:
            reply = self.wait(rid)
            if "error" in reply:
                return self.count_error(reply["error"])
            ids += reply["output_ids"]
            experts = sp.zmq_client.routed_experts(reply["meta_info"])
            if experts is not None:
                rows.extend(experts)
            if reply["meta_info"]["finish_reason"] is not None:
                break
        if routing:
            sp.expect_golden(self.check, case, ids, rows, self.g["max_new_tokens"])
        else:
            self.check.assertEqual(ids, case["output_ids"], "ids without routing")
            self.check.assertEqual(rows, [], "routing not asked for")
        self.tally.add(f"golden over ZeroMQ ({'stream' if stream else 'whole'}, routing {'on' if routing else 'off'})")

    def n2_http(self):
        case = self.random.choice(self.g["cases"])
        body = dict(sp.golden_request(case, self.g["max_new_tokens"], uuid.uuid4().hex))
        body["sampling_params"] = dict(body["sampling_params"], n=2)
        try:
            reply = requests.post(self.d.url + "/generate", json=body, timeout=REPLY_TIMEOUT_S)
        except requests.Timeout as e:
            raise TimeoutError(str(e))
        if reply.status_code != 200:
            return self.count_error({"code": reply.status_code, "message": reply.json()["error"]["message"]})
        completions = reply.json()
        self.check.assertEqual(len(completions), 2, "n = 2 gives two completions")
        for completion in completions:
            experts = sp.zmq_client.routed_experts(completion["meta_info"])
            sp.expect_golden(self.check, case, completion["output_ids"], experts, self.g["max_new_tokens"])
        self.tally.add("golden over HTTP (n = 2)")

    def abort_stream(self):
        case = self.g["cases"][1]
        rid = uuid.uuid4().hex
        self.sock.send(msgpack.packb(dict(sp.golden_request(case, 4000, rid), stream=True)))
        ids, aborted_sent = [], False
        while True:
            reply = self.wait(rid)
            if "abort" in reply:
                continue  # the answer to the abort op; the request's own last chunk follows
            if "error" in reply:
                return self.count_error(reply["error"])
            ids += reply["output_ids"]
            if not aborted_sent:
                self.sock.send(msgpack.packb({"op": "abort", "rid": rid}))
                aborted_sent = True
            finish = reply["meta_info"]["finish_reason"]
            if finish is not None:
                break
        known = min(len(ids), len(case["output_ids"]))
        self.check.assertEqual(ids[:known], case["output_ids"][:known], "tokens streamed before the abort")
        self.tally.add(f"aborted by its client (finish {finish['type']})")

    def disconnect(self):
        sock = self.connect()
        sock.send(msgpack.packb(sp.golden_request(self.g["cases"][1], 4000, uuid.uuid4().hex)))
        time.sleep(self.random.random() * 0.05)
        sock.close()
        self.tally.add("client disconnected mid-request")

    def bad_input(self):
        kind = self.random.randrange(3)
        if kind == 0:
            rid = uuid.uuid4().hex
            self.sock.send(msgpack.packb({"rid": rid, "input_ids": [1, 2], "sampling_params": {"n": "two"}}))
            reply = self.wait(rid)
            ok = "error" in reply and reply["error"]["code"] == 400
        else:
            body = '{"text": "x", "sampling_params": {"temperature": 1e999}}' if kind == 1 else '{"text": '
            try:
                ok = requests.post(self.d.url + "/generate", data=body, timeout=REPLY_TIMEOUT_S).status_code == 400
            except requests.Timeout as e:
                raise TimeoutError(str(e))
        self.tally.add("bad input answered 400" if ok else "BAD INPUT NOT ANSWERED 400")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("moe_serve")
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--restart-every", type=float, default=240, help="seconds between worker restarts (0: none)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--server-log", default="soak-servers.log", help="where the servers' output goes")
    args = parser.parse_args()

    golden = sp.golden()
    server_log = open(args.server_log, "a")
    deployment = Deployment(args.moe_serve, server_log)
    tally = Tally()
    started = time.monotonic()
    stop_at = started + args.minutes * 60
    samples = []

    def sample():
        m = deployment.metrics()
        samples.append({"minute": round((time.monotonic() - started) / 60, 1),
                        "front_rss_mib": round(Deployment.rss_mib(deployment.front), 1),
                        "worker_rss_mib": round(Deployment.rss_mib(deployment.worker), 1),
                        "kv_slots_used": m.get("moe_kv_slots_used"), "running": m.get("moe_num_running_requests"),
                        "requests_total": m.get("moe_requests_total")})
        print(json.dumps(samples[-1]), flush=True)

    try:
        sample()
        clients = [threading.Thread(target=Client(deployment, golden, tally, stop_at, seed).run)
                   for seed in range(args.clients)]
        for thread in clients:
            thread.start()
        next_sample, next_restart, restarts = started + 60, started + args.restart_every, 0
        while any(thread.is_alive() for thread in clients):
            time.sleep(1)
            now = time.monotonic()
            if args.restart_every > 0 and now >= next_restart and now < stop_at - 30:
                deployment.restart_worker()
                restarts += 1
                next_restart = now + args.restart_every
                print(f"worker restarted ({restarts})", flush=True)
            if now >= next_sample:
                sample()
                next_sample = now + 60
        # Idle now: with the prefix cache flushed, every KV slot must be free again.
        time.sleep(3)
        requests.post(deployment.url + "/flush_cache", timeout=30)
        sample()
    finally:
        deployment.stop()

    print(f"\nsoak of {args.minutes} min, {args.clients} clients, {restarts} worker restart(s):")
    for kind, n in sorted(tally.counts.items()):
        print(f"  {n:7d}  {kind}")
    first, last = samples[0], samples[-1]
    print(f"  RSS front {first['front_rss_mib']} -> {last['front_rss_mib']} MiB, "
          f"worker {first['worker_rss_mib']} -> {last['worker_rss_mib']} MiB (the worker's since its last restart)")
    print(f"  KV slots used at the end (prefix cache flushed): {last['kv_slots_used']}")
    bad = sum(n for kind, n in tally.counts.items() if kind.startswith(("WRONG", "BAD", "UNANSWERED")))
    return 1 if bad or last["kv_slots_used"] else 0


if __name__ == "__main__":
    sys.exit(main())
