#!/usr/bin/env python3
"""Trains the project's own small models on Python source, on one GPU, in a few minutes.

Makes, under --out:
  code-moe.tar        tests/data/code-moe: a byte-level BPE tokenizer (tokenizer.json, tokenizer_config.json,
                      tokenizer_golden.json), a Qwen3MoeForCausalLM code model (bf16 safetensors, per-expert
                      tensors as the hub stores them), its config, generation_config and golden.json
  code-moe-draft.tar  tests/data/code-moe-draft: a 2-layer MoE draft of the same vocabulary (STANDALONE)
  corpus.tar.gz       corpus_files.tsv (every source file used: split, bytes, path) and train_report.json

The corpus is every .py file of this Python's site-packages (sorted); a file is held out when the first
byte of the SHA-256 of its path (relative to its site-packages) is below --heldout-byte. Every phase has
a wall-clock budget; data caps are in bytes so the data used is the same from run to run whenever the
caps, not the clocks, end a phase (the log says which). Seeded; CUDA's MoE backward (index_add) is not
bitwise deterministic, so two runs agree closely, not exactly.

Needs torch, transformers (5.x) and tokenizers. Run: python3 train_code_model.py --out DIR
(--smoke first runs every phase on tiny budgets, so a broken phase costs seconds, not the whole run).
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import site
import sys
import tarfile
import time

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import load_file, save_file
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import AutoTokenizer, Qwen3MoeConfig, Qwen3MoeForCausalLM

EOS = "<|endoftext|>"
# Qwen2/Qwen3's pre-tokenizer regex (GPT-4 style, one digit per piece), as tests/data/qwen3-tokenizer has it.
SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
GOLDEN_PROMPTS = [
    "def fibonacci(n):",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "import numpy as np\n",
    "class Stack:\n    def __init__(self):\n",
    "for i in range(10):\n    ",
    'if __name__ == "__main__":\n',
    "from typing import List\n\n\ndef merge_sort(items: List[int]) -> List[int]:\n    \"\"\"",
    "    def __repr__(self):\n        return",
]
TOKENIZER_TEXTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "import os, sys\r\nfrom typing import Dict, List\r\n",
    "\tx = {'a': 1, \"b\": [2.5e-3, 0x1F]}  # comment\n\n\n",
    "class Foo(Bar):\n    \"\"\"Docstring with ünïcödé, 中文 and an emoji 🙂.\"\"\"\n",
    "print(f\"{value!r:>10}\")<|endoftext|>x = 12345678\n",
    "        \n    return   None   \n",
]
LOG_START = time.time()


def log(*parts):
    print(f"[{time.time() - LOG_START:7.1f}s]", *parts, flush=True)


# ---------------------------------------------------------------- corpus

def find_corpus(heldout_byte):
    roots = sorted({os.path.realpath(p) for p in site.getsitepackages() + sys.path
                    if os.path.isdir(p) and os.path.basename(p) in ("site-packages", "dist-packages")})
    files, seen = [], set()
    for root in roots:
        for directory, subdirs, names in os.walk(root):
            subdirs.sort()
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, root)
                size = os.path.getsize(path) if os.path.isfile(path) else 0
                if rel in seen or size == 0 or size > 512 * 1024:
                    continue
                seen.add(rel)
                digest = hashlib.sha256(rel.encode()).hexdigest()
                split = "heldout" if int(digest[:2], 16) < heldout_byte else "train"
                files.append({"root": root, "rel": rel, "size": size, "split": split, "order": digest})
    return roots, files


def read_source(f):
    try:
        with open(os.path.join(f["root"], f["rel"]), encoding="utf-8") as handle:
            return handle.read()
    except (UnicodeDecodeError, OSError):
        return None


def texts(files, max_bytes, budget_s):
    """Sources in the files' hash order until max_bytes of text or budget_s seconds."""
    start, total = time.time(), 0
    for f in sorted(files, key=lambda f: f["order"]):
        if total >= max_bytes or time.time() - start > budget_s:
            return
        text = read_source(f)
        if text:
            total += len(text.encode())
            yield text


# ---------------------------------------------------------------- tokenizer

def train_tokenizer(files, vocab_size, max_bytes, budget_s):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - 1, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts(files, max_bytes, budget_s), trainer=trainer)
    tok.add_special_tokens([EOS])  # the last id: vocab_size - 1
    return tok


def save_tokenizer(tok, directory):
    tok.save(os.path.join(directory, "tokenizer.json"))
    eos_id = tok.token_to_id(EOS)
    config = {
        "add_bos_token": False, "add_prefix_space": False, "bos_token": None, "eos_token": EOS, "pad_token": EOS,
        "unk_token": None, "clean_up_tokenization_spaces": False, "model_max_length": 4096,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": {str(eos_id): {"content": EOS, "lstrip": False, "normalized": False,
                                               "rstrip": False, "single_word": False, "special": True}},
    }
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as handle:
        json.dump(config, handle, indent=2)
    # The encodings transformers makes of a few code strings from the saved files, for the engine's test.
    hf = AutoTokenizer.from_pretrained(directory)
    cases = []
    for text in TOKENIZER_TEXTS:
        ids = hf.encode(text, add_special_tokens=False)
        assert ids == tok.encode(text, add_special_tokens=False).ids, text
        cases.append({"text": text, "ids": ids, "decoded": hf.decode(ids),
                      "decoded_skip_special": hf.decode(ids, skip_special_tokens=True)})
    with open(os.path.join(directory, "tokenizer_golden.json"), "w") as handle:
        json.dump({"tokenizer": "code-moe", "transformers": transformers.__version__, "encode": cases}, handle,
                  indent=1, ensure_ascii=False)


def encode(tok, files, max_bytes, budget_s):
    """One flat int16 array: each source's ids followed by EOS."""
    eos_id = tok.token_to_id(EOS)
    start, chunks, batch, n_bytes, n_files = time.time(), [], [], 0, 0
    stream = texts(files, max_bytes, budget_s)
    while True:
        text = next(stream, None)
        if text is not None:
            batch.append(text)
            n_bytes += len(text.encode())
            n_files += 1
        if batch and (text is None or len(batch) == 512):
            for e in tok.encode_batch(batch, add_special_tokens=False):
                chunks.append(np.array(e.ids + [eos_id], dtype=np.int16))
            batch = []
        if text is None:
            break
    ids = np.concatenate(chunks)
    log(f"encoded {n_files} files, {n_bytes / 1e6:.1f} MB -> {len(ids) / 1e6:.2f} M tokens "
        f"({n_bytes / max(len(ids), 1):.2f} bytes/token) in {time.time() - start:.1f} s "
        f"({'time budget' if time.time() - start > budget_s else 'byte cap or corpus end'})")
    return torch.from_numpy(ids.astype(np.int64)), n_bytes


# ---------------------------------------------------------------- models

def make_config(vocab, eos_id, hidden, layers, heads, kv_heads, experts, top_k, moe_inter, aux_coef):
    return Qwen3MoeConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=hidden // heads, intermediate_size=4 * hidden,
        num_experts=experts, num_experts_per_tok=top_k, moe_intermediate_size=moe_inter, norm_topk_prob=True,
        decoder_sparse_step=1, mlp_only_layers=[], router_aux_loss_coef=aux_coef, output_router_logits=True,
        max_position_embeddings=4096, tie_word_embeddings=True, bos_token_id=eos_id, eos_token_id=eos_id,
        pad_token_id=eos_id, rms_norm_eps=1e-6, attention_bias=False, use_sliding_window=False)


def windows(data, starts, length):
    return data[starts[:, None] + torch.arange(length + 1, device=data.device)]


def train(model, data, seq_len, batch, lr, budget_s, seed, label):
    """AdamW, bf16 autocast, cosine schedule over the wall-clock budget (warm-up its first 3%)."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    gen = torch.Generator(device=data.device).manual_seed(seed)
    start, step = time.time(), 0
    while True:
        frac = (time.time() - start) / budget_s
        if frac >= 1.0:
            break
        scale = frac / 0.03 if frac < 0.03 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (frac - 0.03) / 0.97))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        starts = torch.randint(0, len(data) - seq_len - 1, (batch,), generator=gen, device=data.device)
        tokens = windows(data, starts, seq_len)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=tokens[:, :-1])
        ce = F.cross_entropy(out.logits.float().reshape(-1, out.logits.shape[-1]), tokens[:, 1:].reshape(-1))
        aux = out.aux_loss if getattr(out, "aux_loss", None) is not None else torch.zeros((), device=ce.device)
        loss = ce + model.config.router_aux_loss_coef * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 50 == 0 or step == 1:
            log(f"{label} step {step}: ce {ce.item():.4f} aux {aux.item():.4f} lr {lr * scale:.2e}")
    log(f"{label}: {step} steps of {batch}x{seq_len} tokens in {time.time() - start:.1f} s "
        f"({step * batch * seq_len / (time.time() - start) / 1e6:.2f} M tokens/s)")
    return step


class GateTap:
    """Router logits of every MoE layer, recomputed in float32 from each gate's input."""

    def __init__(self, model):
        self.gates = [layer.mlp.gate for layer in model.model.layers]
        self.logits = [None] * len(self.gates)
        self.handles = [g.register_forward_pre_hook(self._hook(i)) for i, g in enumerate(self.gates)]

    def _hook(self, i):
        def hook(module, args):
            x = args[0].reshape(-1, args[0].shape[-1]).float()
            self.logits[i] = x @ module.weight.float().t()
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


@torch.no_grad()
def heldout_eval(model, data, seq_len, n_seq, autocast, draft=None):
    """Mean cross-entropy over the first n_seq non-overlapping windows; expert load per layer;
    with a draft, how often its greedy choice equals the model's (teacher forced)."""
    model.eval()
    n_seq = min(n_seq, (len(data) - 1) // seq_len)
    tap = GateTap(model)
    top_k = model.config.num_experts_per_tok
    load = torch.zeros(len(tap.gates), model.config.num_experts, device=data.device)
    total, count, agree = 0.0, 0, 0
    for first in range(0, n_seq, 16):
        starts = torch.arange(first, min(first + 16, n_seq), device=data.device) * seq_len
        tokens = windows(data, starts, seq_len)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=tokens[:, :-1]).logits.float()
            if draft is not None:
                agree += (draft(input_ids=tokens[:, :-1]).logits.argmax(-1) == logits.argmax(-1)).sum().item()
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), reduction="sum").item()
        count += tokens[:, 1:].numel()
        for i, router in enumerate(tap.logits):
            load[i] += torch.bincount(router.topk(top_k, dim=-1).indices.reshape(-1), minlength=load.shape[1])
    tap.remove()
    share = (load / load.sum(-1, keepdim=True)).cpu()
    return {"loss": total / count, "perplexity": math.exp(total / count), "tokens": count,
            "draft_agreement": agree / count if draft is not None else None,
            "expert_share_min_max": [[round(s.min().item(), 4), round(s.max().item(), 4)] for s in share]}


def per_expert_state(model):
    """The state dict in the hub's layout: one gate/up/down tensor per expert (transformers 5 fuses them
    in memory), no lm_head when tied, bf16."""
    cfg = model.config
    inter, hidden = cfg.moe_intermediate_size, cfg.hidden_size
    out = {}
    for key, t in model.state_dict().items():
        t = t.detach().to(torch.bfloat16).cpu()
        if key == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        prefix, _, name = key.rpartition(".")
        if t.dim() != 3 or not prefix.endswith("mlp.experts"):
            out[key] = t.contiguous()
            continue
        for e in range(t.shape[0]):
            w = t[e]
            if name == "gate_up_proj":
                w = w if w.shape == (2 * inter, hidden) else w.t()
                out[f"{prefix}.{e}.gate_proj.weight"] = w[:inter].contiguous()
                out[f"{prefix}.{e}.up_proj.weight"] = w[inter:].contiguous()
            elif name in ("gate_proj", "up_proj"):
                out[f"{prefix}.{e}.{name}.weight"] = (w if w.shape == (inter, hidden) else w.t()).contiguous()
            elif name == "down_proj":
                out[f"{prefix}.{e}.down_proj.weight"] = (w if w.shape == (hidden, inter) else w.t()).contiguous()
            else:
                raise ValueError(f"unknown expert tensor {key} {tuple(t.shape)}")
    return out


def save_model(model, directory):
    """Saves bf16 per-expert safetensors, config and generation config; reloads them with transformers
    (no missing or unexpected keys) and checks the reloaded model computes what the trained one does."""
    os.makedirs(directory, exist_ok=True)
    model.config.output_router_logits = False
    model.config.dtype = torch.bfloat16
    model.config.architectures = ["Qwen3MoeForCausalLM"]  # written only by a model's save_pretrained
    model.config.save_pretrained(directory)
    transformers.GenerationConfig(bos_token_id=model.config.bos_token_id, eos_token_id=model.config.eos_token_id,
                                  pad_token_id=model.config.pad_token_id, do_sample=False).save_pretrained(directory)
    state = per_expert_state(model)
    save_file(state, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    assert load_file(os.path.join(directory, "model.safetensors")).keys() == state.keys()
    reloaded, info = Qwen3MoeForCausalLM.from_pretrained(directory, dtype=torch.float32, output_loading_info=True,
                                                         attn_implementation="eager")
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise RuntimeError(f"reloading {directory}: {problems}")
    reference = Qwen3MoeForCausalLM(model.config).to(torch.float32)
    reference.load_state_dict({k: v.to(torch.bfloat16).float() for k, v in model.state_dict().items()})
    probe = torch.arange(0, 48).reshape(2, 24) * 37 % model.config.vocab_size
    with torch.no_grad():
        diff = (reloaded(input_ids=probe).logits - reference.eval()(input_ids=probe).logits).abs().max().item()
    n_params = sum(t.numel() for t in state.values())
    size = os.path.getsize(os.path.join(directory, "model.safetensors"))
    log(f"saved {directory}: {n_params / 1e6:.3f} M parameters, {size / 1e6:.2f} MB; reloaded logits differ by {diff:.2e}")
    if diff > 1e-3:
        raise RuntimeError(f"{directory}: the reloaded checkpoint computes something else (max logit diff {diff})")
    return reloaded, n_params, size


# ---------------------------------------------------------------- goldens

@torch.no_grad()
def golden_case(model, tok, prompt, new_tokens):
    """Greedy decoding ignoring EOS (full recompute each step, float32), then one forward over
    prompt + output for the routing of every position."""
    cfg = model.config
    ids = tok.encode(prompt, add_special_tokens=False).ids
    seq, logprobs, margins, top5 = list(ids), [], [], None
    for step in range(new_tokens):
        logits = model(input_ids=torch.tensor([seq])).logits[0, -1].double()
        top = logits.topk(5)
        if step == 0:
            top5 = {"ids": top.indices.tolist(), "logits": [round(v, 5) for v in top.values.tolist()]}
        choice = int(top.indices[0])
        logprobs.append(round(torch.log_softmax(logits, -1)[choice].item(), 5))
        margins.append(round((top.values[0] - top.values[1]).item(), 5))
        seq.append(choice)
    tap = GateTap(model)
    model(input_ids=torch.tensor([seq]))
    tap.remove()
    router = torch.stack(tap.logits, 1).double()  # [positions, layers, experts]
    sorted_logits = router.sort(-1, descending=True).values
    k = cfg.num_experts_per_tok
    chosen = router.softmax(-1).topk(k, dim=-1)
    weights = chosen.values / chosen.values.sum(-1, keepdim=True) if cfg.norm_topk_prob else chosen.values
    return {
        "prompt": prompt, "prompt_ids": ids, "output_ids": seq[len(ids):],
        "output_text": tok.decode(seq[len(ids):], skip_special_tokens=False),
        "output_logprobs": logprobs, "greedy_margin": margins, "last_prompt_top5": top5,
        "routed_experts": chosen.indices.tolist(),
        "routed_weights": [[[round(w, 6) for w in layer] for layer in pos] for pos in weights.tolist()],
        "router_min_gap": [round(g, 6) for g in (sorted_logits[..., k - 1] - sorted_logits[..., k]).min(-1).values.tolist()],
    }


def write_golden(model, tok, directory, prompts, new_tokens):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = model.config
    golden = {
        "fixture": "code-moe", "arch": "qwen3_moe", "visibility": "shared", "transformers": transformers.__version__,
        "torch": torch.__version__, "compute_dtype": "float32 (bf16 weights), tf32 off",
        "num_moe_layers": cfg.num_hidden_layers, "moe_layer_ids": list(range(cfg.num_hidden_layers)),
        "top_k": cfg.num_experts_per_tok, "max_new_tokens": new_tokens,
        "note": "routed_experts[s][l] = expert ids chosen for the token at position s in MoE layer l, ordered by "
                "descending router probability; covers every position of prompt+output, including the final output "
                "token (which a serving engine never feeds).",
        "cases": [golden_case(model, tok, p, new_tokens) for p in prompts],
    }
    with open(os.path.join(directory, "golden.json"), "w") as handle:
        json.dump(golden, handle, ensure_ascii=False)
    for c in golden["cases"]:
        log(f"golden {c['prompt']!r} -> {c['output_text']!r} (min margin {min(c['greedy_margin']):.4f}, "
            f"min router gap {min(c['router_min_gap']):.2e})")


@torch.no_grad()
def sample(model, tok, prompt, new_tokens):
    seq = tok.encode(prompt, add_special_tokens=False).ids
    for _ in range(new_tokens):
        seq.append(int(model(input_ids=torch.tensor([seq], device=model.device)).logits[0, -1].argmax()))
    return tok.decode(seq)


# ---------------------------------------------------------------- the run

def run(args, out, files):
    report = {"args": vars(args)}
    code_dir, draft_dir = os.path.join(out, "code-moe"), os.path.join(out, "code-moe-draft")
    os.makedirs(code_dir, exist_ok=True)
    train_files = [f for f in files if f["split"] == "train"]
    heldout_files = [f for f in files if f["split"] == "heldout"]

    t = time.time()
    tok = train_tokenizer(train_files, args.vocab, args.tok_train_mb * 1e6, args.tok_budget_s)
    save_tokenizer(tok, code_dir)
    log(f"tokenizer: {tok.get_vocab_size()} tokens, EOS id {tok.token_to_id(EOS)}, {time.time() - t:.1f} s")
    report["vocab"] = tok.get_vocab_size()

    data, train_bytes = encode(tok, train_files, args.train_mb * 1e6, args.encode_budget_s)
    heldout, heldout_bytes = encode(tok, heldout_files, args.heldout_mb * 1e6, args.encode_budget_s)
    report.update(train_tokens=len(data), train_bytes=train_bytes, heldout_tokens=len(heldout),
                  heldout_bytes=heldout_bytes)
    data, heldout = data.cuda(), heldout.cuda()

    eos_id = tok.token_to_id(EOS)
    torch.backends.cuda.matmul.allow_tf32 = True
    results = {}
    for name, directory, shape, budget in (("code", code_dir, args.code_shape, args.code_budget_s),
                                           ("draft", draft_dir, args.draft_shape, args.draft_budget_s)):
        torch.manual_seed(args.seed)
        hidden, layers, heads, kv, experts, top_k, inter = (int(v) for v in shape.split(","))
        model = Qwen3MoeForCausalLM(make_config(tok.get_vocab_size(), eos_id, hidden, layers, heads, kv, experts,
                                                top_k, inter, args.aux_coef)).cuda()
        steps = train(model, data, args.seq_len, args.batch, args.lr, budget, args.seed, name)
        reloaded, n_params, size = save_model(model, directory)
        results[name] = {"shape": shape, "steps": steps, "parameters": n_params, "safetensors_bytes": size,
                         "reloaded": reloaded}
        active = n_params - experts * layers * 3 * hidden * inter * (1 - top_k / experts)
        results[name]["active_parameters"] = int(active)
        del model

    code, draft = results["code"]["reloaded"].cuda(), results["draft"]["reloaded"].cuda()
    torch.backends.cuda.matmul.allow_tf32 = False
    for name in ("code", "draft"):
        model = results[name].pop("reloaded").cuda()
        ev = heldout_eval(model, heldout, args.seq_len, args.eval_seqs, autocast=False,
                          draft=draft if name == "code" else None)
        ev["bits_per_byte"] = ev["loss"] * len(heldout) / heldout_bytes / math.log(2)
        results[name]["heldout"] = ev
        log(f"{name}: held-out (float32, saved bf16 weights) {json.dumps(ev)}")
        for prompt in GOLDEN_PROMPTS[:3]:
            log(f"{name} greedy sample:\n{sample(model, tok, prompt, args.sample_tokens)}\n----")
    report["models"] = results

    write_golden(code.cpu(), tok, code_dir, GOLDEN_PROMPTS[:args.golden_cases], 24)
    for directory in (code_dir, draft_dir):
        log(directory, sorted(os.listdir(directory)))
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--heldout-byte", type=int, default=5, help="held out: first SHA-256 byte of the path below this")
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--tok-train-mb", type=float, default=24)
    p.add_argument("--tok-budget-s", type=float, default=30)
    p.add_argument("--train-mb", type=float, default=160)
    p.add_argument("--heldout-mb", type=float, default=4)
    p.add_argument("--encode-budget-s", type=float, default=35)
    p.add_argument("--code-shape", default="128,6,4,2,16,4,80", help="hidden,layers,heads,kv_heads,experts,top_k,moe_inter")
    p.add_argument("--draft-shape", default="128,2,4,2,8,2,48")
    p.add_argument("--aux-coef", type=float, default=0.01)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--code-budget-s", type=float, default=140)
    p.add_argument("--draft-budget-s", type=float, default=40)
    p.add_argument("--eval-seqs", type=int, default=256)
    p.add_argument("--golden-cases", type=int, default=len(GOLDEN_PROMPTS))
    p.add_argument("--sample-tokens", type=int, default=64)
    p.add_argument("--smoke", action="store_true", help="first run every phase on tiny budgets in a scratch folder")
    args = p.parse_args()

    log(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name()}")
    roots, files = find_corpus(args.heldout_byte)
    n_held = sum(f["split"] == "heldout" for f in files)
    log(f"corpus: {len(files)} files ({sum(f['size'] for f in files) / 1e6:.1f} MB) under {roots}; {n_held} held out")
    os.makedirs(args.out, exist_ok=True)

    if args.smoke:
        smoke = argparse.Namespace(**{**vars(args), "tok_train_mb": 1, "train_mb": 3, "heldout_mb": 0.3,
                                      "code_budget_s": 4, "draft_budget_s": 2, "eval_seqs": 4, "golden_cases": 2,
                                      "sample_tokens": 8, "batch": 8})
        run(smoke, "/tmp/train_code_model_smoke", files)
        shutil.rmtree("/tmp/train_code_model_smoke")
        log("smoke run passed")

    report = run(args, args.out, files)
    work = args.out
    with open(os.path.join(work, "corpus_files.tsv"), "w") as handle:
        handle.write("# split\tbytes\tpath (relative to its site-packages)\n")
        for f in files:
            handle.write(f"{f['split']}\t{f['size']}\t{f['rel']}\n")
    report.update(corpus_roots=roots, corpus_files=len(files), heldout_files=n_held,
                  transformers=transformers.__version__, torch=torch.__version__)
    with open(os.path.join(work, "train_report.json"), "w") as handle:
        json.dump(report, handle, indent=1)
    log("report:", json.dumps(report["models"]))
    for name in ("code-moe", "code-moe-draft"):
        with tarfile.open(os.path.join(work, f"{name}.tar"), "w") as tar:
            tar.add(os.path.join(work, name), arcname=name)
        shutil.rmtree(os.path.join(work, name))
    with tarfile.open(os.path.join(work, "corpus.tar.gz"), "w:gz") as tar:
        for name in ("corpus_files.tsv", "train_report.json"):
            tar.add(os.path.join(work, name), arcname=name)
            os.remove(os.path.join(work, name))
    log("done:", sorted(os.listdir(work)))


if __name__ == "__main__":
    main()
