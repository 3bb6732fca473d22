"""Deletes on a Parquet dataset on Spark: matching rows marked in Paimon deletion vectors."""
from __future__ import annotations

import os
import time
from typing import Optional

from ..tables.parquet import ParquetDataset, local_path
from .columns import to_spark_column
from .read_job import _planned_frame


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
                {"path": [local_path(u) for u, _ in groups],
                 "positions": [np.unique(r).tobytes() for _, r in groups]}, schema=schema)

    return run


def delete(spark, path: str, where, *, bitmap64: Optional[bool] = None, _fault: Optional[str] = None,
           filesystem=None):
    """Mark the rows of the dataset at ``path`` where ``where`` holds deleted, without
    rewriting any Parquet file.

    The driver prunes files with the indexes (and skips rows already deleted);
    executors read the remaining files with Spark, apply the exact predicate and
    send back each matching row's ``(_metadata.file_path, _metadata.row_index)``,
    grouped per file by a ``mapInArrow`` UDF.  The new positions are merged with
    each file's deletion vector, ONE new Paimon deletion file is written
    (temporary name + atomic rename) and the catalog is rewritten atomically;
    deletion files the new catalog no longer references are removed after that
    (see :mod:`paimon_fast.tables.deletes`).  Every read (:func:`read`, the
    Data Source, :class:`~paimon_fast.tables.ParquetDataset`) honours the
    vectors.  Returns a :class:`~paimon_fast.tables.deletes.DeleteReport` (rows
    deleted, files touched, the deletion file).
    """
    import numpy as np

    from ..sqlpredicate import parse_predicate
    from ..tables.deletes import DeleteReport, commit_deletions

    if where is None:
        raise ValueError("delete needs a predicate")
    t0 = time.perf_counter()
    ds = ParquetDataset(path, filesystem)
    plan = ds.plan(parse_predicate(where))
    rep = DeleteReport(files_scanned=len(plan.kept), files_skipped=plan.report.files_skipped,
                       predicate=plan.report.predicate)
    positions = {}
    if plan.kept:
        df = _planned_frame(spark, ds, plan, positions=True)
        df = df.where(to_spark_column(plan.predicate, ds.schema())).select("__pf_file", "__pf_row")
        for r in df.mapInArrow(_positions_udf(), "path string, positions binary").collect():
            rel = os.path.relpath(r["path"], ds.root).replace(os.sep, "/")
            positions.setdefault(rel, []).append(np.frombuffer(r["positions"], "<i8"))
    positions = {k: np.concatenate(v) for k, v in positions.items()}
    rep.seconds = time.perf_counter() - t0
    return commit_deletions(ds, positions, bitmap64=bitmap64, report=rep, _fault=_fault)
