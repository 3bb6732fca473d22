"""Range bitmap and BSI writer + reader vs brute force over random columns
(hypothesis): every predicate, top-k / bottom-k with nulls first/last, found
sets, strict and non-strict; float ordering as Java's Float.compare."""

import math
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pyroaring import BitMap

import paimon_fast as pf
from paimon_fast.fileindex.range_bitmap import NullLiteralError
from paimon_fast.core.predicate import Leaf

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def java_key(v, t):
    """Sort key as Java orders values (Double.compare for floats)."""
    if t == "DOUBLE":
        if math.isnan(v):
            return (2, 0)
        b = struct.unpack(">q", struct.pack(">d", v))[0]
        return (1, b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF))
    if t == "STRING":
        return v.encode()
    return v


VALS = {
    "INT": st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 3),
    "BIGINT": st.integers(-(2**63) + 1, 2**63 - 1) | st.integers(-3, 3),
    "DOUBLE": st.sampled_from([0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan]) | st.floats(-1e6, 1e6),
    "STRING": st.text(alphabet="ab\u00e9\u4e2d\x00", max_size=4),
}


@st.composite
def column(draw, types=("INT", "BIGINT", "DOUBLE", "STRING")):
    t = draw(st.sampled_from(types))
    pool = draw(st.lists(VALS[t], min_size=1, max_size=6))
    n = draw(st.integers(0, 80))
    vals = [draw(st.none() | st.sampled_from(pool)) for _ in range(n)]
    return t, vals, pool


def rows(vals, pred):
    return BitMap([i for i, v in enumerate(vals) if v is not None and pred(v)])


def build(itype, t, vals, options=None):
    w = pf.fileindex.writer(itype, t, options or {})
    w.write_batch(pa.array(vals, type=pf.core.types.DataType.parse(t).to_arrow()))
    return pf.fileindex.reader(itype, t, w.finish(), options or {})


def check_predicates(r, t, vals, pool):
    K = lambda v: java_key(v, t)  # noqa: E731
    for lit in pool + [pool[0]]:
        L = K(lit)
        cases = {
            "equal": lambda v: K(v) == L,
            "not_equal": lambda v: K(v) != L,
            "less_than": lambda v: K(v) < L,
            "less_or_equal": lambda v: K(v) <= L,
            "greater_than": lambda v: K(v) > L,
            "greater_or_equal": lambda v: K(v) >= L,
        }
        for op, fn in cases.items():
            assert r.evaluate(Leaf(op, "x", (lit,))).bitmap == rows(vals, fn), (op, lit)
        for hi in pool[:3]:
            H = K(hi)
            assert r.evaluate(Leaf("between", "x", (lit, hi))).bitmap == rows(vals, lambda v: L <= K(v) <= H)
    ins = tuple(pool[:3])
    keys = {K(x) for x in ins}
    assert r.evaluate(Leaf("in", "x", ins)).bitmap == rows(vals, lambda v: K(v) in keys)
    assert r.evaluate(Leaf("not_in", "x", ins)).bitmap == rows(vals, lambda v: K(v) not in keys)
    assert r.evaluate(Leaf("is_null", "x")).bitmap == BitMap([i for i, v in enumerate(vals) if v is None])
    assert r.evaluate(Leaf("is_not_null", "x")).bitmap == rows(vals, lambda v: True)


@SETTINGS
@given(column(), st.sampled_from([{}, {"chunk-size": "8b"}]))
def test_range_bitmap_predicates(col, options):
    t, vals, pool = col
    r = build("range-bitmap", t, vals, options)
    check_predicates(r, t, vals, pool)
    if any(v is not None for v in vals):
        with pytest.raises(NullLiteralError):
            r.evaluate(Leaf("in", "x", (pool[0], None))).bitmap


def brute_topk(vals, t, k, desc, nulls_first, found, strict):
    n = len(vals)
    F = [i for i in range(n) if found is None or i in found]
    if all(v is None for v in vals):
        return BitMap(range(n))
    nn = [i for i in F if vals[i] is not None]
    nulls = [i for i in F if vals[i] is None]

    def f(kk):
        if kk == 0 or not F:
            return []
        if len(nn) <= kk:
            return nn
        keys = sorted((java_key(vals[i], t) for i in nn), reverse=desc)
        kth = keys[kk - 1]
        better = [i for i in nn if (java_key(vals[i], t) > kth if desc else java_key(vals[i], t) < kth)]
        ties = [i for i in nn if java_key(vals[i], t) == kth]
        if strict:
            ties = ties[len(ties) - (kk - len(better)) :]
        return better + ties

    if not nulls_first:
        out = f(k)
        if len(out) >= k:
            return BitMap(out)
        return BitMap(out + (nulls[: k - len(out)] if strict else nulls))
    if len(nulls) >= k:
        return BitMap(nulls[:k] if strict else nulls)
    return BitMap(nulls + f(k - len(nulls)))


@SETTINGS
@given(column(), st.integers(0, 12), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_range_bitmap_top_k(col, k, desc, nulls_first, strict, use_found):
    t, vals, pool = col
    r = build("range-bitmap", t, vals)
    found = None
    if use_found:
        found = BitMap(i for i in range(len(vals)) if i % 3 != 1)
    fn = r.top_k if desc else r.bottom_k
    got = fn(k, nulls_first=nulls_first, found_set=found, strict=strict)
    assert got == brute_topk(vals, t, k, desc, nulls_first, found, strict)


@SETTINGS
@given(column(types=("INT", "BIGINT")))
def test_bsi_predicates(col):
    t, vals, pool = col
    if any(v == -(2**63) for v in vals):
        return
    r = build("bsi", t, vals)
    check_predicates(r, t, vals, pool)


def test_describe_and_get():
    vals = [3, None, -1, 3, 7]
    r = build("range-bitmap", "INT", vals)
    d = r.describe()
    assert (d["row_count"], d["cardinality"], d["min"], d["max"], d["non_null_rows"]) == (5, 3, -1, 7, 4)
    assert [r.get(i) for i in range(6)] == vals + [None]
    b = build("bsi", "BIGINT", vals).describe()
    assert b["positive"]["rows"] == 3 and b["negative"]["rows"] == 1 and b["positive"]["max"] == 7


def test_through_the_container():
    """Both indexes inside a FileIndexFormat file answer like their readers; inspect's describe works."""
    vals = [4, None, -2, 9, 4, 7, None, 0]
    arr = pa.array(vals, type=pa.int32())
    wr = pf.fileindex.writer("range-bitmap", "INT")
    wr.write_batch(arr)
    wb = pf.fileindex.writer("bsi", "INT")
    wb.write_batch(arr)
    blob = pf.FileIndexFormat.write({"x": {"range-bitmap": wr.finish(), "bsi": wb.finish()}})
    f = pf.FileIndexFormat.open(blob, {"x": "INT"})
    for pred, want in [
        (pf.field("x") > 3, [0, 3, 4, 5]),
        (pf.field("x").between(-2, 4), [0, 2, 4, 7]),
        (pf.field("x").is_null(), [1, 6]),
        ((pf.field("x") < 5) & (pf.field("x") != 4), [2, 7]),
    ]:
        assert f.evaluate(pred).bitmap == BitMap(want)
    d = f.describe()
    kinds = [e["index_type"] for e in d["columns"]["x"]]
    assert kinds == ["range-bitmap", "bsi"]


def test_bsi_writer_batches_and_numpy_inputs():
    """The one-pass BSI writer: one batch = several (Arrow slices with bit
    offsets, masked numpy) = the twin; a numpy batch changed after
    write_batch does not change the index."""
    from paimon_fast.reference import bitslice as twin

    rng = np.random.default_rng(5)
    vals = rng.integers(-100_000, 100_000, 5000)
    mask = rng.random(5000) < 0.2
    arr = pa.array(vals, mask=mask)
    w = pf.fileindex.writer("bsi", "BIGINT", {})
    w.write_batch(arr)
    one = w.finish()
    assert one == twin.bsi_build(vals, np.packbits(~mask, bitorder="little"))
    w = pf.fileindex.writer("bsi", "BIGINT", {})
    w.write_batch(arr.slice(0, 1234))
    w.write_batch(np.ma.array(vals[1234:3000], mask=mask[1234:3000]))
    w.write_batch(arr.slice(3000))
    assert w.finish() == one
    a = vals.copy()
    w = pf.fileindex.writer("bsi", "BIGINT", {})
    w.write_batch(a)
    a[:] = 7
    assert w.finish() == twin.bsi_build(vals, None)
