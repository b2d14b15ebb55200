"""Writes the DCP fixtures of torchsave's tests: step folders of a
.metadata pickle and a __0_0.distcp file, as torch.distributed.checkpoint's
FileSystemWriter lays them out.

Debian's torch 1.13 has no DCP metadata classes, so stand-ins of the same
module and qualified name (and the same pickled form: dataclasses by
NEWOBJ + BUILD of their __dict__, TensorProperties by its __getstate__
tuple with the memory format as an enum) are put in sys.modules. Each
chunk is a torch.save archive at its recorded byte range, as
FileSystemWriter writes tensor items. Run with /usr/bin/python3 from this
folder.
"""
import dataclasses
import enum
import io
import json
import os
import pickle
import sys
import types

import torch


def module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


meta = module("torch.distributed.checkpoint.metadata")
fs = module("torch.distributed.checkpoint.filesystem")


def put(mod, cls):
    cls.__module__ = mod.__name__
    setattr(mod, cls.__name__, cls)
    return cls


@dataclasses.dataclass
class ChunkStorageMetadata:
    offsets: torch.Size
    sizes: torch.Size


class _MEM_FORMAT_ENCODING(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


@dataclasses.dataclass
class TensorProperties:
    dtype: torch.dtype
    layout: torch.layout = torch.strided
    requires_grad: bool = False
    memory_format: torch.memory_format = torch.contiguous_format
    pin_memory: bool = False

    # As upstream: the memory format is pickled as its enum.
    def __getstate__(self):
        return (self.dtype, self.layout, self.requires_grad,
                _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT, self.pin_memory)


@dataclasses.dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: torch.Size
    chunks: list


@dataclasses.dataclass
class BytesStorageMetadata:
    pass


@dataclasses.dataclass
class StorageMeta:
    checkpoint_id: object = None
    save_id: str = None
    load_id: str = None
    modules: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Metadata:
    state_dict_metadata: dict
    planner_data: object = None
    storage_data: object = None
    storage_meta: object = None
    version: str = None


@dataclasses.dataclass(frozen=True)
class MetadataIndex:
    fqn: str
    offset: torch.Size = None
    index: int = dataclasses.field(hash=False, compare=False, default=None)


@dataclasses.dataclass
class _StorageInfo:
    relative_path: str
    offset: int
    length: int
    transform_descriptors: object = None


for c in (ChunkStorageMetadata, _MEM_FORMAT_ENCODING, TensorProperties,
          TensorStorageMetadata, BytesStorageMetadata, StorageMeta, Metadata,
          MetadataIndex):
    put(meta, c)
put(fs, _StorageInfo)


def write(folder, tensors, extra=None, relpath="__0_0.distcp", swap=(), transposed=(), transforms=None):
    """tensors: fqn -> (full tensor, [(offsets, sizes[, rank])]): each chunk
    is torch.save'd narrowed from the full tensor into rank's file
    __<rank>_0.distcp (relpath for rank 0), after the items before it, as
    FileSystemWriter packs a rank's items. The fqns in swap have their first
    two chunks' storage items exchanged (a corrupted metadata whose tiling
    is still exact); those in transposed are saved as transposed views."""
    os.makedirs(folder, exist_ok=True)
    sdm, storage, planner = {}, {}, {}
    blobs = {}

    def blob(rank):
        name = relpath if rank == 0 else "__%d_0.distcp" % rank
        return name, blobs.setdefault(name, io.BytesIO())

    for fqn, (full, chunks) in tensors.items():
        cms, infos = [], []
        for i, chunk in enumerate(chunks):
            off, size = chunk[0], chunk[1]
            name, out = blob(chunk[2] if len(chunk) > 2 else 0)
            part = full
            for d, (o, s) in enumerate(zip(off, size)):
                part = part.narrow(d, o, s)
            part = part.clone()
            if fqn in transposed:
                part = part.t().contiguous().t()  # strides (1, rows): storage size == numel, saved as is
            buf = io.BytesIO()
            torch.save(part, buf)
            start = out.tell()
            out.write(buf.getvalue())
            cms.append(ChunkStorageMetadata(torch.Size(off), torch.Size(size)))
            infos.append(_StorageInfo(name, start, out.tell() - start, (transforms or {}).get(fqn)))
        if fqn in swap:
            infos[0], infos[1] = infos[1], infos[0]
        for i, cm in enumerate(cms):
            storage[MetadataIndex(fqn, cm.offsets, i)] = infos[i]
        sdm[fqn] = TensorStorageMetadata(TensorProperties(full.dtype), full.size(), cms)
        planner[fqn] = tuple(fqn.split("."))
    for fqn, data in (extra or {}).items():
        sdm[fqn] = BytesStorageMetadata()
        name, out = blob(0)
        start = out.tell()
        out.write(data)
        storage[MetadataIndex(fqn)] = _StorageInfo(name, start, len(data))
        planner[fqn] = tuple(fqn.split("."))
    md = Metadata(sdm, planner, storage, StorageMeta(checkpoint_id=__import__("pathlib").PosixPath(folder), save_id="s"), "1.0.0")
    with open(os.path.join(folder, ".metadata"), "wb") as f:
        pickle.dump(md, f, protocol=5)
    for name, out in blobs.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(out.getvalue())


w = torch.arange(24, dtype=torch.float32).reshape(4, 6)
b = torch.arange(6, dtype=torch.bfloat16)
state = pickle.dumps({"step": 10}, protocol=5)

# Two row chunks of model.w, one chunk of model.b, optimizer state and
# train_state as the trainer saves them.
write("good", {
    "model.w": (w, [((0, 0), (2, 6)), ((2, 0), (2, 6))]),
    "model.b": (b, [((0,), (6,))]),
    "optimizer.state.model.w.exp_avg": (w, [((0, 0), (4, 6))]),
}, extra={"train_state": state})
# Rows 3 of model.w are in no chunk: a tensor-parallel shard missing its tail.
write("gap", {"model.w": (w, [((0, 0), (2, 6)), ((2, 0), (1, 6))])})
# Row 1 is in both chunks.
write("overlap", {"model.w": (w, [((0, 0), (2, 6)), ((1, 0), (3, 6))])})
# model.w's items record a stream transform (the newest FileSystemWriter's
# transform_descriptors, _extension.py's ZStandard "stream.zstd"); its
# bytes here are plain, but no reader may take them so.
write("transform", {"model.w": (w, [((0, 0), (4, 6))]), "model.b": (b, [((0,), (6,))])}, transforms={"model.w": ["stream.zstd"]})

# A step saved by two ranks: tensors sharded along dim 0 (FSDP, unevenly),
# dim 1 (row-parallel), a 2x2 grid, the middle dim of a stack, chunks
# whose items are transposed views, and one unsharded tensor.
# expected.json has each tensor's dtype, shape and row-major bytes.
g = torch.Generator().manual_seed(0)
sharded = {
    "model.rows": (torch.randn(4, 6, generator=g), [((0, 0), (2, 6), 0), ((2, 0), (2, 6), 1)]),
    "model.cols": (torch.randn(4, 6, generator=g).bfloat16(), [((0, 0), (4, 2), 0), ((0, 2), (4, 4), 1)]),
    "model.grid": (torch.randn(4, 6, generator=g), [((0, 0), (2, 3), 0), ((0, 3), (2, 3), 1), ((2, 0), (2, 3), 1), ((2, 3), (2, 3), 0)]),
    "model.stack": (torch.randn(2, 3, 4, generator=g).half(), [((0, 0, 0), (2, 1, 4), 1), ((0, 1, 0), (2, 2, 4), 0)]),
    "model.uneven": (torch.randn(5, 3, generator=g), [((0, 0), (3, 3), 0), ((3, 0), (2, 3), 1)]),
    "model.tview": (torch.randn(4, 6, generator=g), [((0, 0), (4, 3), 0), ((0, 3), (4, 3), 1)]),
    "model.one": (torch.randn(3, generator=g), [((0,), (3,), 1)]),
}
write("sharded", sharded, transposed=("model.tview",))
# The same step with the items of model.rows' and model.grid's first chunks
# exchanged in the metadata: shapes and tiling as before, values not.
write("swapped", sharded, transposed=("model.tview",), swap=("model.grid", "model.rows"))


def hexbytes(t):
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy().tobytes().hex()


names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}
with open("expected.json", "w") as f:
    json.dump({k: {"dtype": names[t.dtype], "shape": list(t.shape), "hex": hexbytes(t)} for k, (t, _) in sharded.items()}, f, indent=1, sort_keys=True)
    f.write("\n")


def safetensors_blob(chunks, metadata):
    """The bytes safetensors.torch.save writes for chunks ({fqn: tensor}):
    a little-endian u64 header length, the JSON header (the entries and
    __metadata__) padded with spaces to 8 bytes, then the data."""
    header, data = {"__metadata__": metadata}, b""
    for fqn in sorted(chunks):
        t = chunks[fqn]
        b = bytes.fromhex(hexbytes(t))
        header[fqn] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return len(h).to_bytes(8, "little") + h + data


def write_safetensors(folder, tensors, extra):
    """A step as FileSystemWriter(serialization_format=SAFETENSORS) writes
    it (torch >= 2.8, torch/distributed/checkpoint/filesystem.py,
    _write_files_from_queue and _write_item): a rank's file holds its byte
    items, then one safetensors blob of its chunks keyed by FQN, with
    DCP_SHARDING_INFO (each FQN's saved_offsets) and DCP_VERSION in its
    metadata; each chunk's _StorageInfo has the blob's start as offset and
    the chunk's bytes as length."""
    os.makedirs(folder, exist_ok=True)
    sdm, storage, planner, files = {}, {}, {}, {}

    def rank_file(rank):
        return files.setdefault("__%d_0.distcp" % rank, {"out": io.BytesIO(), "chunks": {}, "saved": {}, "infos": []})

    for fqn, data in extra.items():
        out = rank_file(0)["out"]
        start = out.tell()
        out.write(data)
        sdm[fqn] = BytesStorageMetadata()
        storage[MetadataIndex(fqn)] = _StorageInfo("__0_0.distcp", start, len(data))
        planner[fqn] = tuple(fqn.split("."))
    for fqn, (full, chunks) in tensors.items():
        cms = []
        for i, (off, size, rank) in enumerate(chunks):
            part = full
            for d, (o, s) in enumerate(zip(off, size)):
                part = part.narrow(d, o, s)
            rf = rank_file(rank)
            assert fqn not in rf["chunks"], "a rank saves one chunk of a tensor"
            rf["chunks"][fqn] = part.clone()
            rf["saved"][fqn] = {"saved_offsets": list(off)}
            cm = ChunkStorageMetadata(torch.Size(off), torch.Size(size))
            cms.append(cm)
            rf["infos"].append((MetadataIndex(fqn, cm.offsets, i), part.numel() * part.element_size()))
        sdm[fqn] = TensorStorageMetadata(TensorProperties(full.dtype), full.size(), cms)
        planner[fqn] = tuple(fqn.split("."))
    for name, rf in files.items():
        start = rf["out"].tell()
        for index, length in rf["infos"]:
            storage[index] = _StorageInfo(name, start, length)
        rf["out"].write(safetensors_blob(rf["chunks"], {"DCP_SHARDING_INFO": json.dumps(rf["saved"]), "DCP_VERSION": "1.0"}))
        with open(os.path.join(folder, name), "wb") as f:
            f.write(rf["out"].getvalue())
    md = Metadata(sdm, planner, storage, StorageMeta(checkpoint_id=__import__("pathlib").PosixPath(folder), save_id="s"), "1.0.0")
    with open(os.path.join(folder, ".metadata"), "wb") as f:
        pickle.dump(md, f, protocol=5)


# The sharded step's tensors that each rank holds one chunk of (a rank's
# blob has one entry an FQN), saved as safetensors items, with the rest of
# a torchtitan step: optimizer state as tensors, lr_scheduler, dataloader
# and train_state as byte items before rank 0's blob.
st_tensors = {k: sharded[k] for k in ("model.rows", "model.cols", "model.stack", "model.uneven", "model.one")}
st_tensors["optimizer.state.model.rows.exp_avg"] = sharded["model.rows"]
write_safetensors("safetensors", st_tensors, extra={
    "train_state": state,
    "lr_scheduler.lr_scheduler_0": pickle.dumps({"last_epoch": 10}, protocol=5),
    "dataloader.dp_rank_0": pickle.dumps({"sampler": 3}, protocol=5),
})
