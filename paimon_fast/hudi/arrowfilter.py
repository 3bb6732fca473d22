"""Evaluate a predicate tree on Arrow data with SQL semantics (NULL -> not selected)."""
from __future__ import annotations

import datetime as _dt

import pyarrow as pa
import pyarrow.compute as pc

from ..predicate import And, Leaf, Or
from . import model


def _scalar(value, t: pa.DataType):
    """A literal as an Arrow scalar comparable with a column of type ``t``."""
    if isinstance(value, str) and pa.types.is_date(t):
        value = _dt.date.fromisoformat(value.strip())
    elif pa.types.is_timestamp(t) and isinstance(value, (str, _dt.datetime, _dt.date)):
        ticks = model._parse_ts_literal(value, t)
        if ticks is not None:
            return pa.scalar(ticks, pa.int64()).cast(t)
        return pa.scalar(model._parse_ts_literal(value, pa.timestamp("ns", tz=t.tz)), pa.int64()).cast(
            pa.timestamp("ns", tz=t.tz))
    try:
        return pa.scalar(value, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return pa.scalar(value)


def _cmp(fn, col, value):
    if value is None:
        return pa.nulls(len(col), pa.bool_())
    return fn(col, _scalar(value, col.type))


def leaf_mask(leaf: Leaf, table: pa.Table):
    """Kleene boolean array of one leaf (null where SQL gives NULL)."""
    if leaf.name not in table.column_names:
        raise KeyError(f"predicate column {leaf.name!r} is not in the table")
    col = table.column(leaf.name)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    op = leaf.op
    if op == "is_null":
        return pc.is_null(col)
    if op == "is_not_null":
        return pc.is_valid(col)
    if op == "equal":
        return _cmp(pc.equal, col, leaf.literal)
    if op == "not_equal":
        return _cmp(pc.not_equal, col, leaf.literal)
    if op == "less_than":
        return _cmp(pc.less, col, leaf.literal)
    if op == "less_or_equal":
        return _cmp(pc.less_equal, col, leaf.literal)
    if op == "greater_than":
        return _cmp(pc.greater, col, leaf.literal)
    if op == "greater_or_equal":
        return _cmp(pc.greater_equal, col, leaf.literal)
    if op in ("in", "not_in"):
        m = None
        for v in leaf.literals:
            e = _cmp(pc.equal, col, v)
            m = e if m is None else pc.or_kleene(m, e)
        if m is None:
            m = pa.array([False] * len(col), pa.bool_())
        return m if op == "in" else pc.invert(m)
    if op == "between":
        return pc.and_kleene(_cmp(pc.greater_equal, col, leaf.literals[0]), _cmp(pc.less_equal, col, leaf.literals[1]))
    if op == "not_between":
        return pc.or_kleene(_cmp(pc.less, col, leaf.literals[0]), _cmp(pc.greater, col, leaf.literals[1]))
    if op == "starts_with":
        return pc.starts_with(col, pattern=leaf.literal)
    if op == "ends_with":
        return pc.ends_with(col, pattern=leaf.literal)
    if op == "contains":
        return pc.match_substring(col, pattern=leaf.literal)
    if op == "like":
        return pc.match_like(col, pattern=leaf.literal)
    raise ValueError(f"unsupported predicate op {op!r}")


def kleene_mask(pred, table: pa.Table):
    if isinstance(pred, Leaf):
        return leaf_mask(pred, table)
    if isinstance(pred, And):
        m = None
        for c in pred.children:
            x = kleene_mask(c, table)
            m = x if m is None else pc.and_kleene(m, x)
        return m
    if isinstance(pred, Or):
        m = None
        for c in pred.children:
            x = kleene_mask(c, table)
            m = x if m is None else pc.or_kleene(m, x)
        return m
    raise TypeError(f"not a predicate: {pred!r}")


def filter_table(table: pa.Table, pred) -> pa.Table:
    """Rows of ``table`` for which ``pred`` is TRUE (None keeps every row)."""
    if pred is None or table.num_rows == 0:
        return table
    mask = kleene_mask(pred, table)
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return table.filter(mask.fill_null(False))
