"""Spark jobs over datasets on object stores and HDFS, without Hadoop connector jars.

Spark's own Parquet reader needs a Hadoop filesystem for ``s3a://``, ``gs://``,
``abfs://`` (connector jars and their configuration on every executor).  For
datasets that are not on the local filesystem the driver instead hands out
*paths*: a job of ``spark.range(n)`` rows (one per task) runs a ``mapInArrow``
function that opens its files through the dataset's pickled
:class:`~paimon_fast.fs.Store` (pyarrow's filesystems: the credentials come from
the executor's environment or from options the driver's filesystem carries),
reads them with ranged reads, and yields Arrow batches.  A plain ``pip install
pyspark`` cluster runs them.  Local datasets keep Spark's reader for reads; the
file-index build reads every dataset this way (it is cheaper than Spark's reader,
which converts every row to Spark's format and back to Arrow).

* :func:`build_files`: the file-index build of :func:`paimon_fast.spark.build`.
* :func:`planned_frame`: the rows of a plan's kept files (only the row groups
  holding candidate rows of files an index answered with row positions, minus
  deleted rows), for :func:`paimon_fast.spark.read` and ``delete``.
"""
from __future__ import annotations

import json
from typing import List, Optional, Sequence

import numpy as np

FILE_COL, ROW_COL = "__pf_file", "__pf_row"


def _tasks_frame(spark, n: int, parallelism: Optional[int] = None):
    """``spark.range(n)`` spread over ``parallelism`` tasks (default: one per item, at most 4 per core)."""
    sc = spark.sparkContext
    parts = max(1, min(n, parallelism or max(1, sc.defaultParallelism) * 4))
    return spark.range(0, n, 1, parts)


def _ids(batches):
    for b in batches:
        yield from b.column(0).to_numpy(zero_copy_only=False).tolist()


def build_files(spark, ds, files: Sequence, row_type, columns, threshold: int, digest: str, types,
                fault: Optional[dict] = None, parallelism: Optional[int] = None) -> List[dict]:
    """Build each file's index on the executors (pyarrow reads, the in-process build's
    per-file step); the catalog results.  ``parallelism``: tasks (see :func:`_tasks_frame`)."""
    import pyarrow as pa

    from ..tables.parquet import build_file_index, ensure_index_types

    store, root = ds.store, ds.root
    todo = [f.path for f in files]

    def run(batches):
        ensure_index_types(types)
        schema = pa.schema([("path", pa.string()), ("rows", pa.int64()), ("file_index", pa.string())])
        for i in _ids(batches):
            rel = todo[i]
            mode = fault.get("mode") if fault and fault.get("file") in (rel, rel.rsplit("/", 1)[-1]) else None
            rows, entry = build_file_index(store, root, rel, row_type, columns, threshold, digest, _fault=mode)
            yield pa.RecordBatch.from_pydict({"path": [rel], "rows": [rows], "file_index": [json.dumps(entry)]},
                                             schema=schema)

    out = _tasks_frame(spark, len(todo), parallelism).mapInArrow(
        run, "path string, rows long, file_index string").collect()
    return [{"path": r["path"], "rows": r["rows"], "file_index": json.loads(r["file_index"])} for r in out]


def spark_schema(ds):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(ds.schema())


def planned_frame(spark, ds, plan, positions: bool = False):
    """The rows of ``plan``'s kept files, read by pyarrow on the executors: files with an
    index bitmap only at its positions (only the row groups holding them), deleted rows
    dropped; the plan's predicate applied in Arrow (Spark applies it again).
    ``positions=True`` adds ``__pf_file`` (the file's store path) and ``__pf_row``."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    from ..tables.topn import POS

    schema = ds.schema()
    out_schema = schema
    if positions:
        out_schema = schema.append(pa.field(FILE_COL, pa.string())).append(pa.field(ROW_COL, pa.int64()))
    kept = [(p.file, p.rows, None if p.bitmap is None else p.bitmap.serialize(),
             None if p.deletion_vector is None else p.deletion_vector.serialize()) for p in plan.kept]
    pred = plan.predicate
    spark_out = from_arrow_schema(out_schema)
    if not kept:
        return spark.createDataFrame([], spark_out)
    names = list(schema.names)

    def run(batches):
        from pyroaring import BitMap

        from ..tableindex import DeletionVector

        for i in _ids(batches):
            f, rows, bm, dv = kept[i]
            pos = np.asarray(BitMap.deserialize(bm).to_array(), np.int64) if bm is not None else \
                np.arange(rows, dtype=np.int64)
            if dv is not None:
                pos = pos[~DeletionVector.deserialize(dv).is_deleted_batch(pos)]
            if not len(pos):
                continue
            t = ds.read_rows(f, pos, names, pred, schema)
            if positions:
                t = t.append_column(FILE_COL, pa.array([f.abs_path] * t.num_rows, pa.string()))
                t = t.rename_columns([*names, ROW_COL, FILE_COL]).select([*names, FILE_COL, ROW_COL])
            else:
                t = t.drop_columns([POS])
            yield from t.cast(out_schema).to_batches(max_chunksize=1 << 16)

    return _tasks_frame(spark, len(kept)).mapInArrow(run, spark_out)
