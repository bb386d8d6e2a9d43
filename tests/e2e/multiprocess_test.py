"""moe-serve with its model worker in a separate `moe-serve --role worker` process over tcp://:
golden outputs; killing the worker fails in-flight requests within seconds; a restarted worker (whose
KV cache is empty) never yields wrong tokens or routing for prompts the front had cached; a worker
started with other settings (or another STANDALONE draft model) is refused, naming the setting; a weight update reaches the remote worker;
SIGTERM exits 0.
Usage: multiprocess_test.py PATH/TO/moe-serve"""
import os
import signal
import sys
import time
import unittest

import msgpack
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")


class MultiProcess(unittest.TestCase):
    def setUp(self):
        worker_port, scheduler_port, client_port = sp.free_port(), sp.free_port(), sp.free_port()
        links = ["--worker-endpoint", f"tcp://127.0.0.1:{worker_port}",
                 "--scheduler-endpoint", f"tcp://127.0.0.1:{scheduler_port}"]
        self.links = links
        self.worker = sp.start(MOE_SERVE, "--role", "worker", *links)
        self.server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, *links,
                               "--zmq-endpoint", f"tcp://127.0.0.1:{client_port}", "--worker-timeout-ms", "2000")
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://127.0.0.1:{client_port}")

    def tearDown(self):
        self.sock.close()
        for process in (self.server, self.worker):
            if process.poll() is None:
                process.kill()
            process.communicate()  # reaps it and closes its log pipe

    def test_golden_outputs_then_clean_sigterm(self):
        g = sp.golden()
        for i, case in enumerate(g["cases"]):
            result = sp.zmq_client.generate(self.sock, sp.golden_request(case, g["max_new_tokens"], f"mp{i}"))
            sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)
        code, log = sp.terminate(self.worker)
        self.assertEqual(code, 0, log)

    def test_weight_update_reaches_the_remote_worker(self):
        g = sp.golden()
        case = g["cases"][2]
        self.sock.send(msgpack.packb({"op": "update_weights_from_disk", "rid": "u", "model_path": sp.MODEL,
                                      "weight_version": "remote-2"}))
        answer = sp.wait_for_reply(self, self.sock, 120)
        self.assertTrue(answer["success"], answer)
        self.assertEqual(answer["weight_version"], "remote-2")
        result = sp.zmq_client.generate(self.sock, sp.golden_request(case, g["max_new_tokens"], "after"))
        sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
        self.assertEqual(result["meta_info"]["weight_version"], "remote-2")
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)
        code, log = sp.terminate(self.worker)
        self.assertEqual(code, 0, log)

    def test_killed_worker_fails_requests_in_flight_within_seconds(self):
        g = sp.golden()
        warm = sp.zmq_client.generate(self.sock, sp.golden_request(g["cases"][1], 4, "warm"))
        self.assertEqual(warm["output_ids"], g["cases"][1]["output_ids"][:4])
        for i in range(3):  # long enough to still run when the worker dies (case 1 stays in the vocabulary)
            self.sock.send(msgpack.packb(sp.golden_request(g["cases"][1], 4000, f"long{i}")))
        time.sleep(0.3)
        self.worker.send_signal(signal.SIGKILL)
        killed_at = sp.now()
        failed = set()
        while len(failed) < 3:
            reply = sp.wait_for_reply(self, self.sock, 10)
            self.assertIn("error", reply, "a request finished although its worker was killed")
            failed.add(reply["error"]["rid"])
            self.assertEqual(reply["error"]["code"], 500)
            self.assertIn("worker", reply["error"]["message"])
        elapsed = sp.now() - killed_at
        print(f"in-flight requests failed {elapsed:.2f} s after the worker was killed")
        self.assertLess(elapsed, 8)
        self.assertEqual(failed, {"long0", "long1", "long2"})
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)

    def test_restarted_worker_fails_or_answers_golden_never_wrong(self):
        g = sp.golden()
        cases = g["cases"][:4]
        for i, case in enumerate(cases):  # every prompt now sits in the front's prefix cache
            result = sp.zmq_client.generate(self.sock, sp.golden_request(case, g["max_new_tokens"], f"first{i}"))
            sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
        self.worker.send_signal(signal.SIGKILL)
        self.worker.communicate()
        self.worker = sp.start(MOE_SERVE, "--role", "worker", *self.links)
        golden_after_restart, failed = 0, 0
        for attempt in range(12):
            case = cases[attempt % len(cases)]
            self.sock.send(msgpack.packb(sp.golden_request(case, g["max_new_tokens"], f"after{attempt}")))
            reply = sp.wait_for_reply(self, self.sock, 20)
            if "error" in reply:  # the request met the restart: it fails, it is never answered wrongly
                self.assertIn("worker", reply["error"]["message"])
                failed += 1
                time.sleep(0.3)
                continue
            experts = sp.zmq_client.routed_experts(reply["meta_info"])
            sp.expect_golden(self, case, reply["output_ids"], experts, g["max_new_tokens"])
            golden_after_restart += 1
        print(f"after the worker restart: {failed} request(s) failed, {golden_after_restart} golden")
        self.assertGreaterEqual(golden_after_restart, 8)
        _, log = sp.terminate(self.server)
        self.assertIn("restarted", log)

    def test_a_worker_with_other_settings_is_refused_naming_the_setting(self):
        self.expect_refused(["--enable-return-router-weights"], "--enable-return-router-weights")
        # A STANDALONE draft the front does not draft with.
        self.expect_refused(["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path",
                             os.path.join(sp.DATA, "mixtral-tiny")], "--speculative-draft-model-path")
        _, log = sp.terminate(self.server)
        self.assertIn("refusing model worker", log)

    def expect_refused(self, worker_flags, named):
        """A worker restarted with `worker_flags` is refused: requests fail with 503 naming `named`."""
        self.worker.send_signal(signal.SIGKILL)
        self.worker.communicate()
        self.worker = sp.start(MOE_SERVE, "--role", "worker", *self.links, *worker_flags)
        g = sp.golden()
        deadline = sp.now() + 20
        while True:  # until the front has heard from the new worker
            self.sock.send(msgpack.packb(sp.golden_request(g["cases"][0], 4, f"refused{int(sp.now() * 1000)}")))
            reply = sp.wait_for_reply(self, self.sock, 20)
            self.assertIn("error", reply, "a worker with other settings was given work")
            if ("refused" in reply["error"]["message"] and named in reply["error"]["message"]) or sp.now() > deadline:
                break
            time.sleep(0.3)
        self.assertIn(named, reply["error"]["message"])
        self.assertEqual(reply["error"]["code"], 503)


if __name__ == "__main__":
    unittest.main()
