#!/usr/bin/env python3
"""Writes hf_differential.json: Hugging Face `tokenizers` encodings and decodings that the C++ tokenizer
must reproduce exactly (tests/tokenizer/hf_differential_test.cpp).

Run where `tokenizers` is installed (the file in the repository was made with tokenizers 0.23.2):
    python3 tests/tokenizer/make_hf_differential.py tests/data/qwen3-tokenizer/tokenizer.json OUT.json

Two kinds of cases:
  - "qwen3": seeded random texts (mixed scripts, emoji with ZWJ, combining marks, control characters,
    special tokens) on the real Qwen3 tokenizer, and random id sequences to decode;
  - "variants": tokenizer.json files built from a small slice of Qwen3's BPE (its first merges) with
    other normalizers, pre-tokenizers, Split behaviors and added-token flags, each with its own cases.
"""
import json
import random
import sys

from tokenizers import Tokenizer

MERGE_SLICE = 4000
QWEN_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
              r"|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = ["the", "The", " quick", "brown", " fox's", "I'll", "DON'T", "naïve", "über", "straße", "x", "_id",
         "e-mail", "cat", "cats", " cat", "_cat", "dog.", "a-b-c", "well--known", "3.14", "1,000,000", "ＦＵＬＬ",
         "ﬁne", "Å", "Å", "é", "é", "①②", "x²"]
EMOJI = ["\U0001F44D", "\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467",
         "\U0001F3F3\uFE0F\u200D\U0001F308", "\U0001F1EF\U0001F1F5"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\n\n\n", "   \n ", "\u00A0", "\u3000", "\u2028", "\u0085", " \t "]


def random_text(rng, specials, max_pieces=12):
    def code_points(low, high, count):
        return "".join(chr(rng.randint(low, high)) for _ in range(count))

    def piece():
        kind = rng.randint(0, 14)
        if kind == 0: return rng.choice(WORDS)
        if kind == 1: return rng.choice(EMOJI)
        if kind == 2: return rng.choice(SPACES)
        if kind == 3: return code_points(0x4E00, 0x9FFF, rng.randint(1, 6))
        if kind == 4: return code_points(0x0600, 0x06FF, rng.randint(1, 5))
        if kind == 5: return code_points(0x0900, 0x097F, rng.randint(1, 5))
        if kind == 6: return code_points(0x0410, 0x044F, rng.randint(1, 6))
        if kind == 7: return code_points(0x61, 0x7A, 1) + code_points(0x0300, 0x036F, rng.randint(1, 3))
        if kind == 8: return code_points(0x00, 0x1F, rng.randint(1, 3)) + code_points(0x7F, 0x9F, 1)
        if kind == 9: return code_points(0x30, 0x39, rng.randint(1, 8))
        if kind == 10: return code_points(0x21, 0x2F, rng.randint(1, 3))
        if kind == 11: return code_points(0xAC00, 0xD7A3, rng.randint(1, 4))
        if kind in (12, 13): return rng.choice(SPACES[:3] + [""]) + rng.choice(specials) + rng.choice(SPACES[:3] + [""])
        c = rng.randint(0x80, 0x10FFFF)
        return chr(c - 0x800 if 0xD800 <= c <= 0xDFFF else c)

    return "".join(piece() for _ in range(rng.randint(1, max_pieces)))


def encode_cases(tok, texts):
    cases = []
    for text in texts:
        tok.encode_special_tokens = False
        ids = tok.encode(text, add_special_tokens=False).ids
        tok.encode_special_tokens = True
        ids_split = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids, "ids_split_special": ids_split})
    tok.encode_special_tokens = False
    return cases


def decode_cases(tok, id_pool, rng, count):
    cases = []
    for _ in range(count):
        ids = [rng.choice(id_pool) for _ in range(rng.randint(1, 12))]
        cases.append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
                      "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)})
    return cases


def added(id_, content, special, **flags):
    token = {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": not special, "special": special}
    token.update(flags)
    return token


def byte_level(add_prefix_space=False, use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": False, "use_regex": use_regex}


def split(pattern, behavior, invert=False, literal=False):
    return {"type": "Split", "pattern": {"String" if literal else "Regex": pattern}, "behavior": behavior,
            "invert": invert}


def variant_specs(vocab):
    """name → (normalizer, pre_tokenizer, added tokens, extra model fields); added tokens follow `vocab`."""
    base = len(vocab)
    return {
        "gpt2_byte_level": (None, byte_level(True, True),
                            [added(base, "<|endoftext|>", True), added(base + 1, "<mask>", True, lstrip=True),
                             added(base + 2, "[R]", True, rstrip=True),
                             added(base + 3, "cat", False, single_word=True, normalized=False)], {}),
        "nfc_added_token_flags": ({"type": "NFC"}, {"type": "Sequence", "pretokenizers": [split(QWEN_REGEX, "Isolated"), byte_level()]},
                                  [added(base, "é", False, normalized=True), added(base + 1, "Å", False, normalized=True),
                                   added(base + 2, "ﬁ", False, normalized=False),
                                   added(base + 3, "<L>", True, lstrip=True, rstrip=True),
                                   added(base + 4, "dog", False, single_word=True, lstrip=True, normalized=False),
                                   added(base + 5, "<|im_end|>", True)], {}),
        "nfkc_sequence_digits": ({"type": "Sequence", "normalizers": [{"type": "NFKC"}]},
                                 {"type": "Sequence", "pretokenizers": [split(r"\p{N}{1,3}", "Isolated"),
                                                                        split(LLAMA3_REGEX, "Isolated"), byte_level()]},
                                 [added(base, "<|begin_of_text|>", True)], {}),
        "split_behaviors": (None, {"type": "Sequence", "pretokenizers": [
                                split("-", "MergedWithPrevious", literal=True), split(r"[aeiou]", "MergedWithNext"),
                                split(r"\s+", "Removed"), split(r"\p{P}", "Contiguous", invert=True),
                                byte_level(True, False)]},
                            [added(base, "<s>", True)], {}),
        "split_isolated_contiguous": (None, {"type": "Sequence", "pretokenizers": [
                                          split(r"\p{L}+", "Isolated", invert=True), split(r"\d", "Contiguous"),
                                          byte_level(False, True)]}, [], {}),
        "ignore_merges": ({"type": "NFC"}, {"type": "Sequence", "pretokenizers": [split(QWEN_REGEX, "Isolated"), byte_level()]},
                          [], {"ignore_merges": True}),
    }


def sliced_model(full):
    """The first MERGE_SLICE merges of the full model and the tokens they need (ids kept)."""
    vocab = full["model"]["vocab"]
    merges = full["model"]["merges"][:MERGE_SLICE]
    keep = {}
    for byte_token, id_ in vocab.items():
        if len(byte_token) == 1:
            keep[byte_token] = id_
    for merge in merges:
        left, right = merge if isinstance(merge, list) else merge.split(" ")
        for token in (left, right, left + right):
            keep[token] = vocab[token]
    # A few whole words that BPE with these merges would not build, so that ignore_merges matters.
    for word in ["Ġinformation", "Ġbetween", "Ġdevelopment", "ĠThe", "ing"]:
        keep[word] = vocab[word]
    # Contiguous ids in Qwen3's order: tokenizers numbers added tokens from the vocabulary size on,
    # whatever ids the file gives them, so a real file never has gaps.
    keep = {token: new_id for new_id, token in enumerate(sorted(keep, key=keep.get))}
    return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
            "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": keep, "merges": merges}


def main():
    full_path, out_path = sys.argv[1], sys.argv[2]
    full = json.load(open(full_path, encoding="utf-8"))
    rng = random.Random(20240607)

    qwen = Tokenizer.from_file(full_path)
    qwen_specials = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>", "<tool_call>"]
    qwen_texts = [random_text(rng, qwen_specials) for _ in range(600)]
    qwen_ids = list(range(qwen.get_vocab_size(with_added_tokens=True)))
    result = {"tokenizers_version": __import__("tokenizers").__version__,
              "qwen3": {"encode": encode_cases(qwen, qwen_texts), "decode": decode_cases(qwen, qwen_ids, rng, 200)},
              "base_model": sliced_model(full), "variants": []}

    for name, (normalizer, pre_tokenizer, added_tokens, model_fields) in variant_specs(result["base_model"]["vocab"]).items():
        spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
                "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": None,
                "decoder": byte_level(), "model": dict(result["base_model"], **model_fields)}
        tok = Tokenizer.from_str(json.dumps(spec))
        specials = [t["content"] for t in added_tokens] or ["<none>"]
        texts = [random_text(rng, specials, 8) for _ in range(150)]
        texts += ["cat", "a cat.", "cats", "_cat", "e\u0301", "A\u030A!", "x <L> y", "hot dog", "hotdog",
                  "  <mask> [R]  end", "well--known a-b-c", "Ｆｕｌｌ ①②③ x²", "information between"]
        id_pool = sorted(result["base_model"]["vocab"].values()) + [tok.token_to_id(t["content"]) for t in added_tokens]
        result["variants"].append({"name": name, "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
                                   "added_tokens": added_tokens, "model_fields": model_fields,
                                   "encode": encode_cases(tok, texts), "decode": decode_cases(tok, id_pool, rng, 60)})

    with open(out_path, "w", encoding="utf-8") as out:
        json.dump(result, out, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
