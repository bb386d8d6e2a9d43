"""/pause_generation and /continue_generation (SGLang's) against a real moe-serve, under 32 concurrent
streams, each operation over HTTP and over ZeroMQ:
- retract: generation stops, the running requests' KV goes back (after /flush_cache nothing is held),
  and after continue every request ends with the output ids and routing rows of an unpaused run
  (greedy and seeded sampling alike);
- in_place: generation stops with the requests' KV kept, and resumes to the same replies;
- abort: every stream ends with finish reason abort;
in every mode a request sent while paused queues (as SGLang's tokenizer manager holds it) and is
answered after continue.
Usage: pause_generation_test.py PATH/TO/moe-serve"""

import msgpack
import numpy as np
import zmq

import http_harness as h
import serve_process as sp

STREAMS = 32
MAX_NEW_TOKENS = 96


def stream_body(case, i):
    """Request i: a golden prompt, greedy for even i and seeded sampling for odd i, with its routing."""
    sampling = {"max_new_tokens": MAX_NEW_TOKENS, "ignore_eos": True}
    sampling.update({"temperature": 0} if i % 2 == 0 else {"temperature": 0.9, "seed": 1000 + i})
    return {"input_ids": case["prompt_ids"] + [i + 10], "sampling_params": sampling, "return_routed_experts": True,
            "stream": True}


def answer_of(final):
    """(output ids, routing rows) of a reply or of a stream's last event."""
    return final["output_ids"], h.decode_routed_experts(final["meta_info"]).tolist()


class PauseGeneration(h.ServerTest):
    zmq_port = sp.free_port()
    extra_flags = ("--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cases = cls.golden["cases"]
        cls.bodies = [stream_body(cases[i % len(cases)], i) for i in range(STREAMS)]
        # The unpaused run: every request alone, unstreamed.
        cls.expected = []
        for body in cls.bodies:
            reply = cls.server.post("/generate", dict(body, stream=False))
            reply.raise_for_status()
            cls.expected.append(answer_of(reply.json()))

    def control(self, op, over_zmq, **fields):
        """pause_generation or continue_generation over HTTP or ZeroMQ; the answer's message."""
        if not over_zmq:
            reply = self.server.post("/" + op, fields)
            self.assertEqual(reply.status_code, 200, reply.text)
            self.assertEqual(reply.json()["status"], "ok")
            return reply.json()["message"]
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://127.0.0.1:{self.zmq_port}")
        try:
            sock.send(msgpack.packb(dict(fields, op=op, rid="op-1")))
            answer = sp.wait_for_reply(self, sock, 30)
        finally:
            sock.close()
        self.assertEqual((answer["status"], answer["meta_info"]["id"]), ("ok", "op-1"), answer)
        return answer["message"]

    def start_streams(self):
        streams = [h.StreamReader(self.server.url, body) for body in self.bodies]
        for stream in streams:
            self.assertTrue(stream.started.wait(120), "a stream never started")
        return streams

    def resume_and_check(self, streams, queued, over_zmq):
        thread, done = queued
        self.control("continue_generation", over_zmq)
        for i, stream in enumerate(streams):
            self.assertTrue(stream.join(120), f"stream {i} did not end after continue")
            final = stream.events[-1]
            self.assertEqual(final["meta_info"]["finish_reason"]["type"], "length")
            ids, rows = answer_of(final)
            self.assertEqual(ids, self.expected[i][0], f"stream {i}: output ids differ from the unpaused run")
            self.assertTrue(np.array_equal(rows, self.expected[i][1]), f"stream {i}: routing differs")
        thread.join(60)
        self.assertEqual(done["reply"].status_code, 200)
        self.assertEqual(answer_of(done["reply"].json()), self.expected[0])

    def check_retract(self, over_zmq):
        streams = self.start_streams()
        self.control("pause_generation", over_zmq, mode="retract")
        self.assert_stopped(streams, "the pause")
        metrics = self.server.metrics()
        self.assertEqual(metrics["moe_num_running_requests"], 0)
        self.assertGreater(metrics["moe_num_waiting_requests"], 0)
        # Retracted KV is the prefix cache's: flushed, the pool holds nothing and every request is recomputed.
        self.assertEqual(self.server.post("/flush_cache", {}).status_code, 200)
        self.assertEqual(self.server.metrics()["moe_kv_slots_used"], 0)
        self.resume_and_check(streams, self.queued_request(self.bodies[0], "the pause"), over_zmq)

    def check_in_place(self, over_zmq):
        streams = self.start_streams()
        self.control("pause_generation", over_zmq, mode="in_place")
        self.assert_stopped(streams, "the pause")
        self.assertGreater(self.server.metrics()["moe_num_running_requests"], 0)  # state kept
        self.resume_and_check(streams, self.queued_request(self.bodies[0], "the pause"), over_zmq)

    def check_abort(self, over_zmq):
        streams = self.start_streams()
        message = self.control("pause_generation", over_zmq, mode="abort")
        self.assertIn("aborted", message)
        for i, stream in enumerate(streams):
            self.assertTrue(stream.join(60), f"stream {i} did not end at the pause")
            reason = stream.events[-1]["meta_info"]["finish_reason"]["type"]
            self.assertIn(reason, ("abort", "length"), f"stream {i}")  # a stream may have ended just before
        self.assertTrue(any(s.events[-1]["meta_info"]["finish_reason"]["type"] == "abort" for s in streams))
        thread, done = self.queued_request(self.bodies[0], "the pause")
        self.control("continue_generation", over_zmq)
        thread.join(60)
        self.assertEqual(answer_of(done["reply"].json()), self.expected[0])

    def test_retract_over_http(self):
        self.check_retract(over_zmq=False)

    def test_retract_over_zmq(self):
        self.check_retract(over_zmq=True)

    def test_in_place_over_http(self):
        self.check_in_place(over_zmq=False)

    def test_in_place_over_zmq(self):
        self.check_in_place(over_zmq=True)

    def test_abort_over_http(self):
        self.check_abort(over_zmq=False)

    def test_abort_over_zmq(self):
        self.check_abort(over_zmq=True)

    def test_mode_is_checked(self):
        reply = self.server.post("/pause_generation", {"mode": "sideways"})
        self.assertEqual(reply.status_code, 400)
        self.assertIn("mode", reply.text)
        self.assertIn("retract", reply.text)
        sock = sp.connect(self.zmq_port)
        self.addCleanup(sock.close)
        sock.send(msgpack.packb({"op": "pause_generation", "mode": 3}))
        self.assertEqual(sp.wait_for_reply(self, sock, 30)["error"]["code"], 400)

    def test_empty_body_pauses_in_abort_mode(self):
        # SGLang's older clients post no body at all; the default mode is abort, as SGLang's.
        reply = h.requests.post(self.server.url + "/pause_generation", timeout=30)
        self.assertEqual(reply.status_code, 200, reply.text)
        self.control("continue_generation", False)
        reply = self.server.post("/generate", dict(self.bodies[0], stream=False))
        self.assertEqual(answer_of(reply.json()), self.expected[0])


if __name__ == "__main__":
    h.run_tests()
