"""The ZeroMQ operations of an RL loop against a real moe-serve: {"op": "abort"} ends a client's own
streaming request (its stream ends with finish reason abort) and refuses another client's;
{"op": "update_weights_from_disk"} fails for a broken directory (the version stays) and, reloading
the fixture under a new label, succeeds: later replies carry the new meta_info.weight_version and
still the golden ids.
Usage: zmq_rl_ops_test.py PATH/TO/moe-serve"""
import os
import sys
import unittest

import msgpack
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")


class RlOps(unittest.TestCase):
    def setUp(self):
        self.port = sp.free_port()
        self.server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint",
                               f"tcp://127.0.0.1:{self.port}", "--weight-version", "v1")
        self.golden = sp.golden()

    def tearDown(self):
        code, log = sp.terminate(self.server)
        self.assertEqual(code, 0, log)

    def client(self):
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://127.0.0.1:{self.port}")
        self.addCleanup(sock.close)
        return sock

    def ask(self, sock, request, timeout_s=120):
        sock.send(msgpack.packb(request))
        return sp.wait_for_reply(self, sock, timeout_s)

    def test_abort_ends_only_the_clients_own_request(self):
        mine, other = self.client(), self.client()
        mine.send(msgpack.packb({"rid": "long", "text": "Once upon a time", "stream": True,
                                 "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}}))
        first = sp.wait_for_reply(self, mine, 60)  # the request is live
        self.assertIsNone(first["meta_info"]["finish_reason"])
        refused = self.ask(other, {"op": "abort", "rid": "long"})
        self.assertEqual(refused, {"abort": {"rid": "long", "aborted": False}, "meta_info": {"id": "long"}})

        mine.send(msgpack.packb({"op": "abort", "rid": "long"}))
        acknowledged, last = None, None
        while acknowledged is None or last is None:
            reply = sp.wait_for_reply(self, mine, 60)
            if "abort" in reply:
                acknowledged = reply
            elif reply["meta_info"]["finish_reason"] is not None:
                last = reply
        self.assertTrue(acknowledged["abort"]["aborted"])
        self.assertEqual(last["meta_info"]["finish_reason"]["type"], "abort")
        self.assertLess(last["meta_info"]["completion_tokens"], 4000)
        self.assertEqual(self.ask(mine, {"op": "abort", "rid": "long"})["abort"]["aborted"], False)  # gone now

    def test_update_weights_from_disk(self):
        sock = self.client()
        case = self.golden["cases"][0]
        request = sp.golden_request(case, self.golden["max_new_tokens"], "g1")
        self.assertEqual(self.ask(sock, request)["meta_info"]["weight_version"], "v1")

        missing = os.path.join(sp.DATA, "no-such-checkpoint")
        failed = self.ask(sock, {"op": "update_weights_from_disk", "rid": "u1", "model_path": missing,
                                 "weight_version": "v2"}, 300)
        self.assertFalse(failed["success"])
        self.assertIn(missing, failed["message"])
        self.assertEqual((failed["weight_version"], failed["meta_info"]["id"]), ("v1", "u1"))

        updated = self.ask(sock, {"op": "update_weights_from_disk", "rid": "u2", "model_path": sp.MODEL,
                                  "weight_version": "v2"}, 300)
        self.assertTrue(updated["success"], updated)
        self.assertEqual(updated["weight_version"], "v2")
        reply = self.ask(sock, dict(request, rid="g2"))
        self.assertEqual(reply["meta_info"]["weight_version"], "v2")
        self.assertEqual(reply["meta_info"]["cached_tokens"], 0)  # the cache was flushed with the old weights
        sp.expect_golden(self, case, reply["output_ids"], sp.zmq_client.routed_experts(reply["meta_info"]).tolist(),
                         self.golden["max_new_tokens"])

        bad = self.ask(sock, {"op": "update_weights_from_disk", "rid": "u3"})
        self.assertEqual(bad["error"]["code"], 400)
        self.assertIn("model_path", bad["error"]["message"])


if __name__ == "__main__":
    unittest.main()
