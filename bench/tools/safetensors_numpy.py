"""Reading and writing .safetensors files with numpy only (Debian has no `safetensors` package), for
the bench tools that convert or quantize checkpoints (gguf_from_checkpoint.py, gptq_quantize.py)."""
import json
import struct

import numpy as np

# Safetensors dtype name -> the numpy type its bytes are viewed as (BF16 as its uint16 bit patterns).
DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "I32": np.int32}


class SafetensorsFile:
    """The tensors of one .safetensors file, memory-mapped; values are read as stored."""

    def __init__(self, path):
        with open(path, "rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            self.header = json.loads(f.read(header_len))
        self.header.pop("__metadata__", None)
        self.data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
        self.path = path

    def names(self):
        return self.header.keys()

    def read(self, name):
        """(dtype name, values viewed as DTYPES[dtype] in the tensor's shape)."""
        info = self.header[name]
        if info["dtype"] not in DTYPES:
            raise SystemExit(f"{self.path}: tensor {name} has dtype {info['dtype']}; only {', '.join(DTYPES)} are read")
        begin, end = info["data_offsets"]
        return info["dtype"], self.data[begin:end].view(DTYPES[info["dtype"]]).reshape(info["shape"])


def open_checkpoint(model_dir):
    """name -> SafetensorsFile holding it, over every shard of a model directory (a pathlib.Path)."""
    owner = {}
    for path in sorted(model_dir.glob("*.safetensors")):
        shard = SafetensorsFile(path)
        for name in shard.names():
            owner[name] = shard
    if not owner:
        raise SystemExit(f"no .safetensors files in {model_dir}")
    return owner


def to_f32(dtype, values):
    if dtype == "BF16":
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32)


def to_bf16_bits(dtype, values):
    """bf16 bit patterns (uint16); f16/f32 are rounded to nearest even, as torch's .to(bfloat16)."""
    if dtype == "BF16":
        return values
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def write_safetensors(path, tensors):
    """tensors: name -> (dtype name, numpy array whose bytes are that dtype's), written in name order."""
    header, offset = {}, 0
    for name in sorted(tensors):
        dtype, values = tensors[name]
        if values.dtype != DTYPES[dtype]:
            raise ValueError(f"{name}: {dtype} written from a {values.dtype} array")
        header[name] = {"dtype": dtype, "shape": list(values.shape), "data_offsets": [offset, offset + values.nbytes]}
        offset += values.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for name in sorted(tensors):
            f.write(np.ascontiguousarray(tensors[name][1]).tobytes())
