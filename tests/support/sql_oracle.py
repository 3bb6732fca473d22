"""An independent SQL three-valued-logic evaluator over plain Python rows.

It shares no code with the product: values are compared exactly (ints,
floats and Decimals as rationals, dates and datetimes as exact seconds), NaN
as IEEE does (``pyarrow.compute``: NaN compares false, ``NaN != x`` is true,
``-0.0 = 0.0``), NULL as SQL does (a comparison with NULL is unknown, a row is
kept only when the predicate is true).

    rows = table.to_pylist()
    keep = [i for i, r in enumerate(rows) if holds(pred, r)]
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from fractions import Fraction

import numpy as np

from paimon_fast.core.predicate import And, Leaf, Or

_EPOCH = dt.datetime(1970, 1, 1)
NAN = "nan"


def _as_num(v):
    """A comparable exact value: Fraction, +-inf float, NAN, str, bytes or bool."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        if math.isnan(v):
            return NAN
        return v if math.isinf(v) else Fraction(v)
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return NAN
        if v.is_infinite():
            return math.inf if v > 0 else -math.inf
        return Fraction(v)
    if isinstance(v, dt.datetime):
        ns = getattr(v, "nanosecond", 0)
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        d = v - _EPOCH
        return ("t", Fraction(d.days * 86400 + d.seconds) + Fraction(d.microseconds, 10**6) + Fraction(ns, 10**9))
    if isinstance(v, dt.date):
        return ("t", Fraction((v - dt.date(1970, 1, 1)).days * 86400))
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    raise TypeError(f"oracle cannot compare {v!r}")


def _cmp(a, b):
    """-1 / 0 / 1, or None when unknown (NULL) or unordered (NaN)."""
    if a is None or b is None:
        return None
    if isinstance(a, float) and type(b).__name__ == "DecimalLiteral":
        b = float(b)  # SQL text's 1.5 against a float column: the nearest DOUBLE (Spark's cast)
    x, y = _as_num(a), _as_num(b)
    if isinstance(x, tuple) and isinstance(y, str):  # an ISO literal against a date / timestamp column
        y = _as_num(dt.datetime.fromisoformat(y))
    if x is NAN or y is NAN:
        return "nan"
    if x < y:
        return -1
    return 1 if x > y else 0


def _leaf(p: Leaf, row):
    v = row[p.name]
    op = p.op
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if op in ("array_contains", "arrays_overlap", "array_contains_all"):
        # Spark SQL's functions: a NULL array is unknown; NULL elements and NULL literals match nothing
        if v is None:
            return None
        have = [e for e in v if e is not None]
        hits = [lit is not None and any(_cmp(e, lit) == 0 for e in have) for lit in p.literals]
        if op == "array_contains":
            return None if p.literals[0] is None else hits[0]
        return any(hits) if op == "arrays_overlap" else all(hits)
    if op in ("starts_with", "ends_with", "contains", "like"):
        if v is None:
            return None
        lit = p.literal
        if op == "starts_with":
            return v.startswith(lit)
        if op == "ends_with":
            return v.endswith(lit)
        if op == "contains":
            return lit in v
        rx, i = [], 0
        while i < len(lit):
            c = lit[i]
            if c == "\\" and i + 1 < len(lit):
                rx.append(re.escape(lit[i + 1]))
                i += 2
                continue
            rx.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
            i += 1
        return re.fullmatch("".join(rx), v, re.S) is not None
    if op in ("in", "not_in"):
        res = False
        for lit in p.literals:
            c = _cmp(v, lit)
            if c is None:
                res = None if res is False else res
            elif c == 0:
                res = True
                break
        if op == "in":
            return res
        return None if res is None else not res
    if op in ("between", "not_between"):
        lo, hi = p.literals
        r = _and(_op(">=", _cmp(v, lo)), _op("<=", _cmp(v, hi)))
        return r if op == "between" else _not(r)
    c = _cmp(v, p.literal)
    return _op(
        {
            "equal": "=",
            "not_equal": "!=",
            "less_than": "<",
            "less_or_equal": "<=",
            "greater_than": ">",
            "greater_or_equal": ">=",
        }[op],
        c,
    )


def _op(sym, c):
    if c is None:
        return None
    if c == "nan":
        return sym == "!="
    return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[sym]


def _not(a):
    return None if a is None else not a


def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def value(pred, row):
    """True / False / None (unknown) of ``pred`` on ``row`` (a dict)."""
    if isinstance(pred, Leaf):
        return _leaf(pred, row)
    if isinstance(pred, And):
        r = True
        for c in pred.children:
            r = _and(r, value(c, row))
        return r
    if isinstance(pred, Or):
        r = False
        for c in pred.children:
            r = _or(r, value(c, row))
        return r
    raise TypeError(pred)


def holds(pred, row) -> bool:
    return value(pred, row) is True


def matching_rows(pred, rows):
    """Positions of the rows where ``pred`` is true."""
    return [i for i, r in enumerate(rows) if holds(pred, r)]


def order_key(v, desc, nulls_first):
    """Sort key (smaller first) of a value under SQL's ORDER BY: NaN above every float, -0.0
    equal to 0.0, nulls last unless ``nulls_first``."""
    if v is None:
        return (0,) if nulls_first else (2,)
    if isinstance(v, float):
        if math.isnan(v):
            return (1, 0 if desc else 1, 0.0)
        return (1, 1 if desc else 0, -v if desc else v)
    if isinstance(v, str):
        return (1, 1, tuple(-ord(c) for c in v) + (1,)) if desc else (1, 0, v)
    return (1, 1, -v) if desc else (1, 0, v)
