"""Code completion against a running moe-serve (HTTP): greedy, --concurrency requests at a time (default
1: batch 1), each prompt the 20 lines of a Python standard-library file that end with its first
function signature (this machine's /usr/bin/python3 library, files in sorted order, every --stride-th).
Prints output tokens per second over the measured requests and the server's speculative counters
(/metrics), and with --save / --compare the output ids, so runs with and without speculation can be
checked to give the same tokens (greedy speculation is lossless).
Usage: code_completion_bench.py URL [--prompts 16] [--new-tokens 128] [--concurrency 1] [--save FILE]
                                [--compare FILE]"""
import argparse
import json
import os
import sysconfig
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def code_prompts(count, stride):
    stdlib = sysconfig.get_paths()["stdlib"]
    prompts = []
    for name in sorted(os.listdir(stdlib))[::stride]:
        if not name.endswith(".py"):
            continue
        with open(os.path.join(stdlib, name), encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
        for i in range(20, len(lines)):
            if lines[i].lstrip().startswith("def ") and lines[i].rstrip().endswith(":"):
                prompts.append("".join(lines[i - 20:i + 1]))
                break
        if len(prompts) == count:
            break
    return prompts


def post(url, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3600) as reply:
        return reply.read()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--stride", type=int, default=7)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--save")
    p.add_argument("--compare")
    args = p.parse_args()

    def generate(prompt):
        body = {"text": prompt, "sampling_params": {"max_new_tokens": args.new_tokens, "temperature": 0,
                                                    "ignore_eos": True}}
        return json.loads(post(args.url, "/generate", body))["output_ids"]

    prompts = code_prompts(args.prompts, args.stride)
    generate(prompts[0])  # untimed: faults in pages and buffers
    start = time.time()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        outputs = list(pool.map(generate, prompts))  # in prompt order
    elapsed = time.time() - start
    tokens = sum(len(output) for output in outputs)
    print(f"{len(prompts)} prompts, {tokens} tokens in {elapsed:.2f} s: {tokens / elapsed:.1f} tokens/s")
    for line in post(args.url, "/metrics").decode().splitlines():
        if line.startswith("moe_spec_") and not line.startswith("#"):
            print(line)
    if args.save:
        with open(args.save, "w") as handle:
            json.dump(outputs, handle)
    if args.compare:
        with open(args.compare) as handle:
            reference = json.load(handle)
        same = sum(a == b for a, b in zip(outputs, reference))
        print(f"outputs equal to {args.compare}'s: {same} of {len(outputs)}")


if __name__ == "__main__":
    main()
