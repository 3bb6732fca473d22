"""Top-N over a Parquet dataset on Spark: each file's first k rows on an executor, the merge on the driver.

The driver plans the ``where`` predicate with the dataset's indexes (files
that cannot match are dropped, exact row bitmaps and deletion vectors become
each file's eligible rows) and sends one task per remaining file.  An
executor answers its file from the file's ``range-bitmap`` index (only the
candidate rows of the sort and ``where`` columns are read) or, without one,
from the column, and returns at most k rows of ``(value, position)``.  The
driver merges them (:func:`paimon_fast.tables.topn.merge`) and reads the
projected columns of the k winners.  Same answer as
:meth:`paimon_fast.tables.parquet.ParquetDataset.top_n`.
"""
from __future__ import annotations

from typing import List, Optional

import pyarrow as pa

from ..tables.parquet import ParquetDataset, local_path
from ..errors import ColumnNotFoundError
from ..tables.topn import TopNReport, check_k, check_orderable, file_top_k, merge, project


def top_n(spark, path: str, column: str, k: int, *, desc: bool = True, where=None,
          columns: Optional[List[str]] = None, nulls_first: bool = False,
          report: Optional[TopNReport] = None) -> pa.Table:
    """``SELECT columns WHERE where ORDER BY column [DESC] LIMIT k`` of the dataset at
    ``path``, with the per-file work on Spark executors; a ``pyarrow.Table``.

    Ties go to the earlier file and then the lower row position; NaN ranks
    above every other float; nulls last unless ``nulls_first``.  The files
    must be readable at the same path on every executor (as for
    :func:`paimon_fast.spark.build`).
    """
    from pyroaring import BitMap

    check_k(k)
    ds = ParquetDataset(local_path(path))
    schema = ds.schema()
    columns = list(schema.names) if columns is None else list(columns)
    for c in [column, *columns]:
        if c not in schema.names:
            raise ColumnNotFoundError(c, schema.names)
    check_orderable(column, schema.field(column).type)
    rep = report if report is not None else TopNReport()
    plan = ds.plan(where)
    pred = plan.predicate
    where_cols = sorted(pred.fields()) if pred is not None else []
    entries = ds.read_catalog()["files"]
    tasks = []
    for i, p in enumerate(plan.kept):
        eligible = p.bitmap
        if p.deletion_vector is not None:
            eligible = p.deletion_vector.remove_deleted(eligible if eligible is not None else BitMap(range(p.rows)))
        tasks.append((i, p.file, p.rows, entries.get(p.file.path) if p.indexed else None,
                      None if eligible is None else eligible.serialize()))
    rep.files_total = len(tasks)
    if k == 0 or not tasks:
        return schema.empty_table().select(columns)

    def run(part):
        for i, f, rows, entry, elig in part:
            eligible = None if elig is None else BitMap.deserialize(elig)
            idx = reader = None
            if entry is not None:
                try:
                    idx = ds.open_index(f, entry)
                    reader = idx.reader(column, "range-bitmap") if idx is not None else None
                except KeyError:
                    reader = None
                except Exception:  # a broken index never fails a query: read the column
                    reader = None
            one = TopNReport()
            try:
                t = file_top_k(ds._top_n_source(f, rows, eligible, reader, pred, schema, column), i, column, k, desc,
                               nulls_first, where_cols, one)
            finally:
                if idx is not None:
                    idx.close()
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            yield i, sink.getvalue().to_pybytes(), one.files_without_index, one.candidate_rows

    sc = spark.sparkContext
    n = min(len(tasks), max(1, sc.defaultParallelism) * 4)
    got = sc.parallelize(tasks, n).mapPartitions(run).collect()
    parts = []
    for _i, data, no_index, cand in got:
        parts.append(pa.ipc.open_stream(data).read_all())
        rep.files_without_index += no_index
        rep.candidate_rows += cand
        rep.rows_read += cand
    best = merge(parts, column, k, desc, nulls_first)
    if best is None:
        return schema.empty_table().select(columns)
    sources = [ds._top_n_source(p.file, p.rows, None, None, pred, schema) for p in plan.kept]
    return project(sources, best, column, columns, desc, nulls_first, rep)
