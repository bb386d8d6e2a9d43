#!/usr/bin/python3
"""Perplexity of a text under the model a running moe-serve serves, from its prompt logprobs (HTTP).

The text is tokenized by the server (/tokenize, in pieces cut after a newline that is followed by a
character other than white space: no pre-token of a Qwen2-style split pattern spans such a cut, so
the pieces' tokens are the whole text's), cut into --ctx-token chunks (the tail shorter than one is
dropped), and each chunk is sent as /generate input_ids with return_logprob and logprob_start_len 0
(one generated token, not counted). Two figures from the same logprobs:

  ppl_all          every token of a chunk but its first, given the tokens before it in the chunk;
  ppl_second_half  the tokens after the chunk's first half only, as llama.cpp's llama-perplexity
                   scores (with -c CTX and no BOS, its figure for the same text and model).

usage: perplexity.py score URL --text FILE [--ctx 512] [--max-chunks N] [--label NAME] [--out JSON]
       perplexity.py tokenize URL --text FILE --out IDS     (int32 ids, native order: gptq_quantize.py)
       perplexity.py tokens-agree URL LLAMA_URL --text FILE (ours against llama-server's /tokenize)
"""
import argparse
import json
import math
import sys
import time
import urllib.request

import numpy as np

PIECE_CHARS = 200_000


def post(url, path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3600) as reply:
        return json.loads(reply.read())


def pieces(text):
    """The text cut into pieces of about PIECE_CHARS, each cut after a newline followed by a
    non-white-space character."""
    start = 0
    while start < len(text):
        end = min(len(text), start + PIECE_CHARS)
        while end < len(text) and not (text[end - 1] == "\n" and not text[end].isspace()):
            end += 1
        yield text[start:end]
        start = end


def tokenize(url, text):
    ids = []
    for piece in pieces(text):
        ids += post(url, "/tokenize", {"text": piece})["tokens"]
    return ids


def chunk_logprobs(url, chunk):
    """The logprob of each token of the chunk after its first, given the ones before it."""
    body = {"input_ids": chunk, "return_logprob": True, "logprob_start_len": 0,
            "sampling_params": {"max_new_tokens": 1, "temperature": 0}}
    rows = post(url, "/generate", body)["meta_info"]["input_token_logprobs"]
    if len(rows) != len(chunk) or [row[1] for row in rows] != chunk:
        raise SystemExit("the server's input_token_logprobs do not list the chunk's tokens")
    return [row[0] for row in rows[1:]]


def score(args):
    with open(args.text, encoding="utf-8") as handle:
        ids = tokenize(args.url, handle.read())
    n_chunks = len(ids) // args.ctx
    if args.max_chunks:
        n_chunks = min(n_chunks, args.max_chunks)
    first = args.ctx // 2  # llama-perplexity's: logits from position first on are scored
    nll_all = nll_half = 0.0
    n_all = n_half = 0
    start = time.time()
    for c in range(n_chunks):
        logprobs = chunk_logprobs(args.url, ids[c * args.ctx:(c + 1) * args.ctx])
        nll_all -= math.fsum(logprobs)
        n_all += len(logprobs)
        nll_half -= math.fsum(logprobs[first:])  # logprobs[i] is token i + 1's
        n_half += len(logprobs[first:])
    result = {"label": args.label, "url": args.url, "text": args.text, "text_tokens": len(ids), "ctx": args.ctx,
              "chunks": n_chunks, "scored_all": n_all, "scored_second_half": n_half,
              "nll_all": nll_all / n_all, "ppl_all": math.exp(nll_all / n_all),
              "nll_second_half": nll_half / n_half, "ppl_second_half": math.exp(nll_half / n_half),
              "seconds": round(time.time() - start, 1)}
    line = json.dumps(result)
    print(line)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def write_ids(args):
    with open(args.text, encoding="utf-8") as handle:
        ids = np.array(tokenize(args.url, handle.read()), dtype=np.int32)
    ids.tofile(args.out)
    print(f"{len(ids)} tokens -> {args.out}", file=sys.stderr)


def tokens_agree(args):
    with open(args.text, encoding="utf-8") as handle:
        text = handle.read()
    ours = tokenize(args.url, text)
    theirs = []
    for piece in pieces(text):  # llama-server's /tokenize adds no BOS unless asked
        theirs += post(args.llama_url, "/tokenize", {"content": piece})["tokens"]
    same = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    print(json.dumps({"ours": len(ours), "llama": len(theirs), "identical": ours == theirs, "first_difference": same,
                      "ours_there": ours[same:same + 8], "llama_there": theirs[same:same + 8]}))
    return 0 if ours == theirs else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score")
    s.add_argument("url")
    s.add_argument("--text", required=True)
    s.add_argument("--ctx", type=int, default=512)
    s.add_argument("--max-chunks", type=int, default=0)
    s.add_argument("--label", default="")
    s.add_argument("--out", help="append the result as one JSON line")
    t = sub.add_parser("tokenize")
    t.add_argument("url")
    t.add_argument("--text", required=True)
    t.add_argument("--out", required=True)
    a = sub.add_parser("tokens-agree")
    a.add_argument("url")
    a.add_argument("llama_url")
    a.add_argument("--text", required=True)
    args = p.parse_args()
    sys.exit({"score": score, "tokenize": write_ids, "tokens-agree": tokens_agree}[args.command](args))


if __name__ == "__main__":
    main()
