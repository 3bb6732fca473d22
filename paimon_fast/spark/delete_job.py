"""Deletes on a Parquet dataset on Spark: matching rows marked in Paimon deletion vectors."""

from __future__ import annotations

import os
import time
from typing import Optional

from ..tables.parquet import ParquetDataset, local_path
from .columns import to_spark_column
from .env import arrow_only
from .frames import driver_max_bytes as _limit
from .frames import task_frame, task_numbers
from .read_job import ship, spark_schema, split_kept, unship


def _positions_udf():
    """mapInArrow function: ``(__pf_file, __pf_row)`` batches -> one row per file and
    batch with its positions as little-endian int64 bytes (no Python object per row)."""

    def run(batches):
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = pa.schema([("path", pa.string()), ("positions", pa.binary())])
        for batch in batches:
            if batch.num_rows == 0:
                continue
            fp = batch.column(0)
            ri = batch.column(1).to_numpy(zero_copy_only=False).astype("<i8")
            uris = fp.unique()
            if len(uris) == 1:
                groups = [(uris[0].as_py(), ri)]
            else:
                groups = [(u.as_py(), ri[pc.equal(fp, u).to_numpy(zero_copy_only=False)]) for u in uris]
            yield pa.RecordBatch.from_pydict(
                {"path": [local_path(u) for u, _ in groups], "positions": [np.unique(r).tobytes() for _, r in groups]},
                schema=schema,
            )

    return run


def delete(
    spark,
    path: str,
    where,
    *,
    bitmap64: Optional[bool] = None,
    _fault: Optional[str] = None,
    filesystem=None,
    driver_max_bytes=None,
):
    """Mark the rows of the dataset at ``path`` where ``where`` holds deleted, without
    rewriting any Parquet file.

    The driver prunes files with the indexes (and skips rows already deleted), then finds the
    matching rows' positions: here, when the predicate's columns at the selected rows are few
    (``paimon-fast.read.driver-max-bytes``, as for :func:`read`), else on the executors: files an
    index answered with rows (or with a deletion vector) are read at those rows only in Arrow
    tasks, files kept whole by Spark's reader, which sends back each matching row's
    ``(_metadata.file_path, _metadata.row_index)``, grouped per file by a ``mapInArrow`` UDF.
    Either way only the predicate's columns are read.  The new positions are merged with each
    file's deletion vector, ONE new Paimon deletion file is written (temporary name + atomic
    rename) and the next catalog version is committed, merged with deletes committed meanwhile (see
    :mod:`paimon_fast.tables.deletes`).  The delete works on a settled snapshot; a file that changed
    while it was read starts it over from a new snapshot.  Every read
    (:func:`read`, the Data Source, :class:`~paimon_fast.tables.ParquetDataset`) honours the
    vectors.  Returns a :class:`~paimon_fast.tables.deletes.DeleteReport` (rows deleted, files
    touched, the deletion file).
    """
    import numpy as np

    from ..core.sqlpredicate import parse_predicate
    from ..tables.deletes import DeleteReport, commit_deletions
    from ..read.topn import POS

    if where is None:
        raise ValueError("delete needs a predicate")
    from ..tables import catalog as _catalog
    from ..tables.deletes import DeleteConflictError
    from ..tables.identity import DataFileChangedError
    from ..tables.dataset_delete import WRITE_ATTEMPTS
    from ..tables.steps import step

    t0 = time.perf_counter()
    unpinned = ParquetDataset(path, filesystem)
    last = None
    for _ in range(WRITE_ATTEMPTS):
        ds = unpinned.snapshot(settle=True)
        step("delete.snapshot", version=ds.snapshot_version)
        plan = ds.plan(parse_predicate(where))
        step("delete.planned")
        rep = DeleteReport(
            files_scanned=len(plan.kept), files_skipped=plan.report.files_skipped, predicate=plan.report.predicate
        )
        try:
            positions = {}
            limit = _limit(spark, driver_max_bytes)
            if plan.kept and limit > 0 and ds.read_cost(plan, []) <= limit:
                schema = ds.schema()
                for p in plan.kept:
                    pos = ds.read_kept(p, [], plan.predicate, schema, positions=True).column(POS).to_numpy()
                    if len(pos):
                        positions[p.file.path] = pos
            elif plan.kept:
                for r in _positions_frame(spark, ds, plan).collect():
                    rel = os.path.relpath(r["path"], ds.root).replace(os.sep, "/") if ds.store.local else r["path"]
                    positions.setdefault(rel, []).append(np.frombuffer(r["positions"], "<i8"))
                positions = {k: np.concatenate(v) for k, v in positions.items()}
                for p in split_kept(ds, plan)[0]:  # read by Spark's reader: was it the listed version?
                    ds._read_done(p.file)
            step("delete.positions")
            rep.seconds = time.perf_counter() - t0
            return commit_deletions(ds, positions, bitmap64=bitmap64, report=rep, _fault=_fault)
        except (DataFileChangedError, _catalog.Rebase) as e:
            last = e  # a file changed under the delete: start over from a new snapshot
    raise DeleteConflictError(f"the delete could not complete: data files kept changing under it ({last})")


def _positions_frame(spark, ds: ParquetDataset, plan):
    """``(path string, positions binary)`` rows: the positions (little-endian int64) of the rows
    of ``plan``'s kept files where its predicate holds, read on the executors (local datasets:
    Spark's reader for files kept whole; every file on object stores: the Arrow tasks, whose path
    is the file's relative path)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from ..read.topn import POS

    pred = plan.predicate
    local = ds.store.local
    whole, tasks = split_kept(ds, plan)
    shipped = [ship(p) for p in tasks]
    schema = ds.schema()
    out = pa.schema([("path", pa.string()), ("positions", pa.binary())])
    parts = []
    if whole:
        meta = [F.col("_metadata.file_path").alias("__pf_file"), F.col("_metadata.row_index").alias("__pf_row")]
        d = (
            spark.read.schema(spark_schema(spark, ds))
            .option("basePath", ds.root)
            .parquet(*[p.file.abs_path for p in whole])
            .select("*", *meta)
        )
        d = d.where(to_spark_column(pred, schema)).select("__pf_file", "__pf_row")
        with arrow_only():
            parts.append(d.mapInArrow(_positions_udf(), "path string, positions binary"))
    if tasks:

        def run(batches):
            for i in task_numbers(batches):
                p = unship(shipped[i])
                pos = ds.read_kept(p, [], pred, schema, positions=True).column(POS).to_numpy()
                if len(pos):
                    path = p.file.abs_path if local else p.file.path
                    yield pa.RecordBatch.from_pydict(
                        {"path": [path], "positions": [pos.astype("<i8").tobytes()]}, schema=out
                    )

        parts.append(task_frame(spark, len(tasks), run, "path string, positions binary"))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df
