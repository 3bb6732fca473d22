"""Top-N over a Parquet dataset on Spark: each file's first k rows on an executor, the merge on the driver.

The driver plans the ``where`` predicate with the dataset's indexes (files
that cannot match are dropped, exact row bitmaps and deletion vectors become
each file's eligible rows).  When what must be read is small (files with a
``range-bitmap`` index on the column answer from it; the others read the sort
and ``where`` columns at their eligible rows: estimated bytes at most
``paimon-fast.read.driver-max-bytes``, as for ``pfs.read``), the driver answers
in-process (:meth:`ParquetDataset.top_n`) and no Spark job runs; otherwise it
sends one task per remaining file.  An
executor answers its file from the file's ``range-bitmap`` index (only the
candidate rows of the sort and ``where`` columns are read) or, without one,
from the column, and returns at most k rows of ``(value, position)``.  The
driver merges them (:func:`paimon_fast.read.topn.merge`) and reads the
projected columns of the k winners.  Same answer as
:meth:`paimon_fast.tables.parquet.ParquetDataset.top_n`.
"""

from __future__ import annotations

from typing import List, Optional

import pyarrow as pa

from ..tables.parquet import ParquetDataset, local_path
from ..read.topn import TopNReport, check_k, file_top_k, merge, project


def _unindexed_cost(ds: ParquetDataset, column: str, pred, files) -> int:
    """Estimated bytes the files without a range-bitmap index on ``column`` read (the column and
    the predicate's at their eligible rows); files with one answer from the index."""
    from ..fileindex.options import indexes_from_table_options
    from ..tables.parquet import ScanPlan, ScanReport

    opts = (ds.read_catalog().get("file_index") or {}).get("options") or {}
    ranged = "range-bitmap" in indexes_from_table_options(opts).get(column, {})
    todo = [p for p, _ in files if not (ranged and p.indexed)]
    return ds.read_cost(ScanPlan(todo, ScanReport(), pred), [column]) if todo else 0


def top_n(
    spark,
    path: str,
    column: str,
    k: int,
    *,
    desc: bool = True,
    where=None,
    columns: Optional[List[str]] = None,
    nulls_first: bool = False,
    report: Optional[TopNReport] = None,
    driver_max_bytes=None,
) -> pa.Table:
    """``SELECT columns WHERE where ORDER BY column [DESC] LIMIT k`` of the dataset at
    ``path``, with the per-file work on Spark executors (on the driver when it is small:
    ``driver_max_bytes``, see the module docstring); a ``pyarrow.Table``.

    Ties go to the earlier file and then the lower row position; NaN ranks
    above every other float; nulls last unless ``nulls_first``.  The files
    must be readable at the same path on every executor (as for
    :func:`paimon_fast.spark.build`).
    """
    from pyroaring import BitMap

    from .frames import driver_max_bytes as _limit

    check_k(k)
    ds = ParquetDataset(local_path(path)).snapshot()  # one listing and catalog version throughout
    rep = report if report is not None else TopNReport()
    schema, columns, pred, files = ds._top_n_plan(column, columns, where)
    limit = _limit(spark, driver_max_bytes)
    cost = _unindexed_cost(ds, column, pred, files) if limit > 0 else None
    if cost is not None and cost <= limit:
        rep.read_on, rep.why = "driver", f"about {cost / (1 << 20):.1f} MB to read, at most {limit / (1 << 20):.1f} MB"
        return ds.top_n(
            column,
            k,
            desc=desc,
            where=where,
            columns=columns,
            nulls_first=nulls_first,
            report=rep,
            _plan=(schema, columns, pred, files),
        )
    rep.read_on = "executors"
    rep.why = (
        "driver-local reads are off"
        if cost is None
        else f"about {cost / (1 << 20):.1f} MB to read, more than {limit / (1 << 20):.1f} MB"
    )
    where_cols = sorted(pred.fields()) if pred is not None else []
    entries = ds.read_catalog()["files"]
    tasks = [
        (
            i,
            p.file,
            p.rows,
            entries.get(p.file.path) if p.indexed else None,
            None if eligible is None else eligible.serialize(),
        )
        for i, (p, eligible) in enumerate(files)
    ]
    rep.files_total = len(tasks)
    if k == 0 or not tasks:
        return schema.empty_table().select(columns)

    def run(part):
        for i, f, rows, entry, elig in part:
            eligible = None if elig is None else BitMap.deserialize(elig)
            idx, reader, _ = ds._range_reader(f, column, entry) if entry is not None else (None, None, None)
            one = TopNReport()
            try:
                src = ds._top_n_source(f, rows, eligible, reader, pred, schema, column)
                t = file_top_k(src, i, column, k, desc, nulls_first, where_cols, one)
            finally:
                if idx is not None:
                    idx.close()
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            yield i, sink.getvalue().to_pybytes(), one.files_without_index, one.candidate_rows, src.decoded

    sc = spark.sparkContext
    n = min(len(tasks), max(1, sc.defaultParallelism) * 4)
    got = sc.parallelize(tasks, n).mapPartitions(run).collect()
    parts = []
    for _i, data, no_index, cand, decoded in got:
        parts.append(pa.ipc.open_stream(data).read_all())
        rep.files_without_index += no_index
        rep.candidate_rows += cand
        rep.rows_read += cand
        rep.decoded.add(decoded)
    best = merge(parts, column, k, desc, nulls_first)
    if best is None:
        return schema.empty_table().select(columns)
    sources = [ds._top_n_source(p.file, p.rows, None, None, pred, schema) for p, _ in files]
    out = project(sources, best, column, columns, desc, nulls_first, rep)
    for s in sources:
        rep.decoded.add(s.decoded)
    return out
