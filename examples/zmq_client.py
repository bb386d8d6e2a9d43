#!/usr/bin/python3
"""A client of moe-serve's ZeroMQ endpoint (docs/zmq-protocol.md) with pyzmq, msgpack and numpy.

Start a server:
    moe-serve --model-path MODEL --zmq-endpoint tcp://127.0.0.1:30001 --enable-return-routed-experts
then:
    examples/zmq_client.py --endpoint tcp://127.0.0.1:30001 --text "The capital of France is" \
        --max-new-tokens 16 --routed-experts
--json prints one JSON object per request (ids, text, finish reason, routed experts as nested lists).

On a server with an MoE STANDALONE draft model (--speculative-algorithm STANDALONE
--speculative-draft-model-path DRAFT), --draft-routed-experts also asks for the draft model's own routing
of the same positions (return_draft_routed_experts, docs/speculative.md) and prints it apart.
"""
import argparse
import base64
import json
import sys
import uuid

import msgpack
import numpy as np
import zmq


def routed_experts(meta_info, name="routed_experts"):
    """meta_info's routed experts (or, name "draft_routed_experts", the draft model's) as a numpy array
    of shape [rows, num_moe_layers, top_k], or None."""
    data = meta_info.get(name)
    if data is None:
        return None
    raw = data if isinstance(data, bytes) else base64.b64decode(data)
    return np.frombuffer(raw, dtype=meta_info[name + "_dtype"]).reshape(meta_info[name + "_shape"])


def generate(socket, request, on_chunk=None, timeout_ms=60000):
    """Sends `request` (a dict with SGLang's /generate fields) and returns the whole reply as a dict:
    text, output_ids, meta_info, and routed_experts and draft_routed_experts (numpy) when asked. A streamed request's chunks
    are joined (and each is passed to on_chunk). Raises RuntimeError on an error reply or a timeout."""
    request = dict(request)
    request.setdefault("rid", uuid.uuid4().hex)
    socket.send(msgpack.packb(request, use_bin_type=True))
    text, ids, meta = "", [], {}
    rows = {"routed_experts": [], "draft_routed_experts": []}
    while True:
        if not socket.poll(timeout_ms):
            raise RuntimeError(f"no reply to {request['rid']} within {timeout_ms} ms")
        reply = msgpack.unpackb(socket.recv(), raw=False)
        if "error" in reply:
            error = reply["error"]
            raise RuntimeError(f"{error.get('code')} {error.get('type')}: {error['message']}")
        meta = reply["meta_info"]
        if meta["id"] != request["rid"]:
            continue  # another request's reply on a shared socket
        if on_chunk:
            on_chunk(reply)
        text += reply["text"]
        ids += reply["output_ids"]
        for name, joined in rows.items():
            experts = routed_experts(meta, name)
            if experts is not None:
                joined.append(experts)
        if meta["finish_reason"] is not None:
            break
    return dict({"text": text, "output_ids": ids, "meta_info": meta},
                **{name: np.concatenate(joined) if joined else None for name, joined in rows.items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True, help="the server's --zmq-endpoint")
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--text", action="append", help="a prompt (repeat for several requests)")
    prompt.add_argument("--input-ids", action="append", help="a prompt as comma-separated token ids (repeatable)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--ignore-eos", action="store_true")
    parser.add_argument("--routed-experts", action="store_true", help="ask for the routed experts of every token")
    parser.add_argument("--draft-routed-experts", action="store_true",
                        help="also ask for the STANDALONE draft model's routed experts of the same tokens "
                             "(implies --routed-experts)")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--no-speculative", action="store_true",
                        help="decode without speculation on a server started with --speculative-algorithm")
    parser.add_argument("--json", action="store_true", help="print one JSON object per request")
    args = parser.parse_args()

    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(args.endpoint)
    prompts = [{"text": t} for t in args.text] if args.text else [
        {"input_ids": [int(i) for i in ids.split(",")]} for ids in args.input_ids]
    for prompt in prompts:
        request = dict(prompt, stream=args.stream,
                       return_routed_experts=args.routed_experts or args.draft_routed_experts,
                       return_draft_routed_experts=args.draft_routed_experts, speculative=not args.no_speculative,
                       sampling_params={"max_new_tokens": args.max_new_tokens, "temperature": args.temperature,
                                        "ignore_eos": args.ignore_eos})
        try:
            result = generate(socket, request)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        routing = {"routed_experts": result["routed_experts"]}
        if args.draft_routed_experts:
            routing["draft_routed_experts"] = result["draft_routed_experts"]
        if args.json:
            print(json.dumps(dict({"text": result["text"], "output_ids": result["output_ids"],
                                   "finish_reason": result["meta_info"]["finish_reason"]},
                                  **{name: None if experts is None else experts.tolist()
                                     for name, experts in routing.items()})))
        else:
            print(f"{result['text']!r} ({len(result['output_ids'])} tokens, "
                  f"finish {result['meta_info']['finish_reason']})")
            for name, experts in routing.items():
                if experts is not None:
                    print(f"{name.replace('_', ' ')}: {experts.shape} {experts.dtype}; "
                          f"first row, layer 0: {experts[0, 0].tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
