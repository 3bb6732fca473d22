"""Predicate literals normalised to their column's type, with SQL's numeric answers.

Every consumer of a :class:`~paimon_fast.core.predicate.Predicate` that knows the
column types (the exact Arrow filter, :meth:`ParquetDataset.scan`, every file
index reader, the global index reader, the Paimon read paths) passes it
through :func:`normalize` first, so that a literal the column cannot hold is
answered the way SQL and ``pyarrow.compute`` answer it, numerically, instead
of being truncated into the column type (``pa.scalar(5.5, pa.int32())`` is 5):

========================  ====================================================
``x = 5.5`` on INT        no row  (``x IS NULL AND x IS NOT NULL``)
``x != 5.5``              every non-null row (``x IS NOT NULL``)
``x < 5.5`` / ``<= 5.5``  ``x <= 5``;  ``x > 5.5`` / ``>= 5.5``: ``x >= 6``
``x < 2**70`` on BIGINT   every non-null row; ``x > 2**70``: no row
``x IN (5.5, 7)``         ``x IN (7)``;  ``x NOT IN (5.5, 7)``: ``x NOT IN (7)``
``BETWEEN`` / ``NOT ...`` the AND / OR of the two comparisons when a bound moves
NaN on FLOAT / DOUBLE     ``=``, ``<``, ``<=``, ``>``, ``>=``: no row; ``!=``: every non-null row
``0.1`` on FLOAT          the float32 neighbours (0.1 is not a float32)
``x = 0.0`` on floats     ``x IN (0.0, -0.0)`` (IEEE: -0.0 = 0.0; indexes key by bits)
DECIMAL(p, s)             the same on the grid of ``10**-s`` within ``+-(10**p - 1)``
DATE / TIME / TIMESTAMP   the same on the grid of days / of the column's unit
                          (a datetime on a DATE column, microseconds on a
                          TIMESTAMP(3) column, nanoseconds on microseconds)
a string on a number      :class:`~paimon_fast.errors.LiteralTypeError`
========================  ====================================================

Every literal form is read by its value, never through a conversion that needs
an optional package, so the answer is the same whatever is installed: Python
numbers, ``decimal.Decimal``, ``datetime.date`` / ``datetime`` / ``time``, ISO
text (every fraction digit kept), numpy scalars (``datetime64`` of any unit),
pyarrow scalars of every type and unit with or without a time zone (a
timestamp by ``.value`` and its unit: ``as_py()`` of a nanosecond one needs
pandas), ``pandas.Timestamp`` (with its nanoseconds).  A null scalar or ``NaT``
is ``None``.

The result uses only ordinary leaves, so index readers need nothing new.
Literals come out as the column's natural Python value (``int``,
``decimal.Decimal``, ``float`` exactly representable in the column's width,
``datetime.date``, ``datetime.datetime``, ``datetime.time``; a pyarrow scalar of
the column's own type for a value no Python object holds: nanoseconds, or a
year past 9999).  A ``None`` literal is left as it is (its meaning is decided by
the consumer), except a ``BETWEEN`` bound: ``x BETWEEN a AND NULL`` is no row,
``x NOT BETWEEN a AND NULL`` is ``NOT (x >= a)`` with ``a`` normalised (SQL).
Normalise the final predicate: the "no row" form does not negate like the
original leaf did (negate first, then normalise).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from fractions import Fraction
from typing import Optional

import numpy as np
import pyarrow as pa

from ..errors import ColumnNotFoundError, LiteralTypeError
from .predicate import ARRAY_OPS, And, Leaf, Or, Predicate
from .grids import (  # noqa: F401  (handed on)
    _DEC,
    _NAN,
    _DateGrid,
    _DecimalGrid,
    _FloatGrid,
    _Grid,
    _IntGrid,
    _seconds,
    _TimeGrid,
    _TimestampGrid,
    _grid,
    _number,
)
from .literal_values import (  # noqa: F401  (handed on)
    _EPOCH,
    _EPOCH_DATE,
    _ISO,
    _ISO_TIME,
    _NP_UNIT_SECONDS,
    _TICKS,
    DecimalLiteral,
    _iso_fraction,
    _iso_parts,
    _iso_seconds,
    _utc_naive,
    epoch_seconds,
    parse_timestamp,
    plain_literal,
    seconds_of_day,
)

__all__ = [
    "normalize",
    "normalize_leaf",
    "never",
    "is_never",
    "arrow_types",
    "widen_to_micros",
    "widen_to_keys",
    "plain_literal",
    "epoch_seconds",
    "seconds_of_day",
    "parse_timestamp",
    "DecimalLiteral",
]

_CMP = ("equal", "not_equal", "less_than", "less_or_equal", "greater_than", "greater_or_equal")


def never(name: str) -> Predicate:
    """A predicate true for no row of column ``name`` (``IS NULL AND IS NOT NULL``)."""
    return And((Leaf("is_null", name), Leaf("is_not_null", name)))


def is_never(p: Predicate) -> bool:
    """Whether ``p`` is the form :func:`never` builds."""
    return (
        isinstance(p, And)
        and len(p.children) == 2
        and isinstance(p.children[0], Leaf)
        and p.children[0].op == "is_null"
        and isinstance(p.children[1], Leaf)
        and p.children[1].op == "is_not_null"
        and p.children[0].name == p.children[1].name
    )


def always(name: str) -> Predicate:
    """A predicate true for every row of column ``name`` (``IS NULL OR IS NOT NULL``)."""
    return Or((Leaf("is_null", name), Leaf("is_not_null", name)))


def _non_null(name: str) -> Predicate:
    return Leaf("is_not_null", name)


def _check_other(name, t, leaf):
    """Literals of non-numeric columns: strings for strings, bytes for binaries, bools for booleans."""
    if leaf.op not in _CMP + ("in", "not_in", "between", "not_between"):
        return
    for v in leaf.literals:
        if v is None:
            continue
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            ok = isinstance(v, str)
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
            ok = isinstance(v, (bytes, bytearray, memoryview, str))
        elif pa.types.is_boolean(t):
            ok = isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and int(v) in (0, 1))
        else:
            return
        if not ok:
            raise LiteralTypeError(name, t, v)


# ---------------------------------------------------------------- leaves


def _cmp(g: _Grid, op: str, name: str, v, ieee: bool) -> Predicate:
    """One comparison ``name op v`` on grid ``g`` (v not None)."""
    if not ieee and not g.integral:
        d = g.direct(v)
        if d is not None:  # a float of the column's width (-0.0 and NaN included): Java's answer
            return Leaf(op, name, (d,))
    q = g.exact(v)
    if q is _NAN:
        if not ieee and not g.integral:
            return Leaf(op, name, (float("nan"),))
        return _non_null(name) if op == "not_equal" else never(name)
    exact = g.on(q)
    if op in ("equal", "not_equal"):
        if exact is None:
            return never(name) if op == "equal" else _non_null(name)
        if ieee and not g.integral and exact == 0.0:  # IEEE: -0.0 = 0.0; indexes key floats by their bits
            return Leaf("in" if op == "equal" else "not_in", name, (0.0, -0.0))
        return Leaf(op, name, (exact,))
    if exact is not None:
        if ieee and not g.integral and exact == 0.0:
            # Java orders -0.0 < 0.0; IEEE has them equal: pick the zero that makes Java's range the IEEE one
            exact = -0.0 if op in ("less_than", "greater_or_equal") else 0.0
        return Leaf(op, name, (exact,))
    if op in ("less_than", "less_or_equal"):
        f = g.floor(q)
        if f is None:
            return never(name)
        return _non_null(name) if g.is_max(f) else Leaf("less_or_equal", name, (f,))
    c = g.ceil(q)
    if c is None:
        return never(name)
    return _non_null(name) if g.is_min(c) else Leaf("greater_or_equal", name, (c,))


def _in(g: _Grid, leaf: Leaf, ieee: bool) -> Predicate:
    keep = []
    for v in leaf.literals:
        if v is None:
            keep.append(None)
            continue
        if not ieee and not g.integral:
            d = g.direct(v)
            if d is not None:
                keep.append(d)
                continue
        q = g.exact(v)
        e = None if q is _NAN else g.on(q)
        if e is None:
            continue  # no row equals it: IN loses nothing, NOT IN is true for every non-null row
        if ieee and not g.integral and e == 0.0:
            keep.extend((0.0, -0.0))
        else:
            keep.append(e)
    out = []
    for e in keep:  # de-duplicate (0.0 and -0.0 are equal in Python: compare by repr for floats)
        if not any(_same_value(e, o) for o in out):
            out.append(e)
    if not out:
        return never(leaf.name) if leaf.op == "in" else _non_null(leaf.name)
    return Leaf(leaf.op, leaf.name, tuple(out))


def _conj(name, parts, kind) -> Predicate:
    if kind is And:
        if any(is_never(p) for p in parts):
            return never(name)
        return And.of(*parts)
    live = [p for p in parts if not is_never(p)]
    return never(name) if not live else Or.of(*live)


_INT_BOUNDS = {
    8: (-(1 << 7), (1 << 7) - 1),
    16: (-(1 << 15), (1 << 15) - 1),
    32: (-(1 << 31), (1 << 31) - 1),
    64: (-(1 << 63), (1 << 63) - 1),
}


_STRING_IDS = (pa.string().id, pa.large_string().id)
# literal types plain_literal returns unchanged
_PLAIN_TYPES = frozenset((type(None), str, int, float, bool, bytes, decimal.Decimal, _dt.date, _dt.datetime, _dt.time))


def _already_exact(lits, t) -> bool:
    """The common cases that need no work: Python ints within a signed integer column's
    range, strings on a string column (a fast check; everything else takes the full path)."""
    tid = t.id
    if tid in _STRING_IDS:
        return all(type(v) is str for v in lits)
    if pa.types.is_signed_integer(t):
        lo, hi = _INT_BOUNDS[t.bit_width]
        return all(type(v) is int and lo <= v <= hi for v in lits)
    return False


def normalize_leaf(leaf: Leaf, arrow_type: Optional[pa.DataType], ieee: bool = True) -> Predicate:
    """``leaf`` with its literals made exact values of ``arrow_type`` (see the module doc).

    ``ieee=False`` leaves NaN and zero literals on FLOAT / DOUBLE columns as
    they are: index readers use it, so that in-type literals get Java's
    answers (Java orders -0.0 < 0.0 < NaN and has NaN = NaN); the consumers that
    compose index answers with the exact filter normalise with ``ieee=True``
    first, which makes those answers the IEEE (``pyarrow.compute``) ones.

    Returns ``leaf`` itself when nothing changes; raises
    :class:`~paimon_fast.errors.LiteralTypeError` for a literal that cannot be
    compared with the column at all.
    """
    t = arrow_type
    if t is not None and pa.types.is_dictionary(t):
        t = t.value_type  # a dictionary column compares by its values
    op = leaf.op
    if not leaf.literals and op in ("in", "not_in") and ieee:
        # IN () is false and NOT IN () true for every row, a null one included (NOT (x IN ()) is
        # NOT FALSE): spelt with null tests, which every reader answers exactly (readers asked
        # directly, ieee=False, keep Java's own answers)
        return never(leaf.name) if op == "in" else always(leaf.name)
    if t is None or not leaf.literals:
        return leaf
    if op in ARRAY_OPS:
        return _array_leaf(leaf, t, ieee)
    if op not in _CMP and op not in ("in", "not_in", "between", "not_between"):
        return leaf
    if _already_exact(leaf.literals, t):
        return leaf
    for v in leaf.literals:
        if type(v) not in _PLAIN_TYPES:  # pyarrow / numpy scalars, NaT: read by value
            lits = tuple(plain_literal(x) for x in leaf.literals)
            if not _same(lits, leaf.literals):
                leaf = Leaf(op, leaf.name, lits)
            break
    g = _grid(leaf.name, t)
    if g is None:
        _check_other(leaf.name, t, leaf)
        return leaf
    name = leaf.name
    if op in ("in", "not_in"):
        out = _in(g, leaf, ieee)
    elif op in ("between", "not_between"):
        lo, hi = leaf.literals
        if lo is None or hi is None:
            if not ieee:
                return leaf  # the readers' (Java's) own answer to a null bound
            # SQL: x BETWEEN a AND NULL is (x >= a) AND NULL, never true; x NOT BETWEEN a AND NULL is
            # true where NOT (x >= a) is: x < a on the column's grid, every non-null row for a NaN a
            if op == "between" or (lo is None and hi is None):
                return never(name)
            v = lo if hi is None else hi
            if g.integral:
                if g.exact(v) is _NAN:
                    return _non_null(name)
                return _cmp(g, "less_than" if hi is None else "greater_than", name, v, ieee)
            inf = float("inf")
            return normalize_leaf(Leaf(op, name, (lo, inf) if hi is None else (-inf, hi)), t, ieee)
        if not ieee and not g.integral and g.direct(lo) is not None and g.direct(hi) is not None:
            return leaf
        # x BETWEEN lo AND hi is x >= ceil(lo) AND x <= floor(hi) on the column's grid; NOT BETWEEN its
        # negation (NOT, not an OR of < and >, so NaN rows stay NOT BETWEEN as IEEE says)
        ql, qh = g.exact(lo), g.exact(hi)
        if g.integral:
            nl = None if ql is _NAN or ql > g.hi else max(math.ceil(ql), int(g.lo))
            nh = None if qh is _NAN or qh < g.lo else min(math.floor(qh), int(g.hi))
            empty = nl is None or nh is None or nl > nh
            el, eh = (None, None) if empty else (g.value(nl), g.value(nh))
            moved = nl is None or nh is None or Fraction(nl) != ql or Fraction(nh) != qh
        else:
            el = None if ql is _NAN else (ql if isinstance(ql, float) else g.ceil(ql))
            eh = None if qh is _NAN else (qh if isinstance(qh, float) else g.floor(qh))
            empty = el is None or eh is None or el > eh
            moved = ql is _NAN or qh is _NAN or g.on(ql) is None or g.on(qh) is None
            if not empty and ieee:
                el = -0.0 if el == 0.0 else el  # Java orders -0.0 < 0.0: the bounds that make its range IEEE's
                eh = 0.0 if eh == 0.0 else eh
        if empty and (moved or ieee):
            out = never(name) if op == "between" else _non_null(name)
        elif empty:  # in-type bounds the wrong way round: the reader's (Java's) own answer
            out = Leaf(op, name, (g.value(int(ql)), g.value(int(qh))) if g.integral else (float(ql), float(qh)))
        else:
            out = Leaf(op, name, (el, eh))
    else:
        v = leaf.literals[0]
        if v is None:
            return leaf
        out = _cmp(g, op, name, v, ieee)
    if isinstance(out, Leaf) and out.op == op and _same(out.literals, leaf.literals):
        return leaf
    return out


def _array_leaf(leaf: Leaf, t: pa.DataType, ieee: bool) -> Predicate:
    """An array predicate's literals as exact values of the element type: each literal is an
    equality on an element, so one no element can equal (``5.5`` or ``2**40`` in an
    ``ARRAY<INT>``) makes ``array_contains`` / ``array_contains_all`` true for no row and drops
    out of ``arrays_overlap`` (no rows when none is left)."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        return leaf
    kept, changed = [], False
    for v in leaf.literals:
        if v is None:  # the readers give SQL's answer for null literals
            kept.append(v)
            continue
        n = normalize_leaf(Leaf("equal", leaf.name, (v,)), t.value_type, ieee)
        if is_never(n):
            if leaf.op != "arrays_overlap":
                return never(leaf.name)
            changed = True
            continue
        if not (isinstance(n, Leaf) and n.op == "equal"):
            return leaf  # (a float zero under IEEE equality: the element filter compares it as given)
        kept.append(n.literals[0])
        changed |= n is not leaf and n.literals[0] is not v
    if not changed:
        return leaf
    if leaf.op == "arrays_overlap" and not kept:
        return never(leaf.name)
    return Leaf(leaf.op, leaf.name, tuple(kept))


def _same_value(x, y) -> bool:
    """The same literal: of one type and one value (floats by repr: 0.0 and -0.0, NaN; pyarrow
    scalars by type and value, not by repr, which converts a nanosecond time with pandas)."""
    if type(x) is not type(y):
        return False
    if isinstance(x, pa.Scalar):
        return x.equals(y)
    return repr(x) == repr(y)


def _same(a, b) -> bool:
    return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))


def arrow_types(schema) -> dict:
    """``{column: Arrow type}`` of a pyarrow Schema, a mapping to Arrow or Paimon types, or None."""
    if schema is None:
        return {}
    if isinstance(schema, pa.Schema):
        return {f.name: f.type for f in schema}
    out = {}
    for k, t in dict(schema).items():
        if t is not None and not isinstance(t, pa.DataType):
            from .types import DataType

            t = DataType.parse(t).to_arrow()
        out[k] = t
    return out


def normalize(
    predicate: Optional[Predicate], schema, *, missing: str = "keep", ieee: bool = True
) -> Optional[Predicate]:
    """Every leaf of ``predicate`` normalised by :func:`normalize_leaf` against
    its column's type in ``schema`` (a pyarrow Schema or ``{column: type}``).

    ``missing="error"`` raises :class:`~paimon_fast.errors.ColumnNotFoundError`
    for a leaf on a column ``schema`` does not have; ``"keep"`` leaves it as is.
    """
    if predicate is None:
        return None
    types = arrow_types(schema)

    def go(p):
        if isinstance(p, Leaf):
            if p.name not in types:
                if missing == "error":
                    raise ColumnNotFoundError(p.name, list(types))
                return p
            return normalize_leaf(p, types[p.name], ieee)
        if isinstance(p, And):
            kids = [go(c) for c in p.children]
            return p if all(a is b for a, b in zip(kids, p.children)) else And.of(*kids)
        if isinstance(p, Or):
            kids = [go(c) for c in p.children]
            return p if all(a is b for a, b in zip(kids, p.children)) else Or.of(*kids)
        raise TypeError(f"not a predicate: {p!r}")

    return go(predicate)


def _floor_to(v, per_second: int):
    """A date-time literal floored to the grid of ``1 / per_second`` seconds (10**6: the
    microsecond, 1000: the millisecond), in its own form; None if it is not one."""
    if isinstance(v, _dt.datetime):
        if hasattr(v, "nanosecond"):  # pandas.Timestamp
            v = v.replace(nanosecond=0)
        step = 1_000_000 // per_second
        return v.replace(microsecond=v.microsecond // step * step) if step > 1 else v
    if isinstance(v, _dt.time):
        step = 1_000_000 // per_second
        return v.replace(microsecond=v.microsecond // step * step)
    if isinstance(v, np.datetime64):  # floored, in its own unit (pyarrow < 15 converts only a matching unit)
        return v.astype(f"datetime64[{_UNIT_OF[per_second]}]").astype(v.dtype)
    if isinstance(v, pa.Scalar) and v.is_valid and (pa.types.is_timestamp(v.type) or pa.types.is_time(v.type)):
        per = max(_TICKS[v.type.unit] // per_second, 1)  # by value, in its own type
        return pa.scalar(v.value // per * per, v.type)
    return None


_UNIT_OF = {1: "s", 1000: "ms", 1_000_000: "us", 1_000_000_000: "ns"}


def widen_to_keys(p: Predicate, per_second: int) -> Predicate:
    """An index-level form of a normalised predicate on a column whose index keys are coarser
    than its values (keys on the grid of ``1 / per_second`` seconds: TIMESTAMP(7..9) keyed by
    microseconds in Paimon's file indexes, TIME(4..9) by milliseconds): true for every row whose
    key could hold a matching value.  Ranges compare the floored key inclusively, ``!=`` /
    ``NOT IN`` keep every non-null row (a value in the same key has the same key)."""
    if isinstance(p, And):
        return And.of(*(widen_to_keys(c, per_second) for c in p.children))
    if isinstance(p, Or):
        return Or.of(*(widen_to_keys(c, per_second) for c in p.children))
    if not isinstance(p, Leaf) or not p.literals or any(v is None for v in p.literals):
        return p
    op, name = p.op, p.name
    fl = [_floor_to(v, per_second) for v in p.literals]
    if any(v is None for v in fl):
        return p
    if op in ("not_equal", "not_in"):
        return _non_null(name)
    if op in ("less_than", "less_or_equal"):
        return Leaf("less_or_equal", name, (fl[0],))
    if op in ("greater_than", "greater_or_equal"):
        return Leaf("greater_or_equal", name, (fl[0],))
    if op == "between":
        return Leaf("between", name, (fl[0], fl[1]))
    if op == "not_between":
        return Or.of(Leaf("less_or_equal", name, (fl[0],)), Leaf("greater_or_equal", name, (fl[1],)))
    if op in ("equal", "in"):
        return Leaf(op, name, tuple(fl))
    return p


def widen_to_micros(p: Predicate) -> Predicate:
    """:func:`widen_to_keys` to the microsecond (TIMESTAMP(7..9) in Paimon's file indexes)."""
    return widen_to_keys(p, 1_000_000)
