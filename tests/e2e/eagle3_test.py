"""moe-serve with --speculative-algorithm EAGLE3 on the trained code model of tests/data (code-moe) with a
random EAGLE-3 head that moe-make-checkpoint writes for it in SGLang's layout (a draft vocabulary of
1,024 ids mapped by d2t), served with --skip-tokenizer-init: greedy output_ids and routed_experts
equal a server's without speculation, batched and alone; the head has no routing, so
return_draft_routed_experts is refused with 400; a head whose sizes do not fit the target, a missing
head path and EAGLE3 on --device cuda stop the start naming what is wrong.
Usage: eagle3_test.py PATH/TO/moe-serve PATH/TO/moe-make-checkpoint"""
import base64
import json
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
TARGET = os.path.join(sp.DATA, "code-moe")
TREE = ["--speculative-num-steps", "3", "--speculative-eagle-topk", "2", "--speculative-num-draft-tokens", "6"]
PROMPTS = [[11, 402, 93, 1500, 7, 7, 3021, 64, 808, 12], [11, 402, 93, 1500, 7, 19], [5], [4000, 3, 3, 3, 250, 17]]


def rows(meta):
    raw = base64.b64decode(meta["routed_experts"])
    return np.frombuffer(raw, dtype=meta["routed_experts_dtype"]).reshape(meta["routed_experts_shape"])


def start(*flags):
    return sp.start_ids_http(MOE_SERVE, TARGET, *flags)


def start_fails(*flags):
    """moe-serve's exit code and output when it is expected to stop at start."""
    return sp.start_ids_fails(MOE_SERVE, TARGET, *flags)


def generate(url, prompts, **fields):
    body = dict({"input_ids": prompts, "return_routed_experts": True,
                 "sampling_params": {"temperature": 0, "max_new_tokens": 16, "ignore_eos": True}}, **fields)
    return requests.post(url + "/generate", json=body, timeout=120)


class Eagle3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="moe_eagle3_e2e_")
        cls.head = os.path.join(cls.dir, "head")
        subprocess.run([MAKE_CHECKPOINT, "--eagle3-head-for", TARGET, "--draft-vocab-size", "1024", "--out", cls.head,
                        "--seed", "5"], check=True, capture_output=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_ids_and_rows_equal_plain_decoding(self):
        plain, url = start()
        try:
            expected = generate(url, PROMPTS).json()
        finally:
            self.assertEqual(sp.terminate(plain)[0], 0)
        spec, url = start("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", self.head, *TREE)
        try:
            batched = generate(url, PROMPTS).json()
            alone = [generate(url, p).json() for p in PROMPTS]
            for i, (want, got, one) in enumerate(zip(expected, batched, alone)):
                self.assertEqual(got["output_ids"], want["output_ids"], i)
                self.assertEqual(one["output_ids"], want["output_ids"], i)
                np.testing.assert_array_equal(rows(got["meta_info"]), rows(want["meta_info"]))
                np.testing.assert_array_equal(rows(one["meta_info"]), rows(want["meta_info"]))
            refused = generate(url, PROMPTS[0], return_draft_routed_experts=True)
            self.assertEqual(refused.status_code, 400, refused.text)
            self.assertIn("return_draft_routed_experts", refused.text)
            metrics = requests.get(url + "/metrics", timeout=10).text
            self.assertRegex(metrics, r"moe_spec_verify_passes_total\{[^}]*\} [1-9]")
        finally:
            self.assertEqual(sp.terminate(spec)[0], 0)

    def test_refusals_at_start_name_what_is_wrong(self):
        wide = os.path.join(self.dir, "wide")
        shutil.copytree(self.head, wide)
        with open(os.path.join(wide, "config.json")) as f:
            config = json.load(f)
        config["target_hidden_size"] = 64
        with open(os.path.join(wide, "config.json"), "w") as f:
            json.dump(config, f)
        code, out = start_fails("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", wide)
        self.assertNotEqual(code, 0)
        self.assertIn("--speculative-draft-model-path", out)
        self.assertIn("target_hidden_size", out)
        code, out = start_fails("--speculative-algorithm", "EAGLE3")
        self.assertNotEqual(code, 0)
        self.assertIn("EAGLE3 needs --speculative-draft-model-path", out)
        code, out = start_fails("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", self.head,
                                "--device", "cuda")
        self.assertNotEqual(code, 0)
        self.assertIn("--device cpu", out)


if __name__ == "__main__":
    unittest.main()
