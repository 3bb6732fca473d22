"""Reading a Hudi table's candidate slices and rows: the Spark read (:func:`read_spark`) and
:func:`read`, which is also the in-process read object's entry point.

``paimon_fast.hudi.read(path, where=None, columns=None, limit=None)`` returns the lazy read object
(:func:`paimon_fast.hudi.stream.read_table`); ``read(spark, path, where, ...)``, with a SparkSession
first, is the Spark read it always was (``HudiRead(df, report)``).  This module is also the old
import path ``paimon_fast.hudi.read`` (the package puts it in ``sys.modules`` under that name: the
package's ``read`` function would shadow a submodule of that name), so it hands on every name that
path had: the slice readers of :mod:`.slices` and ``read_arrow`` / ``ArrowRead`` of :mod:`.stream`.
"""

from __future__ import annotations

import pyarrow as pa

from .prune import bind_to_state, as_predicate, prune
from .slices import _conform, _report, _run_task, _tasks, read_base_rows, read_slice  # noqa: F401  (handed on)
from .stream import ArrowRead, HudiSource, read_arrow, read_table  # noqa: F401  (handed on)
from .table import table_state


def _is_spark(x) -> bool:
    """A SparkSession (by what it has, without importing pyspark)."""
    return x is not None and hasattr(x, "sparkContext") and hasattr(x, "createDataFrame")


def read(*args, **kwargs):
    """A Hudi table's rows where ``where`` holds, pruned by its bitmap index.

    * ``read(path, where=None, columns=None, limit=None)``: the lazy read object
      (:class:`~paimon_fast.read.lazy.LazyRead`: Arrow, the batch reader, pandas, Polars, DuckDB,
      ``count()``, ``explain()``, ``report``), read in this process (:func:`.stream.read_table`);
    * ``read(spark, path, where, ...)`` with a SparkSession first: the Spark read,
      :func:`read_spark` (``HudiRead(df, report)``), as before.

    ``read(None, path, where)`` (None for "no Spark", as :func:`paimon_fast.hudi.build_index`
    takes it) is the in-process read."""
    if args and _is_spark(args[0]) or _is_spark(kwargs.get("spark")):
        return read_spark(*args, **kwargs)
    if args and args[0] is None:
        args = args[1:]
    kwargs.pop("spark", None)
    if "table_path" in kwargs:
        kwargs["path"] = kwargs.pop("table_path")
    return read_table(*args, **kwargs)


class HudiRead:
    """Result of :func:`read`: ``df`` (a Spark DataFrame) and ``report`` (dict)."""

    def __init__(self, df, report):
        self.df = df
        self.report = report

    def __iter__(self):
        return iter((self.df, self.report))

    def __repr__(self):
        return f"HudiRead(report={self.report!r})"


def _spark_schema(schema: pa.Schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _estimate_bytes(pr, schema: pa.Schema):
    """Estimated bytes of the candidate slices' rows in memory (fixed-width columns by their
    width, the others 16 bytes a value), or None when a slice's row count is not known."""
    known = [c.rows_to_read for c in pr.candidates]
    if any(r is None for r in known):
        return None
    width = 0
    for f in schema:
        try:
            width += max(1, f.type.bit_width // 8)
        except ValueError:
            width += 16
    return sum(known) * width


def read_spark(
    spark, table_path: str, where=None, *, parallelism=None, use_index: bool = True, driver_max_bytes=None
) -> HudiRead:
    """Pruned Spark read of a Hudi table: ``HudiRead(df, report)``.

    Only candidate slices are read (base-only slices: only the row groups and rows
    the index selects; slices with logs: through the ``hudi`` file-group reader);
    the predicate is applied to every row read, so ``df`` holds exactly the rows of
    a snapshot read filtered by ``where``.  When every candidate slice's rows are
    known and few (estimated bytes at most ``driver_max_bytes``, default the Spark conf
    ``paimon-fast.read.driver-max-bytes`` or 32 MB, as for ``pfs.read``), they are read on
    the driver when Spark first needs them and handed to Spark as a local relation (no scan
    job; ``count()`` reads them here without building the relation); otherwise on the
    executors, one task per slice.  ``report["read_on"]`` says which.  ``use_index=False`` reads every slice on the
    executors (the same pipeline as a full snapshot read, for comparison).
    """
    from ..spark.frames import driver_max_bytes as _limit
    from ..spark.env import arrow_only
    from ..spark.frames import lazy, local_frame, planned

    state = table_state(table_path, listing=False)  # prune reuses the index's listing when current
    pred = bind_to_state(as_predicate(where), state)  # once: prune and every slice take it bound
    pr = prune(state.path, pred, state=state, use_index=use_index)
    schema = pa.schema([f.with_nullable(True) for f in state.schema])
    tasks = _tasks(pr)
    path = state.path
    pred_blob = pred  # predicate dataclasses pickle
    sp_schema = _spark_schema(schema)
    known = [c.rows_to_read for c in pr.candidates]
    rows_to_read = None if any(r is None for r in known) else sum(known)  # None: some slices not indexed
    report = _report(pr, {"tasks": len(tasks), "rows_to_read_known": rows_to_read})
    limit = _limit(spark, driver_max_bytes)
    est = _estimate_bytes(pr, schema) if use_index and limit > 0 else None
    if est is not None and est <= limit:
        report.update(
            read_on="driver",
            why=f"about {est / (1 << 20):.1f} MB of candidate rows, at most {limit / (1 << 20):.1f} MB",
        )
        rows = []

        def table():
            from ..io.pool import map_on_pool

            parts = map_on_pool(lambda t: _run_task(path, t, schema, pred_blob), tasks, 4)
            t = pa.concat_tables(parts) if parts else schema.empty_table()
            rows.append(t.num_rows)
            return t

        def count():
            return rows[-1] if rows else table().num_rows

        return HudiRead(lazy(spark, sp_schema, lambda: local_frame(spark, table(), sp_schema), report, count), report)
    report.update(
        read_on="executors",
        why=(
            "use_index=False: every slice is read"
            if not use_index
            else "driver-local reads are off"
            if limit <= 0
            else "a candidate slice's rows are not known (no index answer)"
            if est is None
            else f"about {est / (1 << 20):.1f} MB of candidate rows, more than {limit / (1 << 20):.1f} MB"
        ),
    )

    def run(batches):
        import importlib

        _r = importlib.import_module("paimon_fast.hudi.slices")

        for batch in batches:
            for i in batch.column(0).to_pylist():
                tbl = _r._run_task(path, tasks[i], schema, pred_blob)
                for b in tbl.to_batches():
                    if b.num_rows:
                        yield b

    if not tasks:
        df = local_frame(spark, schema.empty_table(), sp_schema)
    else:
        # task i = row i of a range (no shuffle); the task list travels in the closure
        n = parallelism or max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 2))
        with arrow_only():
            df = spark.range(0, len(tasks), 1, n).mapInArrow(run, sp_schema)
    return HudiRead(planned(df, report), report)
