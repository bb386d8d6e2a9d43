#!/usr/bin/python3
"""A picture of a moe-serve's expert load (the JSON of GET /expert_load, docs/http-api.md): a heatmap of
each MoE layer's share of routed tokens per expert, and per layer how skewed the load is, printed as a
Markdown table:

  max/mean  the busiest expert's count over the mean count (1 = balanced; at most E / top_k, when it
            takes every token);
  CV        the counts' standard deviation over their mean;
  entropy   of the shares, over log(E) (1 = balanced);
  idle      experts that got no token.

Needs matplotlib (Debian's python3-matplotlib; a bench tool only, not a dependency of the engine).
usage: expert_load_plot.py LOAD.json --png OUT.png [--title TEXT]
"""
import argparse
import json

import numpy as np


def skew(counts):
    """Per layer: (max/mean, CV, normalized entropy, idle experts) of counts [layers, experts]."""
    mean = counts.mean(axis=1)
    share = counts / counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(share > 0, share * np.log(share), 0.0).sum(axis=1) / np.log(counts.shape[1])
    return counts.max(axis=1) / mean, counts.std(axis=1) / mean, entropy, (counts == 0).sum(axis=1)


def plot(counts, tokens, png, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers, experts = counts.shape
    share = counts / counts.sum(axis=1, keepdims=True)
    max_mean, cv, entropy, _ = skew(counts)
    fig, (heat, bars) = plt.subplots(1, 2, figsize=(12, 0.6 * layers + 2.2), width_ratios=[3, 1], sharey=True)
    image = heat.imshow(share * 100, cmap="viridis", aspect="auto")
    for layer in range(layers):
        for expert in range(experts):
            value = share[layer, expert] * 100
            heat.text(expert, layer, f"{value:.1f}" if value < 1 else f"{value:.0f}", ha="center", va="center", fontsize=7,
                      color="white" if value < share.max() * 60 else "black")
    heat.set_xticks(range(experts))
    heat.set_yticks(range(layers))
    heat.set_xlabel("expert")
    heat.set_ylabel("MoE layer")
    heat.set_title(f"share of the layer's expert choices (%), {tokens:,} tokens")
    fig.colorbar(image, ax=heat, fraction=0.03, pad=0.01)
    bars.barh(np.arange(layers) - 0.2, max_mean, height=0.4, label="max / mean")
    bars.barh(np.arange(layers) + 0.2, cv, height=0.4, label="CV")
    for layer in range(layers):
        bars.text(max(max_mean[layer], cv[layer]) + 0.05, layer, f"H={entropy[layer]:.2f}", va="center", fontsize=8)
    bars.axvline(1.0, color="grey", linewidth=0.8, linestyle=":")
    bars.set_xlabel("skew (H: entropy / log E)")
    bars.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8)
    bars.set_xlim(0, max(max_mean) * 1.35)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("load")
    p.add_argument("--png", required=True)
    p.add_argument("--title", default="")
    args = p.parse_args()
    with open(args.load) as f:
        load = json.load(f)
    counts = np.array(load["counts"], dtype=np.float64).reshape(load["num_moe_layers"], load["num_experts"])
    plot(counts, load["tokens"], args.png, args.title)
    print("| MoE layer | max/mean | CV | entropy / log E | idle experts | least-used share |")
    print("| --- | --- | --- | --- | --- | --- |")
    share = counts / counts.sum(axis=1, keepdims=True)
    for layer, (m, c, h, idle) in enumerate(zip(*skew(counts))):
        print(f"| {layer} | {m:.2f} | {c:.2f} | {h:.3f} | {idle} | {share[layer].min() * 100:.2f}% |")


if __name__ == "__main__":
    main()
