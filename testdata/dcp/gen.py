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


def write(folder, tensors, extra=None, relpath="__0_0.distcp"):
    """tensors: fqn -> (full tensor, [(offsets, sizes)]): each chunk is
    torch.save'd narrowed from the full tensor."""
    os.makedirs(folder, exist_ok=True)
    sdm, storage, planner = {}, {}, {}
    blob = io.BytesIO()
    for fqn, (full, chunks) in tensors.items():
        cms = []
        for i, (off, size) in enumerate(chunks):
            part = full
            for d, (o, s) in enumerate(zip(off, size)):
                part = part.narrow(d, o, s)
            buf = io.BytesIO()
            torch.save(part.clone(), buf)
            start = blob.tell()
            blob.write(buf.getvalue())
            cms.append(ChunkStorageMetadata(torch.Size(off), torch.Size(size)))
            storage[MetadataIndex(fqn, torch.Size(off), i)] = _StorageInfo(relpath, start, blob.tell() - start)
        sdm[fqn] = TensorStorageMetadata(TensorProperties(full.dtype), full.size(), cms)
        planner[fqn] = tuple(fqn.split("."))
    for fqn, data in (extra or {}).items():
        sdm[fqn] = BytesStorageMetadata()
        start = blob.tell()
        blob.write(data)
        storage[MetadataIndex(fqn)] = _StorageInfo(relpath, start, len(data))
        planner[fqn] = tuple(fqn.split("."))
    md = Metadata(sdm, planner, storage, StorageMeta(checkpoint_id=__import__("pathlib").PosixPath(folder), save_id="s"), "1.0.0")
    with open(os.path.join(folder, ".metadata"), "wb") as f:
        pickle.dump(md, f, protocol=5)
    with open(os.path.join(folder, relpath), "wb") as f:
        f.write(blob.getvalue())


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
