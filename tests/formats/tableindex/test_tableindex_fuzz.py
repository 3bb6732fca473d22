"""Corrupt deletion vectors, deletion files, hash index files and Puffin files:
only IndexFormatError or a valid answer, never a crash or a huge allocation."""

import struct
import zlib

import numpy as np
import pytest

from paimon_fast import tableindex as ti
from paimon_fast.errors import IndexFormatError
from tests.support.vectorlib import load_bin, manifest


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
    except ValueError as e:  # a sparse far key: Java cannot re-serialize it either
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
        b[i : i + 4] = struct.pack("<I", int(rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 65536, 1 << 20, 0])))
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
    # a sparse key near Java's maximum: Java's layout writes every key below it (25 GB), so it could
    # never be written back: refused on read, without allocating 2^31 bitmaps
    one = struct.pack("<iQI", ti.MAGIC64, 1, 2**31 - 2) + bytes.fromhex("3a3000000100000000000000100000000500")
    with pytest.raises(IndexFormatError, match="2 GB"):
        ti.DeletionVector.deserialize(one)
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


# the two 64-bit vectors of issue 23: a 56-byte vector whose second key is 0x00800001 (legal) and the
# same with key 0x40000001 (its Java layout exceeds 2 GB)
_SPARSE_HEX = (
    "d1d339640200000000000000000000003b30010002ff7f0000ffff3100ffff0100ceff3100010080003b3000000100003100010000003100"
)


def test_sparse_64bit_vector_writes_back_in_javas_layout_without_runaway_allocation():
    import tracemalloc

    data = bytes.fromhex(_SPARSE_HEX)
    dv = ti.DeletionVector.deserialize(data)
    assert dv.bitmap64 and dv.cardinality == 101
    tracemalloc.start()
    try:
        out = dv.serialize()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    nkeys = 0x00800001 + 1
    # Java's dense layout: magic, count, then every key 0 .. 0x00800001 with its bitmap
    assert struct.unpack_from("<iQ", out) == (ti.MAGIC64, nkeys)
    # independent decode of the layout: key i at each record, empty bitmaps (cookie 12346, 0 containers)
    p, keys, nonempty = 12, 0, []
    while p < len(out):
        (key,) = struct.unpack_from("<I", out, p)
        assert key == keys
        size, card = ti_check32(out, p + 4)
        if card:
            nonempty.append(key)
        p += 4 + size
        keys += 1
        if keys == 3:  # skip the bulk of empty records (checked by a byte comparison below)
            empties = 0x00800001 - 3
            block = out[p : p + 12 * empties]
            arr = np.frombuffer(block, np.uint32).reshape(-1, 3)
            assert (arr[:, 0] == np.arange(3, 0x00800001, dtype=np.uint32)).all()
            assert (arr[:, 1] == 12346).all() and (arr[:, 2] == 0).all()
            p += 12 * empties
            keys = 0x00800001
    assert keys == nkeys and nonempty == [0, 0x00800001]
    assert peak < 400 * 2**20  # the bin is 100 MB; no list of millions of Python objects
    again = ti.DeletionVector.deserialize(out)
    assert again == dv and again.serialize() == out
    blob = dv.to_blob()
    assert ti.DeletionVector.from_blob(blob) == dv


def ti_check32(buf, at):
    from paimon_fast.core.roaring import check32

    return check32(buf, at, -1, 0)


def test_64bit_vector_whose_java_layout_exceeds_2gb_is_refused_on_read():
    data = bytes.fromhex(_SPARSE_HEX.replace("01008000", "01000040"))
    with pytest.raises(IndexFormatError, match="2 GB"):
        ti.DeletionVector.deserialize(data)
    big = ti.DeletionVector.from_positions([ti.MAX_POSITION_64], bitmap64=True)
    from paimon_fast.errors import IndexTooLargeError

    with pytest.raises(IndexTooLargeError, match="2GB"):
        big.to_blob()


def _read_both(data: bytes, monkeypatch):
    """(answer or error) of the 64-bit reader with and without its bulk check of empty-record runs."""
    from paimon_fast.tableindex import vectors as deletion  # _RUN_MIN is read there

    def one():
        try:
            dv = ti.DeletionVector.deserialize(data)
            return ("ok", dv.positions().tolist(), dv.serialize() == data)
        except IndexFormatError as e:
            return ("error", str(e))

    bulk = one()
    with monkeypatch.context() as m:
        m.setattr(deletion, "_RUN_MIN", 1 << 62)  # every record through the one-by-one loop
        loop = one()
    return bulk, loop


def test_runs_of_empty_64bit_records_read_in_bulk_answer_as_the_record_loop(monkeypatch):
    from paimon_fast.reference import tableindex as ref

    rng = np.random.default_rng(7)
    keys = [0, 40, 41, 900, 2999]
    pos = np.unique(
        np.concatenate([(np.uint64(k) << np.uint64(32)) + rng.integers(0, 70000, 50).astype(np.uint64) for k in keys])
    )
    good = ref.dv_serialize(pos, True, nkeys=3000)
    bulk, loop = _read_both(good, monkeypatch)
    assert bulk == loop == ("ok", pos.tolist(), True)
    assert ref.dv_deserialize(good)[1].tolist() == pos.tolist()
    # the record of key 500 (inside a run of empty records) and of key 2998 (the run's last) corrupted
    # field by field: the bulk check must stop where the record loop would and give its answer
    for key in (500, 2998, 43):
        at = 12 + sum(4 + len(b) for b in _records(good)[:key])
        for field, value in ((0, key - 1), (0, key + 1), (0, 2**31 - 1), (4, 12347), (8, 1), (8, 2**31)):
            bad = bytearray(good)
            struct.pack_into("<I", bad, at + field, value)
            bulk, loop = _read_both(bytes(bad), monkeypatch)
            assert bulk == loop, (key, field, value)
    # cut inside a run: truncated, with the same message
    cut = good[: 12 + 12 * 600 + 5]
    bulk, loop = _read_both(cut, monkeypatch)
    assert bulk == loop and bulk[0] == "error"


def _records(data: bytes):
    """The serialized bitmaps of a 64-bit vector's records, in order (read with the reference scanner)."""
    from paimon_fast.core.roaring import check32

    (count,) = struct.unpack_from("<Q", data, 4)
    p, out = 12, []
    for _ in range(count):
        size, _card = check32(data, p + 4, -1, 0)
        out.append(data[p + 4 : p + 4 + size])
        p += 4 + size
    return out
