"""Reading one candidate file slice of a Hudi table: the helpers every read of the table shares
(in this process, as a stream, and in Spark's tasks).

Base-only slices are read from their Parquet base file, only the pages that hold candidate
positions (:func:`paimon_fast.io.parquet.rows.read_rows`), then only those rows (row-level
skipping); slices with log files go through the ``hudi`` file-group reader (merged records).
Every row read is then filtered by the full predicate, so the answer equals a snapshot read
filtered by the predicate whatever the index could or could not prune.  :func:`iter_slice` reads a
slice range by range (row groups of a base file read whole, chunks of candidate positions).
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from ..errors import ColumnNotFoundError
from ..io.parquet.rows import no_columns, read_rows
from ..read.arrow_filter import coerce_literals, filter_table
from .prune import HudiReport, _counter
from .table import SliceRef, open_table, table_root

SLICE_RANGE_ROWS = 1 << 20  # candidate positions of a base file read at once by iter_slice


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
    if not cols:  # no column asked for (a count): the rows without their columns
        return no_columns(tbl.num_rows)
    return pa.Table.from_arrays(cols, schema=pa.schema([f.with_nullable(True) for f in schema]))


def read_base_rows(path: str, schema: pa.Schema, positions=None, store=None, counter=None, stats=None):
    """Rows of a base Parquet file (only ``positions`` when given: only the pages holding
    them are decoded, :func:`paimon_fast.io.parquet.rows.read_rows`, which adds to ``stats``),
    conformed to ``schema``; None if the file cannot be conformed (caller falls back).
    ``store``: the table's :class:`~paimon_fast.io.fs.Store` (default local); reads are ranged,
    counted in ``counter``."""
    src = path if store is None else store.open_input(path, counter)
    if positions is None:
        pf = pq.ParquetFile(src)
        names = [f.name for f in schema if f.name in set(pf.schema_arrow.names)]
        if len(names) != len(schema):
            return None
        return _conform(pf.read(columns=names), schema)
    pos = np.asarray(positions.to_array() if isinstance(positions, BitMap) else positions, dtype=np.int64)
    if not len(schema):  # no column asked for (a count): the positions' rows, nothing read
        return no_columns(len(pos))
    try:
        tbl = read_rows(src, pos, [f.name for f in schema], stats=stats)
    except ColumnNotFoundError:
        return None
    return _conform(tbl, schema)


def read_slice(table_path: str, ref: SliceRef, schema: pa.Schema, positions, pred, stats=None) -> pa.Table:
    """Matching rows of one candidate slice, as a table of ``schema``."""
    out = None
    if ref.base_file and not ref.log_files:
        out = read_base_rows(ref.base_path(table_path), schema, positions, table_root(table_path)[0], _counter(), stats)
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
    ref, pos = task_slice(task)
    return read_slice(table_path, ref, schema, pos, pred, stats)


def _report(pr, extra=None):
    r = HudiReport(pr.report)
    if extra:
        r.update(extra)
    return r


def task_slice(task: str):
    """``(SliceRef, candidate positions or None)`` of a task of :func:`_tasks`."""
    d = json.loads(task)
    pos = BitMap.deserialize(base64.b64decode(d["positions"])) if d["positions"] else None
    return SliceRef.from_json(d["ref"]), pos


def iter_slice(table_path: str, ref: SliceRef, schema: pa.Schema, positions, pred, stats=None):
    """The matching rows of one candidate slice as tables of ``schema`` (which holds the
    predicate's columns), range by range: a base-only slice's row groups (all rows) or chunks of
    :data:`SLICE_RANGE_ROWS` candidate positions; a slice with logs (or a base file that does not
    have the table's columns) at once, through :func:`read_slice`."""
    if ref.base_file and not ref.log_files:
        store = table_root(table_path)[0]
        path = ref.base_path(table_path)
        if positions is None:
            pf = pq.ParquetFile(store.open_input(path, _counter()))
            names = set(pf.schema_arrow.names)
            n = pf.metadata.num_row_groups
            first = (
                _conform(pf.read_row_group(0, columns=schema.names), schema)
                if n and all(f.name in names for f in schema)
                else None
            )
            if first is not None:  # the file has the table's columns: the row groups one by one
                yield filter_table(first, coerce_literals(pred, first.schema))
                for g in range(1, n):
                    t = _conform(pf.read_row_group(g, columns=schema.names), schema)
                    yield filter_table(t, coerce_literals(pred, t.schema))
                return
        else:
            pos = np.asarray(positions.to_array(), dtype=np.int64)
            first = read_base_rows(path, schema, pos[:SLICE_RANGE_ROWS], store, _counter(), stats)
            if first is not None:
                yield filter_table(first, coerce_literals(pred, first.schema))
                for i in range(SLICE_RANGE_ROWS, len(pos), SLICE_RANGE_ROWS):
                    t = read_base_rows(path, schema, pos[i : i + SLICE_RANGE_ROWS], store, _counter(), stats)
                    yield filter_table(t, coerce_literals(pred, t.schema))
                return
    yield read_slice(table_path, ref, schema, positions, pred, stats)
