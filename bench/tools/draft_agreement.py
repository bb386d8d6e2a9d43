"""How often a draft model's greedy choice agrees with the target's greedy continuation, and the
acceptance a STANDALONE chain draft would get from it, without running speculation: the target
generates greedily, then the draft scores prompt + output in one prefill (prompt logprobs, top-1).
With greedy chain drafting every draft token is the draft's argmax over an accepted prefix, which
is exactly what this teacher-forced pass computes, so the simulated acceptance is the real one.
Prompts are bench_speculative's two workloads shaped alike: 64 random ids, or 16 random ids said
four times. Needs a running moe-serve (HTTP) of the draft and, unless --outputs names a file that
holds them already, one of the target, whose replies are then saved there for the next draft.
Usage: draft_agreement.py DRAFT_URL [--target-url URL] [--outputs FILE] [--prompts 8] [--new-tokens 64]
       [--steps 4]"""
import argparse
import json
import os
import random
import urllib.request


def post(url, body):
    request = urllib.request.Request(url + "/generate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3600) as reply:
        return json.loads(reply.read())


def prompts(count, repetitive, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        distinct = 16 if repetitive else 64
        ids = [rng.randint(0, 150000) for _ in range(distinct)]
        out.append((ids * (64 // distinct))[:64])
    return out


def target_outputs(target_url, batch, new_tokens):
    answers = post(target_url, {"input_ids": batch, "sampling_params": {
        "temperature": 0, "max_new_tokens": new_tokens, "ignore_eos": True}})
    return [answer["output_ids"] for answer in answers]


def agreements(draft_url, batch, outputs):
    """Per prompt: whether the draft's argmax equals the target's token at output positions 1.."""
    result = []
    for prompt, output in zip(batch, outputs):
        scored = post(draft_url, {"input_ids": prompt + output, "return_logprob": True,
                                  "logprob_start_len": len(prompt) + 1, "top_logprobs_num": 1,
                                  "sampling_params": {"temperature": 0, "max_new_tokens": 1}})
        tops = scored["meta_info"]["input_top_logprobs"]
        result.append([top[0][1] == token for top, token in zip(tops, output[1:])])
    return result


def chain_acceptance(agree, steps):
    """Verifies and tokens of greedy chain drafting of `steps` tokens over one reply's agreements."""
    verifies, tokens, position = 0, 1, 0  # the first token comes from the prefill
    while position < len(agree):
        accepted = 0
        while accepted < steps and position + accepted < len(agree) and agree[position + accepted]:
            accepted += 1
        verifies += 1
        tokens += accepted + 1
        position += accepted + 1
    return verifies, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("draft_url")
    parser.add_argument("--target-url")
    parser.add_argument("--outputs", help="a JSON file of the target's replies (read, or written when missing)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    batches = [prompts(args.prompts, repetitive, 7 + repetitive) for repetitive in (0, 1)]
    if args.outputs and os.path.exists(args.outputs):
        with open(args.outputs) as f:
            outputs = json.load(f)
    else:
        outputs = [target_outputs(args.target_url, batch, args.new_tokens) for batch in batches]
        if args.outputs:
            with open(args.outputs, "w") as f:
                json.dump(outputs, f)
    for repetitive in (0, 1):
        agree = agreements(args.draft_url, batches[repetitive], outputs[repetitive])
        flat = [a for reply in agree for a in reply]
        verifies = tokens = 0
        for reply in agree:
            v, t = chain_acceptance(reply, args.steps)
            verifies, tokens = verifies + v, tokens + t
        print(json.dumps({"workload": "repetitive" if repetitive else "random", "positions": len(flat),
                          "agreement": round(sum(flat) / len(flat), 4), "verifies": verifies,
                          "tokens_per_verify": round((tokens - len(agree)) / verifies, 3)}))


if __name__ == "__main__":
    main()
