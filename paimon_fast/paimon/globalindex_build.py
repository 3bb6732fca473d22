"""The steps of a global index build on a Paimon table that run wherever the work is
(in this process, or inside a Spark executor's Arrow UDF): plan the unindexed row ranges
(:func:`_plan_build`), read a range's column with its row ids (:func:`_read_task`;
straight from local Parquet files when :func:`direct_read_plan` allows, else through
pypaimon's reader), cut it into index files (:func:`build_range_files`) and write them
under the table's index directory (:func:`_write_index_file`).  Committing the files and
answering predicates with them live in :mod:`.globalindex`, the Spark job in
:mod:`.globalindex_spark`; both import these, never the other way round.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from ..io.fsutil import write_all

RECORDS_PER_RANGE = "sorted-index.records-per-range"
RECORDS_PER_RANGE_LEGACY = "btree-index.records-per-range"
DEFAULT_RECORDS_PER_RANGE = 10_000_000
RECORDS_FLOATING = 1.2  # Java's SortedGlobalIndexWriter rotates files every records-per-range x 1.2 records


def records_per_range(options: Dict[str, str]) -> int:
    """``sorted-index.records-per-range`` (fallback key ``btree-index.records-per-range``)."""
    v = options.get(RECORDS_PER_RANGE, options.get(RECORDS_PER_RANGE_LEGACY, DEFAULT_RECORDS_PER_RANGE))
    n = int(v)
    if n <= 0:
        raise ValueError(f"{RECORDS_PER_RANGE} must be positive, got {v!r}")
    return n


def records_per_file(options: Dict[str, str]) -> int:
    """Records per ``bitmap`` / ``btree`` file: records-per-range x 1.2, as Java's SortedGlobalIndexWriter."""
    return int(records_per_range(options) * RECORDS_FLOATING)


# ================================================================ build
@dataclass
class _Task:
    split: object  # a pypaimon IndexedSplit over the files of the range
    start: int
    end: int  # inclusive
    partition: tuple
    snapshot_id: Optional[int] = None  # the snapshot the build scanned (the entries' source meta)


def _plan_build(table, field, index_type: str, partitions):
    """``(tasks, options)``: the unindexed contiguous row ranges to build, as pypaimon 2.1 and
    Java's SortedGlobalIndexScanner.incrementalScan plan them."""
    from pypaimon.globalindex.build_plan import split_by_contiguous_unindexed_row_range, unindexed_row_ranges
    from pypaimon.globalindex.create_global_index import GlobalIndexBuilder

    # pypaimon's builder validates (row tracking, the column) and resolves the partition spec
    helper = GlobalIndexBuilder(table, field.name, index_type="bitmap", partitions=partitions)
    pfilter = helper._resolve_partition_filter()
    rb = table.new_read_builder()
    if pfilter is not None:
        rb = rb.with_partition_filter(pfilter)
    plan = rb.new_scan().plan_for_write()
    splits = plan.splits()
    if not splits:
        return []
    snapshot = helper._snapshot_for_plan(plan)
    todo = unindexed_row_ranges(table, snapshot, pfilter, field.id, index_type)
    if not todo:
        return []
    sid = getattr(snapshot, "id", None)
    return [
        _Task(s, r.from_, r.to, tuple(s.partition.values), sid)
        for s, r in split_by_contiguous_unindexed_row_range(splits, todo)
    ]


def _local_path(path):
    if path is None:
        return None
    p = path[len("file://") :] if path.startswith("file://") else path
    return p if "://" not in p and os.path.exists(p) else None


def table_store(table):
    """The table's files as a :class:`paimon_fast.io.fs.Store` (pypaimon's pyarrow filesystem), or None."""
    import pyarrow.fs as pafs

    from ..io.fs import Store

    fs = getattr(getattr(table, "file_io", None), "filesystem", None)
    return Store(fs) if isinstance(fs, pafs.FileSystem) else None


def _direct_path(table, store, path):
    """A data file's path for a direct pyarrow read: local, or in the table's remote store."""
    if store is None or store.local or path is None:
        return _local_path(path)
    return table.file_io.to_filesystem_path(path)


def direct_read_plan(table, field, task: _Task):
    """``[(Parquet path, first row id, row count, column name in the file or None)]``
    for reading the task's column straight from its files (paths local or in the table's
    store, :func:`table_store`), or None when the files need pypaimon's reader (deletion
    vectors, column groups, a retyped column)."""
    split = task.split.data_split() if callable(getattr(task.split, "data_split", None)) else task.split
    if any(d is not None for d in (getattr(split, "data_deletion_files", None) or ())):
        return None
    want = str(field.type).replace(" NOT NULL", "")
    out = []
    store = table_store(table)
    for f in split.files:
        path = _direct_path(table, store, getattr(f, "external_path", None) or getattr(f, "file_path", None))
        if path is None or not path.endswith(".parquet") or getattr(f, "write_cols", None) or f.first_row_id is None:
            return None
        schema = (
            table.table_schema if f.schema_id == table.table_schema.id else table.schema_manager.get_schema(f.schema_id)
        )
        old = {x.id: x for x in schema.fields}.get(field.id)
        if old is not None and str(old.type).replace(" NOT NULL", "") != want:
            return None
        out.append((path, int(f.first_row_id), int(f.row_count), None if old is None else old.name))
    seen = sorted((a, a + n) for _, a, n, _ in out)
    if any(seen[i][1] > seen[i + 1][0] for i in range(len(seen) - 1)):
        return None
    return out


def read_direct(files, start: int, end: int, store=None):
    """``(column, row ids relative to start)`` of the rows ``start..end`` of ``files`` (see
    :func:`direct_read_plan`; ``store``: where they are, default local); row ids are each
    file's first row id + position, pypaimon's rule for files that store no ``_ROW_ID``.
    None when a file stores ``_ROW_ID``."""
    import pyarrow as pa

    todo = [f for f in files if not (f[1] + f[2] <= start or f[1] > end)]
    cols = _each_file(todo, lambda job: _file_column(job, store))
    if any(c is None for c in cols):
        return None
    if not cols:
        return None, None
    # each file's rows inside start..end: a slice of its column, row ids relative to start
    cut = [(max(start - first, 0), min(end + 1 - first, n), first - start) for _, first, n, _ in todo]
    typ = next((c.type for c in cols if c.type != pa.null()), pa.null())
    col = [(c if c.type == typ else pa.nulls(len(c), typ)).slice(a, b - a) for c, (a, b, _) in zip(cols, cut)]
    col = col[0] if len(col) == 1 else pa.concat_arrays(col)
    if not len(col):
        return None, None
    rid = np.concatenate([np.arange(a + d, b + d, dtype=np.int64) for a, b, d in cut]).view(np.uint64)
    return col, rid


def _file_column(job, store=None):
    """The column of one :func:`direct_read_plan` entry (all nulls, of type null, where the file
    does not hold it), or None when the file stores ``_ROW_ID`` or has another row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, first, n, name = job
    pfile = pq.ParquetFile(path if store is None else store.open_input(path))
    names = pfile.schema_arrow.names
    if "_ROW_ID" in names or (name is not None and name not in names):
        return None
    col = pa.nulls(n) if name is None else pfile.read(columns=[name], use_threads=False).column(0)
    if len(col) != n:
        return None
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _each_file(todo, fn) -> list:
    """``[fn(job) for job in todo]``, files side by side on the shared threads (pyarrow's reads
    and the grouping kernels release the GIL)."""
    from ..io.pool import map_on_pool

    from ..io.pool import threads

    return map_on_pool(fn, todo, threads())


UNIQUE_CHECK_ROWS = 1 << 16  # files of fewer rows are always grouped alone (read_groups_direct)


def read_groups_direct(files, start: int, end: int, dtype: str, store=None, index_type: str = "bitmap"):
    """A sorted build's :func:`range_groups` of the rows ``start..end`` of ``files`` (as
    :func:`read_direct` takes them), each file's rows grouped as soon as it is read, on
    threads, and the groupings merged: the same groups as grouping :func:`read_direct`'s
    column, without concatenating the files' columns into one (1e7 strings in 4 files:
    read and group 0.8-1.35 s -> 0.6-0.95 s).  Files of non-string keys nearly all distinct are
    not grouped alone: merging such groupings sorts every key again (numpy's lexsort), so their
    columns are grouped together once (1e7 unique BIGINTs in 4 files, the whole build: 7.0-7.8
    -> 1.8-4.1 s on a busy machine).
    ``(Groups, rows)``; ``(None, 0)`` for no rows; None where :func:`read_direct` gives None."""
    import pyarrow as pa

    from ..globalindex.format import nearly_unique, group_column, group_column_parallel, merge_groups

    codec = _writer(dtype, {}, index_type).codec
    # in row-id order: the groupings merge as disjoint, ascending row-id intervals (a split may
    # list its files in another order; direct_read_plan has checked that none overlap)
    todo = sorted((f for f in files if not (f[1] + f[2] <= start or f[1] > end)), key=lambda f: f[1])
    total = sum(min(end + 1, first + n) - max(start, first) for _, first, n, _ in todo)

    def one(job):
        col = _file_column(job, store)
        if col is None:
            return None
        _, first, n, _ = job
        a, b = max(start - first, 0), min(end + 1 - first, n)
        if col.type == pa.null():
            from ..core.types import DataType

            col = pa.nulls(n, DataType.parse(dtype).to_arrow())
        arr, _ = codec.column(col.slice(a, b - a))
        rid = np.arange(a + first - start, b + first - start, dtype=np.int64).view(np.uint64)
        if not codec.is_string and len(todo) > 1 and b - a >= UNIQUE_CHECK_ROWS and nearly_unique(arr):
            return (arr, rid), b - a  # grouped with the other files' rows below
        # a file of half the rows or more (one file, or a big one among small ones) would group
        # alone at the end: its rows are grouped in slices side by side instead
        group = group_column_parallel if 2 * (b - a) >= total else group_column
        return group(codec, arr, rid), b - a

    got = _each_file(todo, one)
    if any(g is None for g in got):
        return None
    rows = sum(n for _, n in got)
    if not rows:
        return None, 0
    if all(isinstance(g, tuple) for g, _ in got):  # nearly unique keys: grouped in one go, in row-id order
        arr = pa.concat_arrays([g[0] for g, _ in got])
        rid = np.concatenate([g[1] for g, _ in got])
        return group_column(codec, arr, rid), rows
    # some files grouped alone: the others are too, and the groupings merge (disjoint, ascending row ids)
    return merge_groups([group_column(codec, *g) if isinstance(g, tuple) else g for g, _ in got]), rows


def task_range_files(table, field, task: _Task, dtype: str, options: Dict[str, str], per_range: int, index_type: str):
    """``(build_range_files of the task's rows, rows)``: a bitmap or btree build over files
    read straight from disk groups them file by file (:func:`read_groups_direct`), others
    read the column first (:func:`_read_task`)."""
    if _type(index_type).sorted:
        files = direct_read_plan(table, field, task)
        got = (
            None
            if files is None
            else read_groups_direct(files, task.start, task.end, dtype, table_store(table), index_type)
        )
        if got is not None:
            groups, rows = got
            if groups is None:
                return [], 0
            return files_from_range_groups(
                dtype, [(groups, rows)], options, per_range, index_type, task.start, task.end
            ), rows
    col, rids = _read_task(table, field, task)
    if col is None:
        return [], 0
    return build_range_files(dtype, col, rids, options, per_range, index_type, task.start, task.end), len(rids)


def _read_task(table, field, task: _Task):
    """The column and its ``_ROW_ID`` over the task's rows (deletion vectors applied)."""
    import pyarrow as pa

    files = direct_read_plan(table, field, task)
    if files is not None:
        got = read_direct(files, task.start, task.end, table_store(table))
        if got is not None:
            return got
    from pypaimon.read.table_read import TableRead
    from pypaimon.table.special_fields import SpecialFields

    tr = TableRead(table=table, predicate=None, read_type=[field, SpecialFields.ROW_ID])
    got = tr.to_arrow([task.split])
    if got is None or got.num_rows == 0:
        return None, None
    col = got.column(field.name).combine_chunks()
    rid_col = got.column(SpecialFields.ROW_ID.name)
    if rid_col.null_count:
        raise ValueError("cannot build a global index: _ROW_ID is null")
    rids = rid_col.to_numpy().astype(np.int64, copy=False)
    keep = (rids >= task.start) & (rids <= task.end)
    if not keep.all():
        col = col.filter(pa.array(keep))
        rids = rids[keep]
    return col, (rids - task.start).astype(np.uint64)


def _type(index_type: str):
    """The registered global index type (:mod:`paimon_fast.globalindex.registry`); an unknown
    name raises its error, a ValueError."""
    from ..globalindex.registry import get

    return get(index_type)


def __getattr__(name):
    # SORTED_TYPES (the identity-key sorted indexes: Java's SortedGlobalIndexWriter cuts their
    # files by records) and OPTION_PREFIXES, as the registry has them
    from ..globalindex import registry

    if name == "SORTED_TYPES":
        return tuple(n for n in registry.names() if registry.get(n).sorted)
    if name == "OPTION_PREFIXES":
        return {n: registry.get(n).option_prefix for n in registry.names()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _writer(dtype: str, options: Dict[str, str], index_type: str):
    t = _type(index_type)
    return t.new_writer(dtype, t.options(options))


def range_groups(dtype: str, values, local_rids, index_type: str = "bitmap"):
    """The rows' :class:`~paimon_fast.globalindex.format.Groups` (``multivalue``: of their
    arrays' elements) and the number of rows: one piece of a row range, merged with the
    range's other pieces by :func:`files_from_range_groups` (the type's ``group`` hook)."""
    t = _type(index_type)
    if not t.builds_in_pieces:
        raise ValueError(f"a {index_type} global index is not built in pieces")
    from ..globalindex.registry import resolve

    return resolve(t.group)(_writer(dtype, {}, index_type), values, local_rids)


def files_from_range_groups(
    dtype: str, pieces, options: Dict[str, str], per_range: int, index_type: str, start: int, end: int
):
    """:func:`build_range_files` of a row range from its pieces' :func:`range_groups` (in
    row order; a ``multivalue`` range must lie in one shard of ``per_range`` row ids)."""
    from ..globalindex.format import merge_groups
    from ..globalindex.registry import resolve

    t = _type(index_type)
    if not t.builds_in_pieces:
        raise ValueError(f"a {index_type} global index is not built in pieces")
    w = _writer(dtype, options, index_type)
    groups = merge_groups([g for g, _ in pieces])
    cut = resolve(t.cut)
    if t.sorted:
        return [(start, end, data, meta, n) for data, meta, n in cut(groups, w, int(per_range * RECORDS_FLOATING))]
    if not sum(n for _, n in pieces):
        return []
    if t.sharded and end >= _shard(start, per_range) + per_range:
        raise ValueError(f"row range {start}..{end} spans several {index_type} shards")
    return [(start, end, data, meta, end - start + 1 if n is None else n) for data, meta, n in cut(groups, w, None)]


def _shard(row_id: int, per_range: int) -> int:
    return (row_id // per_range) * per_range


def build_range_files(
    dtype: str,
    values,
    local_rids,
    options: Dict[str, str],
    per_range: int,
    index_type: str = "bitmap",
    start: int = 0,
    end: Optional[int] = None,
):
    """The index files of the build range ``start..end`` (``local_rids`` relative to ``start``):
    ``[(range start, range end, file bytes, meta bytes, row count)]``; a ``bitmap`` file's
    bytes are :class:`~paimon_fast.io.fsutil.Chunks` (write them with :func:`~paimon_fast.io.fsutil.write_all`).

    ``bitmap`` and ``btree`` (Java's identity-key sorted build): one range, a new file every
    ``per_range`` x 1.2 records of the (nulls, key, row id) order, row count = records.
    ``multivalue`` (Java's shard build): the range cut at multiples of ``per_range`` row
    ids, one file per shard holding rows (row ids relative to the shard), row count = the
    shard's row count, so a shard whose arrays hold no element still gets a file."""
    if end is None:
        end = start + (int(local_rids.max()) if len(local_rids) else 0)
    t = _type(index_type)
    if not t.builds_in_pieces:  # the type's writer over the range's rows: one file
        w = _writer(dtype, options, index_type)
        w.write_batch(values, local_rids)
        data, meta = w.finish()
        return [] if data is None else [(start, end, data, meta, getattr(w, "row_count", len(local_rids)))]
    if not t.sharded:
        return files_from_range_groups(
            dtype, [range_groups(dtype, values, local_rids, index_type)], options, per_range, index_type, start, end
        )
    import pyarrow as pa

    absolute = local_rids.astype(np.int64) + start
    out = []
    shard = _shard(start, per_range)
    while shard <= end:
        lo, hi = max(start, shard), min(end, shard + per_range - 1)
        keep = (absolute >= lo) & (absolute <= hi)
        if keep.any():
            piece = range_groups(
                dtype, values.filter(pa.array(keep)), (absolute[keep] - lo).astype(np.uint64), index_type
            )
            out += files_from_range_groups(dtype, [piece], options, per_range, index_type, lo, hi)
        shard += per_range
    return out


def _new_file_name(index_type: str) -> str:
    import uuid

    return f"{index_type}-global-index-{uuid.uuid4()}.index"


def _write_index_file(table, name: str, data) -> str:
    """Write one index file (bytes or :class:`~paimon_fast.io.fsutil.Chunks`) under the table's
    global index directory through its file IO; returns its path."""
    pf = table.path_factory().global_index_path_factory()
    path = pf.to_path(name)
    table.file_io.check_or_mkdirs(pf.global_index_root_path())
    with table.file_io.new_output_stream(path) as out:
        write_all(out, data)
    return path
