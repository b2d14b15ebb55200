#!/usr/bin/python3
"""Writes the torch.save fixtures of package torchsave, and expected.json:
each file's tensors with dtype, shape, storage layout, values and their
contiguous little-endian bytes (hex), as torch itself reads them back.

Run with Debian's python3-torch (1.13): /usr/bin/python3 gen.py
The fixtures are committed; tests read them without torch.
"""
import json
import os

import torch

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}


def raw(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes().hex()


def describe(sd):
    out = {}
    for name, t in sd.items():
        out[name] = {
            "dtype": DTYPES[t.dtype],
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "storage_offset": t.storage_offset(),
            "contiguous": t.is_contiguous(),
            "values": t.float().flatten().tolist(),
            "hex": raw(t),
        }
    return out


expected = {}


def save(name, sd, **kw):
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(sd, path, **kw)
    back = torch.load(path)
    assert list(back) == list(sd)
    expected[name] = describe(back)


w = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4
save("dtypes.bin", {
    "f32": w,
    "f16": torch.tensor([1.0, -2.5, 65504.0, 0.0], dtype=torch.float16),
    "bf16": torch.tensor([[1.0, -0.5], [3.0, 1e10]], dtype=torch.bfloat16),
    "i64": torch.tensor([1, -2, 1 << 40], dtype=torch.int64),
    "i32": torch.tensor([7, -7], dtype=torch.int32),
    "u8": torch.tensor([0, 255], dtype=torch.uint8),
    "bool": torch.tensor([True, False]),
    "scalar": torch.tensor(3.5),
})

emb = torch.randn(4, 3)
save("tied.bin", {
    "embed.weight": emb,
    "lm_head.weight": emb,      # tied: the same storage
    "row2": emb[2],             # a view at an element offset
})

x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
save("views.pt", {
    "transposed": x.t(),                                   # strides (1, 3)
    "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),     # strides (0, 1)
    "plain": x,
})

# Strided views torch.save keeps as views of their storage: a column
# slice, a batch of transposes, a slice of a transpose, a row of a
# transpose, an expand along the rows.
y = torch.arange(24, dtype=torch.bfloat16).reshape(2, 3, 4)
save("strided.pt", {
    "columns": x[:, 1:3],                                  # strides (3, 1) at 1
    "batch_transposed": y.transpose(1, 2),                 # strides (12, 1, 4)
    "transposed_slice": y[1].t()[1:3],                     # strides (1, 4) at 13
    "transposed_row": y[0].t()[2],                         # strides (4,) at 2
    "expanded_rows": torch.arange(4, dtype=torch.float16).expand(5, 4),
    "permuted": y.permute(2, 0, 1),                        # strides (1, 12, 4)
})

shards = [
    {"model.embed.weight": torch.randn(3, 2), "model.norm.weight": torch.ones(2)},
    {"lm_head.weight": torch.randn(2, 2, dtype=torch.float16)},
]
weight_map = {}
total = 0
for i, sd in enumerate(shards):
    fname = "pytorch_model-%05d-of-%05d.bin" % (i + 1, len(shards))
    save("sharded/" + fname, sd)
    for k, t in sd.items():
        weight_map[k] = fname
        total += t.numel() * t.element_size()
with open(os.path.join(HERE, "sharded", "pytorch_model.bin.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    f.write("\n")

save("legacy.bin", {
    "w": w,
    "h": torch.tensor([0.5, 1.5], dtype=torch.float16),
    "tied": w,
    "row": w[1],
}, _use_new_zipfile_serialization=False)

with open(os.path.join(HERE, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
print(json.dumps(expected, indent=1, sort_keys=True))
