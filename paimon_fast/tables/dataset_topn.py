"""Top-N of a :class:`~paimon_fast.tables.parquet.ParquetDataset` (a mixin).

:meth:`_TopNMixin.top_n` plans the ``where``, opens each kept file's ``range-bitmap`` index of the
column where it has one, and hands the files to :func:`paimon_fast.read.topn.top_n` (the
table-level algorithm).  :class:`_TopNMixin` is one of the bases of ``ParquetDataset``; it
imports nothing of :mod:`paimon_fast.tables.parquet`."""

from __future__ import annotations

from typing import List, Optional

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from .layout import DataFile


class _TopNMixin:
    """ParquetDataset's exact top-N (:meth:`top_n`), from the files' range-bitmap indexes where they have one."""

    def top_n(
        self,
        column: str,
        k: int,
        *,
        desc: bool = True,
        where=None,
        columns: Optional[List[str]] = None,
        nulls_first: bool = False,
        report=None,
        _plan=None,
    ) -> pa.Table:
        """``SELECT columns WHERE where ORDER BY column [DESC] NULLS LAST|FIRST LIMIT k``, exact.

        Ties go to the earlier file (the dataset's file order) and then the
        lower row position; NaN ranks above every other float; deleted rows
        never count.  Files with a current ``range-bitmap`` index on ``column``
        are answered from it (files that cannot beat the current k-th row are
        not read, others only at their candidate rows); the rest read the
        column.  ``where`` is a predicate or SQL text; ``report`` (a
        :class:`~paimon_fast.read.topn.TopNReport`) is filled in when given.
        """
        from ..read.topn import TopNReport, top_n

        if self._snap is None and _plan is None:
            return self.snapshot().top_n(
                column, k, desc=desc, where=where, columns=columns, nulls_first=nulls_first, report=report
            )
        rep = report if report is not None else TopNReport()
        schema, columns, pred, files = _plan or self._top_n_plan(column, columns, where)
        opened = []
        sources = []
        try:
            for p, eligible in files:
                idx, reader, err = self._range_reader(p.file, column, None) if p.indexed else (None, None, None)
                if idx is not None:
                    opened.append(idx)
                if err:
                    rep.index_errors.append(err)
                sources.append(self._top_n_source(p.file, p.rows, eligible, reader, pred, schema, column))
            out = top_n(
                sources,
                column,
                k,
                desc=desc,
                nulls_first=nulls_first,
                where_columns=sorted(pred.fields()) if pred is not None else (),
                columns=columns,
                report=rep,
            )
        finally:
            for idx in opened:
                idx.close()
        return out if out is not None else schema.empty_table().select(columns)

    def _top_n_plan(self, column: str, columns, where):
        """``(schema, output columns, predicate, [(FilePlan, eligible rows or None)])`` of a top-N:
        the columns checked, the ``where`` planned with the indexes, deleted rows removed."""
        from ..errors import ColumnNotFoundError
        from ..read.topn import check_orderable

        schema = self.schema()
        columns = list(schema.names) if columns is None else list(columns)
        for c in [column, *columns]:
            if c not in schema.names:
                raise ColumnNotFoundError(c, schema.names)
        check_orderable(column, schema.field(column).type)
        plan = self.plan(where)
        files = []
        for p in plan.kept:
            eligible = p.bitmap
            if p.deletion_vector is not None:
                eligible = p.deletion_vector.remove_deleted(eligible if eligible is not None else BitMap(range(p.rows)))
            files.append((p, eligible))
        return schema, columns, plan.predicate, files

    def _range_reader(self, f: DataFile, column: str, entry: Optional[dict]):
        """``(open index container or None, its range-bitmap reader of column or None, error text or None)``;
        a broken index never fails a query (the column is read instead)."""
        idx = None
        try:
            idx = self.open_index(f, entry)
            return idx, (idx.reader(column, "range-bitmap") if idx is not None else None), None
        except KeyError:
            return idx, None, None
        except Exception as e:
            return idx, None, f"{f.path}: {type(e).__name__}: {e}"

    def _top_n_source(
        self, f: DataFile, rows: int, eligible: Optional[BitMap], reader, pred, schema, column: Optional[str] = None
    ):
        from ..io.parquet.rows import PageReadStats
        from ..read.topn import TopNSource

        decoded = PageReadStats()

        def read(positions, cols):
            return self.read_rows(f, positions, cols, pred, schema, decoded)

        def read_all(cols):
            pos = np.arange(rows, dtype=np.int64) if eligible is None else np.asarray(eligible.to_array(), np.int64)
            return read(pos, cols)

        return TopNSource(
            f.path,
            rows,
            eligible,
            reader,
            read,
            read_all,
            exact=pred is None,
            arrow_type=schema.field(column).type if column is not None else None,
            decoded=decoded,
        )
