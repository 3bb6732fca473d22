"""What a Parquet file's own statistics say about a predicate leaf, before any index is opened.

A row group's column chunk carries its min / max (``min_value`` / ``max_value``, in the column's
sort order) and its null count.  :func:`file_stats` reads them from the file's footer (parsed
once and cached, :mod:`paimon_fast.io.parquet.footer`); :func:`leaf_answer` answers a leaf from
them: SKIP where no row of the file can hold it, ALL where every row does, None where the
statistics cannot tell.  A plan uses the answer in place of the file's index for that leaf
(:meth:`ParquetDataset.plan`): clustered data is pruned without opening the index of a file
outside the range, and a file entirely inside it is counted from its row count.

Only what the statistics prove is claimed:

* SKIP on signed integers, strings / binaries (byte order, as Arrow compares them) and floating
  point (NaN is never in the statistics and never satisfies a comparison: the exact filter
  compares as IEEE does);
* ALL on signed integers and strings only, and only with a null count of 0 (floating point
  columns may hold NaNs the statistics do not show);
* ``is_null`` / ``is_not_null`` from the null counts.

Statistics written in the legacy fields only (``min`` / ``max``, whose order for strings and
unsigned integers was ill-defined) are used for signed integers alone.
"""

from __future__ import annotations

import struct
from typing import Callable, List, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..core.predicate import And, Leaf, Or, Predicate

# parquet.thrift Type
_INT32, _INT64, _FLOAT, _DOUBLE, _BYTE_ARRAY = 1, 2, 4, 5, 6

SKIP_ALL = ("skip", "all")


class ChunkStats(NamedTuple):
    rows: int
    nulls: Optional[int]  # None: not written
    min: object  # a Python value comparable with the leaf's literals, or None (not written)
    max: object


def file_stats(fo, column: str) -> Optional[List[ChunkStats]]:
    """Per row group the statistics of ``column`` in the parsed footer ``fo`` (None: a nested or
    duplicated column, or a type whose statistics are not used)."""
    f = fo.by_name.get(column)
    if f is None or not f.flat:
        return None
    el = fo.elements[1 + sum(x.elements for x in fo.fields[: f.index])]
    physical = el.get(1)
    signed_int = physical in (_INT32, _INT64) and not _unsigned(el)
    if physical not in (_INT32, _INT64, _FLOAT, _DOUBLE, _BYTE_ARRAY) or (
        physical in (_INT32, _INT64) and not signed_int
    ):
        return None
    leaf = f.leaves.start
    out = []
    for g, rg in enumerate(fo.row_groups):
        meta = rg[1][leaf].get(3)
        st = meta.get(12) if isinstance(meta, dict) else None
        rows = int(fo.rg_rows[g])
        if not isinstance(st, dict):
            out.append(ChunkStats(rows, None, None, None))
            continue
        nulls = st.get(3) if isinstance(st.get(3), int) and st.get(3) >= 0 else None
        lo, hi = st.get(6), st.get(5)
        if (lo is None or hi is None) and signed_int:
            lo, hi = st.get(2), st.get(1)  # the legacy fields: signed order for integers
        out.append(ChunkStats(rows, nulls, _decode(physical, lo), _decode(physical, hi)))
    return out


def _unsigned(el: dict) -> bool:
    """An integer column declared unsigned (converted type UINT_*, or an unsigned IntType)."""
    ct = el.get(6)
    if isinstance(ct, int) and 11 <= ct <= 14:  # UINT_8 .. UINT_64
        return True
    lt = el.get(10)
    if isinstance(lt, dict):
        it = lt.get(10)  # LogicalType.INTEGER
        if isinstance(it, dict) and it.get(2) is False:
            return True
    return False


def _decode(physical: int, raw):
    if not isinstance(raw, (bytes, bytearray)):
        return None
    try:
        if physical == _INT32 and len(raw) == 4:
            return struct.unpack("<i", raw)[0]
        if physical == _INT64 and len(raw) == 8:
            return struct.unpack("<q", raw)[0]
        if physical == _FLOAT and len(raw) == 4:
            return struct.unpack("<f", raw)[0]
        if physical == _DOUBLE and len(raw) == 8:
            return struct.unpack("<d", raw)[0]
    except struct.error:
        return None
    if physical == _BYTE_ARRAY:
        return bytes(raw)
    return None


def stat_kind(t: pa.DataType) -> Optional[str]:
    """How statistics of a column of Arrow type ``t`` compare: ``"int"``, ``"float"``, ``"str"``,
    ``"bytes"``, or None (not compared)."""
    if pa.types.is_integer(t) and pa.types.is_signed_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    return None


def _lit(kind: str, v):
    """A literal as the statistics' values are (None: not comparable)."""
    if v is None or isinstance(v, bool):
        return None
    if kind == "int":
        return int(v) if isinstance(v, int) else None
    if kind == "float":
        if isinstance(v, (int, float)):
            f = float(v)
            return None if f != f else f  # (a NaN literal: the filter decides)
        return None
    if kind == "str":
        return v.encode("utf-8") if isinstance(v, str) else None
    if kind == "bytes":
        return bytes(v) if isinstance(v, (bytes, bytearray)) else None
    return None


def _chunk(op: str, lits, c: ChunkStats, kind: str) -> Optional[str]:
    """ "skip" / "all" / None for one row group."""
    if op == "is_null":
        if c.nulls is None:
            return None
        return "skip" if c.nulls == 0 else "all" if c.nulls == c.rows else None
    if op == "is_not_null":
        if c.nulls is None:
            return None
        return "skip" if c.nulls == c.rows else "all" if c.nulls == 0 else None
    if c.nulls is not None and c.nulls == c.rows:
        return "skip"  # only nulls: no comparison holds
    lo, hi = c.min, c.max
    if lo is None or hi is None or lo != lo or hi != hi:  # (a NaN bound: written by an old writer)
        return None
    can_all = kind != "float" and c.nulls == 0
    try:
        if op == "equal":
            (v,) = lits
            if v < lo or v > hi:
                return "skip"
            return "all" if can_all and lo == hi == v else None
        if op in ("less_than", "less_or_equal", "greater_than", "greater_or_equal"):
            (v,) = lits
            holds = {
                "less_than": (lambda a: a < v),
                "less_or_equal": (lambda a: a <= v),
                "greater_than": (lambda a: a > v),
                "greater_or_equal": (lambda a: a >= v),
            }[op]
            # a monotone test: the bound nearest to holding decides SKIP, the farthest ALL
            near, far = (lo, hi) if op in ("less_than", "less_or_equal") else (hi, lo)
            if not holds(near):
                return "skip"
            return "all" if can_all and holds(far) else None
        if op == "between":
            a, b = lits
            if b < lo or a > hi or a > b:
                return "skip"
            return "all" if can_all and a <= lo and hi <= b else None
        if op == "in":
            if all(v < lo or v > hi for v in lits):
                return "skip"
            return None
    except TypeError:
        return None
    return None


def leaf_prepared(leaf: Leaf, t: pa.DataType) -> Optional[tuple]:
    """What :func:`leaf_answer` compares for ``leaf`` on a column of Arrow type ``t``: ``(op,
    literals as the statistics' values are, kind)``, or None when statistics cannot answer it.
    The same for every file: a plan prepares a leaf once."""
    kind = stat_kind(t)
    if kind is None:
        return None
    op = leaf.op
    if op in ("is_null", "is_not_null"):
        lits = ()
    elif op in ("equal", "less_than", "less_or_equal", "greater_than", "greater_or_equal", "between", "in"):
        lits = [_lit(kind, v) for v in leaf.literals]
        if not lits or any(v is None for v in lits):
            return None
    else:
        return None
    return op, lits, kind


_UNPREPARED = object()


def leaf_answer(leaf: Leaf, stats: Optional[List[ChunkStats]], t: pa.DataType, prepared=_UNPREPARED):
    """``"skip"`` (no row of the file holds ``leaf``), ``"all"`` (every row does), a list of
    ``(start, stop)`` row ranges (every row group decided, some wholly in, the others wholly
    out: the rows of those in) or None, from the file's statistics of the leaf's column (``t``:
    its Arrow type).  ``prepared``: :func:`leaf_prepared` of the two, when the caller has it."""
    if stats is None or not stats:
        return None
    prep = leaf_prepared(leaf, t) if prepared is _UNPREPARED else prepared
    if prep is None:
        return None
    op, lits, kind = prep
    if len(stats) == 1:  # (one row group, or a whole file's statistics)
        c = stats[0]
        return _chunk(op, lits, c, kind) if c.rows > 0 else "skip"
    each = [_chunk(op, lits, c, kind) if c.rows > 0 else "skip" for c in stats]
    got = set(each)
    if got <= {"skip"}:
        return "skip"  # (or no row at all)
    if got == {"all"}:
        return "all"
    if None in got:
        return None
    ranges, at = [], 0
    for c, a in zip(stats, each):
        if a == "all":
            ranges.append((at, at + c.rows))
        at += c.rows
    return ranges


# ---------------------------------------------------------------- many files at once
# A plan asks every file's catalog statistics whether the predicate can hold there; on a clustered
# dataset nearly every file answers "skip".  The same answers for all files in a few numpy
# operations: a file is marked only where leaf_answer would say "skip" for it (never where it
# might not), so a plan may settle the marked files without asking them one by one.

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_EXACT_FLOAT = 1 << 53  # integers up to this compare as floats exactly


def _fits(kind: str, v) -> bool:
    """Whether ``v`` compares in an array of ``kind`` exactly as the Python value does."""
    if isinstance(v, bool):
        return False
    if kind == "int":
        return isinstance(v, int) and _I64_MIN <= v <= _I64_MAX
    if kind == "float":
        if isinstance(v, float):
            return v == v  # (a NaN bound decides nothing)
        return isinstance(v, int) and -_EXACT_FLOAT <= v <= _EXACT_FLOAT
    return False


class StatsArrays(NamedTuple):
    """One column's statistics of many units (the files of a catalog, or the pages of a column
    chunk), as arrays: one entry a unit."""

    has: np.ndarray  # bool: the file has statistics of the column
    rows: np.ndarray  # int64
    nulls: np.ndarray  # int64, -1: not known
    lo: np.ndarray  # int64 or float64 (where ``bounded``)
    hi: np.ndarray
    bounded: np.ndarray  # bool: lo and hi hold the file's bounds, comparable exactly
    only_nulls: Optional[np.ndarray] = None  # bool: known to hold nulls only (no comparison holds)
    empty: Optional[np.ndarray] = None  # bool: has statistics and no row


def stats_arrays(stats: Sequence[Optional[ChunkStats]], kind: Optional[str]) -> StatsArrays:
    """The :class:`StatsArrays` of a column whose statistics per unit are ``stats`` (a file's or a
    page's :class:`ChunkStats`, or None: none); ``kind``: :func:`stat_kind` of its type (bounds are
    kept for "int" and "float" only)."""
    n = len(stats)
    has = np.zeros(n, bool)
    rows = np.zeros(n, np.int64)
    nulls = np.full(n, -1, np.int64)
    lo = np.zeros(n, np.int64 if kind == "int" else np.float64)
    hi = np.zeros_like(lo)
    bounded = np.zeros(n, bool)
    for i, c in enumerate(stats):
        if c is None:
            continue
        has[i] = True
        rows[i] = c.rows
        if c.nulls is not None:
            nulls[i] = c.nulls
        if kind in ("int", "float") and _fits(kind, c.min) and _fits(kind, c.max):
            lo[i], hi[i], bounded[i] = c.min, c.max, True
    # (what every leaf's answer starts from, once: a plan asks these arrays again and again)
    return StatsArrays(has, rows, nulls, lo, hi, bounded, (nulls >= 0) & (nulls == rows), has & (rows <= 0))


def leaf_skips(prepared: Optional[tuple], col: StatsArrays) -> np.ndarray:
    """Per file: True where :func:`leaf_answer` of the file's one :class:`ChunkStats` is
    ``"skip"`` for the leaf :func:`leaf_prepared` gave ``prepared`` (False where it might not be)."""
    n = len(col.has)
    if prepared is None:
        return np.zeros(n, bool)
    op, lits, kind = prepared
    only_nulls = col.only_nulls if col.only_nulls is not None else (col.nulls >= 0) & (col.nulls == col.rows)
    if op == "is_null":
        m = (col.nulls >= 0) & (col.nulls == 0)
    elif op == "is_not_null":
        m = only_nulls
    else:
        m = only_nulls  # only nulls: no comparison holds
        if kind in ("int", "float") and all(_fits(kind, v) for v in lits):
            lo, hi = col.lo, col.hi
            if op == "equal":
                (v,) = lits
                out = (lo > v) | (hi < v)
            elif op == "less_than":
                out = ~(lo < lits[0])
            elif op == "less_or_equal":
                out = ~(lo <= lits[0])
            elif op == "greater_than":
                out = ~(hi > lits[0])
            elif op == "greater_or_equal":
                out = ~(hi >= lits[0])
            elif op == "between":
                a, b = lits
                out = (lo > b) | (hi < a) if a <= b else np.ones(n, bool)
            elif op == "in":
                out = np.ones(n, bool)
                for v in lits:
                    out &= (lo > v) | (hi < v)
            else:
                out = np.zeros(n, bool)
            m = m | (col.bounded & out)
    if col.empty is not None:
        return col.empty | (col.has & m)
    return col.has & ((col.rows <= 0) | m)


def tree_skips(pred: Predicate, leaf: Callable[[Leaf], Optional[np.ndarray]], n: int) -> np.ndarray:
    """Per file: True where the predicate is SKIP as :func:`~paimon_fast.fileindex.base.evaluate_tree`
    combines leaf answers (AND: a SKIP child; OR: every child SKIP), given ``leaf(l)``: the files
    where leaf ``l`` is SKIP (None: none known)."""
    if isinstance(pred, Leaf):
        got = leaf(pred)
        return np.zeros(n, bool) if got is None else got
    if isinstance(pred, And) and pred.children:
        out = np.zeros(n, bool)
        for c in pred.children:
            out |= tree_skips(c, leaf, n)
        return out
    if isinstance(pred, Or) and pred.children:
        out = np.ones(n, bool)
        for c in pred.children:
            out &= tree_skips(c, leaf, n)
        return out
    return np.zeros(n, bool)
