"""bench/tools/gptq_quantize.py on the trained code model (tests/data/code-moe), its checkpoints served
by moe-serve: calibrated on some of this repository's Python sources (tokenized by the server) and
scored on others, with prompt logprobs.

- The GPTQ tensors, decoded here from the table in docs/quantization.md: every zero point is the
  symmetric one, RTN's weights lie within half a step of the float weights, GPTQ's within a bounded
  relative error of them.
- RTN with float32 scales is what the engine's --quantization int4 --quantization-group-size 32
  computes at load: the same prompt logprobs.
- GPTQ's held-out loss is below RTN's and near the float model's.
Usage: gptq_quantize_test.py PATH/TO/moe-serve"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

import http_harness as h
import serve_process as sp

MODEL = os.path.join(sp.DATA, "code-moe")
TOOLS = os.path.join(sp.REPO, "bench", "tools")
sys.path.insert(0, TOOLS)
from safetensors_numpy import open_checkpoint, to_f32  # noqa: E402  (reads the written files as stored)

GROUP, SEQ_LEN, CALIBRATION_SEQS, EVAL_CHUNKS = 32, 256, 16, 8


def sources(pattern):
    text = ""
    for path in sorted(glob.glob(os.path.join(sp.REPO, pattern))):
        with open(path, encoding="utf-8") as f:
            text += f.read().strip() + "\n"
    return text


def chunk_logprobs(server, ids):
    reply = server.post("/generate", {"input_ids": ids, "return_logprob": True, "logprob_start_len": 0,
                                      "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
    reply.raise_for_status()
    return np.array([row[0] for row in reply.json()["meta_info"]["input_token_logprobs"][1:]])


def unpack(words, bits, axis):
    """int32 words -> the unsigned b-bit fields along axis, the first in the lowest bits."""
    per = 32 // bits
    w = np.moveaxis(words.view(np.uint32), axis, -1)
    fields = (w[..., None] >> (bits * np.arange(per, dtype=np.uint32))) & ((1 << bits) - 1)
    return np.moveaxis(fields.reshape(*w.shape[:-1], -1), -1, axis).astype(np.int64)


class GptqQuantizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="gptq-test-")
        server = h.Server(model_path=MODEL, tokenizer_path=None)
        try:
            calibration = server.post("/tokenize", {"text": sources("tests/e2e/*.py")}).json()["tokens"]
            held_out = server.post("/tokenize", {"text": sources("examples/*.py")}).json()["tokens"]
            cls.chunks = [held_out[i * SEQ_LEN:(i + 1) * SEQ_LEN] for i in range(EVAL_CHUNKS)]
            assert len(cls.chunks[-1]) == SEQ_LEN, "examples/*.py has too few tokens for the held-out chunks"
            cls.float_nll = cls.mean_nll(server)
        finally:
            server.stop()
        ids = os.path.join(cls.dir.name, "calibration.ids")
        np.array(calibration, dtype=np.int32).tofile(ids)
        cls.out = {}
        for method, flags in (("gptq", ["--calibration-ids", ids, "--calibration-seqs", str(CALIBRATION_SEQS),
                                        "--seq-len", str(SEQ_LEN)]),
                              ("rtn", ["--scale-dtype", "F32"])):
            cls.out[method] = os.path.join(cls.dir.name, method)
            subprocess.run(["/usr/bin/python3", os.path.join(TOOLS, "gptq_quantize.py"), "--model-path", MODEL,
                            "--out", cls.out[method], "--method", method, "--group-size", str(GROUP), *flags],
                           check=True, capture_output=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    @classmethod
    def mean_nll(cls, server):
        return -np.mean(np.concatenate([chunk_logprobs(server, chunk) for chunk in cls.chunks]))

    def dequantized(self, method):
        """module -> (float weights, dequantized weights, scales [groups, out]) of every quantized module."""
        float_owner = open_checkpoint(Path(MODEL))
        owner = open_checkpoint(Path(self.out[method]))
        config = json.loads((Path(self.out[method]) / "config.json").read_text())["quantization_config"]
        self.assertEqual((config["bits"], config["group_size"], config["sym"], config["desc_act"]), (4, GROUP, True, False))
        out = {}
        for name in owner:
            if not name.endswith(".qweight"):
                continue
            module = name[:-len(".qweight")]
            q = unpack(owner[name].read(name)[1], 4, 0)                       # [in, out]
            zeros = unpack(owner[module + ".qzeros"].read(module + ".qzeros")[1], 4, 1)  # [groups, out]
            self.assertTrue((zeros == 7).all(), module)                     # zero point 8, stored minus one
            scales = to_f32(*owner[module + ".scales"].read(module + ".scales"))
            groups = np.arange(q.shape[0]) // GROUP
            weights = (scales[groups] * (q - 8)).T                          # [out, in]
            source = "model.embed_tokens.weight" if module == "lm_head" else module + ".weight"
            out[module] = (to_f32(*float_owner[source].read(source)), weights, scales)
        self.assertEqual(len(out), 6 * (4 + 16 * 3) + 1)  # q/k/v/o and 16 experts' 3 a layer, lm_head
        return out

    def test_rtn_weights_lie_within_half_a_step(self):
        for module, (w, q, scales) in self.dequantized("rtn").items():
            step = np.repeat(scales.T, GROUP, axis=1)[:, :w.shape[1]]
            self.assertTrue((np.abs(w - q) <= step / 2 * (1 + 1e-6)).all(), module)

    def test_gptq_weights_stay_near_the_float_weights(self):
        errors = [np.linalg.norm(w - q) / np.linalg.norm(w) for w, q, _ in self.dequantized("gptq").values()]
        rtn = [np.linalg.norm(w - q) / np.linalg.norm(w) for w, q, _ in self.dequantized("rtn").values()]
        # GPTQ moves weights further than rounding does (it trades weight error for output error), but not far.
        self.assertLess(max(errors), 0.25)
        self.assertLess(np.mean(errors), 1.5 * np.mean(rtn))

    def test_rtn_checkpoint_computes_what_int4_at_load_computes(self):
        at_load = h.serve_for(self, MODEL, "--quantization", "int4", "--quantization-group-size", str(GROUP))
        rtn = h.serve_for(self, self.out["rtn"])
        for chunk in self.chunks[:2]:
            np.testing.assert_allclose(chunk_logprobs(rtn, chunk), chunk_logprobs(at_load, chunk), atol=1e-5)

    def test_gptq_loss_is_below_rtn_and_near_float(self):
        gptq, rtn = self.mean_nll(h.serve_for(self, self.out["gptq"])), self.mean_nll(h.serve_for(self, self.out["rtn"]))
        print(f"held-out nll: float {self.float_nll:.4f}, gptq {gptq:.4f}, rtn {rtn:.4f}")
        self.assertLess(gptq, rtn)
        self.assertLess(gptq - self.float_nll, 0.1)


if __name__ == "__main__":
    h.run_tests()
