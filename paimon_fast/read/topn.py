"""Exact table-level top-N (``ORDER BY c [DESC] NULLS LAST|FIRST LIMIT k``) over many files.

The answer is the SQL one: rows where ``where`` holds, ordered by the column
(NaN above every other float, as Spark and Java order doubles; ``-0.0`` equal
to ``0.0``), nulls last unless ``nulls_first``, ties broken by file order and
then by row position in the file, the first ``k`` of them.

Per file the work is bounded by its index:

* a file whose ``range-bitmap`` index proves it cannot hold a row that beats
  the current k-th row (its max is below it for DESC, its min above it for
  ASC) is not read at all;
* otherwise the index's top-k restricted to the file's eligible rows (the
  ``where`` plan's bitmap minus deleted rows) names at most k candidate rows
  plus ties; only those rows of the sort and ``where`` columns are read (the
  pages that hold them: :func:`paimon_fast.io.parquet.rows.read_rows`) and
  filtered exactly.  When the ``where`` plan is
  not exact and fewer than k candidates survive, the request widens (x4) until
  k survive or the file's eligible rows are exhausted, so the answer never
  depends on how exact the indexes are;
* a file without such an index reads its sort and ``where`` columns.

Only the final k rows are read for the projected columns.  The table kinds
plug in through :class:`TopNSource` (one per file); :func:`top_n` does the
merge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from ..core.types import sort_indices
from ..io.parquet.rows import PageReadStats

POS = "__pf_pos"
FILE = "__pf_file"
NAN = "__pf_nan"


@dataclass
class TopNSource:
    """One file as :func:`top_n` sees it.

    ``rows``: rows in the file; ``eligible``: the rows that may satisfy the
    ``where`` predicate and are not deleted (None = every row, when nothing is
    deleted); ``reader``: the file's ``range-bitmap`` reader of the column, or
    None; ``read(positions, columns)``: a table of those rows (sorted
    positions, numpy int64) with the given columns, exactly filtered by the
    ``where`` predicate, and a ``__pf_pos`` column; ``read_all(columns)``: the
    same for every non-deleted row (files without an index); ``decoded``: the
    :class:`~paimon_fast.io.parquet.rows.PageReadStats` ``read`` adds to.  With ``exact``
    (no ``where`` to check) and ``arrow_type`` of a plain type, the candidates'
    values are decoded from the index instead of read from the file.
    """

    name: str
    rows: int
    eligible: Optional[BitMap]
    reader: object
    read: Callable[[np.ndarray, Sequence[str]], pa.Table]
    read_all: Callable[[Sequence[str]], pa.Table]
    exact: bool = False  # eligible holds only matching rows: candidates' values may come from the index
    arrow_type: Optional[pa.DataType] = None  # the column's Arrow type (values taken from the index)
    decoded: Optional[PageReadStats] = None  # what ``read`` decoded (pages, bytes), when it counts


@dataclass
class TopNReport:
    """What a top-N query read: files opened, skipped by their index's min/max, without an index."""

    files_total: int = 0
    files_skipped: int = 0
    files_without_index: int = 0
    candidate_rows: int = 0
    rows_read: int = 0
    index_errors: List[str] = field(default_factory=list)
    fallback_reason: str = ""  # Paimon tables read without their indexes: why
    decoded: PageReadStats = field(default_factory=PageReadStats)  # rows, pages and bytes the reads decoded
    read_on: str = ""  # Spark's top-N: "driver" (few rows to read: no job) or "executors", and why
    why: str = ""

    def __str__(self):
        return (
            f"top-N: {self.files_total} files, {self.files_skipped} skipped by their index, "
            f"{self.files_without_index} without an index (column read), "
            f"{self.candidate_rows:,} candidate rows, {self.rows_read:,} rows read; decoded: {self.decoded}"
            + (f"; on the {self.read_on} ({self.why})" if self.read_on else "")
        )


def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def order(table: pa.Table, column: str, desc: bool, nulls_first: bool) -> pa.Array:
    """Indices of ``table`` in top-N order (needs ``__pf_file`` and ``__pf_pos`` columns)."""
    keys = []
    t = table
    if _is_float(t.schema.field(column).type):
        t = t.append_column(NAN, pc.is_nan(t.column(column)))
        keys.append((NAN, "descending" if desc else "ascending"))
    keys += [(column, "descending" if desc else "ascending"), (FILE, "ascending"), (POS, "ascending")]
    return sort_indices(t, keys, "at_start" if nulls_first else "at_end")


def _rank_key(v, desc: bool, nulls_first: bool):
    """A Python key under which smaller is better, for one value (None = null)."""
    if v is None:
        return (0,) if nulls_first else (2,)
    if isinstance(v, float) and math.isnan(v):
        return (1, 0 if desc else 1, 0)
    if isinstance(v, float) and v == 0:
        v = 0.0
    return (1, 1 if desc else 0, _Neg(v) if desc else v)


class _Neg:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __lt__(self, o):
        return o.v < self.v

    def __eq__(self, o):
        return self.v == o.v


def _best_possible(reader, desc: bool):
    """The best value any row of the file can have (its max for DESC, min for ASC), or None if unknown."""
    if getattr(reader, "cardinality", 0) <= 0 or reader.min is None:
        return None
    return reader.codec.value_of(reader.max if desc else reader.min)


def _candidates(src: TopNSource, column: str, k: int, desc: bool, nulls_first: bool, where_cols) -> pa.Table:
    """The file's rows that can be among its own first k (exactly filtered), via its index."""
    r = src.reader
    eligible = src.eligible if src.eligible is not None else BitMap(range(src.rows))
    total = len(eligible)
    want = k
    cols = [column, *where_cols]
    from_index = src.exact and src.arrow_type is not None and _plain(src.arrow_type)

    def read(bm):
        pos = np.asarray(bm.to_array(), dtype=np.int64)
        if from_index and len(pos) <= _FROM_INDEX_MAX:
            values = pa.array([r.get(int(p)) for p in pos], type=src.arrow_type)
            return pa.table({column: values, POS: pa.array(pos)})
        return src.read(pos, cols)

    while True:
        fn = r.top_k if desc else r.bottom_k
        cand = fn(want, nulls_first, None if src.eligible is None else eligible, strict=False)
        cand &= eligible
        t = read(cand)
        if _is_float(t.schema.field(column).type) and t.num_rows and pc.any(pc.equal(t.column(column), 0)).as_py():
            # the index orders -0.0 below 0.0 while SQL ties them: a cut between the two
            # zeros must not decide the tie, so every zero row is a candidate
            zeros = eligible & _zero_rows(r)
            extra = zeros - cand
            if len(extra):
                t = pa.concat_tables([t, read(extra)])
                cand |= extra
        if t.num_rows >= k or len(cand) >= total:
            return t
        want *= 4


_FROM_INDEX_MAX = 4096  # candidates decoded from the index one by one; more are read from the file


def _plain(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t) or pa.types.is_date32(t)


def _zero_rows(reader) -> BitMap:
    from ..core.predicate import Leaf

    res = reader.visit(Leaf("between", "_", (-0.0, 0.0)))
    bm = getattr(res, "bitmap", None)
    return bm if bm is not None else BitMap()


def file_top_k(
    src: TopNSource,
    index: int,
    column: str,
    k: int,
    desc: bool,
    nulls_first: bool,
    where_columns: Sequence[str] = (),
    report: Optional[TopNReport] = None,
) -> pa.Table:
    """The first ``k`` rows of one file (``column``, ``__pf_pos``, ``__pf_file`` = ``index``),
    from its index when it has one, else from its column."""
    where_cols = [c for c in dict.fromkeys(where_columns) if c != column]
    if src.reader is None:
        t = src.read_all([column, *where_cols])
    else:
        t = _candidates(src, column, k, desc, nulls_first, where_cols)
    if report is not None:
        report.files_without_index += src.reader is None
        report.candidate_rows += t.num_rows
        report.rows_read += t.num_rows
    t = t.select([column, POS]).append_column(FILE, pa.array(np.full(t.num_rows, index, dtype=np.int32)))
    return t.take(order(t, column, desc, nulls_first)[:k]) if t.num_rows > k else t


def merge(tables: Sequence[pa.Table], column: str, k: int, desc: bool, nulls_first: bool) -> Optional[pa.Table]:
    """The first ``k`` rows of several :func:`file_top_k` answers (None when all are empty)."""
    tables = [t for t in tables if t is not None and t.num_rows]
    if not tables:
        return None
    t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return t.take(order(t, column, desc, nulls_first)[:k])


def project(
    sources: Sequence[TopNSource],
    best: pa.Table,
    column: str,
    columns: Sequence[str],
    desc: bool,
    nulls_first: bool,
    report: Optional[TopNReport] = None,
) -> pa.Table:
    """The ``columns`` of the winning rows ``best`` (from :func:`merge`), read file by file, in order."""
    want = list(dict.fromkeys([*columns, column]))
    files = best.column(FILE).to_numpy()
    poss = best.column(POS).to_numpy()
    ids = np.unique(files).tolist()

    def one(i):
        t = sources[i].read(np.sort(poss[files == i]), want)
        return t.append_column(FILE, pa.array(np.full(t.num_rows, i, dtype=np.int32)))

    if len(ids) > 1:  # Parquet decoding releases the GIL: the winners' files are read side by side
        from concurrent.futures import ThreadPoolExecutor

        from ..io.pool import threads

        with ThreadPoolExecutor(min(len(ids), threads(), 8)) as ex:
            out = list(ex.map(one, ids))
    else:
        out = [one(i) for i in ids]
    if report is not None:
        report.rows_read += sum(t.num_rows for t in out)
    full = pa.concat_tables(out)
    return full.take(order(full, column, desc, nulls_first)).select(list(columns))


def check_k(k) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")


def check_orderable(column: str, t: pa.DataType) -> None:
    """An UnsupportedTypeError unless SQL can ORDER BY a column of Arrow type ``t``."""
    from ..errors import UnsupportedTypeError

    ok = (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_temporal(t)
    )
    if not ok:
        raise UnsupportedTypeError(f"top-N cannot order by column {column!r} of type {t}")


def top_n(
    sources: Sequence[TopNSource],
    column: str,
    k: int,
    *,
    desc: bool = True,
    nulls_first: bool = False,
    where_columns: Sequence[str] = (),
    columns: Sequence[str],
    report: Optional[TopNReport] = None,
) -> Optional[pa.Table]:
    """Merge the files' candidates into the first ``k`` rows (see the module docstring).

    ``sources`` are in file order (ties go to the earlier file); ``columns``
    are the output columns.  Returns a table of ``columns`` in top-N order, or
    None when no row qualifies.
    """
    check_k(k)
    rep = report if report is not None else TopNReport()
    rep.files_total = len(sources)
    if k == 0 or not sources:
        return None
    bounds = [_best_possible(s.reader, desc) if s.reader is not None else None for s in sources]
    # files with an index, best possible value first: the later ones are then often provably out
    known = sorted(
        (i for i in range(len(sources)) if bounds[i] is not None), key=lambda i: (_rank_key(bounds[i], desc, False), i)
    )
    visit = known + [i for i in range(len(sources)) if bounds[i] is None]
    best: Optional[pa.Table] = None
    kth = None  # rank key of the current k-th row, once k rows are known
    for i in visit:
        s = sources[i]
        if kth is not None and bounds[i] is not None and not nulls_first and _beats(kth, bounds[i], desc):
            rep.files_skipped += 1
            continue
        t = file_top_k(s, i, column, k, desc, nulls_first, where_columns, rep)
        best = merge([best, t], column, k, desc, nulls_first)
        if best is not None and best.num_rows >= k:
            kth = _rank_key(_rank_value(best.column(column)[k - 1]), desc, nulls_first)
    if best is None:
        out = None
    else:
        out = project(sources, best, column, columns, desc, nulls_first, rep)
    for s in sources:
        if s.decoded is not None:
            rep.decoded.add(s.decoded)
    return out


def _rank_value(s: pa.Scalar):
    """A row's value as :func:`_rank_key` takes it.  Temporal values are read by their ticks
    (``as_py()`` of a nanosecond one needs pandas): the same answer whatever is installed.  The
    range-bitmap bounds of a temporal column are raw keys of another unit, so :func:`_beats` never
    compares the two (a TypeError there: the file is not skipped), as it never did with datetimes."""
    if not s.is_valid:
        return None
    if pa.types.is_temporal(s.type):
        return ("ticks", s.value)
    return s.as_py()


def _beats(kth, bound, desc: bool) -> bool:
    """True when the current k-th row ranks strictly above any row a file bounded by ``bound`` can hold."""
    try:
        return kth < _rank_key(bound, desc, False)
    except TypeError:  # values the index and Arrow give as different Python types: do not prune
        return False
