#!/usr/bin/python3
"""Rebuilds a split of the code model's corpus (bench/tools/train_code_model.py) from the Python sources
of this machine, as one text file: the held-out split for perplexity, the train split for calibrating
GPTQ (bench/tools/gptq_quantize.py).

The corpus list (bench/history/train_code_model_corpus.tsv.gz: split, bytes, path relative to its
site-packages) was made on the GPU machine; a file of it counts as present here when a site-packages
or dist-packages directory of this machine holds the same relative path with the same size. Files
are taken in the training script's order (the SHA-256 of the path) until --max-bytes. Each file's
text is stripped of leading and trailing white space and ends with one newline, so every file starts
with a character that is not white space after a newline: no pre-token of the code model's tokenizer
(Qwen2's split pattern) spans that boundary, so the file tokenizes to the concatenation of its
pieces' tokens when cut there (bench/tools/perplexity.py relies on it), as llama.cpp tokenizes it
whole.

usage: code_corpus.py --split heldout|train [--max-bytes N] --out FILE [--list FILE]
"""
import argparse
import glob
import gzip
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "history", "train_code_model_corpus.tsv.gz")


def local_roots():
    patterns = ["/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
                os.path.expanduser("~/.pyenv/versions/*/lib/python3*/site-packages")]
    return sorted({os.path.realpath(p) for pattern in patterns for p in glob.glob(pattern) if os.path.isdir(p)})


def corpus_rows(split):
    with gzip.open(CORPUS, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            row_split, size, rel = line.rstrip("\n").split("\t")
            if row_split == split:
                yield int(size), rel


def present_files(split, roots):
    """(rel, local path) of the split's files found here, in the training script's hash order."""
    found = []
    for size, rel in corpus_rows(split):
        for root in roots:
            path = os.path.join(root, rel)
            if os.path.isfile(path) and os.path.getsize(path) == size:
                found.append((hashlib.sha256(rel.encode()).hexdigest(), rel, path))
                break
    return [(rel, path) for _, rel, path in sorted(found)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", choices=("heldout", "train"), required=True)
    p.add_argument("--max-bytes", type=float, default=float("inf"))
    p.add_argument("--out", required=True)
    p.add_argument("--list", help="also write the relative paths used, one a line")
    args = p.parse_args()
    roots = local_roots()
    files = present_files(args.split, roots)
    used, total = [], 0
    with open(args.out, "w", encoding="utf-8") as out:
        for rel, path in files:
            if total >= args.max_bytes:
                break
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read().strip()
            except UnicodeDecodeError:
                continue  # the training script skipped these too
            if text:
                out.write(text + "\n")
                total += len(text.encode()) + 1
                used.append(rel)
    if args.list:
        with open(args.list, "w", encoding="utf-8") as handle:
            handle.write("".join(rel + "\n" for rel in used))
    rows = sum(1 for _ in corpus_rows(args.split))
    print(f"{args.split}: {len(files)} of the corpus list's {rows} files are on this machine "
          f"(roots {', '.join(roots)}); wrote {len(used)} files, {total} bytes to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
