"""moe-serve with --speculative-algorithm NEXTN on DeepSeek-V3- and GLM-4.5-shaped checkpoints that
moe-make-checkpoint writes from the fixtures' configs (num_nextn_predict_layers 1: random weights for
the next-token-prediction layer too), served with --skip-tokenizer-init: greedy output_ids and the
target's routed_experts equal a server's without speculation, batched and alone; with
return_draft_routed_experts each reply also carries the layer's own rows (one MoE layer, one row per
target row, the first prompt token's empty). The fixture as transformers saved it (no MTP tensors) and
NEXTN on --device cuda stop the start naming what is missing; a draft path beside NEXTN names its flag.
Usage: nextn_test.py PATH/TO/moe-serve PATH/TO/moe-make-checkpoint"""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import requests

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
MAKE_CHECKPOINT = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_MAKE_CHECKPOINT", "moe-make-checkpoint")
FIXTURES = ["glm4-moe-tiny", "deepseek-v3-tiny"]
NEXTN = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "2",
         "--speculative-num-draft-tokens", "6"]
PROMPTS = [[11, 402, 93, 1500, 7, 7, 3021, 64, 808, 12], [11, 402, 93, 1500, 7, 19], [5], [4000, 3, 3, 3, 250, 17]]


def rows(meta, name):
    raw = base64.b64decode(meta[name])
    return np.frombuffer(raw, dtype=meta[name + "_dtype"]).reshape(meta[name + "_shape"])


def start(model, *flags):
    return sp.start_ids_http(MOE_SERVE, model, *flags)


def start_fails(model, *flags):
    """moe-serve's exit code and output when it is expected to stop at start."""
    return sp.start_ids_fails(MOE_SERVE, model, *flags)


def generate(url, prompts, **fields):
    body = dict({"input_ids": prompts, "return_routed_experts": True,
                 "sampling_params": {"temperature": 0, "max_new_tokens": 16, "ignore_eos": True}}, **fields)
    reply = requests.post(url + "/generate", json=body, timeout=120)
    reply.raise_for_status()
    return reply.json()


class Nextn(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="moe_nextn_e2e_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def checkpoint(self, fixture):
        out = os.path.join(self.dir, fixture)
        if not os.path.exists(out):
            subprocess.run([MAKE_CHECKPOINT, "--config", os.path.join(sp.DATA, fixture, "config.json"), "--out", out,
                            "--seed", "3"], check=True, capture_output=True, timeout=120)
        return out

    def test_ids_and_rows_equal_plain_decoding(self):
        for fixture in FIXTURES:
            with self.subTest(fixture=fixture):
                model = self.checkpoint(fixture)
                plain, url = start(model)
                try:
                    expected = generate(url, PROMPTS)
                finally:
                    self.assertEqual(sp.terminate(plain)[0], 0)
                spec, url = start(model, *NEXTN)
                try:
                    batched = generate(url, PROMPTS, return_draft_routed_experts=True)
                    alone = [generate(url, p) for p in PROMPTS]
                    for i, (want, got, one) in enumerate(zip(expected, batched, alone)):
                        self.assertEqual(got["output_ids"], want["output_ids"], i)
                        self.assertEqual(one["output_ids"], want["output_ids"], i)
                        target = rows(want["meta_info"], "routed_experts")
                        np.testing.assert_array_equal(rows(got["meta_info"], "routed_experts"), target)
                        np.testing.assert_array_equal(rows(one["meta_info"], "routed_experts"), target)
                        self.assertNotIn("draft_routed_experts", one["meta_info"])
                        draft = rows(got["meta_info"], "draft_routed_experts")
                        self.assertEqual(list(draft.shape), [target.shape[0], 1, target.shape[2]])
                        self.assertTrue((draft[0] == -1).all(), "the first prompt token has no row of the layer")
                        self.assertTrue((draft[1:] >= 0).all())
                    metrics = requests.get(url + "/metrics", timeout=10).text
                    self.assertRegex(metrics, r"moe_spec_verify_passes_total\{[^}]*\} [1-9]")
                finally:
                    self.assertEqual(sp.terminate(spec)[0], 0)

    def test_refusals_at_start_name_what_is_missing(self):
        code, out = start_fails(os.path.join(sp.DATA, "deepseek-v3-tiny"), *NEXTN)
        self.assertNotEqual(code, 0)
        self.assertIn("model.layers.4.eh_proj.weight", out)
        model = self.checkpoint("glm4-moe-tiny")
        code, out = start_fails(model, *NEXTN, "--device", "cuda")
        self.assertNotEqual(code, 0)
        self.assertIn("NEXTN", out)
        self.assertIn("--device cpu", out)
        code, out = start_fails(model, *NEXTN, "--speculative-draft-model-path", model)
        self.assertNotEqual(code, 0)
        self.assertIn("--speculative-draft-model-path", out)


if __name__ == "__main__":
    unittest.main()
