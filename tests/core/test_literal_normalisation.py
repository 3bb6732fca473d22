"""Literals the column cannot hold get SQL's numeric answers on every path.

Property tests: random INT / DECIMAL / FLOAT / DATE / TIMESTAMP columns and
random literals of every Python numeric type; the exact Arrow filter must
equal an independent plain-Python three-valued-logic evaluator
(``sql_oracle``), and every index (bitmap, range-bitmap, BSI, bloom filter,
global index) must keep every row the oracle keeps; the indexes whose answers
are row sets must give exactly the oracle's rows for the comparisons they
answer exactly.
"""

import importlib.util
import datetime as dt
import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_fast as pf
from paimon_fast import globalindex as gi
from paimon_fast.errors import ColumnNotFoundError, LiteralTypeError, PaimonFastError
from paimon_fast.core.literals import normalize
from paimon_fast.core.predicate import Leaf
from paimon_fast.core.result import BitmapResult
from paimon_fast.read.arrow_filter import filter_table
from paimon_fast.core.types import DataType
from tests.support.sql_oracle import holds, matching_rows
from tests.support.rows import result_rows

# (Paimon type, Arrow type, value strategy)
_EPOCH = dt.datetime(1970, 1, 1)
COLUMNS = {
    "TINYINT": (pa.int8(), st.integers(-128, 127)),
    "INT": (pa.int32(), st.integers(-50, 50) | st.integers(-(2**31), 2**31 - 1)),
    "BIGINT": (
        pa.int64(),
        st.integers(-50, 50) | st.integers(-(2**63) + 1, 2**63 - 1),
    ),  # BSI (as Java) cannot store MIN
    "DECIMAL(9, 2)": (
        pa.decimal128(9, 2),
        st.integers(-(10**9) + 1, 10**9 - 1).map(lambda n: decimal.Decimal(n).scaleb(-2)),
    ),
    "FLOAT": (pa.float32(), st.floats(width=32, allow_nan=True) | st.sampled_from([0.0, -0.0, 1.5, 0.1])),
    "DOUBLE": (pa.float64(), st.floats(allow_nan=True) | st.sampled_from([0.0, -0.0, 5.0, 0.1])),
    "DATE": (pa.date32(), st.dates(dt.date(1960, 1, 1), dt.date(2040, 1, 1))),
    "TIMESTAMP(3)": (
        pa.timestamp("ms"),
        st.integers(-(10**12), 10**13).map(lambda ms: _EPOCH + dt.timedelta(milliseconds=ms)),
    ),
    "TIMESTAMP(6)": (
        pa.timestamp("us"),
        st.integers(-(10**15), 10**16).map(lambda us: _EPOCH + dt.timedelta(microseconds=us)),
    ),
    # nanoseconds: Paimon's file indexes key them by microseconds (coarser than the values)
    "TIMESTAMP(9)": (
        pa.timestamp("ns"),
        st.integers(-(10**15), 10**15).map(lambda ns: _pd().Timestamp(ns, unit="ns"))
        | st.integers(-(10**6), 10**6).map(lambda k: _pd().Timestamp(1_000_000_000 + k, unit="ns")),
    ),
}


def _pd():
    import pandas as pd

    return pd


if importlib.util.find_spec("pandas") is None:
    # nanosecond literals are pandas Timestamps (Python's datetime stops at microseconds): the
    # tables job, which has pandas, covers TIMESTAMP(9); the oldest-versions job has none
    del COLUMNS["TIMESTAMP(9)"]

INDEXES = {
    "bitmap": lambda t: not t.startswith("DECIMAL"),
    "range-bitmap": lambda t: t != "TIMESTAMP(9)",  # Java: precision <= 6 only
    "bsi": lambda t: t not in ("FLOAT", "DOUBLE"),
    "bloom-filter": lambda t: not t.startswith("DECIMAL"),
}


def _literal(ptype, values):
    """Literals of every Python numeric type, near and far from the column's values."""
    default = dt.date(2020, 1, 1) if ptype == "DATE" else dt.datetime(2020, 1, 1) if ptype.startswith("TIME") else 0
    if ptype == "TIMESTAMP(9)":
        default = _pd().Timestamp(1_000_000_500, unit="ns")
    near = st.sampled_from(values) if values else st.just(default)
    nums = st.one_of(
        st.integers(-60, 60),
        st.integers(-(2**70), 2**70),
        st.sampled_from([2**31, -(2**31) - 1, 2**63, -(2**63) - 1]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(-60, 60),
        st.sampled_from([0.5, 5.5, -0.0, 0.1, float("nan"), float("inf"), -float("inf"), 1e300]),
        st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-100, max_value=100),
        st.integers(-60, 60).map(np.int64),
        st.floats(-60, 60, width=32).map(np.float32),
    )
    if ptype.startswith("DECIMAL") or ptype in ("TINYINT", "INT", "BIGINT", "FLOAT", "DOUBLE"):

        def shift(v):
            return st.sampled_from(
                [
                    v,
                    v + decimal.Decimal("0.001") if isinstance(v, decimal.Decimal) else v,
                    float(v) + 0.5 if not isinstance(v, float) or math.isfinite(v) else v,
                ]
            )

        return st.one_of(nums, near, near.flatmap(shift))
    if ptype == "DATE":
        dts = st.datetimes(dt.datetime(1950, 1, 1), dt.datetime(2050, 1, 1))
        return st.one_of(
            near,
            st.dates(dt.date(1950, 1, 1), dt.date(2050, 1, 1)),
            dts,
            near.map(lambda d: dt.datetime(d.year, d.month, d.day, 0, 0, 0, 1)),
            near.map(lambda d: d.isoformat()),
        )
    dts = st.datetimes(dt.datetime(1950, 1, 1), dt.datetime(2050, 1, 1))
    if ptype == "TIMESTAMP(9)":  # literals finer and coarser than the microsecond keys
        pd = _pd()
        return st.one_of(
            near,
            dts,
            near.map(lambda d: d + pd.Timedelta(1, "ns")),
            near.map(lambda d: d - pd.Timedelta(1, "ns")),
            near.map(lambda d: d.floor("us")),
            near.map(lambda d: d.to_pydatetime(warn=False)),
        )
    return st.one_of(
        near,
        dts,
        near.map(lambda d: d + dt.timedelta(microseconds=1)),
        near.map(lambda d: d.date()),
        near.map(lambda d: d.isoformat()),
        dts.map(lambda d: d.replace(tzinfo=dt.timezone(dt.timedelta(hours=3)))),
    )


OPS = [
    "equal",
    "not_equal",
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "in",
    "not_in",
    "between",
    "not_between",
]


@st.composite
def cases(draw, types=tuple(COLUMNS)):
    ptype = draw(st.sampled_from(types))
    at, vals = COLUMNS[ptype]
    values = draw(st.lists(st.none() | vals, min_size=1, max_size=40))
    lit = _literal(ptype, [v for v in values if v is not None])
    op = draw(st.sampled_from(OPS))
    if op in ("in", "not_in"):
        lits = tuple(draw(st.lists(lit, min_size=1, max_size=4)))
    elif op in ("between", "not_between"):
        lits = (draw(lit), draw(lit))
    else:
        lits = (draw(lit),)
    return ptype, at, values, Leaf(op, "x", lits)


def _has_nan(values):
    return any(isinstance(v, float) and math.isnan(v) for v in values)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_exact_filter_and_every_index_answer_like_sql(case):
    ptype, at, values, leaf = case
    tbl = pa.table({"x": pa.array(values, at)})
    rows = tbl.to_pylist()
    want = matching_rows(leaf, rows)
    # the exact Arrow filter (ParquetDataset.scan, Spark executors, Hudi reads)
    tbl2 = tbl.append_column("i", pa.array(range(len(values)), pa.int32()))
    got = filter_table(tbl2, leaf).column("i").to_pylist()
    assert got == want, (leaf, values)
    # every index, asked as consumers ask (the predicate normalised against the schema first)
    pred = normalize(leaf, tbl.schema)
    dtype = DataType.parse(ptype)
    exact_ops = ("equal", "in", "less_than", "less_or_equal", "greater_than", "greater_or_equal", "between")
    for itype, ok in INDEXES.items():
        if not ok(ptype):
            continue
        w = pf.fileindex.writer(itype, dtype, {"items": "100"} if itype == "bloom-filter" else None)
        w.write_batch(tbl.column("x"))
        r = pf.fileindex.reader(itype, dtype, w.finish(), {"items": "100"} if itype == "bloom-filter" else None)
        res = r.evaluate(pred)
        kept = result_rows(res, len(values))
        assert set(want) <= kept, (itype, leaf, pred, values)
        if (
            itype != "bloom-filter"
            and ptype != "TIMESTAMP(9)"
            and isinstance(res, BitmapResult)
            and isinstance(pred, Leaf)
            and pred.op in exact_ops
            and not _has_nan(values)
        ):
            # row-set answers of value comparisons are exact (null rows never satisfy them)
            assert kept == set(want), (itype, leaf, pred, values)
        # a reader asked directly (no normalisation by the caller) never drops a matching row either,
        # except Java's float semantics (-0.0 < 0.0, NaN = NaN) which the consumers' IEEE step covers
        if ptype not in ("FLOAT", "DOUBLE"):
            assert set(want) <= result_rows(r.evaluate(leaf), len(values)), (itype, leaf, values)
    # the global index
    if not ptype.startswith("DECIMAL") or True:
        gw = gi.writer(dtype)
        gw.write_batch(tbl.column("x"), np.arange(len(values), dtype=np.int64))
        data, _meta = gw.finish()
        if data is not None:
            gr = gi.reader(dtype, data, None, len(values))
            g = gr.evaluate(pred)
            if g is not pf.UNSUPPORTED:
                assert set(want) <= set(g), ("global", leaf, pred, values)


def _int_table():
    return pa.table({"x": pa.array(range(20), pa.int32()), "i": pa.array(range(20), pa.int32())})


@pytest.mark.parametrize(
    "pred, n",
    [
        (pf.field("x") == 5.5, 0),
        (pf.field("x") < 5.5, 6),
        (pf.field("x") != 5.5, 20),
        (pf.field("x").isin([5.5, 7]), 1),
        (pf.field("x") <= 5.5, 6),
        (pf.field("x") > 5.5, 14),
        (pf.field("x") < 2**70, 20),
        (pf.field("x") > 2**40, 0),
        (pf.field("x") == 2**40, 0),
        (pf.field("x") != 2**40, 20),
        (pf.field("x").notin([5.5]), 20),
        (pf.field("x").between(1.5, 3.5), 2),
        (pf.field("x") < float("nan"), 0),
        (pf.field("x") != float("nan"), 20),
        (pf.field("x") < float("inf"), 20),
        (pf.field("x") == decimal.Decimal("5.0"), 1),
        (pf.field("x") == np.float32(5.0), 1),
    ],
)
def test_issue_examples_on_an_int_column(pred, n):
    tbl = _int_table()
    assert filter_table(tbl, pred).num_rows == n
    assert len(matching_rows(pred, tbl.to_pylist())) == n  # the oracle agrees
    # pyarrow.compute on the full column, comparing numerically in double
    lit = pred.literals
    if (
        pred.op in ("equal", "less_than", "greater_than", "less_or_equal", "not_equal")
        and isinstance(lit[0], float)
        and not math.isnan(lit[0])
        and abs(lit[0]) < 1e300
    ):
        fn = {
            "equal": pc.equal,
            "less_than": pc.less,
            "greater_than": pc.greater,
            "less_or_equal": pc.less_equal,
            "not_equal": pc.not_equal,
        }[pred.op]
        assert pc.sum(fn(tbl.column("x").cast(pa.float64()), lit[0])).as_py() == n


@pytest.mark.parametrize("itype", ["bitmap", "range-bitmap", "bsi", "bloom-filter"])
def test_index_readers_answer_out_of_type_literals(itype):
    w = pf.fileindex.writer(itype, "INT")
    w.write_batch(pa.array(range(20), pa.int32()))
    r = pf.fileindex.reader(itype, "INT", w.finish())
    assert not r.evaluate(pf.field("x") == 5.5).remain
    assert not r.evaluate(pf.field("x") == 2**40).remain  # was ArrowInvalid from the bloom filter
    assert r.evaluate(pf.field("x") < 2**70).remain
    if itype in ("range-bitmap", "bsi"):
        assert set(r.evaluate(pf.field("x") < 5.5).bitmap) == set(range(6))
        assert set(r.evaluate(pf.field("x") >= 5.5).bitmap) == set(range(6, 20))
    if itype != "bloom-filter":
        assert set(r.evaluate(pf.field("x").isin([5.5, 7])).bitmap) == {7}


def test_string_against_number_is_a_clear_error():
    tbl = _int_table()
    with pytest.raises(LiteralTypeError) as e:
        filter_table(tbl, pf.field("x") == "5")
    msg = str(e.value)
    assert "'x'" in msg and "int32" in msg and "'5'" in msg
    assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError) and isinstance(e.value, PaimonFastError)
    with pytest.raises(LiteralTypeError):
        filter_table(pa.table({"s": ["a"]}), pf.field("s") == 5)
    w = pf.fileindex.writer("bitmap", "INT")
    w.write_batch(pa.array([1], pa.int32()))
    with pytest.raises(LiteralTypeError):
        pf.fileindex.reader("bitmap", "INT", w.finish()).evaluate(pf.field("x") == "a")


def test_missing_column_is_a_clear_error():
    with pytest.raises(ColumnNotFoundError) as e:
        filter_table(_int_table(), pf.field("nope") == 1)
    assert isinstance(e.value, KeyError) and isinstance(e.value, ValueError)
    assert str(e.value).startswith("no column 'nope'")


def test_none_literals_pass_through_unchanged():
    leaf = Leaf("equal", "x", (None,))
    assert normalize(leaf, {"x": pa.int32()}) is leaf
    leaf = Leaf("in", "x", (None, 1))
    assert normalize(leaf, {"x": pa.int32()}) is leaf


def test_between_with_a_null_bound_like_sql():
    """``x NOT BETWEEN a AND NULL`` is true where ``NOT (x >= a)`` is (SQL: ``(x >= a) AND NULL``
    negated), also when ``a`` needs normalising (a datetime on a DATE column lost every row:
    found by the Paimon property test); ``BETWEEN`` with a null bound is never true."""
    t = pa.table(
        {
            "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2), None]),
            "x": pa.array([1, 5, None], pa.int32()),
            "f": pa.array([float("nan"), 1.0, 5.0], pa.float64()),
            "m": pa.array([decimal.Decimal("1.25"), decimal.Decimal("3.00"), None], pa.decimal128(5, 2)),
            "ts": pa.array([dt.datetime(2024, 1, 1, 1), dt.datetime(2024, 1, 1, 3), None], pa.timestamp("ms")),
        }
    )
    lits = {
        "d": [dt.datetime(2024, 1, 1, 12), dt.date(2024, 1, 2)],
        "x": [5.5, 3, 2**70, float("nan")],
        "f": [0.5, float("nan"), float("inf")],
        "m": [decimal.Decimal("1.255"), 3, float("nan")],
        "ts": [dt.datetime(2024, 1, 1, 2, 0, 0, 500)],
    }
    rows = t.to_pylist()
    for col, vals in lits.items():
        for v in vals:
            for lo, hi in ((v, None), (None, v), (None, None)):
                for op in ("between", "not_between"):
                    p = Leaf(op, col, (lo, hi))
                    got = filter_table(t, p).to_pylist()
                    assert repr(got) == repr([r for r in rows if holds(p, r)]), p  # repr: NaN != NaN
    assert filter_table(t, Leaf("not_between", "d", (dt.datetime(2024, 1, 1, 12), None))).num_rows == 1


def test_finer_precision_timestamps_and_dates():
    ts = pa.table({"x": pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 1000)], pa.timestamp("ms"))})
    lit = dt.datetime(2020, 1, 1, 0, 0, 0, 1500)
    assert filter_table(ts, pf.field("x") == lit).num_rows == 0
    assert filter_table(ts, pf.field("x") < lit).num_rows == 1
    assert filter_table(ts, pf.field("x") > lit).num_rows == 0
    d = pa.table({"x": pa.array([dt.date(2020, 1, 1)], pa.date32())})
    assert filter_table(d, pf.field("x") == dt.datetime(2020, 1, 1, 12)).num_rows == 0
    assert filter_table(d, pf.field("x") < dt.datetime(2020, 1, 1, 12)).num_rows == 1
    assert filter_table(d, pf.field("x") == "2020-01-01").num_rows == 1


SCAN_COLS = {"i": "INT", "d": "DECIMAL(9, 2)", "f": "DOUBLE", "dt": "DATE", "ts": "TIMESTAMP(6)"}
SCAN_INDEXES = {
    "file-index.bitmap.columns": "i,f",
    "file-index.bsi.columns": "i,dt",
    "file-index.range-bitmap.columns": "d,f,ts",
    "file-index.bloom-filter.columns": "i,f",
}


@st.composite
def scan_cases(draw):
    n = draw(st.integers(1, 25))
    files = []
    for _ in range(draw(st.integers(1, 3))):
        files.append(
            {c: draw(st.lists(st.none() | COLUMNS[t][1], min_size=n, max_size=n)) for c, t in SCAN_COLS.items()}
        )
    leaves = []
    for _ in range(draw(st.integers(1, 2))):
        c = draw(st.sampled_from(sorted(SCAN_COLS)))
        vals = [v for f in files for v in f[c] if v is not None]
        lit = _literal(SCAN_COLS[c], vals)
        op = draw(st.sampled_from(OPS))
        k = draw(st.integers(1, 3)) if op in ("in", "not_in") else 2 if "between" in op else 1
        leaves.append(Leaf(op, c, tuple(draw(lit) for _ in range(k))))
    pred = leaves[0]
    if len(leaves) == 2:
        pred = draw(st.sampled_from([pred & leaves[1], pred | leaves[1], ~pred | leaves[1]]))
    return files, pred


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scan_cases())
def test_dataset_scan_with_every_index_answers_like_sql(case):
    """ParquetDataset.scan (index plan, bitmaps, exact filter) end to end against the oracle."""
    import tempfile

    import pyarrow.parquet as pq

    from paimon_fast.tables import ParquetDataset

    files, pred = case
    with tempfile.TemporaryDirectory() as root:
        rows = []
        for k, f in enumerate(files):
            tbl = pa.table(
                {c: pa.array(f[c], COLUMNS[t][0]) for c, t in SCAN_COLS.items()}
                | {"rid": pa.array([k * 1000 + j for j in range(len(f["i"]))], pa.int64())}
            )
            pq.write_table(tbl, f"{root}/f{k}.parquet")
            rows.extend(tbl.to_pylist())
        ds = ParquetDataset(root)
        ds.build(SCAN_INDEXES)
        got, rep = ds.scan(pred)
        want = sorted(r["rid"] for r in rows if holds(pred, r))
        assert sorted(got.column("rid").to_pylist()) == want, (pred, rep)


_ALPHA = st.sampled_from(list("ab%_\\xé"))


@st.composite
def string_cases(draw):
    values = draw(st.lists(st.none() | st.text(_ALPHA, max_size=4), min_size=1, max_size=30))
    pat = draw(st.text(_ALPHA, max_size=5))
    lit = draw(st.text(_ALPHA, max_size=3))
    opt = draw(st.lists(st.none() | st.text(_ALPHA, max_size=2), min_size=1, max_size=3))
    f = pf.field("x")
    pred = draw(
        st.sampled_from(
            [
                f.like(pat),
                f.startswith(lit),
                f.endswith(lit),
                f.contains(lit),
                f.equal(lit),
                f.not_equal(lit),
                f < lit,
                f >= lit,
                f.isin(opt),
                f.notin(opt),
            ]
        )
    )
    if draw(st.booleans()):
        pred = pred | f.is_null() if draw(st.booleans()) else pred & f.is_not_null()
    return values, pred


@settings(max_examples=400, deadline=None)
@given(string_cases())
def test_string_predicates_like_escapes_and_nulls_like_sql(case):
    """LIKE with % _ and backslash escapes, prefixes / suffixes / substrings, IN lists holding NULL
    (x NOT IN (.., NULL) is never true): the exact filter equals the oracle."""
    values, pred = case
    tbl = pa.table({"x": pa.array(values, pa.string()), "i": pa.array(range(len(values)), pa.int32())})
    want = matching_rows(pred, tbl.to_pylist())
    assert filter_table(tbl, pred).column("i").to_pylist() == want, (pred, values)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.none() | st.datetimes(dt.datetime(1960, 1, 1), dt.datetime(2060, 1, 1)), min_size=1, max_size=20),
    st.datetimes(dt.datetime(1960, 1, 1), dt.datetime(2060, 1, 1)),
    st.integers(-14, 14),
    st.sampled_from(["equal", "not_equal", "less_than", "greater_or_equal"]),
    st.sampled_from(["us", "ms", "ns"]),
)
def test_time_zones_on_ltz_columns_like_sql(values, lit, hours, op, unit):
    """A TIMESTAMP WITH LOCAL TIME ZONE column (UTC instants) against aware literals in any zone."""
    t = pa.timestamp(unit, tz="UTC")
    vals = [None if v is None else v.replace(tzinfo=dt.timezone.utc) for v in values]
    tbl = pa.table({"x": pa.array(vals, t), "i": pa.array(range(len(vals)), pa.int32())})
    aware = lit.replace(tzinfo=dt.timezone(dt.timedelta(hours=hours)))
    pred = Leaf(op, "x", (aware,))
    want = matching_rows(pred, tbl.to_pylist())
    assert filter_table(tbl, pred).column("i").to_pylist() == want, (pred, values)
