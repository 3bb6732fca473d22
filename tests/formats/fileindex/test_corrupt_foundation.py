"""Corrupt or truncated container / bloom bytes raise IndexFormatError, never anything else."""

import struct

import numpy as np
import pytest

import paimon_fast as pf
from paimon_fast.errors import IndexFormatError
from tests.support.vectorlib import load_bin, load_case


def _container():
    c = load_case("file_index_container", "container_basic")
    return load_bin("file_index_container", c["file"]), {f["name"]: f["type"] for f in c["row_type"]}


def test_truncated_container():
    blob, rt = _container()
    for n in (0, 7, 19, 24, 60, 224):
        with pytest.raises(IndexFormatError):
            pf.FileIndexFormat.open(blob[:n], rt)


def test_wrong_magic_and_version():
    blob, rt = _container()
    with pytest.raises(IndexFormatError, match="magic"):
        pf.FileIndexFormat.open(blob[:3] + b"\xff" + blob[4:], rt)
    bad = blob[:8] + struct.pack(">i", 2) + blob[12:]
    with pytest.raises(IndexFormatError, match="version"):
        pf.FileIndexFormat.open(bad, rt)


def test_header_lengths_past_the_end():
    blob, rt = _container()
    bad = blob[:12] + struct.pack(">i", len(blob) + 1) + blob[16:]
    with pytest.raises(IndexFormatError, match="head length"):
        pf.FileIndexFormat.open(bad, rt)
    bad = blob[:16] + struct.pack(">i", 10**6) + blob[20:]
    with pytest.raises(IndexFormatError, match="column count"):
        pf.FileIndexFormat.open(bad, rt)
    # an index whose [start, start+length) runs past the file
    w = pf.FileIndexFormat.write({"x": {"bloom-filter": b"\x00\x00\x00\x01" + b"\x00" * 8}})
    i = w.index(b"bloom-filter") + len(b"bloom-filter")
    bad = w[: i + 4] + struct.pack(">i", 1000) + w[i + 8 :]
    with pytest.raises(IndexFormatError, match="outside the body"):
        pf.FileIndexFormat.open(bad, {"x": "INT"})


@pytest.mark.parametrize(
    "payload",
    [b"", b"\x00\x00\x00", b"\x00\x00\x00\x07", b"\x00\x00\x00\x00" + b"\x00" * 8, b"\x7f\xff\xff\xff" + b"\x00" * 8],
)
def test_bad_bloom_payloads(payload):
    with pytest.raises(IndexFormatError):
        pf.fileindex.reader("bloom-filter", "INT", payload)


def test_fuzz_container_and_bloom():
    """A few thousand random mutations and truncations of real vectors: only IndexFormatError."""
    rng = np.random.default_rng(2024)
    blob, rt = _container()
    bloom_case = load_case("bloom_filter", "bf_string_n200_items100_fpp0.05")
    bloom = load_bin("bloom_filter", bloom_case["file"])
    preds = [
        pf.field("id") == 5,
        pf.field("name").isin(["sftk", "x"]),
        pf.field("m[k2]") == 1,
        (pf.field("id") == 1) | (pf.field("name") == "bc"),
    ]
    outcomes = {"error": 0, "ok": 0}
    for i in range(2500):
        base = blob if i % 2 == 0 else bloom
        b = bytearray(base)
        for _ in range(int(rng.integers(1, 6))):
            pos = int(rng.integers(0, min(len(b), 300 if i % 3 else len(b))))
            b[pos] = int(rng.integers(256))
        if rng.random() < 0.25:
            b = b[: int(rng.integers(0, len(b) + 1))]
        try:
            if base is blob:
                f = pf.FileIndexFormat.open(bytes(b), rt)
                for p in preds:
                    f.evaluate(p)
            else:
                r = pf.fileindex.reader("bloom-filter", "STRING", bytes(b))
                r.might_contain_batch(["a", "sftk", None])
            outcomes["ok"] += 1
        except IndexFormatError:
            outcomes["error"] += 1
        except (KeyError, pf.UnsupportedTypeError):
            # a mutated column/type name that is not in the row type: a lookup miss, not a crash
            outcomes["ok"] += 1
    assert outcomes["error"] > 100 and outcomes["ok"] > 100
