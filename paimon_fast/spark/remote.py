"""Spark jobs over datasets on object stores and HDFS, without Hadoop connector jars.

Spark's own Parquet reader needs a Hadoop filesystem for ``s3a://``, ``gs://``,
``abfs://`` (connector jars and their configuration on every executor).  For
datasets that are not on the local filesystem the driver instead hands out
*paths*: a job of ``spark.range(n)`` rows (one per task) runs a ``mapInArrow``
function that opens its files through the dataset's pickled
:class:`~paimon_fast.io.fs.Store` (pyarrow's filesystems: the credentials come from
the executor's environment or from options the driver's filesystem carries),
reads them with ranged reads, and yields Arrow batches.  A plain ``pip install
pyspark`` cluster runs them.  The file-index build reads every dataset this way (it is
cheaper than Spark's reader, which converts every row to Spark's format and back to
Arrow); reads and deletes do it for every file of a dataset on a store
(:mod:`paimon_fast.spark.read_job`: the Arrow tasks there take the dataset, store
included, in their closure).

* :func:`build_files`: the file-index build of :func:`paimon_fast.spark.build`.
* :func:`spark_schema`: the dataset's Spark schema, from its Arrow schema.
"""

from __future__ import annotations

import json
from typing import List, Optional, Sequence

from .frames import task_frame, task_numbers


def build_files(
    spark,
    ds,
    files: Sequence,
    row_type,
    columns,
    threshold: int,
    digest: str,
    types,
    fault: Optional[dict] = None,
    parallelism: Optional[int] = None,
) -> List[dict]:
    """Build each file's index on the executors (pyarrow reads, the in-process build's
    per-file step, each file read as the version ``files`` lists and checked after the read); the
    catalog results (``file_index`` None for a file that changed meanwhile).  ``parallelism``: Spark tasks (see
    :func:`paimon_fast.spark.frames.task_frame`)."""
    import pyarrow as pa

    from ..tables.parquet import build_file_index, ensure_index_types

    store, root = ds.store, ds.root
    todo = [(f.path, f.identity) for f in files]

    def run(batches):
        ensure_index_types(types)
        schema = pa.schema([("path", pa.string()), ("rows", pa.int64()), ("file_index", pa.string())])
        for i in task_numbers(batches):
            rel, ident = todo[i]
            mode = fault.get("mode") if fault and fault.get("file") in (rel, rel.rsplit("/", 1)[-1]) else None
            rows, entry = build_file_index(
                store, root, rel, row_type, columns, threshold, digest, _fault=mode, identity=ident
            )
            yield pa.RecordBatch.from_pydict(
                {"path": [rel], "rows": [rows], "file_index": [json.dumps(entry)]}, schema=schema
            )

    out = task_frame(spark, len(todo), run, "path string, rows long, file_index string", parallelism).collect()
    idents = {rel: ident for rel, ident in todo}
    return [
        {
            "path": r["path"],
            "rows": r["rows"],
            "file_index": json.loads(r["file_index"]),  # None: the file changed while the task read it
            "identity": idents[r["path"]].to_json() if idents.get(r["path"]) is not None else None,
        }
        for r in out
    ]


def spark_schema(ds):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(ds.schema())
