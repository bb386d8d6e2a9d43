#!/usr/bin/env python3
"""The GPU benchmark's workload through Hugging Face transformers' generate, as a reference point
for bench_cuda: the same checkpoint in float32 on the GPU, greedy, random prompts of 128 tokens.
Decode tokens/s at batch 1, 8, 32, 128 is batch * 32 new tokens over the time generate takes for
33 new tokens minus the time it takes for 1 (the prefill and first token); prefill tokens/s is one
512-token prompt over the time of generate with one new token.

usage: bench/tools/hf_generate_bench.py MODEL_DIR [BATCH ...]
"""
import sys
import time

import torch
import transformers

CONTEXT, NEW_TOKENS, PROMPT = 128, 32, 512


def timed_generate(model, ids, new_tokens, repeats=3):
    """Median seconds of generate(ids) producing exactly new_tokens tokens."""
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        assert out.shape[1] == ids.shape[1] + new_tokens
    return sorted(times)[len(times) // 2]


def main():
    model_dir = sys.argv[1]
    batches = [int(b) for b in sys.argv[2:]] or [1, 8, 32, 128]
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).cuda().eval()
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 as bench_cuda computes it
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    with torch.inference_mode():
        ids = torch.randint(vocab, (1, PROMPT), generator=generator).cuda()
        timed_generate(model, ids, 1, repeats=1)  # warm-up
        prefill = timed_generate(model, ids, 1)
        print(f"| prefill {PROMPT} tokens | {PROMPT / prefill:.0f} tok/s | {prefill * 1e3:.1f} ms |")
        for batch in batches:
            ids = torch.randint(vocab, (batch, CONTEXT), generator=generator).cuda()
            timed_generate(model, ids, 2, repeats=1)  # warm-up at this shape
            first = timed_generate(model, ids, 1)
            full = timed_generate(model, ids, 1 + NEW_TOKENS)
            step = (full - first) / NEW_TOKENS
            print(f"| decode batch {batch} | {batch / step:.1f} tok/s | {step * 1e3:.2f} ms/step |", flush=True)


if __name__ == "__main__":
    main()
