"""Fuzz: random byte flips, insertions and truncations of real range-bitmap and
BSI vectors either raise IndexFormatError or give an answer; never another
exception, a crash or a hang."""

import random

import pytest

import paimon_fast as pf
from paimon_fast.errors import IndexFormatError
from paimon_fast.core.predicate import Leaf
from tests.support.vectorlib import decode_literal, load_bin, load_case

CASES = {
    "range_bitmap": [
        "rb_int_two_values",
        "rb_string_unicode",
        "rb_int_n500_k100_chunk64b",
        "rb_double_specials",
        "rb_char6_n500_k100_chunk64b",
        "rb_int_all_null5",
    ],
    "bsi": ["bsi_int_n400_mixed_sign", "bsi_int_extremes", "bsi_int_zeros", "bsi_decimal10_2_values"],
}
ITYPE = {"range_bitmap": "range-bitmap", "bsi": "bsi"}


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.random()
    if kind < 0.25:
        return bytes(b[: rng.randrange(len(b))])
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(b))
        r = rng.random()
        if r < 0.5:
            b[i] = rng.randrange(256)
        elif r < 0.7:
            b[i] ^= 1 << rng.randrange(8)
        elif r < 0.85:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            del b[i : i + rng.randint(1, 8)]
    return bytes(b)


def exercise(itype, dtype, data, lits):
    r = pf.fileindex.reader(itype, dtype, data, {})
    out = []
    for op in ("equal", "less_than", "greater_or_equal", "not_equal"):
        out.append(r.evaluate(Leaf(op, "x", (lits[0],))).bitmap)
    out.append(r.evaluate(Leaf("between", "x", (lits[0], lits[-1]))).bitmap)
    out.append(r.evaluate(Leaf("in", "x", tuple(lits))).bitmap)
    out.append(r.evaluate(Leaf("is_null", "x")).bitmap)
    if itype == "range-bitmap":
        out.append(r.top_k(3))
        out.append(r.bottom_k(2, nulls_first=True, strict=False))
    r.describe()
    return out


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_fuzz(fmt):
    rng = random.Random(20261122)
    n_ok = n_err = 0
    cut_ok = []  # truncated files a reader accepted without complaint
    for name in CASES[fmt]:
        c = load_case(fmt, name)
        data = load_bin(fmt, c["file"])
        vals = [v for v in c["values"] if v is not None] or [1]
        lits = [decode_literal(vals[i % len(vals)], pf.core.types.DataType.parse(c["type"])) for i in (0, 3, 7)]
        exercise(ITYPE[fmt], c["type"], data, lits)  # the original is fine
        for _ in range(250):
            m = mutate(data, rng)
            try:
                exercise(ITYPE[fmt], c["type"], m, lits)
                n_ok += 1
                if len(m) < len(data) and data.startswith(m):
                    cut_ok.append((name, len(m), len(data)))
            except IndexFormatError:
                n_err += 1
    # only IndexFormatError (anything else failed the test above); a truncated index is always refused,
    # and the mutations reach both outcomes (corruption detected / a byte whose change still reads)
    assert cut_ok == []
    assert n_err > 0 and n_ok > 0


def test_huge_claimed_row_count_allocates_nothing_big():
    """A row count field of 2^31-1 must not make the reader allocate per claimed row."""
    import struct
    import tracemalloc

    rb = bytearray(load_bin("range_bitmap", "rb_int_two_values.bin"))
    struct.pack_into(">i", rb, 5, 2**31 - 1)
    bs = bytearray(load_bin("bsi", "bsi_int_n400_mixed_sign.bin"))
    struct.pack_into(">i", bs, 1, 2**31 - 1)
    tracemalloc.start()
    r = pf.fileindex.reader("range-bitmap", "INT", bytes(rb))
    assert len(r.evaluate(Leaf("is_null", "x")).bitmap) == 2**31 - 1 - 5
    assert len(r.evaluate(Leaf("equal", "x", (1,))).bitmap) == 3
    assert len(r.bottom_k(7)) == 7
    b = pf.fileindex.reader("bsi", "INT", bytes(bs))
    assert len(b.evaluate(Leaf("is_not_null", "x")).bitmap) > 0
    assert len(b.evaluate(Leaf("is_null", "x")).bitmap) > 2**31 - 500
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 2**20


def test_in_place_slices_masked_by_existence_bitmap():
    """Dense slices are read in place; bits a corrupt file sets beyond the last
    row (inside the last container) never reach an answer (Java masks too)."""

    import numpy as np

    c = load_case("range_bitmap", "rb_int_n100000_k5000_chunk1kb")
    data = bytearray(load_bin("range_bitmap", c["file"]))
    r0 = pf.fileindex.reader("range-bitmap", "INT", bytes(data))
    assert any(row.dtype == np.uint8 for row in r0.slices)  # some slices are read in place
    # locate the slice area and set every bit of each in-place slice's last words
    n_set = 0
    for row in r0.slices:
        if row.dtype == np.uint8:
            off = row.__array_interface__["data"][0] - r0._bsi_bytes.__array_interface__["data"][0] + r0._bsi_at
            end = off + row.size  # W words end; the container's tail follows
            data[end : end + 64] = b"\xff" * 64
            tail = r0._nbits & 63
            if tail:  # rows >= nbits inside the last word of the view
                last = int.from_bytes(data[end - 8 : end], "little") | (~((1 << tail) - 1) & (2**64 - 1))
                data[end - 8 : end] = last.to_bytes(8, "little")
            n_set += 1
    assert n_set
    r1 = pf.fileindex.reader("range-bitmap", "INT", bytes(data))
    for leaf in [
        Leaf("less_than", "x", (100,)),
        Leaf("greater_or_equal", "x", (-5,)),
        Leaf("between", "x", (-1000, 1000)),
        Leaf("not_equal", "x", (7,)),
    ]:
        assert r1.evaluate(leaf).bitmap == r0.evaluate(leaf).bitmap
        assert r1.evaluate(leaf).bitmap.max() < 100_000
    assert r1.top_k(50, strict=False) == r0.top_k(50, strict=False)
    assert r1.bottom_k(5) == r0.bottom_k(5)
