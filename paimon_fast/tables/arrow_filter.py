"""Predicates as Arrow compute expressions, and literal coercion to column types.

:func:`to_arrow_expression` gives the row filter used wherever rows are read
with pyarrow (the Spark Data Source's executors, :meth:`ParquetDataset.scan`),
with SQL's semantics: a row is kept only when the predicate is *true* (a null
comparison drops the row, ``x NOT IN (...)`` drops null ``x``).
"""
from __future__ import annotations

import hashlib
import threading
from typing import Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..literals import normalize
from ..predicate import ARRAY_OPS, And, Leaf, Or, Predicate
from ..types import list_elements


def coerce_literal(value, arrow_type: Optional[pa.DataType]):
    """Conservative literal coercion: ISO strings for DATE/TIMESTAMP columns,
    ints for floating columns, integral floats for integer columns.  Anything
    else is returned unchanged (the comparison decides)."""
    if arrow_type is None or value is None:
        return value
    t = arrow_type
    if isinstance(value, str) and (pa.types.is_date(t) or pa.types.is_timestamp(t)):
        try:
            return pa.scalar(value).cast(t).as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and pa.types.is_floating(t):
        return float(value)
    if isinstance(value, float) and pa.types.is_integer(t) and value.is_integer():
        return int(value)
    return value


def coerce_literals(predicate: Predicate, schema: Mapping[str, pa.DataType] | pa.Schema, *,
                    missing: str = "error") -> Predicate:
    """The predicate with every leaf's literals made exact values of its column's
    Arrow type, answering numerically what the type cannot hold
    (:func:`paimon_fast.literals.normalize`: ``x < 5.5`` on INT is ``x <= 5``).

    A leaf on a column ``schema`` lacks raises
    :class:`~paimon_fast.errors.ColumnNotFoundError` (``missing="keep"`` keeps it).
    """
    types = _types(schema)
    return normalize(predicate, {k: v for k, v in types.items()}, missing=missing)


def _types(schema) -> dict:
    if isinstance(schema, pa.Schema):
        return {f.name: f.type for f in schema}
    return dict(schema or {})


def _scalar(v, t):
    v = coerce_literal(v, t)
    if t is not None:
        try:
            return pa.scalar(v, type=t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, OverflowError):
            pass
    return pa.scalar(v)


def _like_to_regex(pattern: str) -> str:
    import re

    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return "^" + "".join(out) + "$"


def to_arrow_expression(predicate: Predicate, schema: Mapping[str, pa.DataType] | pa.Schema | None = None) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` true exactly where the predicate is true.

    ``schema`` (column -> Arrow type) lets literals be typed like their column.
    """
    types = _types(schema)
    if types:
        predicate = normalize(predicate, types)

    def build(p):
        if isinstance(p, And):
            e = build(p.children[0])
            for c in p.children[1:]:
                e = e & build(c)
            return e
        if isinstance(p, Or):
            e = build(p.children[0])
            for c in p.children[1:]:
                e = e | build(c)
            return e
        if not isinstance(p, Leaf):
            raise TypeError(f"not a predicate: {p!r}")
        f = pc.field(p.name)
        t = types.get(p.name)
        op = p.op
        if op in ARRAY_OPS:
            return _array_expression(f, p, t)
        if op == "is_null":
            return f.is_null()
        if op == "is_not_null":
            return f.is_valid()
        if op in ("in", "not_in"):
            vals = [coerce_literal(v, t) for v in p.literals if v is not None]
            try:
                arr = pa.array(vals, type=t) if t is not None else pa.array(vals)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                arr = pa.array(vals)
            isin = f.isin(arr)
            if op == "in":
                return isin
            if any(v is None for v in p.literals):
                # x NOT IN (..., NULL) is never true in SQL
                return pc.scalar(False) & f.is_valid()
            return ~isin & f.is_valid()
        if op in ("between", "not_between"):
            lo, hi = _scalar(p.literals[0], t), _scalar(p.literals[1], t)
            if op == "between":
                return (f >= lo) & (f <= hi)
            # NOT (x BETWEEN ...): a NaN row is NOT BETWEEN any bounds (IEEE: both comparisons are false)
            return ~((f >= lo) & (f <= hi)) & f.is_valid()
        if op == "starts_with":
            return pc.starts_with(f, p.literal)
        if op == "ends_with":
            return pc.ends_with(f, p.literal)
        if op == "contains":
            return pc.match_substring(f, p.literal)
        if op == "like":
            return pc.match_substring_regex(f, _like_to_regex(p.literal))
        lit = p.literal
        if lit is None:
            return pc.scalar(False) & f.is_valid()
        s = _scalar(lit, t)
        return {
            "equal": lambda: f == s,
            "not_equal": lambda: f != s,
            "less_than": lambda: f < s,
            "less_or_equal": lambda: f <= s,
            "greater_than": lambda: f > s,
            "greater_or_equal": lambda: f >= s,
        }[op]()

    return build(predicate)


# ---------------------------------------------------------------- ARRAY predicates

_ARRAY_MODES = {"array_contains": 0, "arrays_overlap": 1, "array_contains_all": 2}
_UDFS = {}
_UDF_LOCK = threading.Lock()


def _is_list(t) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def array_mask(arr, literals, mode: int) -> np.ndarray:
    """Bool mask over a list array: rows whose array holds the literal (mode 0,
    ``array_contains``), any literal (1, ``arrays_overlap``) or every literal (2,
    ``array_contains_all``).  Null arrays and null elements never match; a null literal
    matches nothing (and makes mode 2 match nothing); mode 2 with no literals matches every
    non-null array.  ``literals`` is an Arrow array of the element type."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    mask = np.zeros(n, dtype=bool)
    if literals.null_count:
        if mode == 2:
            return mask
        literals = literals.filter(literals.is_valid())
    if mode == 2 and len(literals) == 0:
        return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if len(literals) == 0 or n == 0:
        return mask
    flat, parents = list_elements(arr)
    if mode < 2:
        hit = np.asarray(pc.is_in(flat, value_set=literals).to_numpy(zero_copy_only=False), dtype=bool)
        mask[parents[hit]] = True
        return mask
    distinct = pc.unique(literals)
    pos = pc.index_in(flat, value_set=distinct)
    ok = np.asarray(pos.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    pairs = np.unique(parents[ok].astype(np.int64) * len(distinct)
                      + pos.filter(pos.is_valid()).to_numpy(zero_copy_only=False).astype(np.int64))
    counts = np.bincount(pairs // len(distinct), minlength=n)
    return counts == len(distinct)


def _array_udf(list_type):
    """A registered Arrow scalar function ``(list column, literal list, mode) -> bool`` for
    one list type (Arrow expressions have no list membership of their own)."""
    key = str(list_type)
    name = _UDFS.get(key)
    if name is not None:
        return name
    with _UDF_LOCK:
        name = _UDFS.get(key)
        if name is None:
            name = "paimon_fast_array_" + hashlib.sha1(key.encode()).hexdigest()[:20]

            def fn(ctx, arr, lits, mode):
                lit_arr = lits.values if isinstance(lits, pa.Scalar) else lits[0].values
                m = mode.as_py() if isinstance(mode, pa.Scalar) else mode[0].as_py()
                if isinstance(arr, pa.Scalar):
                    arr = pa.array([arr.as_py()], type=arr.type)
                    return pa.scalar(bool(array_mask(arr, lit_arr, m)[0]))
                return pa.array(array_mask(arr, lit_arr, m), type=pa.bool_())
            try:
                pc.register_scalar_function(
                    fn, name, {"summary": "paimon-fast ARRAY predicate", "description": "array membership"},
                    {"arr": list_type, "lits": pa.list_(list_type.value_type), "mode": pa.int8()}, pa.bool_())
            except pa.ArrowKeyError:   # registered by an earlier import of this module
                pass
            _UDFS[key] = name
    return name


def _array_literals(p: Leaf, value_type):
    """The leaf's literals as a list of the element type; literals of another type match no
    element, so they are dropped (as a null: ``array_contains_all`` then matches nothing)."""
    out = []
    for v in p.literals:
        v = coerce_literal(v, value_type)
        if v is not None:
            try:
                pa.scalar(v, type=value_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, OverflowError):
                v = None
        out.append(v)
    return pa.scalar(out, type=pa.list_(value_type))


def _array_expression(f, p: Leaf, t):
    if t is None or not _is_list(t):
        raise TypeError(f"{p.op} needs an ARRAY (list) column; {p.name!r} is {t}")
    name = _array_udf(t)
    return pc.Expression._call(name, [f, pc.scalar(_array_literals(p, t.value_type)),
                                      pc.scalar(pa.scalar(_ARRAY_MODES[p.op], pa.int8()))])


def filter_table(table: pa.Table, predicate: Optional[Predicate]) -> pa.Table:
    """Rows of ``table`` where ``predicate`` is true (all rows when it is None)."""
    if predicate is None:
        return table
    predicate = normalize(predicate, table.schema, missing="error")
    expr = to_arrow_expression(predicate, table.schema)
    return table.filter(expr)
