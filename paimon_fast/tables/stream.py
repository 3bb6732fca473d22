"""A Parquet dataset's rows as a stream: the source of batches behind :meth:`ParquetDataset.read`.

The plan (:meth:`ParquetDataset.plan`: per file REMAIN, SKIP or a row bitmap, deletion vectors) is
made on first need and kept by the read object; each kept file is then read range by range with
:meth:`ParquetDataset.read_kept` (the predicate's columns at the selected rows, the other columns
only where the predicate holds):

* the first range is small (:data:`FIRST_RANGE_ROWS`, fewer with a small ``limit``: only the pages
  holding its rows are decoded), and ranges double up to a whole row group (at most
  :data:`MAX_RANGE_ROWS` rows), so the first batch comes early and a ``limit`` met in the first
  rows reads nothing more;
* a range of whole row groups of a file kept whole is read by pyarrow as those row groups;
* a file with a row bitmap is read in ranges of about as many selected rows.

Memory is held by one range at a time (and the plan's bitmaps).  :class:`ScanResult` is what the
old ``ParquetDataset.scan`` returns now: the same object, whose ``(table, report)`` unpacking runs
the former eager read.
"""

from __future__ import annotations

from typing import Iterator, List, Optional

import pyarrow as pa

from ..lazyread import LegacyTupleRead, ReadSource

FIRST_RANGE_ROWS = 1 << 16  # rows of the first range read (a first batch soon after planning)
MAX_RANGE_ROWS = 1 << 18  # ranges double up to this many rows (whole row groups when they are as small)


class _Shared:
    """What every projection of one read shares: the dataset, the ``where``, the plan once made."""

    def __init__(self, ds, where):
        self.ds = ds
        self.where = where
        self.plan = None
        self.full = None

    def planned(self):
        if self.plan is None:
            from ..parquet.rows import PageReadStats

            plan = self.ds.plan(self.where)
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
        from ..sqlpredicate import parse_predicate
        from .arrow_filter import coerce_literals

        where = self._shared.where
        full = self._shared.full_schema()
        if where is not None:
            coerce_literals(parse_predicate(where), {f.name: f.type for f in full})
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

    # ------------------------------------------------------------ ranges
    def _ranges(self, p, size: list):
        """``(start, stop)`` row ranges of the kept file ``p`` (``size[0]``: rows of the next range,
        doubled after each, up to :data:`MAX_RANGE_ROWS`)."""
        from ..parquet.rows import row_group_starts

        ds = self.ds
        bm = p.bitmap
        if bm is not None and len(bm) and bm.max() - bm.min() < size[0]:
            yield int(bm.min()), int(bm.max()) + 1  # the selected rows in one range (a point lookup ...)
            size[0] = min(size[0] * 2, MAX_RANGE_ROWS)
            return
        starts = [int(x) for x in row_group_starts(ds._input(p.file))]
        for lo, hi in self._row_ranges(starts, size):
            if bm is None or bm.range_cardinality(lo, hi):  # ranges without a selected row are not read
                yield lo, hi

    @staticmethod
    def _row_ranges(starts, size: list):
        """Ranges of a file's rows (``starts``: its row groups' first rows and its row count)."""
        g, last = 0, len(starts) - 1
        while g < last:
            lo, end = starts[g], starts[g + 1]
            if end - lo <= size[0]:  # whole row groups, as many as fit in the range
                while g + 1 < last and starts[g + 2] - lo <= size[0]:
                    g += 1
                end = starts[g + 1]
                yield lo, end
            else:  # a large row group in ranges of about size[0] rows
                while lo < end:
                    hi = min(end, lo + size[0])
                    if end - hi < size[0] // 4:
                        hi = end  # no sliver of a row group left for a range of its own
                    yield lo, hi
                    lo = hi
                    size[0] = min(size[0] * 2, MAX_RANGE_ROWS)
            g += 1
            size[0] = min(size[0] * 2, MAX_RANGE_ROWS)

    def _first_size(self, limit: Optional[int]) -> list:
        if limit is None:
            return [FIRST_RANGE_ROWS]
        return [max(256, min(FIRST_RANGE_ROWS, 4 * limit))]

    def _read_ranges(self, columns: List[str], limit: Optional[int]) -> Iterator[pa.Table]:
        from ..parquet.pages import scanning

        plan = self.plan()
        rep = plan.report
        ds = self.ds
        full = self._shared.full_schema()
        size = self._first_size(limit)
        out = 0
        for p in plan.kept:
            held = {}  # the file's dictionaries, for its next ranges (not in the shared cache)
            for lo, hi in self._ranges(p, size):
                b0 = ds.io.snapshot()[0]
                with scanning(held):
                    t = ds.read_kept(p, columns, plan.predicate, full, stats=rep.decoded, rows=(lo, hi))
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

    def count(self) -> int:
        """Rows where the predicate holds: the plan's selected rows without a predicate (nothing
        read), else the predicate's columns read at the selected rows, range by range."""
        plan = self.plan()
        if plan.predicate is None:
            return sum(p.rows_to_read for p in plan.kept)
        return sum(t.num_rows for t in self._read_ranges([], None))

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

    from ..result import REMAIN, BitmapResult
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
        from ..parquet.pages import scanning

        p = unship(self.shipped)
        src = DatasetSource(self.ds)
        held = {}
        for lo, hi in src._ranges(p, [MAX_RANGE_ROWS]):
            with scanning(held):
                t = self.ds.read_kept(p, self.columns, self.predicate, self.schema, rows=(lo, hi))
            yield t


class ScanResult(LegacyTupleRead):
    """What :meth:`ParquetDataset.scan` returns: the :class:`~paimon_fast.lazyread.LazyRead` of
    :meth:`ParquetDataset.read`; unpacking it as the former ``(table, report)`` runs the former
    eager read (whole files or their bitmap rows, then the filter) and warns."""

    def __init__(self, source: DatasetSource):
        super().__init__(source, what="ParquetDataset.scan", hint="use ParquetDataset.read(...).to_arrow() and .report")

    def _legacy(self):
        src = self._source
        plan = src.plan()
        t = src.ds._scan_table(plan, src._columns)
        return t, plan.report
