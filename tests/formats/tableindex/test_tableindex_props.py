"""Kernels vs their plain-Python twins (paimon_fast/reference/tableindex.py)."""

import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_fast import tableindex as ti
from paimon_fast.reference import tableindex as ref

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# positions clustered so both in-memory forms (bit set and sorted array) and
# every container kind (array, bitmap, run) show up
_cluster = st.tuples(st.integers(0, 2**31 - 1 - 70000), st.integers(0, 6000), st.integers(1, 3))
_runs = st.tuples(st.integers(0, 2**31 - 1 - 70000), st.integers(1, 9000))


@st.composite
def positions32(draw):
    parts = []
    for base, n, step in draw(st.lists(_cluster, max_size=3)):
        parts.append(np.arange(base, base + n * step, step, dtype=np.int64))
    for base, n in draw(st.lists(_runs, max_size=2)):
        parts.append(np.arange(base, base + n, dtype=np.int64))
    parts.append(np.array(draw(st.lists(st.integers(0, 2**31 - 1), max_size=20)), dtype=np.int64))
    if draw(st.booleans()):
        parts.append(np.array([0, 2**31 - 1], dtype=np.int64))
    if draw(st.booleans()):  # dense: forces the bit-set form
        parts.append(np.arange(0, 70000, dtype=np.int64)[:: draw(st.integers(1, 40))])
    return np.concatenate(parts)


@st.composite
def positions64(draw):
    p = draw(positions32())
    keys = np.array(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)), dtype=np.int64)
    k = keys[np.arange(len(p)) % len(keys)] if len(p) else keys[:0]
    out = (k << 32) | p
    extra = draw(st.lists(st.sampled_from([0, 2**32 - 1, 2**32, 7 << 32, (9 << 32) - 1]), max_size=3))
    return np.concatenate([out, np.array(extra, dtype=np.int64)])


def _check(dv, pos, bits64):
    want = ref.dv_build(pos)
    assert dv.cardinality == len(want)
    np.testing.assert_array_equal(dv.positions(), want)
    b = dv.serialize()
    assert b == ref.dv_serialize(want, bits64)
    k64, vals = ref.dv_deserialize(b)
    assert k64 == bits64
    np.testing.assert_array_equal(vals, want)
    back = ti.DeletionVector.deserialize(b)
    assert back == dv and back.serialize() == b
    probes = np.concatenate([pos[:50], pos[:50] + 1, pos[:50] - 1, [-1, 0, 2**62]]).astype(np.int64)
    np.testing.assert_array_equal(dv.is_deleted_batch(probes), ref.is_deleted_batch(want, probes))
    np.testing.assert_array_equal(back.is_deleted_batch(probes), ref.is_deleted_batch(want, probes))
    for start in [0, int(pos[0]) if len(pos) else 5, max(0, int(pos[-1]) - 100) if len(pos) else 9]:
        for n in (0, 1, 63, 200, 1000):
            np.testing.assert_array_equal(dv.keep_mask(start, n), ref.keep_mask(want, start, n))


@SETTINGS
@given(positions32())
def test_dv32_matches_twin(pos):
    _check(ti.DeletionVector.from_positions(pos), pos, False)


@SETTINGS
@given(positions64())
def test_dv64_matches_twin(pos):
    _check(ti.DeletionVector.from_positions(pos, bitmap64=True), pos, True)


@SETTINGS
@given(positions32(), positions32())
def test_merge_is_union(a, b):
    for bits64 in (False, True):
        x = ti.DeletionVector.from_positions(a, bitmap64=bits64)
        y = ti.DeletionVector.from_positions(b, bitmap64=bits64)
        m = x.merge(y)
        np.testing.assert_array_equal(m.positions(), ref.dv_build(np.concatenate([a, b])))
        assert m.serialize() == ti.DeletionVector.from_positions(np.concatenate([a, b]), bitmap64=bits64).serialize()


def test_merge_kinds_must_match():
    with pytest.raises(TypeError):
        ti.DeletionVector.from_positions([1]).merge(ti.DeletionVector.from_positions([1], bitmap64=True))


def test_edges():
    for bits64 in (False, True):
        e = ti.DeletionVector.from_positions([], bitmap64=bits64)
        assert e.cardinality == 0 and e.is_empty()
        assert ti.DeletionVector.deserialize(e.serialize()) == e
        assert e.keep_mask(0, 5).all()
        one = ti.DeletionVector.from_positions(pa.array([5, 5, 5]), bitmap64=bits64)
        assert one.cardinality == 1 and one.is_deleted(5) and not one.is_deleted(4)
    with pytest.raises(ValueError, match="2147483647"):
        ti.DeletionVector.from_positions([2**31])
    with pytest.raises(ValueError):
        ti.DeletionVector.from_positions([-1], bitmap64=True)
    with pytest.raises(ValueError):
        ti.DeletionVector.from_positions([ti.MAX_POSITION_64 + 1], bitmap64=True)
    big = ti.DeletionVector.from_positions([ti.MAX_POSITION_64], bitmap64=True)
    with pytest.raises(ValueError, match="2GB"):  # Java: "Can't serialize index > 2GB"
        big.serialize()


@SETTINGS
@given(positions32(), st.integers(0, 3), st.lists(st.integers(0, 5000), min_size=1, max_size=5))
def test_filter_batches_match_twin(pos, start_shift, sizes):
    dv = ti.DeletionVector.from_positions(pos)
    want = ref.dv_build(pos)
    start = int(pos[0]) - start_shift if len(pos) and pos[0] >= start_shift else 0
    total = sum(sizes)
    rows = pa.array(np.arange(start, start + total, dtype=np.int64))
    batches = []
    at = 0
    for n in sizes:
        batches.append(pa.record_batch([rows.slice(at, n)], names=["row"]))
        at += n
    got = list(ti.filter_batches(dv, batches, start))
    at = start
    for b, g in zip(batches, got):
        assert g.equals(ref.filter_batch(want, b, at))
        at += b.num_rows
    kept = np.concatenate([g.column(0).to_numpy() for g in got]) if got else np.zeros(0)
    np.testing.assert_array_equal(kept, np.setdiff1d(np.arange(start, start + total), want.astype(np.int64)))
    assert ti.apply_deletion_vector(None, batches[0], 0) is batches[0]


# ---------------------------------------------------------------- hash index


@SETTINGS
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=400), st.one_of(st.none(), st.integers(0, 300)))
def test_int_set_order_matches_twin(values, expected):
    values += values[: len(values) // 4]  # duplicates
    got = ti.int_hash_set_order(np.array(values, dtype=np.int64), expected)
    assert got.tolist() == ref.int_set_order(values, 16 if expected is None else expected)
    assert ti.read_hash_index(ti.write_hash_index(values, expected)).tolist() == got.tolist()


def test_int_set_order_zero_and_rehash():
    vals = [0] + list(range(1, 200)) + [0, -5]
    assert ti.int_hash_set_order(vals).tolist() == ref.int_set_order(vals)
    assert ti.int_hash_set_order(vals)[0] == 0
    # "start from the previous file's count": same values, different expected -> Java's other order
    old = ti.read_hash_index(ti.write_hash_index(list(range(1, 40))))
    upd = ti.update_hash_index(old, [1000, 1001])
    assert ti.read_hash_index(upd).tolist() == ref.int_set_order(old.tolist() + [1000, 1001], len(old))


TYPES = [
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "BOOLEAN",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME",
    "STRING",
    "VARCHAR(10)",
    "CHAR(3)",
    "BYTES",
    "BINARY(4)",
    "DECIMAL(10, 2)",
    "DECIMAL(30, 5)",
    "TIMESTAMP(3)",
    "TIMESTAMP(6)",
    "TIMESTAMP(9)",
    "TIMESTAMP(3) WITH LOCAL TIME ZONE",
    "TIMESTAMP(6) WITH LOCAL TIME ZONE",
]


_CTX = decimal.Context(prec=100)


def _value(t, draw):
    r = t.split("(")[0]
    if r == "TINYINT":
        return draw(st.integers(-128, 127))
    if r == "SMALLINT":
        return draw(st.integers(-32768, 32767))
    if r in ("INT",):
        return draw(st.integers(-(2**31), 2**31 - 1))
    if r == "BIGINT":
        return draw(st.integers(-(2**63), 2**63 - 1))
    if r == "BOOLEAN":
        return draw(st.booleans())
    if r in ("FLOAT", "DOUBLE"):
        return draw(st.floats(allow_nan=False, width=32 if r == "FLOAT" else 64))
    if r == "DATE":
        return draw(st.integers(-100000, 100000))
    if r == "TIME":
        return draw(st.integers(0, 86399999))
    if r in ("STRING", "VARCHAR", "CHAR"):
        return draw(st.text(max_size=20))
    if r in ("BYTES", "BINARY"):
        return draw(st.binary(max_size=20))
    if t == "DECIMAL(10, 2)":
        return decimal.Decimal(draw(st.integers(-(10**10) + 1, 10**10 - 1))).scaleb(-2, context=_CTX)
    if t == "DECIMAL(30, 5)":
        return decimal.Decimal(draw(st.integers(-(10**30) + 1, 10**30 - 1))).scaleb(-5, context=_CTX)
    if r == "TIMESTAMP":
        p = int(t.split("(")[1][0])
        micros = draw(st.integers(-(2**50), 2**50))
        nanos = draw(st.integers(0, 999)) if p == 9 else 0
        if p <= 3:
            micros -= micros % 1000
        if p == 6 or p == 9:
            pass
        return (micros, nanos)
    raise AssertionError(t)


def _arrow_col(t, vals):
    from paimon_fast.core.types import DataType

    dt = DataType.parse(t)
    at = dt.to_arrow()
    if dt.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        scale = {"ms": 1 / 1000, "us": 1, "ns": 1000}[at.unit]
        raw = [
            None
            if v is None
            else (
                v[0] // 1000
                if at.unit == "ms"
                else v[0] * (1000 if at.unit == "ns" else 1) + (v[1] if at.unit == "ns" else 0)
            )
            for v in vals
        ]
        del scale
        return pa.array(raw, type=pa.int64()).cast(at)
    if dt.root == "TIME":
        return pa.array(vals, type=pa.int32()).cast(at)
    if dt.root == "DATE":
        return pa.array(vals, type=pa.int32()).cast(at)
    return pa.array(vals, type=at)


def _ref_value(t, v):
    if v is None:
        return None
    r = t.split("(")[0]
    if r == "TIMESTAMP":
        micros, nanos = v
        millis = micros // 1000
        return (millis, (micros - millis * 1000) * 1000 + nanos)
    if r == "FLOAT":
        return float(np.float32(v))
    return v


@st.composite
def key_rows(draw):
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=4))
    n = draw(st.integers(0, 25))
    all_null = draw(st.booleans()) and n > 0 and draw(st.booleans())
    cols = []
    for t in types:
        vals = [None if (all_null or draw(st.integers(0, 5)) == 0) else _value(t, draw) for _ in range(n)]
        cols.append(vals)
    return types, cols


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key_rows())
def test_binary_row_hash_matches_twin(case):
    types, cols = case
    arrays = [_arrow_col(t, v) for t, v in zip(types, cols)]
    got = ti.binary_row_hash(arrays, types)
    rows = list(zip(*[[_ref_value(t, x) for x in v] for t, v in zip(types, cols)])) if cols[0] else []
    want = ref.binary_row_hash(rows, types)
    np.testing.assert_array_equal(got, want)


def test_binary_row_hash_extremes():
    types = ["INT", "BIGINT", "STRING", "DECIMAL(38, 0)", "TIMESTAMP(9)"]
    cols = [
        [2**31 - 1, -(2**31), None],
        [2**63 - 1, -(2**63), None],
        ["", "1234567", None],
        [decimal.Decimal(10**38 - 1), decimal.Decimal(-(10**38) + 1), None],
        [(2**40, 999999), (-1, 0), None],
    ]
    arrays = [
        pa.array(cols[0], pa.int32()),
        pa.array(cols[1], pa.int64()),
        pa.array(cols[2]),
        pa.array(cols[3], pa.decimal128(38, 0)),
        pa.array([2**40 * 10**6 + 999999, -(10**6), None], pa.int64()).cast(pa.timestamp("ns")),
    ]
    got = ti.binary_row_hash(arrays, types)
    want = ref.binary_row_hash(list(zip(*cols)), types)
    np.testing.assert_array_equal(got, want)
    assert len(ti.binary_row_hash([pa.array([], pa.int32())], ["INT"])) == 0
    # a chunked / sliced column gives the same hashes
    sl = pa.chunked_array([pa.array(["a", "bbbbbbbbbbbbb"]), pa.array([None, "c"])])
    np.testing.assert_array_equal(
        ti.binary_row_hash([sl], ["STRING"]),
        ref.binary_row_hash([("a",), ("bbbbbbbbbbbbb",), (None,), ("c",)], ["STRING"]),
    )
