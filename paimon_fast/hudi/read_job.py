"""Reading only the candidate slices and rows.

Base-only slices are read from their Parquet base file, only the pages that hold
candidate positions (:func:`paimon_fast.parquet.rows.read_rows`), then only those
rows (row-level skipping); slices with log files go through the ``hudi``
file-group reader (merged records).  Every row read is then filtered by the full
predicate, so the answer equals a snapshot read filtered by the predicate whatever
the index could or could not prune.
"""
from __future__ import annotations

import base64
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from ..errors import ColumnNotFoundError
from ..fs import IOCounter
from ..parquet.rows import PageReadStats, read_rows
from .prune import _IO, _counter, as_predicate, prune
from ..tables.arrow_filter import coerce_literals, filter_table
from .table import SliceRef, open_table, table_root, table_state


def _conform(tbl: pa.Table, schema: pa.Schema):
    cols = []
    for f in schema:
        if f.name not in tbl.column_names:
            return None
        c = tbl.column(f.name)
        if not c.type.equals(f.type):
            try:
                c = c.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return None
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=pa.schema([f.with_nullable(True) for f in schema]))


def read_base_rows(path: str, schema: pa.Schema, positions=None, store=None, counter=None, stats=None):
    """Rows of a base Parquet file (only ``positions`` when given: only the pages holding
    them are decoded, :func:`paimon_fast.parquet.rows.read_rows`, which adds to ``stats``),
    conformed to ``schema``; None if the file cannot be conformed (caller falls back).
    ``store``: the table's :class:`~paimon_fast.fs.Store` (default local); reads are ranged,
    counted in ``counter``."""
    src = path if store is None else store.open_input(path, counter)
    if positions is None:
        pf = pq.ParquetFile(src)
        names = [f.name for f in schema if f.name in set(pf.schema_arrow.names)]
        if len(names) != len(schema):
            return None
        return _conform(pf.read(columns=names), schema)
    pos = np.asarray(positions.to_array() if isinstance(positions, BitMap) else positions, dtype=np.int64)
    try:
        tbl = read_rows(src, pos, [f.name for f in schema], stats=stats)
    except ColumnNotFoundError:
        return None
    return _conform(tbl, schema)


def read_slice(table_path: str, ref: SliceRef, schema: pa.Schema, positions, pred, stats=None) -> pa.Table:
    """Matching rows of one candidate slice, as a table of ``schema``."""
    out = None
    if ref.base_file and not ref.log_files:
        out = read_base_rows(ref.base_path(table_path), schema, positions, table_root(table_path)[0], _counter(),
                             stats)
    if out is None:
        t = open_table(table_path, cached=True)
        reader = t.create_file_group_reader_with_options()
        b = reader.read_file_slice_from_paths(ref.base_rel() if ref.base_file else "", ref.logs_rel())
        tbl = pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
        out = _conform(tbl, schema)
        if out is None:
            raise ValueError(f"file slice {ref.base_rel()} does not have the table's columns")
    return filter_table(out, coerce_literals(pred, out.schema))


def _tasks(pr):
    tasks = []
    for c in pr.candidates:
        pos = None
        if c.positions is not None:
            pos = base64.b64encode(c.positions.serialize()).decode("ascii")
        tasks.append(json.dumps({"ref": c.slice.to_json(), "positions": pos}))
    return tasks


def _run_task(table_path, task, schema, pred, stats=None):
    d = json.loads(task)
    ref = SliceRef.from_json(d["ref"])
    pos = BitMap.deserialize(base64.b64decode(d["positions"])) if d["positions"] else None
    return read_slice(table_path, ref, schema, pos, pred, stats)


def _report(pr, extra=None):
    r = dict(pr.report)
    if extra:
        r.update(extra)
    return r


class ArrowRead:
    """Result of :func:`read_arrow`: ``table`` (a ``pyarrow.Table``) and ``report`` (dict),
    as :class:`HudiRead` holds ``df`` and ``report`` for a Spark read.

    Unpacking it as the former ``(table, report)`` tuple still works and warns
    (DeprecationWarning): use ``.table`` and ``.report``."""

    __slots__ = ("table", "report")

    def __init__(self, table, report):
        self.table = table
        self.report = report

    def _as_tuple(self):
        import warnings

        warnings.warn("read_arrow returns an ArrowRead: use .table and .report instead of unpacking "
                      "(table, report)", DeprecationWarning, stacklevel=3)
        return (self.table, self.report)

    def __iter__(self):
        return iter(self._as_tuple())

    def __getitem__(self, i):
        return self._as_tuple()[i]

    def __len__(self):
        return 2

    def __repr__(self):
        return f"ArrowRead(rows={self.table.num_rows}, report={self.report!r})"


def read_arrow(table_path: str, where=None, *, state=None) -> ArrowRead:
    """In-process pruned read: an :class:`ArrowRead` (``.table``, a ``pyarrow.Table`` whose
    rows equal a snapshot read filtered by ``where``, and ``.report``); no Spark needed."""
    pred = as_predicate(where)
    io = IOCounter()   # report["bytes_read"]: index segments and base files read
    decoded = PageReadStats()   # report["decoded"]: rows, pages and bytes the base-file reads at rows decoded
    token = _IO.set(io)
    try:
        state = state or table_state(table_path, listing=False)   # prune reuses the index's listing when current
        pr = prune(state.path, pred, state=state)
        schema = pa.schema([f.with_nullable(True) for f in state.schema])
        parts = [_run_task(state.path, t, schema, pred, decoded) for t in _tasks(pr)]
    finally:
        _IO.reset(token)
    tbl = pa.concat_tables(parts) if parts else schema.empty_table()
    return ArrowRead(tbl, _report(pr, {"rows_returned": tbl.num_rows, "bytes_read": io.bytes,
                                       "decoded": decoded.as_dict()}))


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


def read(spark, table_path: str, where=None, *, parallelism=None, use_index: bool = True,
         driver_max_bytes=None) -> HudiRead:
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
    from ..spark.frames import lazy, local_frame, planned

    pred = as_predicate(where)
    state = table_state(table_path, listing=False)     # prune reuses the index's listing when current
    pr = prune(state.path, pred, state=state, use_index=use_index)
    schema = pa.schema([f.with_nullable(True) for f in state.schema])
    tasks = _tasks(pr)
    path = state.path
    pred_blob = pred  # predicate dataclasses pickle
    sp_schema = _spark_schema(schema)
    known = [c.rows_to_read for c in pr.candidates]
    rows_to_read = None if any(r is None for r in known) else sum(known)   # None: some slices not indexed
    report = _report(pr, {"tasks": len(tasks), "rows_to_read_known": rows_to_read})
    limit = _limit(spark, driver_max_bytes)
    est = _estimate_bytes(pr, schema) if use_index and limit > 0 else None
    if est is not None and est <= limit:
        report.update(read_on="driver", why=f"about {est / (1 << 20):.1f} MB of candidate rows, at most "
                                            f"{limit / (1 << 20):.1f} MB")
        rows = []

        def table():
            from ..pool import map_on_pool

            parts = map_on_pool(lambda t: _run_task(path, t, schema, pred_blob), tasks, 4)
            t = pa.concat_tables(parts) if parts else schema.empty_table()
            rows.append(t.num_rows)
            return t

        def count():
            return rows[-1] if rows else table().num_rows

        return HudiRead(lazy(spark, sp_schema, lambda: local_frame(spark, table(), sp_schema), report, count), report)
    report.update(read_on="executors", why=(
        "use_index=False: every slice is read" if not use_index else
        "driver-local reads are off" if limit <= 0 else
        "a candidate slice's rows are not known (no index answer)" if est is None else
        f"about {est / (1 << 20):.1f} MB of candidate rows, more than {limit / (1 << 20):.1f} MB"))

    def run(batches):
        import importlib

        _r = importlib.import_module("paimon_fast.hudi.read")

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
        df = spark.range(0, len(tasks), 1, n).mapInArrow(run, sp_schema)
    return HudiRead(planned(df, report), report)
