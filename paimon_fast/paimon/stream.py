"""A Paimon table's rows as a stream: the source of batches behind :func:`paimon_fast.paimon.read`
and the splits of :func:`paimon_fast.paimon.read_builder`.

A read is planned once, on first need, into splits:

* on the fast path (:mod:`.fastpath`: append tables with a predicate) one :class:`FastSplit` per
  data file the indexes keep, carrying the rows they left (a row bitmap, or none: every row may
  match), read range by range: ranges of the file's rows start at :data:`FIRST_RANGE_ROWS` (fewer
  under a small ``limit``) and double up to :data:`MAX_RANGE_ROWS`; rows the indexes selected are
  read at their positions only
  (the pages holding them, :func:`.fastpath._read_group`); a file the indexes keep whole is read
  late-materialised range by range (the predicate's columns at the range's rows, the other columns
  at the matching rows), so the first batch comes early and a limit met early reads only the
  first pages;
* otherwise (primary-key tables, data evolution, no predicate, what the fast path does not cover:
  ``report.fallback_reason``) one :class:`PypaimonSplit` per split of pypaimon's plan as
  :func:`.scan.plan_with_index` pruned it (files dropped, row ranges of ``IndexedSplit``), read
  with pypaimon's own batch reader one split at a time, every batch filtered exactly.

Splits are picklable, so a caller can hand them to its own workers (:class:`~.builder.TableRead`
reads any of them, in any process, given the same table and filter).
"""

from __future__ import annotations

import time
from typing import Iterator, List, Optional

import numpy as np
import pyarrow as pa

from ..read.lazy import LegacyTupleRead, ReadSource
from .scan import DEFAULT_COALESCE_GAP

FIRST_RANGE_ROWS = 1 << 16  # rows of the first range of a file read under a limit
MAX_RANGE_ROWS = 1 << 18  # rows of a file read at once (ranges double up to this)


def where_predicate(table, where):
    """``where`` (ours, a pypaimon ``Predicate``, SQL text or None) as our predicate bound to the
    table's schema (literals exact values of its column types): the read binds here, once."""
    from ..core.sqlpredicate import parse_predicate
    from .predicates import as_predicate
    from .scan import bind_to_table

    pred = parse_predicate(where) if isinstance(where, str) else as_predicate(where)
    return bind_to_table(table, pred)


# ---------------------------------------------------------------- splits


class _FileRef:
    """What the fast path's readers need of a data file (``fastpath._File`` without the manifest record)."""

    __slots__ = ("fsdir", "name", "rows", "schema_id")

    def __init__(self, fsdir, name, rows, schema_id):
        self.fsdir, self.name, self.rows, self.schema_id = fsdir, name, rows, schema_id


class FastSplit:
    """One data file of the fast path's plan and the rows its indexes (and deletion vector) left:
    ``candidates`` a pyroaring ``BitMap`` of positions, or None (every row may match).  Picklable."""

    __slots__ = ("fsdir", "name", "rows", "schema_id", "first_row_id", "_candidates")

    def __init__(self, fsdir, name, rows, schema_id, first_row_id=None, candidates=None):
        self.fsdir, self.name, self.rows, self.schema_id = fsdir, name, rows, schema_id
        self.first_row_id = first_row_id
        self._candidates = None if candidates is None else candidates.serialize()

    @staticmethod
    def of(f, cand) -> "FastSplit":
        return FastSplit(f.fsdir, f.name, f.rows, f.schema_id, f.first_row_id, cand)

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    @property
    def candidates(self):
        if self._candidates is None:
            return None
        from pyroaring import BitMap

        return BitMap.deserialize(self._candidates)

    @property
    def row_count(self) -> int:
        """Rows to read (the candidates, or the whole file)."""
        c = self.candidates
        return self.rows if c is None else len(c)

    @property
    def file_paths(self) -> List[str]:
        return [f"{self.fsdir}/{self.name}"]

    def row_ranges(self):
        """Inclusive ``(from, to)`` position ranges of the candidates in the file (None: every row)."""
        c = self.candidates
        if c is None:
            return None
        from .globalindex import bitmap_ranges

        return bitmap_ranges(c)

    def _file(self) -> _FileRef:
        return _FileRef(self.fsdir, self.name, self.rows, self.schema_id)

    def __repr__(self):
        return f"FastSplit({self.name}, rows {self.row_count:,}/{self.rows:,})"


class PypaimonSplit:
    """A split of pypaimon's plan after the indexes pruned it (a ``DataSplit``, or an
    ``IndexedSplit`` with the row ranges to read).  Picklable."""

    __slots__ = ("split",)

    def __init__(self, split):
        self.split = split

    def __getstate__(self):
        return {"split": self.split}

    def __setstate__(self, state):
        self.split = state["split"]

    @property
    def indexed(self) -> bool:
        return callable(getattr(self.split, "row_ranges", None)) and callable(getattr(self.split, "data_split", None))

    @property
    def row_count(self) -> int:
        return int(getattr(self.split, "row_count", 0) or 0)

    @property
    def file_paths(self) -> List[str]:
        s = self.split.data_split() if self.indexed else self.split
        return list(getattr(s, "file_paths", []) or [])

    def row_ranges(self):
        if not self.indexed:
            return None
        return [(r.from_, r.to) for r in self.split.row_ranges()]

    def __repr__(self):
        return f"PypaimonSplit({type(self.split).__name__}, rows {self.row_count:,})"


# ---------------------------------------------------------------- reading splits


class SplitReader:
    """How the splits of one read are read: the table, the exact filter, the output columns (and,
    for a pypaimon read builder passed in place of a table, the builder).  Picklable with the table."""

    def __init__(self, table, predicate, columns: Optional[List[str]] = None, builder=None):
        from ..errors import ColumnNotFoundError

        self.table = table
        self.predicate = predicate
        self.builder = builder
        names = [f.name for f in (builder.read_type() if builder is not None else table.fields)]
        if columns is not None:
            for c in columns:
                if c not in names:
                    raise ColumnNotFoundError(c, names)
        self.columns = list(names if columns is None else columns)
        self._fast = None
        if builder is not None and predicate is not None:
            from .scan import _reading_predicate_columns

            _reading_predicate_columns(builder, predicate)  # a builder that cannot read them raises now

    def schema(self) -> pa.Schema:
        from pypaimon.schema.data_types import PyarrowFieldParser

        fields = {f.name: f for f in (self.builder.read_type() if self.builder is not None else self.table.fields)}
        return PyarrowFieldParser.from_paimon_schema([fields[c] for c in self.columns])

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_fast"] = None
        return d

    # ------------------------------------------------------------ the fast path's files
    def _fast_ctx(self):
        if self._fast is None:
            from pypaimon.schema.data_types import PyarrowFieldParser

            from ..read.arrow_filter import to_arrow_expression
            from .fastpath import _Schemas
            from .plan import _Plan

            pred_cols = sorted(self.predicate.fields())
            full = PyarrowFieldParser.from_paimon_schema(list(self.table.fields))
            read_cols = list(dict.fromkeys(self.columns + pred_cols))
            read_schema = pa.schema([full.field(c) for c in read_cols])
            pred_expr = to_arrow_expression(self.predicate, pa.schema([read_schema.field(c) for c in pred_cols]))
            self._fast = (_Schemas(self.table, _Plan(None, [])), pred_cols, read_cols, read_schema, pred_expr)
        return self._fast

    def _fast_group(self, split: FastSplit, cand, report, out_cols, stats):
        from .fastpath import _read_group

        schemas, pred_cols, read_cols, read_schema, pred_expr = self._fast_ctx()
        cols = list(dict.fromkeys(list(out_cols) + pred_cols))
        got = _read_group(
            self.table,
            [(split._file(), cand)],
            schemas.schema(split.schema_id),
            schemas.mapping(split.schema_id),
            pred_expr,
            pred_cols,
            cols,
            read_schema,
            stats,
            1,
        )
        for tbl, decoded in got:
            if report is not None:
                report.rows_decoded = (report.rows_decoded or 0) + decoded
            if tbl is not None and tbl.num_rows:
                yield tbl.select(list(out_cols)) if cols != list(out_cols) else tbl

    def read_fast(
        self,
        split: FastSplit,
        report=None,
        size: Optional[list] = None,
        limit: Optional[int] = None,
        columns: Optional[List[str]] = None,
    ) -> Iterator[pa.Table]:
        """The matching rows of one :class:`FastSplit` (see the module docstring)."""
        from ..io.parquet.rows import PageReadStats
        from ..core.roaring import bitmap_of

        out_cols = self.columns if columns is None else columns
        stats = report.decoded if report is not None and report.decoded is not None else PageReadStats()
        size = size if size is not None else [MAX_RANGE_ROWS]
        cand = split.candidates
        if cand is None:
            yield from self._fast_late(split, report, out_cols, stats, size)
            return
        pos = np.asarray(cand.to_array(), dtype=np.int64)
        if not len(pos):
            return
        if pos[-1] - pos[0] < size[0]:  # the selected rows in one range (a point lookup ...)
            yield from self._fast_group(split, cand, report, out_cols, stats)
            size[0] = min(size[0] * 2, MAX_RANGE_ROWS)
            return
        for lo, hi in _row_ranges(split.rows, size):
            a, b = np.searchsorted(pos, [lo, hi])
            if a < b:  # ranges without a selected row are not read
                yield from self._fast_group(split, bitmap_of(pos[a:b]), report, out_cols, stats)

    def _fast_late(self, split: FastSplit, report, out_cols, stats, size):
        """A file the indexes keep whole, range by range (``size[0]`` rows, doubling): the
        predicate's columns at the range's rows (the pages holding them), the filter, then the
        other columns at the matching rows only."""
        from .fastpath import _current_columns, _read_rows

        schemas, pred_cols, read_cols, read_schema, pred_expr = self._fast_ctx()
        mapping = schemas.mapping(split.schema_id)
        phys = _physical(schemas.schema(split.schema_id))
        f = split._file()

        def physical(names):
            return list(dict.fromkeys(mapping[c][0] for c in names if mapping[c][0] is not None))

        pred_phys = physical(pred_cols)
        rest = [c for c in out_cols if c not in pred_cols]
        rest_phys = physical(rest)
        out_schema = pa.schema([read_schema.field(c) for c in out_cols])
        for lo, hi in _row_ranges(f.rows, size):
            pos = np.arange(lo, hi, dtype=np.int64)
            t = _read_rows(self.table, f, pos, pred_phys, phys, stats) if pred_phys else None
            ct = pa.Table.from_arrays(
                _current_columns(t, pred_cols, mapping, read_schema, len(pos)),
                schema=pa.schema([read_schema.field(c) for c in pred_cols]),
            )
            hit = ct.append_column("__pf_pos", pa.array(pos)).filter(pred_expr)
            if report is not None:
                report.rows_decoded = (report.rows_decoded or 0) + len(pos)
            if hit.num_rows:
                cols = {c: hit.column(c) for c in pred_cols}
                if rest:  # the other columns at the matching rows only
                    at = hit.column("__pf_pos").to_numpy()
                    rt = _read_rows(self.table, f, at, rest_phys, phys, stats) if rest_phys else None
                    cols.update(zip(rest, _current_columns(rt, rest, mapping, read_schema, hit.num_rows)))
                yield pa.Table.from_arrays([cols[c] for c in out_cols], schema=out_schema)

    # ------------------------------------------------------------ pypaimon's splits
    def read_pypaimon(self, split: PypaimonSplit, report=None, columns: Optional[List[str]] = None):
        """The matching rows of one :class:`PypaimonSplit`, batch by batch from pypaimon's reader
        (row ranges of local files of row-tracking tables read at their pages directly)."""
        from ..read.arrow_filter import filter_table
        from .pruning import _bool_opt

        out_cols = self.columns if columns is None else columns
        pred = self.predicate
        if self.builder is not None:  # the builder's projection, widened to the predicate's columns, then ours
            from .scan import _reading_predicate_columns

            rb, _ = _reading_predicate_columns(self.builder, pred)
            for b in rb.new_read().to_arrow_batch_reader([split.split]):
                t = pa.Table.from_batches([b])
                if pred is not None:
                    t = filter_table(t, pred)
                yield t.select(out_cols)
            return
        tbl = self.table
        extra = [c for c in sorted(pred.fields()) if c not in out_cols] if pred is not None else []
        names = [f.name for f in tbl.fields]
        rb = tbl.new_read_builder()
        if list(out_cols) + extra != names:
            rb = rb.with_projection(list(out_cols) + extra)
        if pred is not None and split.indexed and _bool_opt(tbl, "row-tracking.enabled", False):
            from ..io.parquet.rows import PageReadStats
            from .globalindex import read_ranges_direct  # row ranges of local Parquet files, without pypaimon

            stats = report.decoded if report is not None and report.decoded is not None else PageReadStats()
            got = read_ranges_direct(tbl, [split.split], list(out_cols) + extra, stats)
            if got is not None:
                yield filter_table(got, pred).select(out_cols)
                return
        for t in _gathered(rb.new_read().to_arrow_batch_reader([split.split])):
            if pred is not None:
                t = filter_table(t, pred)
            yield t.select(out_cols)

    def read(self, split, report=None, size=None, limit=None, columns=None) -> Iterator[pa.Table]:
        if isinstance(split, FastSplit):
            return self.read_fast(split, report, size, limit, columns)
        if isinstance(split, PypaimonSplit):
            return self.read_pypaimon(split, report, columns)
        raise TypeError(f"not a split of paimon_fast's plan: {split!r} (plan with paimon_fast.paimon.read_builder)")


GATHER_ROWS = 1 << 16  # pypaimon's small batches are filtered (and handed on) this many rows at a time


def _gathered(batches) -> Iterator[pa.Table]:
    """pypaimon's record batches (often about a thousand rows) as tables of about
    :data:`GATHER_ROWS` rows: the exact filter runs once per table, not per small batch."""
    held, n = [], 0
    for b in batches:
        if b.num_rows:
            held.append(b)
            n += b.num_rows
        if n >= GATHER_ROWS:
            yield pa.Table.from_batches(held)
            held, n = [], 0
    if held:
        yield pa.Table.from_batches(held)


def _row_ranges(rows: int, size: list):
    """``(start, stop)`` ranges of a file of ``rows`` rows: ``size[0]`` rows each, doubling up to
    :data:`MAX_RANGE_ROWS` (no sliver under a quarter range left at the end)."""
    lo = 0
    while lo < rows:
        hi = min(rows, lo + size[0])
        if rows - hi < size[0] // 4:
            hi = rows
        yield lo, hi
        lo = hi
        size[0] = min(size[0] * 2, MAX_RANGE_ROWS)


def _physical(schema_obj) -> pa.Schema:
    """The Arrow schema a data file of ``schema_obj`` is read with: string columns with a bitmap
    index as dictionaries (as :func:`.fastpath._read_group` reads them; low-cardinality by design)."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    phys = PyarrowFieldParser.from_paimon_schema(list(schema_obj.fields))
    bitmap_cols = {c.strip() for c in str((schema_obj.options or {}).get("file-index.bitmap.columns", "")).split(",")}
    return pa.schema(
        [
            pa.field(f.name, pa.dictionary(pa.int32(), f.type), f.nullable)
            if f.name in bitmap_cols
            and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_binary(f.type))
            else f
            for f in phys
        ]
    )


def _first_size(limit: Optional[int]) -> list:
    if limit is None:
        return [FIRST_RANGE_ROWS]
    return [max(256, min(FIRST_RANGE_ROWS, 4 * limit))]


def _count_split(reader: SplitReader, split) -> int:
    """Rows of a split where the predicate holds, reading the predicate's columns only (a column
    of the table without a predicate on pypaimon's path; nothing without one on the fast path)."""
    pred = reader.predicate
    if pred is None:
        if isinstance(split, FastSplit):
            return split.row_count
        cols = [reader.columns[0]] if reader.columns else None
    else:
        cols = sorted(pred.fields())
    if reader.builder is not None:
        cols = None
    return sum(t.num_rows for t in reader.read(split, columns=cols))


# ---------------------------------------------------------------- the source


class PaimonSource(ReadSource):
    """The rows of a pypaimon table (or read builder) where ``where`` holds, with ``columns``."""

    kind = "Paimon table"

    def __init__(
        self,
        table,
        where=None,
        columns: Optional[List[str]] = None,
        *,
        max_workers: int = 8,
        fast: bool = True,
        use_cache: bool = True,
        fold_deletion_vectors: str = "auto",
        coalesce_gap: Optional[int] = None,
    ):
        from .scan import _open_table

        self._arg = table
        self.table, self.builder = _open_table(table)
        self.where = where
        self._columns = None if columns is None else list(columns)
        self.options = dict(
            max_workers=max_workers,
            fast=fast,
            use_cache=use_cache,
            fold_deletion_vectors=fold_deletion_vectors,
            coalesce_gap=DEFAULT_COALESCE_GAP if coalesce_gap is None else coalesce_gap,
        )
        self._reader = None
        self._plan = None  # (splits, report, fast path taken)

    # ------------------------------------------------------------ shape and plan
    def reader(self) -> SplitReader:
        if self._reader is None:
            pred = where_predicate(self.table, self.where)
            self._reader = SplitReader(self.table, pred, self._columns, self.builder)
        return self._reader

    def schema(self) -> pa.Schema:
        return self.reader().schema()

    def project(self, columns: List[str]) -> "PaimonSource":
        src = PaimonSource(self._arg, self.where, columns, **self.options)
        src._plan = self._plan  # the same splits: a split is read with any of the table's columns
        return src

    def plan(self):
        """``(splits, report)``: planned on first call (see the module docstring), then kept."""
        if self._plan is None:
            from .fastpath import Fallback, fast_plan
            from .scan import plan_with_index

            reader = self.reader()
            pred = reader.predicate
            o = self.options
            reason = (
                "fast=False"
                if not o["fast"]
                else "no predicate"
                if pred is None
                else "a read builder was given"
                if self.builder is not None
                else ""
            )
            if not reason:
                try:
                    fp = fast_plan(
                        self.table, pred, self._columns, max_workers=o["max_workers"], use_cache=o["use_cache"]
                    )
                except Fallback as e:
                    reason = str(e)
                else:
                    from ..io.parquet.rows import PageReadStats

                    rep = fp.report
                    rep.rows_selected = rep.rows_index_selected
                    rep.rows_skipped = rep.rows_planned - rep.rows_selected
                    rep.decoded, rep.rows_decoded, rep.rows_returned, rep.read_seconds = PageReadStats(), 0, 0, 0.0
                    self._plan = ([FastSplit.of(f, c) for f, c in fp.jobs], rep, True)
                    return self._plan
            from ..io.parquet.rows import PageReadStats

            _, splits, rep = plan_with_index(
                self._arg if self.builder is not None else self.table,
                pred,
                self._columns if self.builder is None else None,
                o["max_workers"],
                o["fold_deletion_vectors"],
                o["coalesce_gap"],
            )
            rep.fallback_reason = reason
            rep.decoded, rep.rows_returned, rep.read_seconds = rep.decoded or PageReadStats(), 0, 0.0
            self._plan = ([PypaimonSplit(s) for s in splits], rep, False)
        return self._plan

    def splits(self) -> list:
        return list(self.plan()[0])

    @property
    def report(self):
        """The :class:`~paimon_fast.paimon.pruning.PruneReport` of the plan; ``rows_returned``,
        ``read_seconds`` and ``decoded`` grow as splits are read."""
        return self.plan()[1]

    def describe(self) -> str:
        name = getattr(getattr(self.table, "identifier", None), "get_full_name", lambda: str(self.table))()
        return f"{self.kind} {name}" + (f" where {self.where!r}" if self.where is not None else "")

    # ------------------------------------------------------------ reading
    def batches(self, limit: Optional[int] = None) -> Iterator[pa.Table]:
        splits, rep, _ = self.plan()
        return _stream(self.reader(), splits, rep, limit)

    def count(self) -> int:
        splits, _, _ = self.plan()
        reader = self.reader()
        return sum(_count_split(reader, s) for s in splits)

    def explain(self):
        from .explain import explain_paimon

        splits, rep, fast = self.plan()
        return explain_paimon(self.table, self.reader().predicate, splits, rep, fast)

    def parts(self) -> list:
        reader = self.reader()
        return [_SplitPart(reader, s) for s in self.plan()[0]]


def _stream(reader: SplitReader, splits, rep, limit) -> Iterator[pa.Table]:
    size = _first_size(limit)
    out = 0
    for s in splits:
        it = reader.read(s, rep, size, limit)
        while True:
            t0 = time.perf_counter()
            t = next(it, None)
            if rep is not None:
                rep.read_seconds = (rep.read_seconds or 0.0) + time.perf_counter() - t0
            if t is None:
                break
            if limit is not None and out + t.num_rows > limit:
                t = t.slice(0, limit - out)  # the report counts the rows handed out
            out += t.num_rows
            if rep is not None:
                rep.rows_returned = (rep.rows_returned or 0) + t.num_rows
            yield t
            if limit is not None and out >= limit:
                return


class _SplitPart:
    """One split read in another process (:meth:`PaimonSource.parts`)."""

    def __init__(self, reader: SplitReader, split):
        self.reader, self.split = reader, split

    def __call__(self):
        return self.reader.read(self.split)


class SplitsSource(ReadSource):
    """Given splits of a read (:class:`~.builder.TableRead`), read with ``reader``."""

    kind = "Paimon splits"

    def __init__(self, reader: SplitReader, splits, report, explain=None):
        self._r, self._splits, self._report, self._explain = reader, list(splits), report, explain

    def schema(self):
        return self._r.schema()

    def batches(self, limit=None):
        return _stream(self._r, self._splits, self._report, limit)

    def count(self):
        return sum(_count_split(self._r, s) for s in self._splits)

    @property
    def report(self):
        return self._report

    def explain(self):
        if self._explain is None:
            raise NotImplementedError("explain() of given splits: call it on the read builder")
        return self._explain()

    def project(self, columns):
        r = SplitReader(self._r.table, self._r.predicate, columns, self._r.builder)
        return SplitsSource(r, self._splits, self._report, self._explain)

    def parts(self):
        return [_SplitPart(self._r, s) for s in self._splits]

    def describe(self):
        return f"{len(self._splits)} splits of a Paimon table"


class IndexRead(LegacyTupleRead):
    """What :func:`paimon_fast.paimon.read_with_index` returns: the read object of
    :func:`paimon_fast.paimon.read`; unpacking it as the former ``(table, report)`` runs the
    former read (all of it at once) and warns."""

    def __init__(self, source: PaimonSource, legacy_args: tuple):
        super().__init__(source, what="read_with_index", hint="use paimon_fast.paimon.read(...).to_arrow() and .report")
        self._legacy_args = legacy_args

    def _legacy(self):
        from .scan import _read_all

        return _read_all(*self._legacy_args)


def read_with_index(
    table,
    predicate,
    projection=None,
    max_workers: int = 8,
    fold_deletion_vectors: str = "auto",
    coalesce_gap: int = DEFAULT_COALESCE_GAP,
    fast: bool = True,
    use_cache: bool = True,
):
    """Plan, prune with file indexes and read: the read object of :func:`paimon_fast.paimon.read`
    (a :class:`~paimon_fast.read.lazy.LazyRead`: ``to_arrow()``, the batch reader, pandas, Polars,
    DuckDB, ``count()``, ``explain()``, ``report``).  ``predicate`` may also be SQL text.

    Unpacking it as the former ``(arrow table, PruneReport)`` tuple still works, warned
    (DeprecationWarning), and runs the former read: :func:`_read_all`."""
    src = PaimonSource(
        table,
        predicate,
        None if projection is None else list(projection),
        max_workers=max_workers,
        fast=fast,
        use_cache=use_cache,
        fold_deletion_vectors=fold_deletion_vectors,
        coalesce_gap=coalesce_gap,
    )
    src.reader()  # the predicate checked against the table now (a missing column raises here)
    return IndexRead(
        src, (table, predicate, projection, max_workers, fold_deletion_vectors, coalesce_gap, fast, use_cache)
    )
