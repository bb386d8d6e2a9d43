"""Weights between training steps, as an RL loop uses moe-serve: serve checkpoint A (the fixture, whose
goldens transformers made), then POST /update_weights_from_disk. An update to a broken directory fails
with SGLang's {"success": false, "message"} and a 400, and A keeps serving under its weight version. An
update to checkpoint B (random weights of A's shapes, written by moe-make-checkpoint) succeeds; from
then on every reply equals what a fresh server on B answers (ids and routing), carries B's
weight_version (meta_info, OpenAI's metadata, /get_model_info), and uses no prefix-cache KV of A
(cached_tokens 0 for prompts A had cached). A request streaming during the update ends with finish
reason abort and A's version.
Usage: weight_update_test.py PATH/TO/moe-serve PATH/TO/moe-make-checkpoint"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import requests

import http_harness as hh

MAKE_CHECKPOINT = "moe-make-checkpoint"


def write_checkpoint(out_dir, seed):
    """Random weights of the fixture's shapes (bf16, as the fixture)."""
    subprocess.run([MAKE_CHECKPOINT, "--config", os.path.join(hh.sp.MODEL, "config.json"), "--out", out_dir,
                    "--seed", str(seed)], check=True, capture_output=True, timeout=300)


class WeightUpdate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.golden = hh.sp.golden()
        cls.cases = cls.golden["cases"][:3]
        cls.tmp = tempfile.mkdtemp(prefix="moe-weights-")
        cls.checkpoint_b = os.path.join(cls.tmp, "b")
        write_checkpoint(cls.checkpoint_b, seed=5)
        cls.broken = os.path.join(cls.tmp, "broken")  # config.json without any weights
        os.makedirs(cls.broken)
        shutil.copy(os.path.join(hh.sp.MODEL, "config.json"), cls.broken)
        # What a fresh server on B answers: the reference for the updated server.
        fresh = hh.Server(extra_flags=("--weight-version", "B"), model_path=cls.checkpoint_b)
        try:
            cls.fresh_b = [cls.generate(fresh, case) for case in cls.cases]
        finally:
            code, log = fresh.stop()
            assert code == 0, log

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def generate(cls, server, case):
        return hh.golden_reply(server, case, cls.golden["max_new_tokens"])

    def update(self, server, model_path, version):
        return server.post("/update_weights_from_disk", {"model_path": model_path, "weight_version": version},
                           timeout=300)

    def expect_a(self, server):
        for case in self.cases:
            reply = self.generate(server, case)
            hh.expect_golden(self, case, reply["output_ids"], hh.decode_routed_experts(reply["meta_info"]),
                             self.golden["max_new_tokens"])
            self.assertEqual(reply["meta_info"]["weight_version"], "A")

    def test_update_between_training_steps(self):
        server = hh.Server(extra_flags=("--weight-version", "A"))
        try:
            self.expect_a(server)  # A's KV of these prompts is now in the prefix cache

            for broken in (self.broken, os.path.join(self.tmp, "missing")):
                with self.subTest(broken=broken):
                    failed = self.update(server, broken, "never")
                    self.assertEqual(failed.status_code, 400, failed.text)
                    self.assertFalse(failed.json()["success"])
                    self.assertIn(broken, failed.json()["message"])
                    self.expect_a(server)
            self.assertEqual(requests.get(server.url + "/get_model_info", timeout=10).json()["weight_version"], "A")

            # A request streaming while the update happens: ended, with A's version on its reply.
            stream = {"text": "Once upon a time", "stream": True,
                      "sampling_params": {"max_new_tokens": 6000, "ignore_eos": True, "temperature": 0}}
            reader = hh.StreamReader(server.url, stream)
            self.assertTrue(reader.started.wait(60), "the streamed request never started")
            updated = self.update(server, self.checkpoint_b, "B")
            self.assertTrue(reader.join(120))
            self.assertEqual(updated.status_code, 200, updated.text)
            self.assertEqual(updated.json()["success"], True)
            self.assertEqual(updated.json()["weight_version"], "B")
            last = reader.events[-1]["meta_info"]
            self.assertEqual(last["finish_reason"]["type"], "abort", last)
            self.assertIn("updated to version 'B'", last["finish_reason"]["message"])
            self.assertEqual(last["weight_version"], "A")
            self.assertLess(last["completion_tokens"], 6000)

            for case, expected in zip(self.cases, self.fresh_b):
                reply = self.generate(server, case)
                hh.expect_same_reply(self, reply, expected)
                self.assertEqual(reply["meta_info"]["weight_version"], "B")
                self.assertEqual(reply["meta_info"]["cached_tokens"], 0)  # A's cached KV was flushed
            self.assertNotEqual(self.fresh_b[0]["output_ids"], self.cases[0]["output_ids"])  # B is not A

            completion = server.post("/v1/completions", {"model": hh.MODEL_NAME, "prompt": self.cases[0]["prompt_ids"],
                                                         "max_tokens": 2})
            self.assertEqual(completion.json()["metadata"]["weight_version"], "B")
            info = requests.get(server.url + "/get_model_info", timeout=10).json()
            self.assertEqual((info["model_path"], info["weight_version"]), (self.checkpoint_b, "B"))
        finally:
            code, log = server.stop()
        self.assertEqual(code, 0, log)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        MAKE_CHECKPOINT = sys.argv.pop(2)
    hh.run_tests()
