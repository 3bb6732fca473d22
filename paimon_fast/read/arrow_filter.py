"""Predicates as Arrow compute expressions, and Arrow tables filtered by them.

Both take bound predicates (:func:`paimon_fast.core.bind.bind`: literals exact values of their
columns' types) and bind what they are given otherwise.  :func:`to_arrow_expression` gives the
row filter used wherever rows are read with pyarrow (the Spark Data Source's executors,
:meth:`ParquetDataset.scan`), with SQL's semantics: a row is kept only when the predicate is
*true* (a null comparison drops the row, ``x NOT IN (...)`` drops null ``x``).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.bind import bind
from ..core.predicate import And, Leaf, Predicate
from ..core.translate import COMPARISONS, Translator
from ..core.types import list_elements


def coerce_literals(
    predicate: Predicate, schema: Mapping[str, pa.DataType] | pa.Schema, *, missing: str = "error"
) -> Predicate:
    """The predicate bound to ``schema``: the name this module has always given
    :func:`paimon_fast.core.bind.bind` (literals made exact values of their columns' Arrow types,
    ``x < 5.5`` on INT is ``x <= 5``; a column ``schema`` lacks raises
    :class:`~paimon_fast.errors.ColumnNotFoundError`, ``missing="keep"`` keeps its leaves)."""
    return bind(predicate, schema, missing=missing)


def _types(schema) -> dict:
    if isinstance(schema, pa.Schema):
        return {f.name: f.type for f in schema}
    return dict(schema or {})


def _scalar(v, t):
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


class ArrowTranslator(Translator):
    """Predicates as ``pyarrow.compute`` expressions over columns of known Arrow types (an
    unknown column's literals are typed by Arrow).  Comparisons are IEEE's: NaN compares false."""

    def __init__(self, types: Mapping[str, pa.DataType]):
        self.types = types

    def compare(self, op, p, value):
        f, s = pc.field(p.name), _scalar(value, self.types.get(p.name))
        return COMPARISONS[op](f, s)

    def is_null(self, p):
        return pc.field(p.name).is_null()

    def is_not_null(self, p):
        return pc.field(p.name).is_valid()

    def isin(self, p, values):
        t = self.types.get(p.name)
        vals = list(values)
        try:
            arr = pa.array(vals, type=t) if t is not None else pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            arr = pa.array(vals)
        return pc.field(p.name).isin(arr)

    def never(self, p):
        return pc.scalar(False) & pc.field(p.name).is_valid()

    def unknown(self, p):
        return pc.scalar(pa.scalar(None, pa.bool_()))

    def op_starts_with(self, p):
        return pc.starts_with(pc.field(p.name), p.literal)

    def op_ends_with(self, p):
        return pc.ends_with(pc.field(p.name), p.literal)

    def op_contains(self, p):
        return pc.match_substring(pc.field(p.name), p.literal)

    def op_like(self, p):
        return pc.match_substring_regex(pc.field(p.name), _like_to_regex(p.literal))

    def op_array_contains(self, p):
        return _array_expression(pc.field(p.name), p, self.types.get(p.name))

    op_arrays_overlap = op_array_contains_all = op_array_contains


def to_arrow_expression(
    predicate: Predicate, schema: Mapping[str, pa.DataType] | pa.Schema | None = None
) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` true exactly where the predicate is true.

    ``schema`` (column -> Arrow type) binds the predicate (:func:`paimon_fast.core.bind.bind`,
    nothing to do for one bound to the same types), so literals are typed like their column; a
    column it lacks keeps its leaves, literals typed by Arrow.
    """
    types = _types(schema)
    if types:
        predicate = bind(predicate, types, missing="keep")
    return ArrowTranslator(types).translate(predicate)


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
    pairs = np.unique(
        parents[ok].astype(np.int64) * len(distinct)
        + pos.filter(pos.is_valid()).to_numpy(zero_copy_only=False).astype(np.int64)
    )
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
                    if not arr.is_valid:  # a null array holds nothing
                        return pa.scalar(False)
                    arr = pa.array([arr], type=arr.type)  # by value (as_py of nanoseconds needs pandas)
                    return pa.scalar(bool(array_mask(arr, lit_arr, m)[0]))
                return pa.array(array_mask(arr, lit_arr, m), type=pa.bool_())

            try:
                pc.register_scalar_function(
                    fn,
                    name,
                    {"summary": "paimon-fast ARRAY predicate", "description": "array membership"},
                    {"arr": list_type, "lits": pa.list_(list_type.value_type), "mode": pa.int8()},
                    pa.bool_(),
                )
            except pa.ArrowKeyError:  # registered by an earlier import of this module
                pass
            _UDFS[key] = name
    return name


def _array_literals(p: Leaf, value_type):
    """The leaf's literals as a list of the element type; literals of another type match no
    element, so they are dropped (as a null: ``array_contains_all`` then matches nothing)."""
    out = []
    for v in p.literals:
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
    return pc.Expression._call(
        name, [f, pc.scalar(_array_literals(p, t.value_type)), pc.scalar(pa.scalar(_ARRAY_MODES[p.op], pa.int8()))]
    )


_SIMPLE = {
    "equal": pc.equal,
    "less_than": pc.less,
    "less_or_equal": pc.less_equal,
    "greater_than": pc.greater,
    "greater_or_equal": pc.greater_equal,
}


def _simple_mask(predicate: Predicate, table: pa.Table):
    """The mask of a comparison of a flat numeric or string column with a literal (or an AND of
    them), computed with compute functions: the same rows as the expression, without starting an
    Acero plan (a large part of filtering a few thousand rows).  None: not such a predicate."""
    leaves = predicate.children if isinstance(predicate, And) else (predicate,)
    mask = None
    for leaf in leaves:
        if not isinstance(leaf, Leaf) or leaf.name not in table.schema.names:
            return None
        col = table.column(leaf.name)
        t = col.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)):
            return None
        try:
            lits = [pa.scalar(v, type=t) for v in leaf.literals]
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            return None
        # (a literal the column's type does not hold exactly, a float32's 0.1 say, is left to the
        # expression's own coercion)
        if any(not v.is_valid or v.as_py() != lit for v, lit in zip(lits, leaf.literals)):
            return None
        if leaf.op in _SIMPLE and len(lits) == 1:
            m = _SIMPLE[leaf.op](col, lits[0])
        elif leaf.op == "between" and len(lits) == 2:
            m = pc.and_(pc.greater_equal(col, lits[0]), pc.less_equal(col, lits[1]))
        else:
            return None
        mask = m if mask is None else pc.and_(mask, m)
    return mask


def count_held(table: pa.Table, predicate: Predicate, sizes) -> "np.ndarray | None":
    """How many rows of each run of ``table``'s rows (``sizes``: their lengths, in order) hold
    ``predicate`` (null: not), when compute functions answer it (:func:`_simple_mask`); None
    otherwise (use :func:`filter_table`).  Counting skips the copy of the rows a filter makes."""
    predicate = bind(predicate, table.schema)
    mask = _simple_mask(predicate, table)
    if mask is None:
        return None
    mask = pc.fill_null(mask, False)
    out = np.zeros(len(sizes), dtype=np.int64)
    at = 0
    for k, n in enumerate(sizes):  # (a count of set bits per run: no byte per row made)
        n = int(n)
        if n:
            out[k] = pc.sum(mask.slice(at, n)).as_py() or 0
        at += n
    return out


def filter_table(table: pa.Table, predicate: Optional[Predicate]) -> pa.Table:
    """Rows of ``table`` where ``predicate`` is true (all rows when it is None)."""
    if predicate is None:
        return table
    predicate = bind(predicate, table.schema)
    mask = _simple_mask(predicate, table)
    if mask is not None:
        return table.filter(mask)  # (nulls: not selected, as the expression's)
    expr = to_arrow_expression(predicate, table.schema)
    return table.filter(expr)
