"""``paimon-fast inspect`` support for table index files.

* deletion files (version byte + size/bin/CRC blobs): every vector's offset,
  length as Paimon's metadata records it, kind (32/64-bit) and cardinality;
* Puffin files with deletion-vector-v1 blobs;
* dynamic-bucket hash index files (``index-*`` files of big-endian ints): count,
  distinct values, first hashes;
* Paimon index manifests (Avro ``index-manifest-*``, needs fastavro): each
  entry's index type, bucket, file, row count and deletion-vector ranges.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..cli import inspector
from .deletion import MAGIC32, MAGIC64, read_deletion_file
from .hashindex import read_hash_index
from .puffin import MAGIC as PUFFIN_MAGIC
from .puffin import read_puffin

_CONTAINER_MAGIC = struct.pack(">q", 1493475289347502)


def _head(path, n):
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def _is_deletion_file(path) -> bool:
    h = _head(path, 9)
    if not h or h[0] != 1:
        return False
    if len(h) == 1:
        return os.path.basename(path).startswith("index-") or "dv" in os.path.basename(path)
    if len(h) < 9:
        return False
    return struct.unpack(">i", h[5:9])[0] == MAGIC32 or struct.unpack("<i", h[5:9])[0] == MAGIC64


def _vector_summary(dv, limit=8):
    pos = dv.positions()
    return {
        "kind": "64-bit (Bitmap64DeletionVector)" if dv.bitmap64 else "32-bit (BitmapDeletionVector)",
        "cardinality": dv.cardinality,
        "first_positions": [int(x) for x in pos[:limit]],
        "max_position": int(pos[-1]) if len(pos) else None,
    }


@inspector("deletion file")
def describe_deletion_file(path, args):
    entries = read_deletion_file(path)
    return {
        "kind": "Paimon deletion file (DELETION_VECTORS index)",
        "size": os.path.getsize(path),
        "vectors": [dict(offset=e.offset, length=e.length, **_vector_summary(e.vector)) for e in entries],
    }


describe_deletion_file.detect(_is_deletion_file)


@inspector("puffin deletion vectors")
def describe_puffin(path, args):
    return {
        "kind": "Iceberg Puffin file (deletion-vector-v1 blobs)",
        "size": os.path.getsize(path),
        "vectors": [dict(referenced_data_file=n, **_vector_summary(dv)) for n, dv in read_puffin(path)],
    }


describe_puffin.detect(lambda path: _head(path, 4) == PUFFIN_MAGIC)


def _is_hash_index(path) -> bool:
    name = os.path.basename(path)
    try:
        size = os.path.getsize(path)
    except OSError:
        return False
    if size % 4 or not (name.startswith("index-") or "hash" in name):
        return False
    if name.startswith("index-manifest"):
        return False
    h = _head(path, 8)
    return h != _CONTAINER_MAGIC and not _is_deletion_file(path)


@inspector("hash index")
def describe_hash_index(path, args):
    v = read_hash_index(path)
    return {
        "kind": "Paimon dynamic-bucket hash index (HASH_INDEX)",
        "count": int(len(v)),
        "distinct": int(len(np.unique(v))),
        "contains_zero": bool((v == 0).any()),
        "first_hashes": v[:8].tolist(),
        "note": "the bucket of a hash index file is recorded in the index manifest (inspect it)",
    }


describe_hash_index.detect(_is_hash_index)


def _is_index_manifest(path) -> bool:
    return _head(path, 4) == b"Obj\x01" and os.path.basename(path).startswith("index-manifest")


@inspector("index manifest")
def describe_index_manifest(path, args):
    from ..errors import require

    fastavro = require("fastavro", "reading Paimon index manifests")
    with open(path, "rb") as f:
        rows = list(fastavro.reader(f))
    out = []
    for r in rows:
        e = {
            "kind": "ADD" if r.get("_KIND", 0) == 0 else "DELETE",
            "index_type": r.get("_INDEX_TYPE"),
            "bucket": r.get("_BUCKET"),
            "file": r.get("_FILE_NAME"),
            "file_size": r.get("_FILE_SIZE"),
            "row_count": r.get("_ROW_COUNT"),
        }
        ranges = r.get("_DELETIONS_VECTORS_RANGES") or r.get("_DELETION_VECTORS_RANGES")
        if ranges:
            e["deletion_vectors"] = [
                {
                    "data_file": x.get("f0"),
                    "offset": x.get("f1"),
                    "length": x.get("f2"),
                    "cardinality": x.get("_CARDINALITY", x.get("f3")),
                }
                for x in ranges
            ]
        out.append(e)
    buckets = sorted({e["bucket"] for e in out if e["index_type"] == "HASH_INDEX"})
    return {"kind": "Paimon index manifest", "entries": out, "hash_index_buckets": buckets}


describe_index_manifest.detect(_is_index_manifest)
