"""moe-bench's HTTP transport against a scripted SSE server that misbehaves in the ways a real one can: it
drops kept-alive connections between requests (the client must reconnect, not fail), sends an error event
mid-stream, ends a stream without `data: [DONE]`, or never answers (the request timeout must end the request
and close its connection).
Usage: moe_bench_faults_test.py PATH/TO/moe-bench"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MOE_BENCH = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_BENCH", "moe-bench")
PROMPTS = 4
OUTPUT_LEN = 3


class ScriptedHandler(BaseHTTPRequestHandler):
    """Answers POST /generate as the server's `mode` says; counts requests and connections."""
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as moe-serve

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def log_message(self, *args):
        pass  # quiet

    def send_chunk(self, data):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def send_event(self, payload):
        self.send_chunk(b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests += 1
        mode = self.server.mode
        if mode == "silent":
            self.rfile.read(1)  # returns when the client closes the connection
            with self.server.lock:
                self.server.close_times.append(time.monotonic())
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        tokens = body["sampling_params"]["max_new_tokens"]
        for generated in range(1, tokens + 1):
            self.send_event({"text": "x", "output_ids": [7] * generated,
                             "meta_info": {"completion_tokens": generated, "finish_reason": None}})
            if mode == "error_event":
                self.send_event({"error": {"message": "engine failure mid-stream", "code": 500}})
                break
            if mode == "truncated":
                break
        if mode != "truncated":
            self.send_event(b"[DONE]")
        self.send_chunk(b"")  # the last, empty chunk ends the body
        if mode == "drop_kept_alive":
            self.close_connection = True  # without a Connection: close header, as an idle timeout would


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode):
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.mode, self.requests, self.connections = mode, 0, 0
        self.lock = threading.Lock()
        self.close_times = []  # silent mode: when the client closed each unanswered request's connection
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


def run_bench(url, *flags):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        started = time.monotonic()
        run = subprocess.run([MOE_BENCH, "--endpoint", url, "--num-prompts", str(PROMPTS), "--warmup-prompts", "1",
                              "--input-len", "4", "--output-len", str(OUTPUT_LEN), "--concurrency", "2", *flags,
                              "--output-json", report.name], capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - started
        with open(report.name) as written:
            text = written.read()
    if run.returncode != 0:
        raise AssertionError(f"moe-bench exited with {run.returncode}: {run.stderr}")
    return json.loads(text)["runs"]["c=2"], elapsed


class Faults(unittest.TestCase):
    def serve(self, mode):
        server = ScriptedServer(mode)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server

    def test_dropped_kept_alive_connections_are_reopened(self):
        server = self.serve("drop_kept_alive")
        run, _ = run_bench(server.url)
        self.assertEqual((run["completed"], run["failed"], run["output_tokens"]), (PROMPTS, 0, PROMPTS * OUTPUT_LEN),
                         run["first_error"])
        # Each request was sent once, each on a fresh connection (the reused ones were found closed).
        self.assertEqual(server.requests, PROMPTS + 1)
        self.assertEqual(server.connections, PROMPTS + 1)

    def test_healthy_server_reuses_connections(self):
        server = self.serve("healthy")
        run, _ = run_bench(server.url)
        self.assertEqual((run["completed"], run["failed"], run["output_tokens"]), (PROMPTS, 0, PROMPTS * OUTPUT_LEN))
        self.assertEqual(server.requests, PROMPTS + 1)
        self.assertLessEqual(server.connections, 2)  # concurrency 2: at most two connections, kept alive

    def test_error_event_fails_the_request_with_its_message(self):
        run, _ = run_bench(self.serve("error_event").url)
        self.assertEqual((run["completed"], run["failed"]), (0, PROMPTS))
        self.assertEqual(run["first_error"], "engine failure mid-stream")

    def test_stream_without_done_fails(self):
        run, _ = run_bench(self.serve("truncated").url)
        self.assertEqual((run["completed"], run["failed"]), (0, PROMPTS))
        self.assertEqual(run["first_error"], "the stream ended without data: [DONE]")

    def test_unanswered_requests_time_out(self):
        server = self.serve("silent")
        run, elapsed = run_bench(server.url, "--request-timeout", "0.5")
        self.assertEqual((run["completed"], run["failed"]), (0, PROMPTS))
        self.assertEqual(run["first_error"], "no answer within --request-timeout 0.5 s")
        # Warm-up and measured requests time out in rounds of two: 1 + 2 rounds of 0.5 s.
        self.assertGreaterEqual(elapsed, 1.5)
        self.assertLess(elapsed, 30)
        # A timed-out request's connection is closed then (the server can stop working for it), not when
        # moe-bench exits: the warm-up's and the first round's closes come a round before the last ones.
        # The server's handler threads note a close when they see it, which may be a moment after
        # moe-bench has exited: wait for every one (bounded) before reading them.
        deadline = time.monotonic() + 5
        while True:
            with server.lock:
                closes = sorted(server.close_times)
            if len(closes) >= PROMPTS + 1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(len(closes), PROMPTS + 1)
        self.assertEqual(sum(close < closes[-1] - 0.3 for close in closes), 3, closes)


if __name__ == "__main__":
    unittest.main()
