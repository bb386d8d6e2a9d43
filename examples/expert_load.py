#!/usr/bin/python3
"""Expert-load statistics of a moe-serve over ZeroMQ (docs/zmq-protocol.md), with pyzmq, msgpack and numpy.

Per MoE layer the server counts how many tokens the router sent to each expert (with
--enable-return-routed-experts on). This prints, per layer, the load imbalance (the busiest expert's
count over the mean count: 1.0 is perfectly balanced) and the busiest experts:

    examples/expert_load.py --endpoint tcp://127.0.0.1:30001 [--reset] [--top 3] [--json]

--reset zeroes the counts in the same step as the read, so running it every N seconds gives the load
of each N-second window. --json prints the server's statistics as one JSON object instead.
"""
import argparse
import json
import sys
import uuid

import msgpack
import numpy as np
import zmq


def fetch_expert_load(socket, reset=False, timeout_ms=30000):
    """The server's statistics as a dict: num_moe_layers, num_experts, tokens, and counts as a numpy
    array [num_moe_layers, num_experts]. Raises RuntimeError on an error reply or a timeout."""
    rid = uuid.uuid4().hex
    socket.send(msgpack.packb({"op": "expert_load", "rid": rid, "reset": reset}))
    while True:
        if not socket.poll(timeout_ms):
            raise RuntimeError(f"no reply to the expert-load request within {timeout_ms} ms")
        reply = msgpack.unpackb(socket.recv(), raw=False)
        if "error" in reply:
            error = reply["error"]
            if error.get("rid") in (rid, None):
                raise RuntimeError(f"{error.get('code')} {error.get('type')}: {error['message']}")
        elif "expert_load" in reply and reply["meta_info"]["id"] == rid:
            load = dict(reply["expert_load"])
            counts = np.array(load["counts"], dtype=np.uint64)
            load["counts"] = counts.reshape(load["num_moe_layers"], load["num_experts"])
            return load
        # Anything else is another request's reply on a shared socket.


def imbalance(layer_counts):
    """The busiest expert's count over the mean count (1.0 = balanced); nan when nothing was counted."""
    mean = layer_counts.mean()
    return float(layer_counts.max() / mean) if mean > 0 else float("nan")


def busiest(layer_counts, top):
    """The `top` busiest experts of a layer as (expert, count), busiest first (lower id on ties)."""
    order = np.argsort(-layer_counts.astype(np.int64), kind="stable")[:top]
    return [(int(e), int(layer_counts[e])) for e in order]


def report(load, top):
    """Lines describing `load`: a summary, then one line per layer."""
    lines = [f"{load['tokens']} tokens counted over {load['num_moe_layers']} MoE layers of "
             f"{load['num_experts']} experts"]
    for layer, layer_counts in enumerate(load["counts"]):
        if layer_counts.sum() == 0:
            lines.append(f"layer {layer:3d}: no tokens counted")
            continue
        experts = ", ".join(f"{e} ({c})" for e, c in busiest(layer_counts, top))
        lines.append(f"layer {layer:3d}: imbalance {imbalance(layer_counts):.2f} (max/mean), busiest {experts}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True, help="the server's --zmq-endpoint")
    parser.add_argument("--reset", action="store_true", help="zero the counts after reading them (a new window)")
    parser.add_argument("--top", type=int, default=3, help="busiest experts to list per layer")
    parser.add_argument("--json", action="store_true", help="print the statistics as one JSON object")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the reply")
    args = parser.parse_args()

    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(args.endpoint)
    try:
        load = fetch_expert_load(socket, args.reset, int(args.timeout * 1000))
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(dict(load, counts=load["counts"].tolist())))
    else:
        print("\n".join(report(load, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
