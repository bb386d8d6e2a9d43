#!/usr/bin/python3
"""Writes a Qwen3-MoE Hugging Face checkpoint (config.json + safetensors + tokenizer.json) as a
BF16 GGUF file for llama.cpp, so llama.cpp can be measured on the same weights as moe-engine.

llama.cpp's own convert_hf_to_gguf.py needs torch and transformers, which Debian does not package;
this converter needs only numpy and llama.cpp's `gguf-py` package, taken from a llama.cpp checkout
(bench/tools/build_llama_cpp.sh leaves one at OUT/src/gguf-py). It handles the one architecture the
benchmarks use, qwen3moe, with the layout llama.cpp's converter writes:

  - matrices (embeddings, lm_head, attention projections, experts) in BF16; norms and the router in
    F32, as llama.cpp keeps them;
  - each layer's experts stacked into one 3-D tensor per projection ([expert, out, in]);
  - a gpt2-style BPE vocabulary (tokens, types, merges, special ids) with the "qwen2" pre-tokenizer.

usage: /usr/bin/python3 bench/tools/gguf_from_checkpoint.py --gguf-py LLAMA_CPP/gguf-py \
           --model-path DIR [--tokenizer-path DIR] --out FILE.gguf
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

from safetensors_numpy import open_checkpoint, to_bf16_bits, to_f32

# Hugging Face tensor name (after "model.layers.N.") -> GGUF name (after "blk.N.").
LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight",
}
GLOBAL_TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
# Per-expert projection -> the GGUF name of the layer's stacked tensor.
EXPERT_TENSORS = {"gate_proj": "ffn_gate_exps.weight", "up_proj": "ffn_up_exps.weight",
                  "down_proj": "ffn_down_exps.weight"}
# Kept in float32 by llama.cpp (its CPU ops on these take only F32).
F32_SUFFIXES = ("_norm.weight", "ffn_gate_inp.weight")

# GGUF token types (llama.cpp's llama_token_type).
NORMAL, UNUSED, CONTROL, USER_DEFINED = 1, 5, 3, 4


def num_experts(config):
    """Both spellings found on the hub (the code model's config has num_local_experts)."""
    return config.get("num_experts") or config["num_local_experts"]


def gguf_tensor_plan(config, owner):
    """[(gguf name, [(hf name, ...)]] in writing order; one hf name, or an expert stack."""
    plan = [(GLOBAL_TENSORS["model.embed_tokens.weight"], ["model.embed_tokens.weight"])]
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}."
        for hf, gguf_name in LAYER_TENSORS.items():
            if prefix + hf in owner:
                plan.append((f"blk.{layer}.{gguf_name}", [prefix + hf]))
        for hf, gguf_name in EXPERT_TENSORS.items():
            names = [f"{prefix}mlp.experts.{e}.{hf}.weight" for e in range(num_experts(config))]
            plan.append((f"blk.{layer}.{gguf_name}", names))
    plan.append((GLOBAL_TENSORS["model.norm.weight"], ["model.norm.weight"]))
    if "lm_head.weight" in owner:
        plan.append((GLOBAL_TENSORS["lm_head.weight"], ["lm_head.weight"]))
    known = {hf for _, names in plan for hf in names}
    unknown = sorted(set(owner) - known)
    if unknown:
        raise SystemExit(f"tensors this converter does not map: {unknown[:5]} ({len(unknown)} in all)")
    missing = sorted(hf for hf in known if hf not in owner)
    if missing:
        raise SystemExit(f"tensors missing from the checkpoint: {missing[:5]} ({len(missing)} in all)")
    return plan


def read_tensor(owner, gguf_name, hf_names):
    """The tensor as written: float32 for norms and the router, bf16 bits otherwise."""
    parts = [owner[hf].read(hf) for hf in hf_names]
    want_f32 = gguf_name.endswith(F32_SUFFIXES)
    values = [to_f32(dtype, v) if want_f32 else to_bf16_bits(dtype, v) for dtype, v in parts]
    return values[0] if len(values) == 1 else np.stack(values)


def write_hparams(writer, config):
    if config.get("model_type") != "qwen3_moe":
        raise SystemExit(f"model_type {config.get('model_type')!r}: only qwen3_moe is converted")
    head_dim = config.get("head_dim", config["hidden_size"] // config["num_attention_heads"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_expert_feed_forward_length(config["moe_intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(config.get("rope_theta") or config["rope_parameters"]["rope_theta"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_expert_count(num_experts(config))
    writer.add_expert_used_count(config["num_experts_per_tok"])
    if not config.get("norm_topk_prob", True):
        raise SystemExit("norm_topk_prob false: llama.cpp's qwen3moe always renormalizes the top-k weights")


def write_vocab(writer, gguf, tokenizer_dir, vocab_size):
    tokenizer = json.loads((tokenizer_dir / "tokenizer.json").read_text(encoding="utf-8"))
    if tokenizer["model"]["type"] != "BPE":
        raise SystemExit(f"tokenizer model {tokenizer['model']['type']}: only byte-level BPE is converted")
    by_id = {i: (text, NORMAL) for text, i in tokenizer["model"]["vocab"].items()}
    for added in tokenizer["added_tokens"]:
        text = added["content"]
        # llama.cpp treats added special tokens, and the <|...|> ones that are not marked special, as control.
        looks_special = text.startswith("<|") and text.endswith("|>")
        by_id[added["id"]] = (text, CONTROL if added["special"] or looks_special else USER_DEFINED)
    if max(by_id) >= vocab_size:
        raise SystemExit(f"token id {max(by_id)} is past the model's vocab_size {vocab_size}")
    tokens = [by_id.get(i, (f"[PAD{i}]", UNUSED)) for i in range(vocab_size)]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list([text for text, _ in tokens])
    writer.add_token_types([kind for _, kind in tokens])
    # Merges, special ids (eos, pad, ...) and add_bos from tokenizer.json / tokenizer_config.json.
    gguf.SpecialVocab(tokenizer_dir, load_merges=True, n_vocab=vocab_size).add_to_gguf(writer, quiet=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf-py", required=True, type=Path, help="llama.cpp checkout's gguf-py directory")
    parser.add_argument("--model-path", required=True, type=Path)
    parser.add_argument("--tokenizer-path", type=Path, help="tokenizer.json's directory (default: the model's)")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(args.gguf_py))
    import gguf  # llama.cpp's package, from the checkout named above

    config = json.loads((args.model_path / "config.json").read_text())
    owner = open_checkpoint(args.model_path)
    writer = gguf.GGUFWriter(args.out, "qwen3moe")
    writer.add_name(args.model_path.name)
    write_hparams(writer, config)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    write_vocab(writer, gguf, args.tokenizer_path or args.model_path, config["vocab_size"])

    # Tensor infos first, then each tensor's bytes in the same order, so only one tensor (one
    # layer's stacked experts at most) is in memory at a time.
    plan = gguf_tensor_plan(config, owner)
    for gguf_name, hf_names in plan:
        shape = list(owner[hf_names[0]].header[hf_names[0]]["shape"])
        if len(hf_names) > 1:
            shape = [len(hf_names)] + shape
        f32 = gguf_name.endswith(F32_SUFFIXES)
        dtype = np.dtype(np.float32 if f32 else np.uint16)
        writer.add_tensor_info(gguf_name, shape, dtype, int(np.prod(shape)) * dtype.itemsize,
                               raw_dtype=gguf.GGMLQuantizationType.F32 if f32 else gguf.GGMLQuantizationType.BF16)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for gguf_name, hf_names in plan:
        writer.write_tensor_data(read_tensor(owner, gguf_name, hf_names))
    writer.close()
    print(f"wrote {args.out}: {len(plan)} tensors, {args.out.stat().st_size / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
