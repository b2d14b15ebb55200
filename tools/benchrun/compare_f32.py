"""Baseline for `ckptcheck diff --values`: what people write with numpy.

Decodes every tensor of two safetensors files to float32 (BF16 by widening
its bits) and compares them element by element.
"""
import json
import struct
import sys

import numpy as np


def tensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def load(path, info, base):
    begin, end = info["data_offsets"]
    raw = np.fromfile(path, dtype=np.uint8, count=end - begin, offset=base + begin)
    if info["dtype"] == "BF16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return raw.view({"F32": np.float32, "F16": np.float16}[info["dtype"]]).astype(np.float32)


a_path, b_path = sys.argv[1], sys.argv[2]
a, a_base = tensors(a_path)
b, b_base = tensors(b_path)
differ = 0
for name in sorted(a.keys() & b.keys()):
    x, y = load(a_path, a[name], a_base), load(b_path, b[name], b_base)
    if not np.array_equal(x, y, equal_nan=True):
        differ += 1
        np.abs(x - y).max()
print(f"{len(a.keys() & b.keys())} compared, {differ} differ")
