"""Corrupt deletion vectors, deletion files, hash index files and Puffin files:
only IndexFormatError or a valid answer, never a crash or a huge allocation."""
import struct
import zlib

import numpy as np
import pytest

from paimon_fast import tableindex as ti
from paimon_fast.errors import IndexFormatError
from vectorlib import load_bin, manifest


def _corpus():
    out = []
    m32 = manifest("deletion_vector_32")
    for b in m32["serialized_bins"]:
        if b["size"] < 20000:
            out.append(("bin", load_bin("deletion_vector_32", b["file"])))
    for c in m32["index_files"]:
        for f in c["files"]:
            if f["size"] < 20000:
                out.append(("file", load_bin("deletion_vector_32", f["file"])))
    m64 = manifest("deletion_vector_64")
    for b in m64["blobs_64"] + m64["blobs_32_by_head"]:
        if b["size"] < 20000:
            out.append(("blob", load_bin("deletion_vector_64", b["file"])))
    out.append(("file", load_bin("deletion_vector_64", "dv_file_mixed_32_and_64_synthetic.index")))
    return out


def _reserialize(dv):
    try:
        dv.serialize()
    except ValueError as e:   # a sparse far key: Java cannot re-serialize it either
        assert "2GB" in str(e)


def _read(kind, data):
    if kind == "bin":
        dv = ti.DeletionVector.deserialize(data)
    elif kind == "blob":
        dv = ti.DeletionVector.from_blob(data)
    else:
        for e in ti.read_deletion_file(data):
            _reserialize(e.vector)
        return
    _reserialize(dv)
    dv.is_deleted_batch(np.arange(0, 100))
    dv.keep_mask(0, 100)


def _mutate(rng, data):
    b = bytearray(data)
    op = rng.integers(0, 4)
    if op == 0 and len(b):
        for _ in range(rng.integers(1, 4)):
            b[rng.integers(0, len(b))] = rng.integers(0, 256)
    elif op == 1:
        b = b[: rng.integers(0, len(b) + 1)]
    elif op == 2 and len(b) >= 4:
        i = rng.integers(0, len(b) - 3)
        b[i:i + 4] = struct.pack("<I", int(rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 65536, 1 << 20, 0])))
    else:
        i = rng.integers(0, len(b) + 1)
        b[i:i] = bytes(rng.integers(0, 256, rng.integers(1, 9), dtype=np.uint8))
    return bytes(b)


def test_fuzz_deletion_vectors():
    rng = np.random.default_rng(20261122)
    corpus = _corpus()
    ok = bad = 0
    for i in range(3000):
        kind, data = corpus[i % len(corpus)]
        mutated = _mutate(rng, data)
        if kind == "blob" and rng.integers(0, 2):
            # fix size and CRC so the bitmap parser itself sees the damage
            body = mutated[4:-4] if len(mutated) >= 8 else b""
            mutated = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
        try:
            _read(kind, mutated)
            ok += 1
        except IndexFormatError:
            bad += 1
    assert bad > 1000 and ok > 0


def test_huge_counts_do_not_allocate():
    # 64-bit vector claiming 2^31 bitmaps in 20 bytes
    b = struct.pack("<iQ", ti.MAGIC64, 2**31) + b"\0" * 8
    with pytest.raises(IndexFormatError, match="bitmaps"):
        ti.DeletionVector.deserialize(b)
    # a sparse key near Java's maximum: accepted without allocating 2^31 bitmaps
    one = struct.pack("<iQI", ti.MAGIC64, 1, 2**31 - 2) + bytes.fromhex("3a300000010000000000000010000000" "0500")
    dv = ti.DeletionVector.deserialize(one)
    assert dv.cardinality == 1 and dv.is_deleted(((2**31 - 2) << 32) | 5)
    # key beyond Java's limit
    with pytest.raises(IndexFormatError, match="too large"):
        ti.DeletionVector.deserialize(struct.pack("<iQI", ti.MAGIC64, 1, 2**31 - 1) + bytes.fromhex("3a30000000000000"))
    # 32-bit bitmap claiming 2^16+1 containers
    with pytest.raises(IndexFormatError):
        ti.DeletionVector.deserialize(struct.pack(">i", ti.MAGIC32) + struct.pack("<II", 12346, 70000))
    # blob whose size field claims 2 GB
    with pytest.raises(IndexFormatError, match="size"):
        ti.DeletionVector.from_blob(struct.pack(">i", 2**31 - 1) + b"\0" * 12)
    # deletion file whose blob claims more than the file holds
    with pytest.raises(IndexFormatError, match="does not fit"):
        ti.read_deletion_file(b"\x01" + struct.pack(">i", 2**30) + b"\0" * 16)
    with pytest.raises(IndexFormatError, match="outside"):
        ti.read_deletion_vector(b"\x01" + b"\0" * 8, 100, 12)


def test_bad_magic_version_crc():
    dv = ti.DeletionVector.from_positions([1, 2, 3])
    blob = dv.to_blob()
    with pytest.raises(IndexFormatError, match="magic"):
        ti.DeletionVector.deserialize(b"\0\0\0\0" + dv.serialize()[4:])
    bad = bytearray(blob)
    bad[-1] ^= 1
    with pytest.raises(IndexFormatError, match="CRC"):
        ti.DeletionVector.from_blob(bytes(bad), data_file="f.parquet")
    with pytest.raises(IndexFormatError, match="version"):
        ti.read_deletion_file(b"\x02" + blob)
    with pytest.raises(IndexFormatError, match="empty"):
        ti.read_deletion_file(b"")
    with pytest.raises(IndexFormatError, match="after the bitmap"):
        ti.DeletionVector.deserialize(dv.serialize() + b"\0")


def test_hash_index_and_puffin_corruption():
    with pytest.raises(IndexFormatError, match="multiple of 4"):
        ti.read_hash_index(b"\0" * 7)
    p = ti.write_puffin([("a", ti.DeletionVector.from_positions([1, 2**33], bitmap64=True))])
    rng = np.random.default_rng(7)
    ok = bad = 0
    for _ in range(500):
        m = _mutate(rng, p)
        try:
            ti.read_puffin(m)
            ok += 1
        except IndexFormatError:
            bad += 1
    assert bad > 100
