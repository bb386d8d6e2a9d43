#!/usr/bin/python3
"""Quantizes a Qwen3-MoE checkpoint to a symmetric GPTQ checkpoint that moe-serve loads
(docs/quantization.md, "The GPTQ tensors the loader reads"), with numpy only.

--method gptq runs GPTQ (Frantar et al., "GPTQ: Accurate Post-Training Quantization for Generative
Pre-trained Transformers", 2022, Algorithm 1) on calibration tokens; --method rtn rounds each weight
to the nearest step of its group's scale (no calibration): the control that shows what GPTQ gains.

The layer inputs GPTQ needs come from a numpy forward of the model written here (the engine has no
hook that hands activations out). Decoder layers are quantized in order, each from the hidden states
the already-quantized layers before it produce, and within a layer sequentially: q/k/v (one Hessian:
they share their input), then o_proj on the attention output of the quantized q/k/v, then each
expert's gate/up on the tokens the router sends it, then its down_proj on the quantized gate/up's
product; last lm_head on the final norm's output. For each Linear W [out, in] with inputs X:

  H = 2/n Σ x xᵀ, plus --damp × mean(diag H) on the diagonal (a column no input reaches is zeroed);
  U = the upper Cholesky factor of H⁻¹;
  columns in blocks of 128 (the lazy batch): column c is rounded with its group's scale, and the
  rounding error over U[c, c] is spread over the block's later columns through row c of U; after a
  block, its errors update every later column at once (Err · U[block, later]).

A group's scale is max |w| / (2^(bits-1) - 1) over the group's columns as they are when its first
column is reached (the engine's --quantization int4 uses the same rule on the float weights, so
--method rtn --scale-dtype F32 writes exactly what the engine quantizes at load). Values are clamped
to [-2^(bits-1), 2^(bits-1) - 1] and stored with the symmetric zero point 2^(bits-1) ("gptq" format:
zero - 1 in qzeros). Routers, norms and embeddings stay as they are; a tied lm_head is written as an
untied quantized lm_head (as the engine's --quantization quantizes a copy of a tied embedding), or
left as it is with --float-lm-head.

usage: gptq_quantize.py --model-path DIR --out DIR [--method gptq|rtn] [--bits 4|8] [--group-size 32]
         [--calibration-ids IDS --calibration-seqs 128 --seq-len 512] [--damp 0.01] [--scale-dtype F16|F32]
         [--float-lm-head]
  IDS: int32 token ids (bench/tools/perplexity.py tokenize writes them), cut into --calibration-seqs
  windows of --seq-len tokens. Prints one JSON line per quantized kind of matrix: the layer-output
  error tr((W - Q) H (W - Q)ᵀ) of GPTQ's weights beside RTN's, summed (gptq only).
"""
import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from safetensors_numpy import open_checkpoint, to_f32, write_safetensors

BLOCK = 128


# ---------------------------------------------------------------- quantization of one matrix

class Grid:
    """Symmetric b-bit integers with a scale per row and group of columns."""

    def __init__(self, bits, group, scale_dtype):
        self.bits, self.group = bits, group
        self.top, self.bottom = 2 ** (bits - 1) - 1, -(2 ** (bits - 1))
        self.scale_dtype = np.float16 if scale_dtype == "F16" else np.float32

    def scales(self, columns):
        """The scale of each row of a group's columns (float32 [rows]), in the stored precision."""
        largest = np.abs(columns.astype(np.float32)).max(axis=1)
        return (largest / np.float32(self.top)).astype(self.scale_dtype).astype(np.float32)

    def round(self, w, scale):
        """Integers of float32 column(s) w with per-row scale (0 where the scale is 0)."""
        scale = scale if w.ndim == 1 else scale[:, None]
        q = np.divide(w.astype(np.float32), scale, out=np.zeros(w.shape, np.float32), where=scale != 0)
        return np.minimum(np.maximum(np.rint(q), self.bottom), self.top).astype(np.int32)


def rtn(w, grid):
    """(integers [out, in], scales [out, groups]) by rounding each weight to its group's grid."""
    cols = w.shape[1]
    q = np.empty(w.shape, np.int32)
    scales = []
    for g0 in range(0, cols, grid.group):
        s = grid.scales(w[:, g0:g0 + grid.group])
        q[:, g0:g0 + grid.group] = grid.round(w[:, g0:g0 + grid.group], s)
        scales.append(s)
    return q, np.stack(scales, axis=1)


def gptq(w, hessian, grid, damp):
    """GPTQ's integers and scales of w [out, in] (float32) for the input Hessian [in, in]."""
    rows, cols = w.shape
    w = w.astype(np.float64)
    h = hessian.copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h[np.diag_indices(cols)] += damp * np.mean(np.diag(h))
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper: H⁻¹ = Uᵀ U
    q = np.zeros((rows, cols), np.int32)
    scales = np.zeros((rows, (cols + grid.group - 1) // grid.group), np.float32)
    for b0 in range(0, cols, BLOCK):
        b1 = min(cols, b0 + BLOCK)
        block, errors = w[:, b0:b1].copy(), np.zeros((rows, b1 - b0))
        for i in range(b1 - b0):
            c = b0 + i
            if c % grid.group == 0:  # BLOCK is a multiple of the group: the group lies in this block
                scales[:, c // grid.group] = grid.scales(block[:, i:i + grid.group])
            s = scales[:, c // grid.group]
            q[:, c] = grid.round(block[:, i], s)
            errors[:, i] = (block[:, i] - q[:, c] * s.astype(np.float64)) / u[c, c]
            block[:, i:] -= np.outer(errors[:, i], u[c, i:b1])
        w[:, b1:] -= errors @ u[b0:b1, b1:]
    return q, scales


def dequantize(q, scales, group):
    return q.astype(np.float32) * np.repeat(scales, group, axis=1)[:, :q.shape[1]]


def output_error(w, q, scales, group, hessian):
    """tr((W - Q) H (W - Q)ᵀ): the summed squared error of the layer's outputs over its inputs (× 2/n)."""
    d = w.astype(np.float64) - dequantize(q, scales, group)
    return float(np.sum((d @ hessian) * d))


# ---------------------------------------------------------------- the GPTQ tensors

def pack(values, bits, axis):
    """Unsigned b-bit values packed 32/b to an int32 along axis (the first value in the lowest bits)."""
    per = 32 // bits
    v = np.moveaxis(values.astype(np.uint32), axis, 0)
    v = v.reshape(v.shape[0] // per, per, *v.shape[1:])
    words = np.zeros(v.shape[:1] + v.shape[2:], np.uint32)
    for k in range(per):
        words |= v[:, k] << np.uint32(bits * k)
    return np.moveaxis(words, 0, axis).view(np.int32)


def gptq_tensors(module, q, scales, grid, scale_dtype):
    """qweight [in/pack, out], qzeros [groups, out/pack] (zero - 1), scales [groups, out], g_idx [in]."""
    rows, cols = q.shape
    zero = 2 ** (grid.bits - 1)
    groups = scales.shape[1]
    stored_zeros = np.full((groups, rows), zero - 1, np.uint32)
    np_scale = np.float16 if scale_dtype == "F16" else np.float32
    return {
        f"{module}.qweight": ("I32", pack((q + zero).T, grid.bits, 0)),
        f"{module}.qzeros": ("I32", pack(stored_zeros, grid.bits, 1)),
        f"{module}.scales": (scale_dtype, np.ascontiguousarray(scales.T).astype(np_scale)),
        f"{module}.g_idx": ("I32", (np.arange(cols) // grid.group).astype(np.int32)),
    }


# ---------------------------------------------------------------- the model, in numpy

def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


class Model:
    """Qwen3-MoE's forward (transformers' Qwen3MoeForCausalLM) over float32 weights, for the layer inputs."""

    def __init__(self, model_dir):
        self.config = json.loads((model_dir / "config.json").read_text())
        c = self.config
        if c.get("model_type") != "qwen3_moe":
            raise SystemExit(f"model_type {c.get('model_type')!r}: only qwen3_moe is quantized by this script")
        if c.get("mlp_only_layers") or c.get("decoder_sparse_step", 1) != 1:
            raise SystemExit("dense layers (mlp_only_layers, decoder_sparse_step) are not handled by this script")
        self.owner = open_checkpoint(model_dir)
        self.layers, self.heads, self.kv_heads = c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        self.experts = c.get("num_experts") or c["num_local_experts"]
        self.top_k, self.eps = c["num_experts_per_tok"], c["rms_norm_eps"]
        theta = c.get("rope_theta") or c["rope_parameters"]["rope_theta"]
        self.inv_freq = 1.0 / theta ** (np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim)
        self.tied = "lm_head.weight" not in self.owner

    def weight(self, name):
        return to_f32(*self.owner[name].read(name))

    def rope(self, x):
        """x [..., T, heads, head_dim], rotated by position (rotate-half layout)."""
        angles = np.arange(x.shape[-3])[:, None] * self.inv_freq[None, :]
        cos = np.cos(np.concatenate([angles, angles], -1)).astype(np.float32)[:, None, :]
        sin = np.sin(np.concatenate([angles, angles], -1)).astype(np.float32)[:, None, :]
        half = self.head_dim // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def attention(self, p, xn, wq, wk, wv):
        """The attention output before o_proj [N, T, heads * head_dim]."""
        n, t, _ = xn.shape
        q = rms_norm((xn @ wq.T).reshape(n, t, self.heads, self.head_dim), self.weight(p + "self_attn.q_norm.weight"), self.eps)
        k = rms_norm((xn @ wk.T).reshape(n, t, self.kv_heads, self.head_dim), self.weight(p + "self_attn.k_norm.weight"), self.eps)
        v = (xn @ wv.T).reshape(n, t, self.kv_heads, self.head_dim)
        q, k = self.rope(q), self.rope(k)
        group = self.heads // self.kv_heads
        k, v = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
        q, k, v = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 3, 1), v.transpose(0, 2, 1, 3)  # [n, heads, ...]
        scores = (q @ k) / np.float32(np.sqrt(self.head_dim))
        scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        return (scores @ v).transpose(0, 2, 1, 3).reshape(n, t, self.heads * self.head_dim)

    def route(self, p, hn):
        """(top-k expert ids [T, k], their renormalized weights [T, k]) of flattened tokens hn [T, hidden]."""
        logits = hn @ self.weight(p + "mlp.gate.weight").T
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ids = np.argsort(-probs, axis=-1, kind="stable")[:, :self.top_k]
        weights = np.take_along_axis(probs, ids, -1)
        if self.config.get("norm_topk_prob", True):
            weights /= weights.sum(-1, keepdims=True)
        return ids, weights

    def embed(self, ids):
        return self.weight("model.embed_tokens.weight")[ids]


# ---------------------------------------------------------------- quantizing the model

def hessian(x):
    """(2/n Σ x xᵀ over the rows of x, n)."""
    x = x.reshape(-1, x.shape[-1]).astype(np.float64)
    return 2.0 / max(len(x), 1) * (x.T @ x), len(x)


class Quantizer:
    def __init__(self, model, args):
        self.model, self.args = model, args
        self.grid = Grid(args.bits, args.group_size, args.scale_dtype)
        self.tensors = {}
        self.errors = {}  # kind -> [gptq error, rtn error]

    def matrix(self, module, w, inputs):
        """Quantizes w [out, in], records its GPTQ tensors and returns its dequantized weights. inputs:
        (Hessian [in, in], how many input rows made it). A matrix fewer rows than its columns reached (a
        rarely routed expert) is rounded as RTN does: its Hessian would tune it to those few tokens."""
        if w.shape[1] % (32 // self.args.bits) or w.shape[0] % (32 // self.args.bits):
            raise SystemExit(f"{module}: a {list(w.shape)} matrix cannot be packed {32 // self.args.bits} to an int32")
        h, n = inputs
        if self.args.method == "rtn" or n < w.shape[1]:
            if self.args.method == "gptq":
                print(f"{module}: {n} calibration rows for {w.shape[1]} columns; rounded (RTN)", file=sys.stderr)
            q, scales = rtn(w, self.grid)
        else:
            q, scales = gptq(w, h, self.grid, self.args.damp)
            kind = module.split(".")[-1]
            rq, rs = rtn(w, self.grid)
            sums = self.errors.setdefault(kind, [0.0, 0.0])
            sums[0] += output_error(w, q, scales, self.grid.group, h)
            sums[1] += output_error(w, rq, rs, self.grid.group, h)
        self.tensors.update(gptq_tensors(module, q, scales, self.grid, self.args.scale_dtype))
        return dequantize(q, scales, self.grid.group)

    def run(self, ids):
        """ids [N, T]: the calibration windows (rtn runs the same walk over one token and ignores its inputs)."""
        m = self.model
        x = m.embed(ids)
        for layer in range(m.layers):
            started = time.time()
            x = self.layer(layer, x)
            print(f"layer {layer} quantized in {time.time() - started:.1f} s", file=sys.stderr)
        if self.args.float_lm_head:
            return
        xn = rms_norm(x, m.weight("model.norm.weight"), m.eps)
        head = m.weight("model.embed_tokens.weight" if m.tied else "lm_head.weight")
        self.matrix("lm_head", head, hessian(xn))

    def layer(self, layer, x):
        m, p = self.model, f"model.layers.{layer}."
        xn = rms_norm(x, m.weight(p + "input_layernorm.weight"), m.eps)
        h_in = hessian(xn)
        w = {name: self.matrix(p + f"self_attn.{name}", m.weight(p + f"self_attn.{name}.weight"), h_in)
             for name in ("q_proj", "k_proj", "v_proj")}
        heads = np.concatenate([m.attention(p, xn[i:i + 8], w["q_proj"], w["k_proj"], w["v_proj"])
                                for i in range(0, len(xn), 8)])
        wo = self.matrix(p + "self_attn.o_proj", m.weight(p + "self_attn.o_proj.weight"), hessian(heads))
        h = x + heads @ wo.T
        hn = rms_norm(h, m.weight(p + "post_attention_layernorm.weight"), m.eps)
        flat = hn.reshape(-1, hn.shape[-1])
        experts, weights = m.route(p, flat)
        out = np.zeros_like(flat)
        for e in range(m.experts):
            rows, slot = np.nonzero(experts == e)
            xe = flat[rows]
            e_p = p + f"mlp.experts.{e}."
            h_e = hessian(xe)
            wg = self.matrix(e_p + "gate_proj", m.weight(e_p + "gate_proj.weight"), h_e)
            wu = self.matrix(e_p + "up_proj", m.weight(e_p + "up_proj.weight"), h_e)
            act = silu(xe @ wg.T) * (xe @ wu.T)
            wd = self.matrix(e_p + "down_proj", m.weight(e_p + "down_proj.weight"), hessian(act))
            out[rows] += weights[rows, slot][:, None] * (act @ wd.T)  # an expert takes a token once
        return h + out.reshape(h.shape)


def calibration_windows(path, seqs, seq_len):
    ids = np.fromfile(path, dtype=np.int32)
    n = min(seqs, len(ids) // seq_len)
    if n == 0:
        raise SystemExit(f"{path}: {len(ids)} ids, fewer than one window of {seq_len}")
    return ids[:n * seq_len].reshape(n, seq_len)


def write_checkpoint(model, quantizer, args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tensors = dict(quantizer.tensors)
    quantized = {name.rsplit(".", 1)[0] for name in tensors}
    for name, shard in model.owner.items():
        if name.rsplit(".", 1)[0] not in quantized:
            tensors[name] = shard.read(name)
    write_safetensors(out / "model.safetensors", tensors)
    config = dict(model.config)
    if not args.float_lm_head:
        config["tie_word_embeddings"] = False  # lm_head has tensors of its own now
    config["quantization_config"] = {"quant_method": "gptq", "bits": args.bits, "group_size": args.group_size,
                                     "sym": True, "desc_act": False, "checkpoint_format": "gptq",
                                     "damp_percent": args.damp, "true_sequential": True,
                                     "lm_head": not args.float_lm_head,
                                     "method": args.method}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for extra in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (Path(args.model_path) / extra).exists():
            shutil.copy(Path(args.model_path) / extra, out / extra)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-path", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--method", choices=("gptq", "rtn"), default="gptq")
    p.add_argument("--bits", type=int, choices=(4, 8), default=4)
    p.add_argument("--group-size", type=int, default=32)
    p.add_argument("--calibration-ids")
    p.add_argument("--calibration-seqs", type=int, default=128)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--damp", type=float, default=0.01)
    p.add_argument("--scale-dtype", choices=("F16", "F32"), default="F16")
    p.add_argument("--float-lm-head", action="store_true", help="leave lm_head (or the tied embedding) as it is")
    args = p.parse_args()
    if args.group_size % 32 or BLOCK % args.group_size:
        raise SystemExit(f"--group-size {args.group_size}: a multiple of 32 (the engine's) that divides {BLOCK}")
    if args.method == "gptq" and not args.calibration_ids:
        raise SystemExit("--method gptq needs --calibration-ids")
    started = time.time()
    model = Model(Path(args.model_path))
    quantizer = Quantizer(model, args)
    if args.method == "gptq":
        quantizer.run(calibration_windows(args.calibration_ids, args.calibration_seqs, args.seq_len))
    else:
        quantizer.run(np.zeros((1, 1), np.int64))
    write_checkpoint(model, quantizer, args)
    for kind, (g, r) in sorted(quantizer.errors.items()):
        print(json.dumps({"kind": kind, "gptq_output_error": g, "rtn_output_error": r, "ratio": g / r if r else None}))
    print(f"wrote {args.out} ({args.method}, int{args.bits}, group {args.group_size}) in {time.time() - started:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
