"""The bit-slice kernels, their pure-Python twins and numpy brute force agree
(hypothesis): slice building, O'Neil-Quass comparisons, between, top-k /
bottom-k (ties at the k-th value, strict trimming), roaring encode/decode,
dictionary codes.  Includes empty, all-null, one distinct value and extremes."""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from paimon_fast.core import roaring
from paimon_fast._kernels import load
from paimon_fast.reference import bitslice as twin

k = load("bitslice")
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the simd fixture only switches the code path for the whole test: safe across examples
SETTINGS_FX = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@st.composite
def columns(draw, max_rows=300, bits=None):
    n = draw(st.integers(0, max_rows))
    b = bits if bits is not None else draw(st.sampled_from([1, 2, 5, 13, 63, 64]))
    kind = draw(st.sampled_from(["small", "wide", "one", "extreme"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    top = (1 << b) - 1
    if kind == "small":
        vals = rng.integers(0, min(top, 7) + 1, n, dtype=np.uint64)
    elif kind == "wide":
        vals = rng.integers(0, top, n, dtype=np.uint64, endpoint=True)
    elif kind == "one":
        vals = np.full(n, rng.integers(0, top, dtype=np.uint64, endpoint=True), dtype=np.uint64)
    else:
        vals = rng.choice(np.array([0, top, top >> 1, 1 if top else 0], dtype=np.uint64), n)
    pnull = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    sel = (rng.random(n) >= pnull).astype(np.uint8)
    return vals, sel, b


def brute_words(mask):
    return k.from_positions(np.flatnonzero(mask).astype(np.uint32), len(mask))


def brute_topk(vals, sel, k_, largest, strict):
    rows = np.flatnonzero(sel)
    if k_ == 0:
        return np.zeros(0, np.int64)
    if len(rows) <= k_:
        return rows
    v = vals[rows].astype(object)
    order = sorted(v, reverse=largest)
    kth = order[k_ - 1]
    better = rows[[(x > kth) if largest else (x < kth) for x in v]]
    ties = rows[[x == kth for x in v]]
    if strict:
        ties = ties[len(ties) - (k_ - len(better)) :]
    return np.sort(np.concatenate([better, ties]))


@SETTINGS
@given(columns(), st.data())
def test_compare_between_agree(col, data):
    vals, sel, S = col
    ebm, sl = k.build_slices(vals, sel, S)
    tebm, tsl = twin.build_slices(vals, sel, S)
    assert np.array_equal(ebm, tebm) and np.array_equal(sl, tsl)
    assert np.array_equal(ebm, brute_words(sel.astype(bool)))
    present = vals[sel.astype(bool)]
    cands = [0, (1 << S) - 1, (1 << 64) - 1] + [int(x) for x in present[:3]]
    if S < 64:
        cands.append(1 << S)
    v = data.draw(st.sampled_from(cands) | st.integers(0, 2**64 - 1))
    pyvals = np.array([int(x) for x in vals], dtype=object)
    m = sel.astype(bool)
    brute = {
        "eq": pyvals == v,
        "neq": pyvals != v,
        "lt": pyvals < v,
        "lte": pyvals <= v,
        "gt": pyvals > v,
        "gte": pyvals >= v,
    }
    for op in twin.OPS:
        got = k.compare(sl, ebm, op, v)
        assert np.array_equal(got, twin.compare(tsl, tebm, op, v)), op
        assert np.array_equal(got, brute_words(m & brute[op].astype(bool))), op
        assert bytes(k.compare_bytes(sl, ebm, op, v)) == k.encode_plain(got), op
    lo = data.draw(st.sampled_from(cands))
    hi = data.draw(st.sampled_from(cands))
    got = k.between(sl, ebm, lo, hi)
    assert np.array_equal(got, twin.between(tsl, tebm, lo, hi))
    assert bytes(k.compare_bytes(sl, ebm, "gte", lo, hi)) == k.encode_plain(got)
    assert np.array_equal(got, brute_words(m & (pyvals >= lo).astype(bool) & (pyvals <= hi).astype(bool)))


@SETTINGS
@given(columns(max_rows=400, bits=None), st.integers(0, 40), st.booleans(), st.booleans(), st.data())
def test_topk_agrees(col, k_, largest, strict, data):
    vals, sel, S = col
    ebm, sl = k.build_slices(vals, sel, S)
    n = len(vals)
    if data.draw(st.booleans()) and n:  # restrict to a found set
        found = np.random.default_rng(k_).random(n) < 0.6
        base = ebm & brute_words(found)
        selb = sel.astype(bool) & found
    else:
        base, selb = ebm, sel.astype(bool)
    got = k.topk(sl, base, k_, largest, strict)
    assert np.array_equal(got, twin.topk(sl, base, k_, largest, strict))
    want = brute_topk(vals, selb, k_, largest, strict)
    assert np.array_equal(k.to_positions(got).astype(np.int64), want)


def test_topk_ties_at_kth_value():
    # values 5,5,9,5,9,1 ; top-3 -> 9,9 and the tie group of 5 (rows 0,1,3)
    vals = np.array([5, 5, 9, 5, 9, 1], dtype=np.uint64)
    ebm, sl = k.build_slices(vals, np.ones(6, np.uint8), 4)
    assert k.to_positions(k.topk(sl, ebm, 3, True, False)).tolist() == [0, 1, 2, 3, 4]
    # strict drops the lowest row ids of the tie group
    assert k.to_positions(k.topk(sl, ebm, 3, True, True)).tolist() == [2, 3, 4]
    assert k.to_positions(k.topk(sl, ebm, 2, False, True)).tolist() == [3, 5]


@SETTINGS
@given(st.integers(0, 200_000), st.floats(0, 1), st.integers(0, 2**32 - 1), st.booleans())
def test_encode_decode_agree(n, density, seed, runs):
    rng = np.random.default_rng(seed)
    if runs and n:
        pos = np.unique(
            np.concatenate([np.arange(a, min(n, a + int(rng.integers(1, 5000)))) for a in rng.integers(0, n, 8)])
        ).astype(np.uint32)
    else:
        pos = np.flatnonzero(rng.random(n) < density**3).astype(np.uint32)
    w = k.from_positions(pos, n)
    b = k.encode(w)
    assert b == roaring.serialize32(pos)
    if n <= 20_000:
        assert b == twin.encode(w)
        tw = np.zeros_like(w)
        twin.decode_into(b, 0, -1, tw, n)
        assert np.array_equal(tw, w)
    w2 = np.zeros_like(w)
    assert k.decode_into(np.frombuffer(b, np.uint8), 0, -1, w2, n) == (len(b), len(pos))
    assert np.array_equal(w, w2)
    assert np.array_equal(k.to_positions(w), pos)
    assert k.popcount(w) == len(pos)
    lim = int(rng.integers(0, len(pos) + 2))
    assert np.array_equal(k.limit(w, lim), k.from_positions(pos[:lim], n))
    if n <= 5000:
        assert np.array_equal(twin.limit(w, lim), k.limit(w, lim))
    a, bnd = sorted(int(x) for x in rng.integers(0, n + 1, 2))
    assert np.array_equal(k.range_words(a, bnd, n), k.from_positions(np.arange(a, bnd, dtype=np.uint32), n))


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), max_size=300), st.sampled_from([1, 3, 1000, 2**40]))
def test_dense_codes_agree(values, spread):
    keys = np.array([0 if v is None else v % spread for v in values], dtype=np.int64)
    valid = np.array([v is not None for v in values], dtype=np.uint8)
    if not valid.any():
        return
    lo, hi = int(keys[valid.astype(bool)].min()), int(keys[valid.astype(bool)].max())
    if hi - lo > 1 << 20:
        return
    uniq, codes = k.dense_codes(keys, valid, lo, hi)
    tu, tc = twin.dense_codes(keys, valid, lo, hi)
    assert np.array_equal(uniq, tu) and np.array_equal(codes, tc)
    nu, inv = np.unique(keys[valid.astype(bool)], return_inverse=True)
    assert np.array_equal(uniq, nu)
    assert np.array_equal(codes[valid.astype(bool)], inv)
    assert (codes[~valid.astype(bool)] == -1).all()
    if -(2**31) <= lo and hi < 2**31:  # int32 keys (INT / DATE columns) give the same answer
        k32 = keys.astype(np.int32)
        u32, c32 = k.dense_codes(k32, valid, lo, hi)
        assert np.array_equal(u32, uniq) and np.array_equal(c32, codes)
        assert k.minmax_valid(k32, valid) == k.minmax_valid(keys, valid) == twin.minmax_valid(keys, valid)


def test_corrupt_bitmap_rows_beyond_count():
    b = roaring.serialize32([3, 70])
    w = np.zeros(1, np.uint64)
    from paimon_fast.errors import IndexFormatError

    with pytest.raises(IndexFormatError):
        k.decode_into(np.frombuffer(b, np.uint8), 0, -1, w, 64)
    with pytest.raises(IndexFormatError):
        twin.decode_into(b, 0, -1, w, 64)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 40_000),
    st.sampled_from([2, 50, 3000, 2**20]),
    st.integers(0, 30),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_topk_block_pruning_agrees(n, bound, k_, largest, strict, seed):
    """Top-k restricted to the candidate words of the per-block summary equals the full search."""
    from paimon_fast.fileindex._bitslice import BLOCK_WORDS, topk_candidate_words

    rng = np.random.default_rng(seed)
    vals = rng.integers(0, bound, n).astype(np.uint64)
    sel = (rng.random(n) >= 0.1).astype(np.uint8)
    S = max(1, (bound - 1).bit_length())
    ebm, sl = k.build_slices(vals, sel, S)
    bmax, bmin = k.block_maxmin(sl, ebm, BLOCK_WORDS)
    # the summary itself against brute force
    for b in range(len(bmax)):
        rows = np.arange(b * 256, min(n, (b + 1) * 256))
        present = vals[rows][sel[rows].astype(bool)]
        assert (bmax[b], bmin[b]) == ((int(present.max()), int(present.min())) if present.size else (-1, -1))
    words = topk_candidate_words(bmax, bmin, k_, largest, len(ebm))
    full = k.topk_positions(sl, ebm, k_, largest, strict)
    got = k.topk_positions(sl, ebm, k_, largest, strict, words)
    assert np.array_equal(got, full)
    assert np.array_equal(full.astype(np.int64), brute_topk(vals, sel.astype(bool), k_, largest, strict))


@SETTINGS
@given(columns(max_rows=1500), st.sampled_from([1, 4, 64]))
def test_block_summary_and_helpers_twin(col, bw):
    vals, sel, S = col
    ebm, sl = k.build_slices(vals, sel, S)
    if S <= 62:
        got = k.block_maxmin(sl, ebm, bw)
        want = twin.block_maxmin(sl, ebm, bw)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    else:
        with pytest.raises(ValueError):
            k.block_maxmin(sl, ebm, bw)
    keys = vals.view(np.int64)
    assert k.minmax_valid(keys, sel) == twin.minmax_valid(keys, sel)
    b = k.encode(ebm)
    assert k.check_last(np.frombuffer(b, np.uint8), 0, -1) == twin.check_last(b, 0, -1)
    w1, w2 = np.zeros_like(ebm), np.zeros_like(ebm)
    assert k.decode_fast(np.frombuffer(b, np.uint8), 0, -1, w1, len(vals)) == twin.decode_fast(b, 0, -1, w2, len(vals))
    assert np.array_equal(w1, w2) and np.array_equal(w1, ebm)
    for largest in (True, False):
        assert np.array_equal(
            k.topk_positions(sl, ebm, 5, largest, True), twin.topk_positions(sl, ebm, 5, largest, True)
        )


@SETTINGS
@given(st.integers(0, 300_000), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_encode_plain_round_trips(n, density, seed):
    from pyroaring import BitMap

    rng = np.random.default_rng(seed)
    pos = np.flatnonzero(rng.random(n) < density**2).astype(np.uint32)
    w = k.from_positions(pos, n)
    assert BitMap.deserialize(k.encode_plain(w)) == BitMap(pos)
    w2 = np.zeros_like(w)
    k.decode_into(np.frombuffer(k.encode_plain(w), np.uint8), 0, -1, w2, n)
    assert np.array_equal(w, w2)


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(-5, 5)), max_size=400))
def test_sort_codes_agree(values):
    keys = np.array([0 if v is None else v for v in values], dtype=np.int64)
    valid = np.array([v is not None for v in values], dtype=np.uint8)
    uniq, codes = k.sort_codes(keys, valid)
    m = valid.astype(bool)
    nu, inv = np.unique(keys[m], return_inverse=True)
    assert np.array_equal(uniq, nu)
    assert np.array_equal(codes[m], inv) and (codes[~m] == -1).all()
    tu, tc = twin.dense_codes(keys, valid, 0, 0)  # the twin ranks by sorting
    assert np.array_equal(uniq, tu) and np.array_equal(codes, tc)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 300_000), st.integers(0, 2**32 - 1))
def test_compare_bytes_many_containers(n, seed):
    from pyroaring import BitMap

    rng = np.random.default_rng(seed)
    vals = rng.integers(0, 5000, n).astype(np.uint64)
    sel = (rng.random(n) >= 0.1).astype(np.uint8)
    ebm, sl = k.build_slices(vals, sel, 13)
    for op, v in [("lt", 40), ("gte", 100), ("eq", 7)]:
        got = BitMap.deserialize(k.compare_bytes(list(sl), ebm, op, v))
        assert got == BitMap(k.to_positions(k.compare(sl, ebm, op, v)))


@SETTINGS_FX
@given(
    n=st.integers(0, 400),
    dt=st.sampled_from(["i1", "i2", "i4", "i8"]),
    kind=st.sampled_from(["small", "wide", "neg", "one"]),
    pnull=st.sampled_from([None, 0.0, 0.1, 0.5, 1.0]),
    off=st.integers(0, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_bsi_build_agrees(simd, n, dt, kind, pnull, off, seed):
    """The one-pass BSI writer kernel = its twin = Arrow-sliced input (bit offsets),
    across widths, negatives, extremes, all-null and no validity map."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dt)
    lo = info.min + 1 if dt == "i8" else info.min
    if kind == "small":
        v = rng.integers(0, 5, n + off).astype(dt)
    elif kind == "wide":
        v = rng.integers(lo, info.max, n + off, dtype=dt, endpoint=True)
    elif kind == "neg":
        v = rng.choice(np.array([lo, -1, 0, info.max, -7], dtype=dt), n + off)
    else:
        v = np.full(n + off, rng.integers(lo, info.max, dtype=dt, endpoint=True), dtype=dt)
    bits = None
    if pnull is not None:
        valid = rng.random(n + off) >= pnull
        bits = np.packbits(valid, bitorder="little")
    got = k.bsi_build(v[off:], bits, off)
    assert got == twin.bsi_build(v[off:], bits, off)


def test_bsi_build_long_min_rejected():
    v = np.array([1, -(2**63), 3], np.int64)
    with pytest.raises(ValueError):
        k.bsi_build(v, None)
    with pytest.raises(ValueError):
        twin.bsi_build(v, None)
    # a null Long.MIN_VALUE is fine
    bits = np.packbits(np.array([1, 0, 1], bool), bitorder="little")
    assert k.bsi_build(v, bits) == twin.bsi_build(v, bits)
    with pytest.raises(ValueError):
        k.bsi_build(v, np.zeros(0, np.uint8))  # validity map shorter than the rows


@SETTINGS
@given(
    st.integers(1, 140_000),
    st.sampled_from([2, 3000, 2**20]),
    st.sampled_from([0.0, 0.1, 0.97]),
    st.integers(0, 2**32 - 1),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=3),
)
def test_slice_layout_agrees(n, bound, pnull, seed, flips):
    """The slice-table reader (bounds + in-place views) = its twin on real range
    bitmap bytes, also with bytes of the table changed (same error or answer)."""
    import pyarrow as pa
    import paimon_fast as pf
    from paimon_fast.errors import IndexFormatError

    rng = np.random.default_rng(seed)
    arr = pa.array(rng.integers(0, bound, n), mask=rng.random(n) < pnull)
    w = pf.fileindex.writer("range-bitmap", "BIGINT", {})
    w.write_batch(arr)
    d = bytearray(w.finish())
    r = pf.fileindex.reader("range-bitmap", "BIGINT", bytes(d))
    if r.cardinality <= 0:
        return
    p = r._bsi_at
    S = d[p + 5]
    hl, ebm_len = int.from_bytes(d[p : p + 4], "big"), int.from_bytes(d[p + 6 : p + 10], "big", signed=True)
    sbase = p + 4 + hl + ebm_len
    nw = (n + 63) // 64
    for at, val in flips:
        if at < 8 * S:
            d[p + 14 + at] = val
    buf = np.frombuffer(bytes(d), np.uint8)
    try:
        want = twin.slice_layout(buf, p + 14, S, sbase, nw)
    except IndexFormatError as e:
        with pytest.raises(IndexFormatError) as got:
            k.slice_layout(buf, p + 14, S, sbase, nw)
        assert (got.value.what, got.value.offset) == (e.what, e.offset)
        return
    got = k.slice_layout(buf, p + 14, S, sbase, nw)
    assert np.array_equal(got, want)
    for at, ln, view in want.tolist():
        assert k.bitmap_view(buf, at, at + ln, nw) == twin.bitmap_view(buf, at, at + ln, nw) == view
    # the slices not read in place, decoded in one call = one decode_fast each (and the twin);
    # a changed table may point a slice at bytes that are no bitmap: the same error then
    ndec = int((want[:, 2] < 0).sum())
    one = np.zeros((ndec, nw), np.uint64)
    # rows not zeroed, one word wider than the bits: every word is written (the extra one cleared)
    rows = np.full((ndec, nw + 1), 0xA5A5A5A5A5A5A5A5, np.uint64)
    trows = np.full((ndec, nw), 0xA5A5A5A5A5A5A5A5, np.uint64)
    try:
        j = 0
        for at, ln, view in want.tolist():
            if view < 0:
                if ln < 4:
                    raise IndexFormatError("roaring bitmap truncated (cookie)", at)
                k.decode_fast(buf, at, at + ln, one[j], n)
                j += 1
    except IndexFormatError as e:
        with pytest.raises(IndexFormatError) as got_e:
            k.decode_slices(buf, got, rows, n)
        assert (got_e.value.what, got_e.value.offset) == (e.what, e.offset)
        return  # (the twin is an oracle of values: it accepts some damage the kernel refuses)
    k.decode_slices(buf, got, rows, n)
    twin.decode_slices(buf, want, trows, n)
    assert np.array_equal(rows[:, :nw], one) and not rows[:, nw].any() and np.array_equal(trows, one)
    with pytest.raises(ValueError):
        k.decode_slices(buf, got, np.zeros((ndec + 1, nw), np.uint64), n)  # a row too many


@SETTINGS
@given(st.integers(1, 3000), st.integers(0, 2**32 - 1), st.integers(0, 5000), st.integers(0, 255))
@example(387, 266, 95, 95)  # adjacent runs: refused by the kernel, accepted by the twin
@example(129, 0, 30, 0)  # a damaged first slice and a cut last one: the first is refused first
def test_decode_slices_damaged(n, seed, at, val):
    """A slice's bytes changed (or cut short): decode_slices raises the IndexFormatError the
    slice-by-slice decoder raises (same what, same offset), or decodes the same words."""
    import pyarrow as pa
    import paimon_fast as pf
    from paimon_fast.errors import IndexFormatError

    rng = np.random.default_rng(seed)
    w = pf.fileindex.writer("range-bitmap", "BIGINT", {})
    w.write_batch(pa.array(rng.integers(0, 1 << 20, n)))
    d = bytearray(w.finish())
    r = pf.fileindex.reader("range-bitmap", "BIGINT", bytes(d))
    p = r._bsi_at
    S = d[p + 5]
    hl, ebm_len = int.from_bytes(d[p : p + 4], "big"), int.from_bytes(d[p + 6 : p + 10], "big", signed=True)
    sbase = p + 4 + hl + ebm_len
    nw = (n + 63) // 64
    lay = k.slice_layout(np.frombuffer(bytes(d), np.uint8), p + 14, S, sbase, nw)
    lay[:, 2] = -1  # decode every slice
    lo = int(lay[0, 0])
    d[lo + at % (len(d) - lo)] = val
    buf = np.frombuffer(bytes(d), np.uint8)
    if seed % 3 == 0:  # the last slice cut short
        lay[-1, 1] = max(0, int(lay[-1, 1]) - 1 - at % 16)
    want = np.zeros((S, nw), np.uint64)
    err = None
    try:
        for i, (a, ln, _) in enumerate(lay.tolist()):
            if ln < 4:
                raise IndexFormatError("roaring bitmap truncated (cookie)", a)
            k.decode_fast(buf, a, a + ln, want[i], n)
    except IndexFormatError as e:
        err = e
    got = np.full((S, nw), 0xFFFFFFFFFFFFFFFF, np.uint64)  # (not zeroed: every word is written)
    tgot = np.full((S, nw), 0xFFFFFFFFFFFFFFFF, np.uint64)
    if err is None:
        k.decode_slices(buf, lay, got, n)
        twin.decode_slices(buf, lay, tgot, n)
        assert np.array_equal(got, want) and np.array_equal(tgot, want)
        return
    with pytest.raises(IndexFormatError) as e:
        k.decode_slices(buf, lay, got, n)
    assert (e.value.what, e.value.offset) == (err.what, err.offset)
    # (the twin is an oracle of values, not of refusals: it accepts some damage the kernel refuses,
    # e.g. adjacent runs)


@SETTINGS
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.sampled_from([4, 8]))
def test_float_sort_keys_agree(bits, width):
    """Big-endian float keys -> sort keys: the kernel = the twin = Java's order (Double.compare /
    Float.compare on the decoded values: NaNs equal and above +inf, -0.0 below 0.0)."""
    import struct

    bits = [b & ((1 << (8 * width)) - 1) for b in bits]
    specials = [0, 1 << (8 * width - 1), 1, (0x7FF8 << 48) if width == 8 else 0x7FC00000]
    bits = bits + specials
    buf = b"".join(b.to_bytes(width, "big") for b in bits)
    got = k.float_sort_keys(np.frombuffer(buf, np.uint8), width)
    assert got.tolist() == twin.float_sort_keys(buf, width).tolist()
    vals = [struct.unpack(">d" if width == 8 else ">f", b.to_bytes(width, "big"))[0] for b in bits]

    def java_key(v):  # (NaN first flag, value, -0.0 before 0.0)
        return (1, 0.0, 0) if v != v else (0, v, 0 if str(v).startswith("-") else 1)

    for i in range(len(bits)):
        for j in range(len(bits)):
            a, b = java_key(vals[i]), java_key(vals[j])
            assert (got[i] < got[j]) == (a < b) and (got[i] == got[j]) == (a == b)
    with pytest.raises(ValueError):
        k.float_sort_keys(np.zeros(8, np.uint8), 2)


@pytest.fixture(params=["simd", "portable"])
def simd(request):
    k._set_simd(request.param == "simd")
    yield request.param
    k._set_simd(True)


@SETTINGS_FX
@given(col=columns(max_rows=3000), data=st.data())
def test_compare_vector_path_agrees(simd, col, data):
    """Columns long enough for the 8-word register-blocked groups (plus a tail):
    every op and between against the twin and brute force, including literals
    at 2^S - 1, 2^S, 2^64 - 1 and with trailing zero bits."""
    vals, sel, S = col
    ebm, sl = k.build_slices(vals, sel, S)
    m = sel.astype(bool)
    pyvals = np.array([int(x) for x in vals], dtype=object)
    present = [int(x) for x in vals[m][:4]]
    cands = [0, 1, (1 << S) - 1, (1 << 64) - 1, 1 << (S - 1)] + present + [(x | 1) ^ 1 for x in present]
    if S < 64:
        cands.append(1 << S)
    v = data.draw(st.sampled_from(cands) | st.integers(0, 2**64 - 1))
    rows = list(sl)  # also the list-of-rows form
    for op, want in (
        ("eq", pyvals == v),
        ("neq", pyvals != v),
        ("lt", pyvals < v),
        ("lte", pyvals <= v),
        ("gt", pyvals > v),
        ("gte", pyvals >= v),
    ):
        got = k.compare(rows, ebm, op, v)
        assert np.array_equal(got, brute_words(m & want.astype(bool))), op
        assert np.array_equal(got, twin.compare(sl, ebm, op, v)), op
    lo, hi = data.draw(st.sampled_from(cands)), data.draw(st.sampled_from(cands))
    got = k.between(sl, ebm, lo, hi)
    assert np.array_equal(got, brute_words(m & (pyvals >= lo).astype(bool) & (pyvals <= hi).astype(bool)))
    assert np.array_equal(got, twin.between(sl, ebm, lo, hi))


@SETTINGS
@given(columns(max_rows=3000))
def test_encode_sliced_agrees(col):
    """The one-buffer bit-sliced section = its twin = the per-slice encodings."""
    vals, sel, S = col
    ebm, sl = k.build_slices(vals, sel, S)
    got = k.encode_sliced(ebm, sl)
    assert got == twin.encode_sliced(ebm, sl)
    parts = [k.encode(s) for s in sl]
    assert got.endswith(k.encode(ebm) + b"".join(parts))


@SETTINGS
@given(st.integers(1, 300_000), st.integers(0, 2**32 - 1), st.integers(0, 2))
def test_decode_slices_clears_every_word(nbits, seed, extra):
    """Bitmaps with gaps between containers, arrays, runs and full bitmap containers, decoded by
    decode_slices into rows full of ones (and ``extra`` words wider): each row equals the bitmap's
    bits, nothing of the ones left over."""
    from pyroaring import BitMap

    rng = np.random.default_rng(seed)
    nw = (nbits + 63) // 64
    bms = []
    for kind in ("sparse", "dense", "runs", "empty", "one chunk"):
        if kind == "sparse":
            vals = rng.choice(nbits, size=min(nbits, int(rng.integers(1, 3000))), replace=False)
        elif kind == "dense":
            vals = np.flatnonzero(rng.random(nbits) < 0.6)
        elif kind == "runs":
            starts = rng.integers(0, nbits, 5)
            vals = np.unique(np.concatenate([np.arange(a, min(nbits, a + int(rng.integers(1, 5000)))) for a in starts]))
        elif kind == "empty":
            vals = np.zeros(0, np.int64)
        else:  # one container far from the first: a gap before it and after it
            lo = int(rng.integers(0, nbits))
            vals = np.arange(lo, min(nbits, lo + 100))
        bm = BitMap(vals.astype(np.uint32).tolist())
        if kind == "runs":
            bm.run_optimize()
        bms.append(bm)
    parts = [bm.serialize() for bm in bms]
    buf = np.frombuffer(b"".join(parts), np.uint8)
    at = np.cumsum([0] + [len(p) for p in parts[:-1]])
    layout = np.array([[a, len(p), -1] for a, p in zip(at.tolist(), parts)], np.int64)
    rows = np.full((len(bms), nw + extra), 0xFFFFFFFFFFFFFFFF, np.uint64)
    k.decode_slices(buf, layout, rows, nbits)
    for bm, row in zip(bms, rows):
        want = np.zeros(nw + extra, np.uint64)
        for v in bm:
            want[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
        assert np.array_equal(row, want)
