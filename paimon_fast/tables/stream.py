"""A Parquet dataset's rows as a stream: the source of batches behind :meth:`ParquetDataset.read`.

The plan (:meth:`ParquetDataset.plan`: per file REMAIN, SKIP or a row bitmap, deletion vectors) is
made on first need and kept by the read object; the kept files are then read in batches with
:meth:`ParquetDataset.read_kept_many` (the predicate's columns at the selected rows, the other
columns only where the predicate holds), each batch one call of the native Parquet reader over
several files (or a range of one large file) on all threads:

* the first batch is small (:data:`FIRST_RANGE_ROWS` selected rows, fewer with a small
  ``limit``), and batches double up to :data:`MAX_RANGE_ROWS` selected rows, so the first batch
  comes early and a ``limit`` met in the first rows reads nothing more;
* a file with more selected rows than a batch holds is read in ranges of about as many.

Memory is held by one batch at a time (and the plan's bitmaps).  :class:`ScanResult` is what the
old ``ParquetDataset.scan`` returns now: the same object, whose ``(table, report)`` unpacking runs
the former eager read.
"""

from __future__ import annotations

import dataclasses

from typing import Iterator, List, Optional

import numpy as np
import pyarrow as pa

from ..read.lazy import LegacyTupleRead, ReadSource

FIRST_RANGE_ROWS = 1 << 16  # rows of the first range read (a first batch soon after planning)
MAX_RANGE_ROWS = 1 << 18  # ranges double up to this many rows (whole row groups when they are as small)
# a read that holds the whole answer (to_arrow) reads in batches of this many selected rows: one call of
# the native reader spreads a batch's files over every thread, so larger batches keep them busier
WHOLE_BATCH_ROWS = 1 << 22


class _Shared:
    """What every projection of one read shares: the dataset, the ``where``, the plan once made."""

    def __init__(self, ds, where):
        self.ds = ds
        self.where = where  # as given (what describe() shows)
        self.bound = None  # bound to the dataset's schema, once (check() or the plan)
        self.plan = None
        self.full = None

    def bind(self):
        if self.bound is None:
            self.bound = self.ds._bound(self.where)
        return self.bound

    def planned(self):
        if self.plan is None:
            from ..io.parquet.rows import PageReadStats

            plan = self.ds.plan(self.bind())
            plan.report.decoded = PageReadStats()
            self.plan = plan
        return self.plan

    def full_schema(self) -> pa.Schema:
        if self.full is None:
            self.full = self.ds.schema()
        return self.full


class DatasetSource(ReadSource):
    """The rows of a :class:`~paimon_fast.tables.parquet.ParquetDataset` where ``where`` holds,
    with ``columns`` (default: every column, data then partition columns)."""

    kind = "Parquet dataset"

    def __init__(self, ds, where=None, columns: Optional[List[str]] = None, _shared: Optional[_Shared] = None):
        self.ds = ds
        self._shared = _shared or _Shared(ds, where)
        self._columns = None if columns is None else list(columns)

    # ------------------------------------------------------------ shape
    def schema(self) -> pa.Schema:
        full = self._shared.full_schema()
        if self._columns is None:
            return full
        from ..errors import ColumnNotFoundError

        for c in self._columns:
            if c not in full.names:
                raise ColumnNotFoundError(c, full.names)
        return pa.schema([full.field(c) for c in self._columns])

    def check(self) -> "DatasetSource":
        """Raise now what the read would raise first: a predicate that does not parse, names a
        column the dataset lacks or compares one with a literal of another type, an unknown
        projected column (the dataset's schema is read; nothing is planned)."""
        self._shared.bind()  # (kept for the plan)
        self.schema()
        return self

    def project(self, columns: List[str]) -> "DatasetSource":
        return DatasetSource(self.ds, columns=columns, _shared=self._shared)

    def plan(self):
        """The :class:`~paimon_fast.tables.plan.ScanPlan` (made on first call, then kept)."""
        return self._shared.planned()

    @property
    def report(self):
        """The plan's :class:`~paimon_fast.tables.plan.ScanReport`; ``bytes_read`` and
        ``decoded`` grow as ranges are read."""
        return self.plan().report

    def describe(self) -> str:
        where = self._shared.where
        return f"{self.kind} {self.ds.uri}" + (f" where {where!r}" if where is not None else "")

    # ------------------------------------------------------------ batches
    def _ranges(self, p, size: int):
        """``(start, stop)`` row ranges of the kept file ``p``, each holding about ``size`` of its
        selected rows (None: the whole file in one)."""
        n = p.rows_to_read
        if n <= size:
            yield None
            return
        bm = p.bitmap
        if bm is not None:  # cut at every size-th selected position
            pos = np.asarray(bm.to_array(), dtype=np.int64)
            pos = pos[pos < p.rows]
            cuts = pos[size::size].tolist()
            lo = 0
            for c in cuts:
                yield lo, c
                lo = c
            yield lo, p.rows
            return
        lo = 0
        while lo < p.rows:
            hi = min(p.rows, lo + size)
            if p.rows - hi < size // 4:
                hi = p.rows  # no sliver left for a range of its own
            yield lo, hi
            lo = hi

    def _batches_of(self, plan, limit: Optional[int], whole: bool = False):
        """Lists of ``(FilePlan, range or None)`` of the kept files, in order, each holding about
        as many selected rows as the batch's size: the first small (:data:`FIRST_RANGE_ROWS`,
        fewer with a small ``limit``), then doubling up to :data:`MAX_RANGE_ROWS`; ``whole``:
        batches of :data:`WHOLE_BATCH_ROWS` (a reader that holds the whole answer)."""
        if whole:
            size = WHOLE_BATCH_ROWS if limit is None else max(256, min(WHOLE_BATCH_ROWS, 4 * limit))
            batch, held = [], 0
            for p in plan.kept:
                for r in self._ranges(p, size):
                    batch.append((p, r))
                    held += p.rows_to_read if r is None else _selected(p, r)
                    if held >= size:
                        yield batch
                        batch, held = [], 0
            if batch:
                yield batch
            return
        size = self._first_size(limit)[0]
        batch, held = [], 0
        for p in plan.kept:
            for r in self._ranges(p, size):
                batch.append((p, r))
                held += p.rows_to_read if r is None else _selected(p, r)
                if held >= size:
                    yield batch
                    batch, held = [], 0
                    size = min(size * 2, MAX_RANGE_ROWS)
        if batch:
            yield batch

    def _first_size(self, limit: Optional[int]) -> list:
        if limit is None:
            return [FIRST_RANGE_ROWS]
        return [max(256, min(FIRST_RANGE_ROWS, 4 * limit))]

    def _read_ranges(
        self, columns: List[str], limit: Optional[int], whole: bool = False, files: Optional[list] = None
    ) -> Iterator[pa.Table]:
        """The answer's ``columns`` in batches (:meth:`_batches_of`); ``files``: only these of the
        plan's kept files."""
        plan = self.plan()
        if files is not None:
            plan = dataclasses.replace(plan, files=files)
        rep = plan.report
        ds = self.ds
        full = self._shared.full_schema()
        out = 0
        for batch in self._batches_of(plan, limit, whole):
            b0 = ds.io.snapshot()[0]
            t, _ = ds.read_kept_many(batch, columns, plan.predicate, full, stats=rep.decoded)
            rep.bytes_read += ds.io.snapshot()[0] - b0
            if limit is not None and out + t.num_rows > limit:
                t = t.slice(0, limit - out)
            out += t.num_rows
            yield t
            if limit is not None and out >= limit:
                return

    # ------------------------------------------------------------ reading
    def batches(self, limit: Optional[int] = None) -> Iterator[pa.Table]:
        return self._read_ranges(self.schema().names, limit)

    def whole(self, limit: Optional[int] = None) -> Iterator[pa.Table]:
        """The answer in batches of :data:`WHOLE_BATCH_ROWS` selected rows (``to_arrow``)."""
        return self._read_ranges(self.schema().names, limit, whole=True)

    def count(self) -> int:
        """Rows where the predicate holds: the plan's selected rows without a predicate (nothing
        read), else the predicate's columns read at the selected rows, in large batches."""
        plan = self.plan()
        if plan.predicate is None:
            return sum(p.rows_to_read for p in plan.kept)
        # an exact file's selected rows are its answer: counted from its bitmap, nothing read
        # (a file with a bitmap and deleted rows as well goes through the reader, as the others)
        counted = 0
        rest = []
        for p in plan.kept:
            if p.exact and p.deletion_vector is None:
                b = p.bitmap
                counted += p.rows if b is None else (b.rank(p.rows - 1) if p.rows > 0 else 0)
            else:
                rest.append(p)
        if not rest:
            return counted
        return counted + sum(t.num_rows for t in self._read_ranges([], None, whole=True, files=rest))

    def explain(self):
        from .explain import explain_dataset

        return explain_dataset(self.ds, self.plan())

    def parts(self) -> list:
        """One picklable reader per kept file (its plan travels as bytes)."""
        plan = self.plan()
        cols = self.schema().names
        return [_FilePart(self.ds, ship(p), cols, plan.predicate, self._shared.full_schema()) for p in plan.kept]


def ship(p) -> tuple:
    """A kept file's plan as picklable values: its file, rows, row bitmap and deletion vector as bytes."""
    return (
        p.file,
        p.rows,
        None if p.bitmap is None else p.bitmap.serialize(),
        None if p.deletion_vector is None else p.deletion_vector.serialize(),
    )


def unship(t: tuple):
    """The :class:`~paimon_fast.tables.plan.FilePlan` :func:`ship` gave."""
    from pyroaring import BitMap

    from ..core.result import REMAIN, BitmapResult
    from ..tableindex import DeletionVector
    from .plan import FilePlan

    f, rows, bm, dv = t
    res = REMAIN if bm is None else BitmapResult(BitMap.deserialize(bm))
    return FilePlan(f, res, rows, True, deletion_vector=None if dv is None else DeletionVector.deserialize(dv))


class _FilePart:
    """One kept file of a dataset read, readable in another process (:meth:`DatasetSource.parts`)."""

    def __init__(self, ds, shipped, columns, predicate, schema):
        self.ds, self.shipped, self.columns, self.predicate, self.schema = ds, shipped, columns, predicate, schema

    def __call__(self) -> Iterator[pa.Table]:
        p = unship(self.shipped)
        for r in DatasetSource(self.ds)._ranges(p, MAX_RANGE_ROWS):
            t, _ = self.ds.read_kept_many([(p, r)], self.columns, self.predicate, self.schema)
            yield t


def _selected(p, r) -> int:
    """Selected rows of the kept file ``p`` in the row range ``r``."""
    bm = p.bitmap
    lo, hi = r
    if bm is not None:
        return int(bm.range_cardinality(lo, hi))
    return hi - lo


class ScanResult(LegacyTupleRead):
    """What :meth:`ParquetDataset.scan` returns: the :class:`~paimon_fast.read.lazy.LazyRead` of
    :meth:`ParquetDataset.read`; unpacking it as the former ``(table, report)`` runs the former
    eager read (whole files or their bitmap rows, then the filter) and warns."""

    def __init__(self, source: DatasetSource):
        super().__init__(source, what="ParquetDataset.scan", hint="use ParquetDataset.read(...).to_arrow() and .report")

    def _legacy(self):
        src = self._source
        plan = src.plan()
        t = src.ds._scan_table(plan, src._columns)
        return t, plan.report
