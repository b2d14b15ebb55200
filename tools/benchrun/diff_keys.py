"""Baseline for `ckptcheck diff` on headers: what people write by hand.

Reads every shard header of two checkpoint folders with json and diffs key
sets, shapes and dtypes.
"""
import glob
import json
import os
import struct
import sys


def headers(folder):
    tensors = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        for name, info in header.items():
            tensors[name] = (info["dtype"], tuple(info["shape"]))
    return tensors


pub, exp = headers(sys.argv[1]), headers(sys.argv[2])
missing = sorted(set(pub) - set(exp))
unexpected = sorted(set(exp) - set(pub))
shapes = [k for k in pub.keys() & exp.keys() if pub[k][1] != exp[k][1]]
dtypes = [k for k in pub.keys() & exp.keys() if pub[k][0] != exp[k][0]]
print(f"{len(missing)} missing, {len(unexpected)} unexpected, {len(shapes)} shapes, {len(dtypes)} dtypes")
