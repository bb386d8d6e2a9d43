"""Pipeline parallelism over tcp://, each stage its own `moe-serve --role worker --pp-rank i` process
and the front (tokenizer, scheduler, detokenizer) a fourth: every golden case, alone and eight at
once, equals the golden ids and routing rows (every stage's slice merged); killing one stage mid-load
fails the requests in flight within seconds while the front answers /health as degraded (503);
restarting that stage alone brings service back, golden again.
Usage: pp_multiprocess_test.py PATH/TO/moe-serve"""
import os
import signal
import sys
import time
import unittest

import msgpack
import requests
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
PP = 3


class PipelineProcesses(unittest.TestCase):
    def setUp(self):
        self.stage_ports = [sp.free_port() for _ in range(PP)]
        scheduler_port, client_port, self.http_port = sp.free_port(), sp.free_port(), sp.free_port()
        self.scheduler = f"tcp://127.0.0.1:{scheduler_port}"
        self.stages = [self.start_stage(rank) for rank in range(PP)]
        self.server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--pp-size", str(PP),
                               "--worker-endpoint", f"tcp://127.0.0.1:{self.stage_ports[0]}",
                               "--scheduler-endpoint", self.scheduler, "--port", str(self.http_port),
                               "--zmq-endpoint", f"tcp://127.0.0.1:{client_port}", "--worker-timeout-ms", "2000")
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://127.0.0.1:{client_port}")
        self.wait_for_health(200)

    def start_stage(self, rank):
        flags = ["--role", "worker", "--pp-size", str(PP), "--pp-rank", str(rank),
                 "--worker-endpoint", f"tcp://127.0.0.1:{self.stage_ports[rank]}",
                 "--scheduler-endpoint", self.scheduler]
        if rank + 1 < PP:
            flags += ["--pp-next-endpoint", f"tcp://127.0.0.1:{self.stage_ports[rank + 1]}"]
        return sp.start(MOE_SERVE, *flags)

    def tearDown(self):
        self.sock.close()
        for process in [self.server, *self.stages]:
            if process.poll() is None:
                process.kill()
            process.communicate()

    def health(self):
        try:
            return requests.get(f"http://127.0.0.1:{self.http_port}/health", timeout=5).status_code
        except requests.ConnectionError:
            return None

    def wait_for_health(self, status, timeout_s=60):
        deadline = sp.now() + timeout_s
        while self.health() != status:
            self.assertLess(sp.now(), deadline, f"/health never answered {status}")
            time.sleep(0.2)

    def expect_all_golden_at_once(self, prefix):
        g = sp.golden()
        for i, case in enumerate(g["cases"]):
            self.sock.send(msgpack.packb(sp.golden_request(case, g["max_new_tokens"], f"{prefix}{i}")))
        replies = {}
        while len(replies) < len(g["cases"]):
            reply = sp.wait_for_reply(self, self.sock, 60)
            self.assertNotIn("error", reply, reply)
            replies[reply["meta_info"]["id"]] = reply
        for i, case in enumerate(g["cases"]):
            reply = replies[f"{prefix}{i}"]
            sp.expect_golden(self, case, reply["output_ids"], sp.zmq_client.routed_experts(reply["meta_info"]),
                             g["max_new_tokens"])

    def test_golden_alone_and_eight_at_once_then_clean_sigterm(self):
        g = sp.golden()
        for i, case in enumerate(g["cases"]):
            result = sp.zmq_client.generate(self.sock, sp.golden_request(case, g["max_new_tokens"], f"one{i}"))
            sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
        self.expect_all_golden_at_once("eight")
        for process in [self.server, *self.stages]:
            code, log = sp.terminate(process)
            self.assertEqual(code, 0, log)

    def test_killed_stage_fails_requests_health_degraded_restart_serves_again(self):
        g = sp.golden()
        for i in range(3):  # long enough to still run when the stage dies
            self.sock.send(msgpack.packb(sp.golden_request(g["cases"][1], 4000, f"long{i}")))
        time.sleep(0.5)
        self.stages[1].send_signal(signal.SIGKILL)
        self.stages[1].communicate()
        killed_at = sp.now()
        failed = set()
        while len(failed) < 3:
            reply = sp.wait_for_reply(self, self.sock, 10)
            self.assertIn("error", reply, "a request finished although a stage was killed")
            failed.add(reply["error"]["rid"])
            self.assertIn("stage 1", reply["error"]["message"])
        elapsed = sp.now() - killed_at
        print(f"in-flight requests failed {elapsed:.2f} s after stage 1 was killed")
        self.assertLess(elapsed, 8)
        self.assertEqual(self.health(), 503)  # the front is up and says it is degraded
        self.stages[1] = self.start_stage(1)
        self.wait_for_health(200)
        self.expect_all_golden_at_once("after")
        _, log = sp.terminate(self.server)
        self.assertIn("stopped responding", log)


if __name__ == "__main__":
    unittest.main()
