"""Every literal form, on every key type of every index, answers by its value, with or without pandas.

The matrix: each column type the file indexes, the bitmap / multivalue global indexes, the exact
Arrow filter and the SQL text parser take (columns holding sub-microsecond values where the type
has them), times every form a literal can come in (Python ``int`` / ``float`` / ``Decimal`` /
``date`` / ``datetime`` / ``time`` / ``str``, numpy scalars of every dtype and ``datetime64`` of
every unit, pyarrow scalars of every type and unit with and without a time zone, ISO text, SQL
text, and ``pandas.Timestamp`` in the test that skips without pandas), times every comparison.

Each form is made from one exact value (a :class:`fractions.Fraction` of seconds, of a number...),
and the oracle compares the column's exact values with that value by brute force, with SQL's
three-valued logic: it never reads the form back, so it shares nothing with the product.  The
exact filter must give the oracle's rows; an index must keep every row the oracle keeps, and give
exactly the oracle's rows where its answer is a row set over exact keys.

The matrix runs in CI's job without pandas (the oldest one) and in the full job; the test of the
issue's literals also runs in a subprocess with pandas blocked, so the full job proves the
no-pandas path too.  A new index kind is one more entry in ``FILE_INDEXES`` or ``GLOBAL_INDEXES``.
"""

from __future__ import annotations

import datetime as dt
import decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast import globalindex as gi
from tests.support.blocked_imports import json_of
from paimon_fast.errors import UnsupportedTypeError
from paimon_fast.fileindex._bitslice import NullLiteralError
from paimon_fast.core.literals import normalize
from paimon_fast.core.predicate import Leaf
from paimon_fast.core.result import REMAIN, BitmapResult
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.read.arrow_filter import filter_table
from paimon_fast.core.types import DataType
from tests.support.rows import result_rows

EPOCH = dt.datetime(1970, 1, 1)
UTC3 = dt.timezone(dt.timedelta(hours=3))
NS = 10**9
TICKS = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
# the issue's literal: 2088-07-01T22:07:59.750704648 UTC, as nanoseconds since the epoch
ISSUE_NS = (dt.datetime(2088, 7, 1, 22, 7, 59) - EPOCH) // dt.timedelta(seconds=1) * NS + 750_704_648


# ---------------------------------------------------------------- the columns


class Col:
    """One column type: its values (exact, None = null), how they are stored in Arrow, and the
    exact values to ask about (in the data, between the values, finer than the type, out of range)."""

    def __init__(self, ptype, family, exact, asks, store=None):
        self.ptype = ptype
        self.family = family  # number / float / decimal / date / timestamp / time / string / bool
        self.dtype = DataType.parse(ptype)
        self.at = self.dtype.to_arrow()
        self.exact = exact  # oracle values: Fraction (seconds for temporal types), str, bool, None
        self.asks = asks
        self.store = store or (lambda q: q)  # exact value -> what pa.array takes for self.at

    def array(self):
        return pa.array([None if q is None else self.store(q) for q in self.exact], self.at)


def _ticks(unit):
    return lambda q: int(q * TICKS[unit])


def _ts_values(unit):
    """Instants with sub-unit structure around the epoch, the issue's year and midnights."""
    ns = [
        ISSUE_NS,
        ISSUE_NS + 1,
        ISSUE_NS - 1_000,
        ISSUE_NS + 999_999,
        -1_500,
        -1_000,
        0,
        1_000_000,
        86_400 * NS,
        -86_400 * NS,
        1_700_000_000 * NS + 123_456_789,
        1_700_000_000 * NS + 123_456_000,
    ]
    per = NS // TICKS[unit]
    vals = sorted({n // per * per for n in ns})
    return [Fraction(n, NS) for n in vals]


def _ts_col(ptype, unit):
    vals = _ts_values(unit)
    asks = [
        vals[1],
        vals[-1],
        Fraction(ISSUE_NS, NS),
        Fraction(ISSUE_NS + 500, NS),
        Fraction(-1, NS),
        Fraction(86_400),
        Fraction(1_700_000_000 * NS + 123_456_789, NS) + Fraction(1, NS),
    ]
    return Col(ptype, "timestamp", vals + [None], asks, _ticks(unit))


def _time_col(ptype, unit):
    ns = [0, 1, 999, 1_000, 1_500_000, 43_200 * NS, 43_200 * NS + 123_456_789, 86_399 * NS + 999_999_999]
    per = NS // TICKS[unit]
    vals = sorted({Fraction(n // per * per, NS) for n in ns})
    asks = [vals[1], vals[-1], Fraction(43_200 * NS + 123_456_789, NS), Fraction(1_500_001, NS), Fraction(43_200)]
    return Col(ptype, "time", vals + [None], asks, _ticks(unit))


def _dec(q, scale):
    return decimal.Decimal(int(q * 10**scale)).scaleb(-scale, context=decimal.Context(prec=1000))


COLUMNS = {
    c.ptype: c
    for c in [
        Col(
            "TINYINT",
            "number",
            [Fraction(v) for v in (-128, -3, 0, 5, 127)] + [None],
            [Fraction(5), Fraction(11, 2), Fraction(-128), Fraction(2**40)],
            int,
        ),
        Col(
            "SMALLINT",
            "number",
            [Fraction(v) for v in (-32768, -3, 0, 5, 300)] + [None],
            [Fraction(300), Fraction(-7, 2), Fraction(-40000)],
            int,
        ),
        Col(
            "INT",
            "number",
            [Fraction(v) for v in (-(2**31), -3, 0, 5, 70_000)] + [None],
            [Fraction(70_000), Fraction(11, 2), Fraction(2**31)],
            int,
        ),
        Col(
            "BIGINT",
            "number",
            [Fraction(v) for v in (-(2**63) + 1, -3, 0, 5, 2**53 + 1)] + [None],
            [Fraction(2**53 + 1), Fraction(5), Fraction(-5, 2), Fraction(2**64)],
            int,
        ),
        Col(
            "FLOAT",
            "float",
            [Fraction(float(np.float32(v))) for v in (-2.25, 0.0, 0.1, 1.5, 3e38)] + [None],
            [Fraction(float(np.float32(0.1))), Fraction(0.1), Fraction(3, 2), Fraction(-9, 4)],
            float,
        ),
        Col(
            "DOUBLE",
            "float",
            [Fraction(v) for v in (-2.25, 0.0, 0.1, 1.5, 1e300)] + [None],
            [Fraction(0.1), Fraction(1, 10), Fraction(3, 2), Fraction(float(np.float32(0.1)))],
            float,
        ),
        Col(
            "DECIMAL(9, 2)",
            "decimal",
            [Fraction(v, 100) for v in (-999_999_999, -125, 0, 125, 300)] + [None],
            [Fraction(125, 100), Fraction(1255, 1000), Fraction(3), Fraction(10**8)],
            lambda q: _dec(q, 2),
        ),
        Col(
            "DECIMAL(20, 3)",
            "decimal",
            [Fraction(v, 1000) for v in (-(10**20) + 1, -1250, 0, 1250, 10**19)] + [None],
            [Fraction(10**19, 1000), Fraction(1250, 1000), Fraction(12505, 10000)],
            lambda q: _dec(q, 3),
        ),
        Col("BOOLEAN", "bool", [True, False, True, None], [True, False], bool),
        Col("STRING", "string", ["", "a", "b", "é", "ab", None], ["a", "é", "aa"], str),
        Col(
            "DATE",
            "date",
            [Fraction(d * 86_400) for d in (-719_162, -1, 0, 1, 19_000, 2_932_896)] + [None],
            [Fraction(86_400), Fraction(19_000 * 86_400), Fraction(19_000 * 86_400 + 43_200), Fraction(-86_400)],
            lambda q: int(q / 86_400),
        ),
        _time_col("TIME(3)", "ms"),
        _time_col("TIME(9)", "ns"),
        _ts_col("TIMESTAMP(3)", "ms"),
        _ts_col("TIMESTAMP(6)", "us"),
        _ts_col("TIMESTAMP(9)", "ns"),
        _ts_col("TIMESTAMP(3) WITH LOCAL TIME ZONE", "ms"),
        _ts_col("TIMESTAMP(9) WITH LOCAL TIME ZONE", "ns"),
    ]
}


# ---------------------------------------------------------------- the literal forms of one exact value

_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
_PA_INTS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _decimal_digits(q: Fraction):
    """The scale of q's finite decimal expansion, or None when it has none."""
    d, twos, fives = q.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    return max(twos, fives) if d == 1 else None


def number_forms(q: Fraction):
    out = []
    if q.denominator == 1:
        n = int(q)
        out.append(("int", n))
        for t in _INTS:
            info = np.iinfo(t)
            if info.min <= n <= info.max:
                out.append((f"np.{t.__name__}", t(n)))
        for t in _PA_INTS:
            try:
                out.append((f"pa.{t}", pa.scalar(n, t)))
            except (OverflowError, pa.ArrowInvalid):
                pass
    f = float(q) if abs(q) < 2**1000 else None
    if f is not None and Fraction(f) == q:
        _np_floats(out, f)
    return _decimal_forms(out, q)


def _np_floats(out, f):
    with np.errstate(over="ignore"):
        out += [
            ("float", f),
            ("np.float64", np.float64(f)),
            ("pa.double", pa.scalar(f, pa.float64())),
            ("np.longdouble", np.longdouble(f)),
        ]
        if np.isfinite(np.float32(f)) and float(np.float32(f)) == f:
            out += [("np.float32", np.float32(f)), ("pa.float", pa.scalar(f, pa.float32()))]
        if np.isfinite(np.float16(f)) and float(np.float16(f)) == f:
            out += [("np.float16", np.float16(f)), ("pa.halffloat", pa.scalar(np.float16(f), pa.float16()))]


def _decimal_forms(out, q):
    scale = _decimal_digits(q)
    if scale is not None:
        d = _dec(q, scale)
        out.append(("Decimal", d))
        digits = len(str(abs(int(q * 10**scale))))
        if max(digits, scale + 1) <= 38:
            out.append(("pa.decimal128", pa.scalar(d, pa.decimal128(max(digits, scale + 1), scale))))
        if max(digits, scale + 1) <= 76:
            out.append(("pa.decimal256", pa.scalar(d, pa.decimal256(max(digits, scale + 1) + 1, scale))))
    return out


def _iso(ns: int, offset_hours=None, z=False):
    secs, frac = divmod(ns, NS)
    d = EPOCH + dt.timedelta(seconds=secs)
    suffix = ""
    if offset_hours is not None:
        d += dt.timedelta(hours=offset_hours)
        suffix = f"{'+' if offset_hours >= 0 else '-'}{abs(offset_hours):02d}:00"
    elif z:
        suffix = "Z"
    return d.strftime("%Y-%m-%d %H:%M:%S") + f".{frac:09d}" + suffix


def instant_forms(q: Fraction, unit_ticks=None):
    """A UTC instant (seconds) as every timestamp / date form that holds it exactly; ``unit_ticks``
    adds the int form (ticks of the column's unit)."""
    out = []
    ns = q * NS
    if ns.denominator != 1:
        return out
    ns = int(ns)
    if unit_ticks and (q * unit_ticks).denominator == 1:
        out.append(("int ticks", int(q * unit_ticks)))
    for unit, per in (("s", NS), ("ms", 10**6), ("us", 10**3), ("ns", 1)):
        if ns % per == 0 and -(2**63) < ns // per < 2**63:
            for tz in (None, "UTC", "+03:00"):
                out.append((f"pa.timestamp[{unit},{tz}]", pa.scalar(ns // per, pa.timestamp(unit, tz=tz))))
            out.append((f"np.datetime64[{unit}]", np.datetime64(ns // per, unit)))
    if -(2**62) < ns < 2**62:
        out.append(("iso text", _iso(ns)))
        out.append(("iso text Z", _iso(ns, z=True)))
        out.append(("iso text +03:00", _iso(ns, 3)))
    if ns % 1000 == 0:
        try:
            d = EPOCH + dt.timedelta(microseconds=ns // 1000)
            out += [
                ("datetime", d),
                ("datetime UTC", d.replace(tzinfo=dt.timezone.utc)),
                ("datetime +03:00", (d + dt.timedelta(hours=3)).replace(tzinfo=UTC3)),
            ]
        except OverflowError:
            pass
    if ns % (86_400 * NS) == 0:
        days = ns // (86_400 * NS)
        out += [
            ("pa.date32", pa.scalar(days, pa.date32())),
            ("pa.date64", pa.scalar(days * 86_400_000, pa.date64())),
            ("np.datetime64[D]", np.datetime64(days, "D")),
        ]
        try:
            out.append(("date", dt.date(1970, 1, 1) + dt.timedelta(days=days)))
        except OverflowError:
            pass
    return out


def time_forms(q: Fraction, unit_ticks):
    out = []
    ns = q * NS
    if ns.denominator != 1:
        return out
    ns = int(ns)
    if (q * unit_ticks).denominator == 1:
        out.append(("int ticks", int(q * unit_ticks)))
    for t, per in ((pa.time32("s"), NS), (pa.time32("ms"), 10**6), (pa.time64("us"), 1000), (pa.time64("ns"), 1)):
        if ns % per == 0:
            out.append((f"pa.{t}", pa.scalar(ns // per, t)))
    secs, frac = divmod(ns, NS)
    out.append(("text", f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{frac:09d}"))
    if ns % 1000 == 0:
        out.append(("time", dt.time(secs // 3600, secs // 60 % 60, secs % 60, frac // 1000)))
    return out


def forms(col: Col, q):
    f = col.family
    if f in ("number", "float", "decimal"):
        return number_forms(q)
    if f == "string":
        out = [
            ("str", q),
            ("np.str_", np.str_(q)),
            ("pa.string", pa.scalar(q, pa.string())),
            ("pa.large_string", pa.scalar(q, pa.large_string())),
            ("pa.dictionary", pa.array([q]).dictionary_encode()[0]),
        ]
        return out
    if f == "bool":
        return [("bool", q), ("np.bool_", np.bool_(q)), ("pa.bool", pa.scalar(q, pa.bool_()))]
    if f == "time":
        return time_forms(q, TICKS[col.at.unit])
    if f == "date":
        return instant_forms(q) + ([("int days", int(q / 86_400))] if q % 86_400 == 0 else [])
    return instant_forms(q, TICKS[col.at.unit])


def pandas_forms(col: Col, q):
    """pandas.Timestamp forms (naive, UTC, +03:00) of an instant."""
    import pandas as pd

    if col.family not in ("timestamp", "date") or (q * NS).denominator != 1:
        return []
    ns = int(q * NS)
    if not -(2**63) < ns < 2**63:
        return []
    t = pd.Timestamp(ns, unit="ns")
    return [
        ("pd.Timestamp", t),
        ("pd.Timestamp UTC", t.tz_localize("UTC")),
        ("pd.Timestamp +03:00", t.tz_localize("UTC").tz_convert(UTC3)),
    ]


def sql_forms(col: Col, q):
    """SQL text for an exact value: numbers as decimal text, strings quoted, DATE / TIMESTAMP
    literals with every fraction digit, ISO strings."""
    f = col.family
    if f in ("number", "float", "decimal"):
        scale = _decimal_digits(q)
        if scale is None or scale > 30:
            return []
        text = str(_dec(q, scale))
        if f == "float" and "." in text:  # Spark SQL: a decimal literal on a float column is the nearest DOUBLE
            return [("sql number", text, Fraction(float(text)))]
        return [("sql number", text)]
    if f == "string":
        return [("sql string", "'" + q.replace("'", "''") + "'")]
    if f == "bool":
        return [("sql bool", "TRUE" if q else "FALSE")]
    if f == "time":
        return [("sql " + n, f"'{v}'") for n, v in time_forms(q, 1) if n == "text"]
    ns = q * NS
    if ns.denominator != 1 or not -(2**62) < ns < 2**62:
        return []
    ns = int(ns)
    out = [
        ("sql TIMESTAMP", f"TIMESTAMP '{_iso(ns)}'"),
        ("sql TIMESTAMP +03:00", f"TIMESTAMP '{_iso(ns, 3)}'"),
        ("sql string", f"'{_iso(ns)}'"),
    ]
    if ns % (86_400 * NS) == 0:
        out.append(("sql DATE", f"DATE '{_iso(ns)[:10]}'"))
    return out


# ---------------------------------------------------------------- the oracle (brute force, SQL three-valued logic)


def _cmp(a, b):
    if a is None or b is None:
        return None
    return (a > b) - (a < b)


def _holds(op, x, lits):
    """True / False / None (unknown) of ``x op lits`` over exact values."""
    if op in ("equal", "not_equal", "less_than", "less_or_equal", "greater_than", "greater_or_equal"):
        c = _cmp(x, lits[0])
        if c is None:
            return None
        return {
            "equal": c == 0,
            "not_equal": c != 0,
            "less_than": c < 0,
            "less_or_equal": c <= 0,
            "greater_than": c > 0,
            "greater_or_equal": c >= 0,
        }[op]
    if op in ("in", "not_in"):
        cs = [_cmp(x, v) for v in lits]
        r = True if 0 in cs else (None if None in cs else False)
        return r if op == "in" or r is None else not r
    if op in ("between", "not_between"):
        lo, hi = _cmp(x, lits[0]), _cmp(x, lits[1])
        a = None if lo is None else lo >= 0
        b = None if hi is None else hi <= 0
        r = False if (a is False or b is False) else (None if (a is None or b is None) else True)
        return r if op == "between" or r is None else not r
    if op in ("array_contains", "arrays_overlap", "array_contains_all"):
        if x is None:
            return None
        hits = [v is not None and any(e is not None and e == v for e in x) for v in lits]
        if op == "array_contains":
            return None if lits[0] is None else hits[0]
        return any(hits) if op == "arrays_overlap" else all(hits)
    raise AssertionError(op)


def oracle(values, op, lits):
    return [i for i, x in enumerate(values) if _holds(op, x, lits) is True]


# ---------------------------------------------------------------- the indexes


def _file_index(kind, col):
    opts = {"items": "100"} if kind == "bloom-filter" else None
    try:
        w = pf.fileindex.writer(kind, col.dtype, opts)
        w.write_batch(col.array())
    except UnsupportedTypeError:  # the type (or a DECIMAL(20, 3) value in a BSI): not indexable, as in Java
        return None
    return pf.fileindex.reader(kind, col.dtype, w.finish(), opts)


def _global_index(kind, col):
    try:
        w = gi.writer(col.dtype, index_type=kind)
    except UnsupportedTypeError:
        return None
    arr = col.array()
    w.write_batch(arr, np.arange(len(arr), dtype=np.int64))
    data, _meta = w.finish()
    return gi.reader(col.dtype, data, None, len(arr), index_type=kind)


def _fine(col, global_index=False):
    """Whether an index's row sets are exact over a type's keys: not when the keys are coarser than
    the values (TIME(4..9) keyed by milliseconds; TIMESTAMP(7..9) by microseconds in the file
    indexes, while the global index keys hold their nanoseconds)."""
    d = col.dtype
    if d.root == "TIME":
        return (d.precision or 0) <= 3
    return global_index or not (d.is_timestamp and d.precision > 6)


FILE_INDEXES = ["bitmap", "bloom-filter", "bsi", "range-bitmap"]
GLOBAL_INDEXES = ["bitmap"]  # the scalar global index kinds (add "btree" here when it lands)
EXACT_OPS = ("equal", "in", "less_than", "less_or_equal", "greater_than", "greater_or_equal", "between")

_BUILT = {}


def built(col):
    """(table, file index readers, global index readers, multivalue reader) of a column, built once."""
    got = _BUILT.get(col.ptype)
    if got is None:
        arr = col.array()
        tbl = pa.table({"x": arr, "i": pa.array(range(len(arr)), pa.int32())})
        files = {k: r for k in FILE_INDEXES if (r := _file_index(k, col)) is not None}
        globs = {k: r for k in GLOBAL_INDEXES if (r := _global_index(k, col)) is not None}
        got = _BUILT[col.ptype] = (tbl, files, globs, _multivalue(col))
    return got


def check(col, leaf, want, where, files=True):
    """The exact filter gives ``want``; every index keeps it (exactly where its keys are exact)."""
    tbl, fidx, gidx, _ = built(col)
    n = tbl.num_rows
    got = filter_table(tbl, leaf).column("i").to_pylist()
    assert got == want, (where, "exact filter", leaf)
    pred = normalize(leaf, tbl.schema)
    for kind, r in fidx.items() if files else ():
        for asked in (pred, leaf):  # as consumers ask (normalised first) and directly
            try:
                res = r.evaluate(asked)
            except NullLiteralError:  # BSI / range-bitmap on a null literal (Java: NPE): consumers read the file
                res = REMAIN
            kept = result_rows(res, n)
            assert set(want) <= kept, (where, kind, asked, sorted(kept), want)
            if (
                asked is pred
                and kind != "bloom-filter"
                and _fine(col)
                and isinstance(res, BitmapResult)
                and isinstance(pred, Leaf)
                and pred.op in EXACT_OPS
                and None not in pred.literals
            ):
                # (a null literal in IN adds the null rows: Java's bitmap index answer, a superset)
                assert kept == set(want), (where, kind, asked, sorted(kept), want)
    for kind, r in gidx.items():
        for asked in (pred, leaf):
            res = r.evaluate(asked)
            if res is pf.UNSUPPORTED:
                continue
            assert set(want) <= set(res), (where, "global " + kind, asked, sorted(res), want)
            if _fine(col, True) and leaf.op in ("equal", "in") and None not in leaf.literals:
                assert set(res) == set(want), (where, "global " + kind, asked, sorted(res), want)


def _cases(col, formfn):
    """(where, op, literals, want) of every ask of a column in every form ``formfn`` gives."""
    vals = col.exact
    other = next(v for v in vals if v is not None)
    out = []
    for q in col.asks:
        for name, lit in formfn(col, q):
            where = (col.ptype, name, q)
            for op in ("equal", "not_equal", "less_than", "less_or_equal", "greater_than", "greater_or_equal"):
                if col.family == "bool" and op not in ("equal", "not_equal"):
                    continue
                out.append((where, op, (lit,), oracle(vals, op, (q,))))
            out.append((where, "in", (lit, None), oracle(vals, "in", (q, None))))
            out.append((where, "not_in", (lit,), oracle(vals, "not_in", (q,))))
            if col.family != "bool":
                lo = [(n, v) for n, v in formfn(col, other) if n == name]
                if lo:
                    out.append((where, "between", (lo[0][1], lit), oracle(vals, "between", (other, q))))
                    out.append((where, "not_between", (lo[0][1], lit), oracle(vals, "not_between", (other, q))))
    return out


@pytest.mark.parametrize("ptype", list(COLUMNS))
def test_every_literal_form_on_every_index(ptype):
    col = COLUMNS[ptype]
    cases = _cases(col, forms)
    assert cases
    for where, op, lits, want in cases:
        check(col, Leaf(op, "x", lits), want, where)


@pytest.mark.parametrize("ptype", [p for p, c in COLUMNS.items() if c.family in ("timestamp", "date")])
def test_pandas_timestamps_like_every_other_form(ptype):
    pytest.importorskip("pandas", reason="the literal form under test is pandas.Timestamp")
    col = COLUMNS[ptype]
    cases = _cases(col, pandas_forms)
    assert cases
    for where, op, lits, want in cases:
        check(col, Leaf(op, "x", lits), want, where)


@pytest.mark.parametrize("ptype", list(COLUMNS))
def test_sql_text_literals(ptype):
    col = COLUMNS[ptype]
    n = 0
    for ask in col.asks:
        for name, text, *meaning in sql_forms(col, ask):
            q = meaning[0] if meaning else ask
            for sym, op in (("=", "equal"), ("<>", "not_equal"), ("<", "less_than"), (">=", "greater_or_equal")):
                if col.family == "bool" and op not in ("equal", "not_equal"):
                    continue
                want = oracle(col.exact, op, (q,))
                check(col, parse_predicate(f"x {sym} {text}"), want, (ptype, name, sym, q))
                n += 1
            check(col, parse_predicate(f"x IN ({text}, NULL)"), oracle(col.exact, "in", (q,)), (ptype, name, "IN", q))
            if col.family != "bool":
                mirrored = parse_predicate(f"{text} > x")  # literal op column
                check(col, mirrored, oracle(col.exact, "less_than", (q,)), (ptype, name, "mirrored", q))
    assert n


# ---------------------------------------------------------------- ARRAY<T>: the multivalue global index


def _multivalue(col):
    """An ARRAY<T> column of the column's values (each row a few of them) and its multivalue index."""
    vals = [v for v in col.exact if v is not None]
    rows = [vals[i : i + 2] for i in range(len(vals))] + [[], None, [vals[0], None]]
    lt = pa.list_(col.at)
    arr = pa.array([None if r is None else [None if v is None else col.store(v) for v in r] for r in rows], lt)
    dtype = f"ARRAY<{col.ptype}>"
    try:
        w = gi.writer(dtype, index_type="multivalue")
    except UnsupportedTypeError:
        return rows, arr, None
    w.write_batch(arr, np.arange(len(arr), dtype=np.int64))
    data, _meta = w.finish()
    return rows, arr, gi.reader(dtype, data, None, len(arr), index_type="multivalue")


@pytest.mark.parametrize("ptype", list(COLUMNS))
def test_array_predicates_with_every_literal_form(ptype):
    """array_contains / arrays_overlap / array_contains_all with every form of the element value:
    the exact filter equals the oracle, the multivalue global index too."""
    col = COLUMNS[ptype]
    rows, arr, reader = built(col)[3]
    tbl = pa.table({"x": arr, "i": pa.array(range(len(arr)), pa.int32())})
    other = next(v for v in col.exact if v is not None)
    n = 0
    for q in col.asks:
        for name, lit in forms(col, q):
            for op, lits, exact in (
                ("array_contains", (lit,), (q,)),
                ("arrays_overlap", (lit, None), (q, None)),
                ("array_contains_all", (lit, other), (q, other)),
            ):
                leaf = Leaf(op, "x", lits if op != "array_contains_all" else (lit, col.store(other)))
                want = oracle(rows, op, exact)
                assert filter_table(tbl, leaf).column("i").to_pylist() == want, (ptype, name, q, leaf)
                if reader is not None:
                    got = reader.evaluate(leaf)
                    if got is not pf.UNSUPPORTED:
                        if _fine(col, True):
                            assert set(got) == set(want), (ptype, name, q, leaf, sorted(got), want)
                        else:
                            assert set(want) <= set(got), (ptype, name, q, leaf, sorted(got), want)
                n += 1
    assert n


# ---------------------------------------------------------------- the issue's literals

_ISSUE_CHECK = """
    import json, sys
    import numpy as np, pyarrow as pa
    from paimon_fast import globalindex as gi
    from paimon_fast.core.predicate import Leaf
    ns = %d
    t = pa.timestamp("ns", tz="UTC")
    vals = pa.array([ns, ns + 1, ns - 1, None], t)
    lit = pa.scalar(ns, t)
    w = gi.writer("TIMESTAMP(9) WITH LOCAL TIME ZONE")
    w.write_batch(vals, np.arange(4, dtype=np.int64))
    data, _ = w.finish()
    r = gi.reader("TIMESTAMP(9) WITH LOCAL TIME ZONE", data, None, 4)
    out = [sorted(r.evaluate(Leaf(op, "x", (lit,)))) for op in ("equal", "not_equal", "less_than", "greater_or_equal")]
    out.append(sorted(r.evaluate(Leaf("in", "x", (lit, None)))))
    lists = pa.array([[ns], [ns + 1, None], None, [], [ns - 1, ns]], pa.list_(t))
    w = gi.writer("ARRAY<TIMESTAMP(9) WITH LOCAL TIME ZONE>", index_type="multivalue")
    w.write_batch(lists, np.arange(5, dtype=np.int64))
    data, _ = w.finish()
    m = gi.reader("ARRAY<TIMESTAMP(9) WITH LOCAL TIME ZONE>", data, None, 5, index_type="multivalue")
    out.append(sorted(m.evaluate(Leaf("array_contains", "x", (lit,)))))
    out.append(sorted(m.evaluate(Leaf("arrays_overlap", "x", (lit, None)))))
    print(json.dumps({"pandas": "pandas" in sys.modules, "rows": out}))
"""


@pytest.mark.parametrize("block", [("pandas",), ()], ids=["without pandas", "as installed"])
def test_issue_literals_answer_alike_with_and_without_pandas(block):
    """Issue 38: a TIMESTAMP(9) WITH LOCAL TIME ZONE literal given as a pyarrow scalar raised
    ValueError from the bitmap global index reader and the multivalue reader's array_contains
    without pandas (``TimestampScalar.as_py()`` needs pandas for nanoseconds).  Run in a fresh
    interpreter, pandas blocked or as installed: the same rows either way."""
    got = json_of(_ISSUE_CHECK % ISSUE_NS, block)
    assert not (block and got["pandas"])
    assert got["rows"] == [[0], [1, 2], [2], [0, 1], [0], [0, 4], [0, 4]]


def test_issue_literal_in_process():
    """The issue's exact literal (2088-07-01T22:07:59.750704648 UTC as a pyarrow scalar) on the
    bitmap and multivalue global indexes, the file indexes and the exact filter, in this process."""
    t = pa.timestamp("ns", tz="UTC")
    lit = pa.scalar(ISSUE_NS, t)
    assert pa.scalar("2088-07-01 22:07:59.750704648").cast(pa.timestamp("ns")).value == lit.value
    col = COLUMNS["TIMESTAMP(9) WITH LOCAL TIME ZONE"]
    q = Fraction(ISSUE_NS, NS)
    assert q in col.exact
    for op in ("equal", "not_equal", "less_than", "greater_or_equal", "in"):
        lits = (lit, None) if op == "in" else (lit,)
        check(col, Leaf(op, "x", lits), oracle(col.exact, op, (q, None) if op == "in" else (q,)), ("issue", op))
    rows, arr, reader = built(col)[3]
    assert sorted(reader.evaluate(Leaf("array_contains", "x", (lit,)))) == oracle(rows, "array_contains", (q,))


def test_matrix_covers_every_family_and_form():
    """The matrix is what it says: every family of literal forms appears on the types that take it."""
    names = {n for c in COLUMNS.values() for q in c.asks for n, _ in forms(c, q)}
    for need in (
        "int",
        "np.int8",
        "np.uint64",
        "pa.int8",
        "pa.uint64",
        "float",
        "np.float32",
        "np.float16",
        "np.longdouble",
        "pa.halffloat",
        "Decimal",
        "pa.decimal128",
        "pa.decimal256",
        "str",
        "np.str_",
        "pa.large_string",
        "pa.dictionary",
        "bool",
        "np.bool_",
        "pa.bool",
        "datetime",
        "datetime UTC",
        "datetime +03:00",
        "date",
        "pa.date32",
        "pa.date64",
        "np.datetime64[D]",
        "np.datetime64[ns]",
        "np.datetime64[s]",
        "pa.timestamp[ns,None]",
        "pa.timestamp[ns,UTC]",
        "pa.timestamp[s,+03:00]",
        "pa.timestamp[us,UTC]",
        "pa.timestamp[ms,None]",
        "iso text",
        "iso text +03:00",
        "int ticks",
        "time",
        "pa.time32[s]",
        "pa.time64[ns]",
        "text",
    ):
        assert need in names, need
    # sub-microsecond values are in the data of the nanosecond columns, and asked about
    for p in ("TIMESTAMP(9)", "TIMESTAMP(9) WITH LOCAL TIME ZONE", "TIME(9)"):
        c = COLUMNS[p]
        assert any(v is not None and (v * 10**6).denominator != 1 for v in c.exact)
        assert any((q * 10**6).denominator != 1 for q in c.asks)
    # every index kind is built for some column
    kinds = {k for c in COLUMNS.values() for k in built(c)[1]} | {
        "g:" + k for c in COLUMNS.values() for k in built(c)[2]
    }
    assert kinds == set(FILE_INDEXES) | {"g:" + k for k in GLOBAL_INDEXES}
    assert all(built(c)[3][2] is not None for c in COLUMNS.values())
