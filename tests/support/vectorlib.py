"""Load the Java golden vectors in tests/data/ and decode their JSON encodings.

Vectors were copied from ../shared/vectors/ (JSON gzipped).  Value encodings
(README of the vectors): integers as JSON ints, TIMESTAMP as [millis,
nano_of_milli], FLOAT/DOUBLE as hex IEEE bits, BINARY as hex, DECIMAL as a
plain string.  Row sets: {"ranges": [[a, b), ...]} or a base64 bit set.
"""

from __future__ import annotations

import base64
import decimal
import gzip
import importlib.util
import json
import os
import struct

import numpy as np
import pyarrow as pa
from pyroaring import BitMap, BitMap64

from paimon_fast.core.predicate import Leaf
from paimon_fast.core.types import DataType
from tests.support.paths import DATA


def path(fmt: str, name: str) -> str:
    return os.path.join(DATA, fmt, name)


def load_json(fmt: str, name: str):
    p = path(fmt, name)
    if os.path.exists(p + ".gz"):
        with gzip.open(p + ".gz", "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def load_bin(fmt: str, name: str) -> bytes:
    p = path(fmt, name)
    if os.path.exists(p + ".gz"):
        with gzip.open(p + ".gz", "rb") as f:
            return f.read()
    with open(p, "rb") as f:
        return f.read()


def manifest(fmt: str):
    return load_json(fmt, "manifest.json")


def cases(fmt: str):
    """Every case of a file-index format directory as (name, case json)."""
    m = manifest(fmt)
    out = []
    for c in m["cases"]:
        js = c.get("json") or (c["name"] + ".json")
        out.append((c["name"], load_json(fmt, js)))
    return out


def case_names(fmt: str):
    return [c["name"] for c in manifest(fmt)["cases"]]


def load_case(fmt: str, name: str):
    return load_json(fmt, name + ".json")


# ---------------------------------------------------------------- values


def decode_value(v, dtype: DataType):
    """One JSON-encoded value -> the Python value pyarrow takes for dtype.to_arrow()."""
    if v is None:
        return None
    r = dtype.root
    if r == "FLOAT":
        return struct.unpack(">f", int(v, 16).to_bytes(4, "big"))[0]
    if r == "DOUBLE":
        return struct.unpack(">d", int(v, 16).to_bytes(8, "big"))[0]
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nanos = v
        unit = dtype.to_arrow().unit
        ns = millis * 1_000_000 + nanos
        return {"ms": ns // 1_000_000, "us": ns // 1000, "ns": ns}[unit]
    if dtype.is_binary:
        return bytes.fromhex(v)
    if r == "DECIMAL":
        return decimal.Decimal(v)
    return v


def arrow_values(values, dtype) -> pa.Array:
    """A JSON value list -> a pyarrow array of the type's canonical Arrow type."""
    dtype = DataType.parse(dtype)
    decoded = [decode_value(v, dtype) for v in values]
    t = dtype.to_arrow()
    if dtype.root in ("FLOAT", "DOUBLE"):
        # keep exact NaN payloads / -0.0 by building from raw bits
        width = 4 if dtype.root == "FLOAT" else 8
        bits = np.array([0 if v is None else int(v, 16) for v in values], dtype=np.uint32 if width == 4 else np.uint64)
        mask = np.array([v is None for v in values], dtype=bool)
        return pa.array(bits.view(np.float32 if width == 4 else np.float64), mask=mask, type=t)
    return pa.array(decoded, type=t)


def decode_literal(v, dtype):
    """A predicate literal in JSON encoding -> a value our predicates accept."""
    dtype = DataType.parse(dtype)
    return decode_value(v, dtype)


# ---------------------------------------------------------------- row sets


def decode_rows(res, bits64: bool = False):
    """A Java row-set result -> pyroaring BitMap (BitMap64 with bits64)."""
    bm = BitMap64() if bits64 else BitMap()
    if "ranges" in res:
        for a, b in res["ranges"]:
            bm.add_range(a, b)
    elif "bitset_b64" in res:
        base = res.get("bitset_base", 0)
        raw = np.frombuffer(base64.b64decode(res["bitset_b64"]), dtype=np.uint8)
        idx = np.flatnonzero(np.unpackbits(raw, bitorder="little")).astype(np.uint64) + np.uint64(base)
        bm.update(idx) if bits64 else bm.update(idx.astype(np.uint32))
    return bm


# ---------------------------------------------------------------- predicates, row ids, writes


def case_leaf(p, dtype, column: str = "x"):
    """The predicate leaf of one predicate of a golden case, on ``column`` (the vectors' column is
    ``x``; the container's ``c``): its literals (``literals``, ``from`` / ``to`` of a between,
    ``literal``) decoded, but for the pattern of a string operator, which is the text itself."""
    if "literals" in p:
        return Leaf(p["op"], column, tuple(decode_literal(v, dtype) for v in p["literals"]))
    if "from" in p:
        return Leaf(p["op"], column, (decode_literal(p["from"], dtype), decode_literal(p["to"], dtype)))
    if "literal" in p:
        lit = p["literal"]
        if p["op"] not in ("starts_with", "ends_with", "contains", "like"):
            lit = decode_literal(lit, dtype)
        return Leaf(p["op"], column, (lit,))
    return Leaf(p["op"], column)


def row_ids(case) -> np.ndarray:
    """The row ids of a global index case, as uint64 (``"row_ids": "sequential"``: 0 .. row_count)."""
    r = case["row_ids"]
    return np.arange(case["row_count"], dtype=np.uint64) if isinstance(r, str) else np.array(r, dtype=np.uint64)


#: python-lzo is optional (the lzo extra): the LZO cases of the global index vectors skip without it
HAS_LZO = importlib.util.find_spec("lzo") is not None
LZO_SKIP = "python-lzo is not installed (pip install 'paimon-fast[lzo]', needs liblzo2-dev)"
COMPRESSION_OPTION = {"global_bitmap": "bitmap-index.compression", "global_btree": "btree-index.compression"}


def compressed_case(fmt: str, name: str):
    """``(case, compression)`` of a global index case; an LZO case skips where python-lzo is missing."""
    import pytest

    c = load_case(fmt, name)
    comp = c["options"].get(COMPRESSION_OPTION[fmt], "none")
    if comp == "lzo" and not HAS_LZO:
        pytest.skip(LZO_SKIP)
    return c, comp


def write_case(c, index_type: str, encoder=None, batches: int = 1, shuffle_seed=None):
    """Our global index writer (``index_type``: bitmap or btree) fed a case's values and row ids,
    in ``batches`` batches, shuffled with ``shuffle_seed`` (if given), with the block ``encoder`` (if
    given); returns ``finish()``'s (file bytes, meta)."""
    from paimon_fast import globalindex as gi

    w = gi.writer(c["type"], c["options"], index_type=index_type)
    if encoder is not None:
        w.encoder = encoder
    vals = arrow_values(c["values"], c["type"])
    rids = row_ids(c)
    if shuffle_seed is not None and len(rids):
        perm = np.random.default_rng(shuffle_seed).permutation(len(rids))
        vals, rids = vals.take(perm), rids[perm]
    bounds = np.linspace(0, len(rids), batches + 1).astype(int)
    for a, b in zip(bounds[:-1], bounds[1:]):
        w.write_batch(vals.slice(a, b - a), rids[a:b])
    return w.finish()
