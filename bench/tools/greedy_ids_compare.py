#!/usr/bin/python3
"""Checks a GGUF conversion with llama.cpp itself: the greedy ids llama-server generates for some
prompts (given as token ids) against the ids moe-serve generates for the same prompts. The
benchmark checkpoints are random, so text means nothing; ids and their log-probabilities do.

Prints, per prompt, how many leading ids agree, and the first generated token's top-5 ids from
both servers with their log-probabilities. Exit status 0 when every prompt's first token agrees.

usage: /usr/bin/python3 bench/tools/greedy_ids_compare.py --moe-url http://127.0.0.1:P1 \
           --llama-url http://127.0.0.1:P2 [--prompts 4] [--prompt-len 16] [--new-tokens 32]
"""
import argparse
import json
import math
import random
import sys
import urllib.request


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as reply:
        return json.loads(reply.read())


def moe_greedy(base, prompt, new_tokens):
    """(generated ids, [(id, logprob)] top-5 of the first generated token) from SGLang's /generate."""
    reply = post(base + "/generate", {
        "input_ids": prompt, "return_logprob": True, "top_logprobs_num": 5,
        "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0, "ignore_eos": True}})
    top = [(token, logprob) for logprob, token, *_ in reply["meta_info"]["output_top_logprobs"][0]]
    return reply["output_ids"], top


def llama_greedy(base, prompt, new_tokens):
    """The same from llama-server's native /completion (probabilities after softmax, no sampler)."""
    reply = post(base + "/completion", {
        "prompt": prompt, "n_predict": new_tokens, "temperature": 0, "ignore_eos": True, "cache_prompt": False,
        "return_tokens": True, "n_probs": 5, "post_sampling_probs": False})
    first = reply["completion_probabilities"][0]["top_logprobs"]
    return reply["tokens"], [(entry["id"], entry["logprob"]) for entry in first]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moe-url", required=True)
    parser.add_argument("--llama-url", required=True)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=151643, help="prompt ids in [0, N): the ordinary tokens")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    first_tokens_agree = True
    for index in range(args.prompts):
        prompt = [rng.randrange(args.vocab_size) for _ in range(args.prompt_len)]
        ours, our_top = moe_greedy(args.moe_url, prompt, args.new_tokens)
        theirs, their_top = llama_greedy(args.llama_url, prompt, args.new_tokens)
        agree = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        first_tokens_agree &= agree > 0
        print(f"prompt {index}: {agree}/{args.new_tokens} leading ids agree")
        print(f"  moe-serve    ids {ours[:12]}")
        print(f"  llama-server ids {theirs[:12]}")
        print("  first token top-5, moe-serve:    " + ", ".join(f"{t}:{p:.4f}" for t, p in our_top))
        print("  first token top-5, llama-server: " + ", ".join(f"{t}:{p:.4f}" for t, p in their_top))
        common = {t: p for t, p in our_top}.keys() & {t: p for t, p in their_top}.keys()
        gaps = [abs(dict(our_top)[t] - dict(their_top)[t]) for t in common]
        print(f"  top-5 ids in common: {len(common)}, largest logprob difference among them: "
              f"{max(gaps) if gaps else math.nan:.4f}")
    return 0 if first_tokens_agree else 1


if __name__ == "__main__":
    sys.exit(main())
