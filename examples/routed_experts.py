#!/usr/bin/python3
"""Decode the routed experts (and router weights) of a moe-engine reply into numpy arrays.

A reply's meta_info (HTTP /generate, the ZeroMQ protocol, or the OpenAI endpoints' choice objects)
carries, when the request asked for them:

    routed_experts        base64 text (HTTP) or raw bytes (ZeroMQ with raw routing) of a flat
                          little-endian array
    routed_experts_shape  [rows, num_moe_layers, top_k]
    routed_experts_dtype  "int32" (default), "int16" or "uint8"
    router_weights        likewise, with router_weights_shape / router_weights_dtype
                          ("float32" or "float16"), when return_router_weights was set

Row i holds the experts chosen when the token at position i (counting from
routed_experts_start_len) was the model's input, in descending router probability.
With return_draft_routed_experts (a server with an MoE STANDALONE draft model), draft_routed_experts
(with draft_routed_experts_shape / _dtype) holds the draft model's rows of the same positions:
routed_experts(meta_info, name="draft_routed_experts").

    from routed_experts import routed_experts, router_weights
    ids = routed_experts(reply["meta_info"])          # np.ndarray [rows, layers, top_k]
    weights = router_weights(reply["meta_info"])      # None unless asked for

An SGLang server sends no shape or dtype: pass num_moe_layers and top_k (dtype defaults to int32).

Run `python3 routed_experts.py --self-test` to check the decoder, or `--check FILE` to compare the
arrays of FILE's "meta_info" with its "expected_routed_experts" / "expected_router_weights".
"""
import argparse
import base64
import json
import sys

import numpy as np

_DTYPES = {"int32", "int16", "uint8", "float32", "float16"}


def decode_array(data, shape=None, dtype="int32", num_moe_layers=None, top_k=None):
    """A numpy array from base64 text or raw bytes of a flat little-endian array.

    `shape` is the reply's [rows, layers, top_k]; without it, num_moe_layers and top_k give the
    trailing dimensions and the row count follows from the data's length.
    """
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(_DTYPES)}")
    raw = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else base64.b64decode(data, validate=True)
    flat = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
    if shape is None:
        if num_moe_layers is None or top_k is None:
            raise ValueError("no shape in the reply: pass num_moe_layers and top_k")
        shape = (-1, num_moe_layers, top_k)
    return flat.reshape(tuple(shape)).astype(np.dtype(dtype).newbyteorder("="))


def _field(meta_info, name, default_dtype, num_moe_layers, top_k):
    if meta_info.get(name) is None:
        return None
    return decode_array(meta_info[name], meta_info.get(name + "_shape"), meta_info.get(name + "_dtype", default_dtype),
                        num_moe_layers, top_k)


def routed_experts(meta_info, num_moe_layers=None, top_k=None, name="routed_experts"):
    """The expert ids [rows, layers, top_k] of meta_info[name] (e.g. "prompt_routed_experts"), or None."""
    return _field(meta_info, name, "int32", num_moe_layers, top_k)


def router_weights(meta_info, num_moe_layers=None, top_k=None):
    """The normalised top-k router weights [rows, layers, top_k], or None when not asked for."""
    return _field(meta_info, "router_weights", "float32", num_moe_layers, top_k)


def _self_test():
    # ids [[1, 2]], [[3, 258]] as int16 little-endian: 01 00 02 00 03 00 02 01.
    meta = {"routed_experts": "AQACAAMAAgE=", "routed_experts_shape": [2, 1, 2], "routed_experts_dtype": "int16"}
    ids = routed_experts(meta)
    assert ids.shape == (2, 1, 2) and ids.tolist() == [[[1, 2]], [[3, 258]]], ids
    assert router_weights(meta) is None

    rng = np.random.default_rng(0)
    expected = rng.integers(0, 128, size=(5, 3, 4))
    for dtype in ("int32", "int16", "uint8"):
        blob = expected.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
        for data in (base64.b64encode(blob).decode(), blob):  # HTTP base64, ZeroMQ raw bytes
            meta = {"routed_experts": data, "routed_experts_shape": [5, 3, 4], "routed_experts_dtype": dtype}
            assert np.array_equal(routed_experts(meta), expected), dtype
    # SGLang: base64 of int32 only, the caller knows the model's shape.
    sglang = {"routed_experts": base64.b64encode(expected.astype("<i4").tobytes()).decode()}
    assert np.array_equal(routed_experts(sglang, num_moe_layers=3, top_k=4), expected)

    weights = rng.random((5, 3, 4)).astype(np.float32)
    for dtype, tolerance in (("float32", 0.0), ("float16", 1e-3)):
        meta = {"router_weights": base64.b64encode(weights.astype(np.dtype(dtype).newbyteorder("<")).tobytes()).decode(),
                "router_weights_shape": [5, 3, 4], "router_weights_dtype": dtype}
        assert np.allclose(router_weights(meta), weights, atol=tolerance, rtol=0), dtype

    for bad in ({"routed_experts": "AQAC", "routed_experts_dtype": "int64", "routed_experts_shape": [1, 1, 1]},
                {"routed_experts": "AQAC"}):
        try:
            routed_experts(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")
    print("routed_experts.py self-test: ok")


def _check(path):
    with open(path) as f:
        case = json.load(f)
    meta = case["meta_info"]
    ids = routed_experts(meta)
    expected = np.array(case["expected_routed_experts"])
    if ids is None or ids.shape != expected.shape or not np.array_equal(ids, expected):
        print(f"routed_experts differ: got {None if ids is None else ids.shape}, expected {expected.shape}")
        return 1
    if "expected_router_weights" in case:
        weights = router_weights(meta)
        want = np.array(case["expected_router_weights"], dtype=np.float32)
        if weights is None or weights.shape != want.shape or not np.allclose(weights, want, atol=1e-3, rtol=0):
            print("router_weights differ")
            return 1
    print(f"{path}: {ids.shape[0]} rows match")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="check the decoder on hand-made replies")
    parser.add_argument("--check", metavar="FILE", help="compare FILE's meta_info arrays with its expected ones")
    args = parser.parse_args()
    if args.check:
        return _check(args.check)
    _self_test()
    return 0


if __name__ == "__main__":
    sys.exit(main())
