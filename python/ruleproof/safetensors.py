"""Reading and writing safetensors files with PyTorch alone (no safetensors package: Debian has
none), as ruleproof.dump, ruleproof.check and tools/fla_dumps.py write them for `ruleproof check-dump`.

The format: an 8-byte little-endian header length, a JSON header mapping each tensor's name to
its dtype, shape and data offsets (and "__metadata__", strings), then the data.
"""
import json
import os
import struct

import torch

ST_DTYPE = {torch.bfloat16: "BF16", torch.float16: "F16", torch.float32: "F32", torch.int64: "I64"}


def write_safetensors(path, tensors, metadata):
    """The safetensors format: an 8-byte header length, the JSON header, the raw bytes."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        raw = (t.view(torch.int16) if t.element_size() == 2 else t).numpy().tobytes()
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)


def read_safetensors(path):
    """Tensors and metadata of a file write_safetensors (or any safetensors writer) wrote."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    metadata = header.pop("__metadata__", {})
    kinds = {"BF16": (torch.int16, torch.bfloat16), "F16": (torch.int16, torch.float16),
             "F32": (torch.float32, None), "I64": (torch.int64, None)}
    tensors = {}
    for name, e in header.items():
        raw, view = kinds[e["dtype"]]
        begin, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=raw) if end > begin else \
            torch.zeros(0, dtype=raw)
        tensors[name] = (t.view(view) if view else t).reshape(e["shape"])
    return tensors, metadata
