"""/release_memory_occupation and /resume_memory_occupation (SGLang's) against a real moe-serve on the CPU,
over HTTP and over ZeroMQ:
- releasing the KV cache takes the pool's touched pages out of the process's resident set (VmRSS drops
  by at least most of the KV the requests wrote) and empties the prefix cache; releasing the weights
  frees the model (VmRSS drops by at least half the checkpoint's bytes);
- while released nothing is generated: a request sent meanwhile waits and is answered after the resume;
  requests in flight at a release stop and, after the resume, end with the output ids and routing rows
  of a run that was never released (greedy and seeded sampling alike);
- after the resume replies equal those before the release (the weights of the last load come back);
- bad tags and unknown fields are refused naming them; a load while the weights are released is
  refused; an admin key guards both endpoints.
Usage: memory_occupation_test.py PATH/TO/moe-serve"""
import os
import random
import time

import msgpack

import http_harness as h
import serve_process as sp

POOL_TOKENS = 32768
KV_BYTES_PER_TOKEN = 4 * 2 * 2 * 16 * 4  # layers x (K, V) x KV heads x head_dim x float32 (the tiny model)
FILL_PROMPTS = 24
FILL_PROMPT_TOKENS = 1000
STREAMS = 16
MAX_NEW_TOKENS = 64
ADMIN_KEY = "admin-secret"


def checkpoint_bytes():
    return sum(os.path.getsize(os.path.join(sp.MODEL, f)) for f in os.listdir(sp.MODEL) if f.endswith(".safetensors"))


def answer_of(final):
    return final["output_ids"], h.decode_routed_experts(final["meta_info"]).tolist()


class MemoryOccupation(h.ServerTest):
    zmq_port = sp.free_port()
    extra_flags = ("--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}", "--max-total-tokens", str(POOL_TOKENS),
                   "--admin-api-key", ADMIN_KEY)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cases = cls.golden["cases"]
        cls.bodies = []
        for i in range(STREAMS):
            sampling = {"max_new_tokens": MAX_NEW_TOKENS, "ignore_eos": True}
            sampling.update({"temperature": 0} if i % 2 == 0 else {"temperature": 0.9, "seed": 500 + i})
            cls.bodies.append({"input_ids": cases[i % len(cases)]["prompt_ids"] + [i + 7], "sampling_params": sampling,
                               "return_routed_experts": True, "stream": True})
        cls.expected = [cls.generate(dict(body, stream=False)) for body in cls.bodies]

    @classmethod
    def generate(cls, body):
        reply = cls.server.post("/generate", body)
        reply.raise_for_status()
        return answer_of(reply.json())

    def change(self, op, over_zmq=False, body=None, status=200):
        """release_memory_occupation or resume_memory_occupation; the answer's message."""
        if not over_zmq:
            reply = self.server.post("/" + op, body if body is not None else {},
                                     headers={"Authorization": f"Bearer {ADMIN_KEY}"})
            self.assertEqual(reply.status_code, status, reply.text)
            return reply.json()["message"] if status == 200 else reply.json()
        sock = sp.connect(self.zmq_port)
        try:
            sock.send(msgpack.packb(dict(body or {}, op=op, rid="mem-1", admin_api_key=ADMIN_KEY)))
            answer = sp.wait_for_reply(self, sock, 60)
        finally:
            sock.close()
        self.assertTrue(answer["success"], answer)
        self.assertEqual(answer["meta_info"]["id"], "mem-1")
        return answer["message"]

    def fill_pool(self):
        """Distinct long prompts, so their KV stays in the prefix cache and touches most of the pool."""
        rng = random.Random(7)
        for _ in range(FILL_PROMPTS):
            ids = [rng.randrange(1000, 100000) for _ in range(FILL_PROMPT_TOKENS)]
            self.server.post("/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 1}}).raise_for_status()

    def test_release_gives_memory_back_and_resume_restores_replies(self):
        self.fill_pool()
        touched = FILL_PROMPTS * FILL_PROMPT_TOKENS * KV_BYTES_PER_TOKEN
        before = self.server.rss_bytes()
        self.assertIn("KV pool", self.change("release_memory_occupation", body={"tags": ["kv_cache"]}))
        after_kv = self.server.rss_bytes()
        self.assertGreater(before - after_kv, 0.8 * touched, f"RSS {before} -> {after_kv}")
        self.assertEqual(self.server.metrics()["moe_kv_slots_used"], 0)  # the prefix cache is empty
        self.assertIn("weights", self.change("release_memory_occupation", over_zmq=True, body={"tags": ["weights"]}))
        after_weights = self.server.rss_bytes()
        self.assertGreater(after_kv - after_weights, 0.5 * checkpoint_bytes(), f"RSS {after_kv} -> {after_weights}")
        queued = self.queued_request(self.bodies[0], "a release")
        # A load needs the weights back first.
        refused = self.server.post("/update_weights_from_disk", {"model_path": sp.MODEL},
                                   headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        self.assertEqual(refused.status_code, 400, refused.text)
        self.assertIn("resume_memory_occupation", refused.json()["message"])
        self.assertIn("resumed", self.change("resume_memory_occupation", over_zmq=True, body={"tags": ["weights"]}))
        time.sleep(0.5)
        self.assertNotIn("reply", queued[1], "generation went on with the KV cache still released")
        self.assertIn("KV pool", self.change("resume_memory_occupation"))
        thread, done = queued
        thread.join(60)
        self.assertEqual(answer_of(done["reply"].json()), self.expected[0])
        for body, expected in zip(self.bodies, self.expected):
            self.assertEqual(self.generate(dict(body, stream=False)), expected)

    def test_requests_in_flight_at_a_release_end_as_unreleased(self):
        for over_zmq in (False, True):
            streams = [h.StreamReader(self.server.url, body) for body in self.bodies]
            for stream in streams:
                self.assertTrue(stream.started.wait(120), "a stream never started")
            self.change("release_memory_occupation", over_zmq)  # both tags
            self.assert_stopped(streams, "a release")
            self.change("resume_memory_occupation", over_zmq)
            for i, stream in enumerate(streams):
                self.assertTrue(stream.join(120), f"stream {i} did not end after the resume")
                self.assertEqual(answer_of(stream.events[-1]), self.expected[i], f"stream {i} (zmq: {over_zmq})")

    def test_release_twice_and_resume_of_nothing_change_nothing(self):
        self.assertIn("released", self.change("release_memory_occupation", body={"tags": ["kv_cache", "cuda_graph"]}))
        self.assertIn("nothing to release", self.change("release_memory_occupation", body={"tags": ["kv_cache"]}))
        self.change("resume_memory_occupation", body={"tags": ["kv_cache"]})
        self.assertIn("nothing to resume", self.change("resume_memory_occupation"))
        self.assertEqual(self.generate(dict(self.bodies[0], stream=False)), self.expected[0])

    def test_bad_bodies_are_refused_naming_the_field(self):
        error = self.change("release_memory_occupation", body={"tags": ["weights", "gpu"]}, status=400)
        self.assertIn("tags[1]", str(error))
        self.assertIn("kv_cache", str(error))
        error = self.change("resume_memory_occupation", body={"tags": ["weights"], "colour": 1}, status=400)
        self.assertIn("colour", str(error))
        sock = sp.connect(self.zmq_port)
        self.addCleanup(sock.close)
        sock.send(msgpack.packb({"op": "release_memory_occupation", "tags": ["heap"], "admin_api_key": ADMIN_KEY}))
        self.assertEqual(sp.wait_for_reply(self, sock, 30)["error"]["code"], 400)
        # Nothing was released: the engine still serves.
        self.assertEqual(self.generate(dict(self.bodies[0], stream=False)), self.expected[0])

    def test_admin_key_is_needed(self):
        sock = sp.connect(self.zmq_port)
        self.addCleanup(sock.close)
        for op in ("release_memory_occupation", "resume_memory_occupation"):
            reply = self.server.post("/" + op, {})
            self.assertEqual(reply.status_code, 401, reply.text)
            sock.send(msgpack.packb({"op": op, "rid": "no-key"}))
            self.assertEqual(sp.wait_for_reply(self, sock, 30)["error"]["code"], 401)


if __name__ == "__main__":
    h.run_tests()
