"""Add the configured file indexes to files already in a Paimon table.

Java's ``rewrite_file_index`` procedure (``FileIndexProcessor``), from Python:
for every live data file whose index lacks one of the table's configured
indexes (``file-index.<type>.columns`` ...), read the file's index columns in
row order, build every configured index, keep the container in the manifest
when it is at most ``file-index.in-manifest-threshold`` bytes, else write it
as a sidecar ``.index`` file (Java's names: ``<data file>.index``, then
``<data file>-1.index``, ``-2`` ... when one exists), and commit.

The commit goes through pypaimon's commit path as two messages, the
deletions first, then the additions: pypaimon writes a message's ADD entries
before its DELETE entries, and an ADD followed by a DELETE of the same data
file would make Java's snapshot expiry delete the live file.

Builds run in-process (threads) for small tables, or on Spark executors
(``mapInArrow`` over one row per data file; each task opens the table by
path, reads its file, writes its sidecar and returns the embedded bytes) for
big ones.
"""

from __future__ import annotations

import copy
import pickle
import posixpath
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field as dc_field
from typing import Dict, List, Mapping, Optional

from ..fileindex import writer as index_writer
from ..fileindex.format import FileIndexFormat
from ..fileindex.options import (
    DEFAULT_IN_MANIFEST_THRESHOLD,
    IN_MANIFEST_THRESHOLD,
    indexes_from_table_options,
    parse_memory_size,
)
from .compat import legacy_manifest_table
from .pruning import INDEX_SUFFIX

# tables with at least this many rows to index go to Spark when a session is given
SPARK_MIN_ROWS = 2_000_000


@dataclass
class RewriteReport:
    """What :func:`rewrite_file_index` did."""

    files_total: int = 0
    files_rewritten: int = 0
    files_already_indexed: int = 0
    rows_indexed: int = 0
    embedded: int = 0
    sidecars_written: int = 0
    mode: str = "local"
    committed: bool = False
    snapshot_id: Optional[int] = None
    seconds: float = 0.0
    rewritten_files: List[str] = dc_field(default_factory=list)

    def as_dict(self):
        return asdict(self)

    def __str__(self):
        return (
            f"{self.files_rewritten} of {self.files_total} files indexed ({self.rows_indexed} rows, "
            f"{self.embedded} embedded, {self.sidecars_written} sidecar files, {self.mode}) "
            f"in {self.seconds:.2f}s; committed={self.committed} snapshot={self.snapshot_id}"
        )


def new_index_file_name(old: Optional[str], data_file_name: str) -> str:
    """Java's ``DataFilePathFactory`` naming: ``<data>.index`` for a file without
    one, else ``createNewFileIndexFilePath(old)`` (``x.index`` -> ``x-1.index``,
    ``x-1.index`` -> ``x-2.index``)."""
    if old is None:
        return data_file_name + INDEX_SUFFIX
    dot = old.rfind(".")
    dash = old.rfind("-")
    if dash != -1:
        try:
            num = int(old[dash + 1 : dot])
            return old[: dash + 1] + str(num + 1) + INDEX_SUFFIX
        except ValueError:
            pass
    return old[:dot] + "-1" + INDEX_SUFFIX


def _configured(table, options: Optional[Mapping]) -> Dict[str, Dict[str, Dict[str, str]]]:
    opts = dict(table.table_schema.options)
    opts.update({str(k): str(v) for k, v in (options or {}).items()})
    return indexes_from_table_options(opts), opts


@dataclass
class _Task:
    """One data file to index (picklable, shipped to Spark executors)."""

    table_path: str
    partition: tuple
    bucket: int
    total_buckets: Optional[int]
    file: object  # DataFileMeta
    read_columns: List[str]  # current names to read
    file_columns: Dict[str, str]  # current name -> name in the file's schema
    types: Dict[str, str]  # file column name -> Paimon type
    indexes: Dict[str, Dict[str, Dict[str, str]]]  # file column -> {type: options}
    threshold: int
    old_index_file: Optional[str]
    # payloads already in the file's index for configured (column, type) pairs,
    # kept as they are (None = an empty index); only the others are built
    keep: Dict[str, Dict[str, Optional[bytes]]] = dc_field(default_factory=dict)


def _live_entries(table):
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    snapshot = table.snapshot_manager().get_latest_snapshot()
    if snapshot is None:
        return None, []
    metas = ManifestListManager(table).read_all(snapshot)
    return snapshot, ManifestFileManager(table).read_entries_parallel(metas, drop_stats=False)


def _existing_index(table, f):
    """The file's current index container (opened), or None."""
    data = None
    if f.embedded_index:
        data = bytes(f.embedded_index)
    else:
        for extra in f.extra_files or ():
            if extra.endswith(INDEX_SUFFIX):
                with table.file_io.new_input_stream(f.aligned_file_path(extra)) as s:
                    data = s.read()
                break
    if data is None:
        return None
    try:
        return FileIndexFormat.open(data)
    except Exception:  # an unreadable index is rebuilt
        return None


ALREADY_INDEXED = "already indexed"


def data_file_path(table, partition: tuple, bucket: int, f) -> str:
    """Where data file ``f`` (a DataFileMeta of ``partition`` and ``bucket``) is: its ``file_path``,
    set here from its external path or the table's layout when the manifest left it unset."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    if f.file_path is None:
        f.file_path = (
            f.physical_path() if f.external_path else canonical_data_file_path(table, partition, bucket, f.file_name)
        )
    return f.file_path


def index_task(
    table, partition: tuple, bucket: int, total_buckets, f, configured, threshold: int, resolver, force: bool
):
    """The :class:`_Task` that indexes data file ``f`` (a DataFileMeta of ``partition`` and
    ``bucket``) with the ``configured`` indexes, None when none of them covers a column of its
    schema, or :data:`ALREADY_INDEXED` when its index has every one (and not ``force``)."""
    data_file_path(table, partition, bucket, f)
    names, types = resolver.for_schema(f.schema_id)
    file_cols, idx, read_cols = {}, {}, []
    for col, per_type in configured.items():
        fcol = names.get(col)
        if fcol is None:  # column not in this file's schema (or retyped): Java skips it
            continue
        file_cols[col] = fcol
        read_cols.append(col)
        idx[fcol] = per_type
    if not idx:
        return None
    keep = {}
    existing = None if force else _existing_index(table, f)
    if existing is not None:
        metas = existing.index_metas()
        for c, per_type in idx.items():
            for itype in per_type:
                if itype in metas.get(c, {}):
                    keep.setdefault(c, {})[itype] = existing.payload(c, itype)
        if all(set(t) <= set(keep.get(c, {})) for c, t in idx.items()):
            return ALREADY_INDEXED
    old = next((x for x in f.extra_files or () if x.endswith(INDEX_SUFFIX)), None)
    types_of = {c: types[c] for c in idx}
    return _Task(
        table.table_path, partition, bucket, total_buckets, f, read_cols, file_cols, types_of, idx, threshold, old, keep
    )


def plan_rewrite(table, options=None, force: bool = False):
    """``(snapshot, tasks, files_total, already_indexed)`` for the table's live files."""
    from .pruning import _SchemaResolver

    configured, all_opts = _configured(table, options)
    threshold = parse_memory_size(all_opts.get(IN_MANIFEST_THRESHOLD, DEFAULT_IN_MANIFEST_THRESHOLD))
    snapshot, entries = _live_entries(table)
    resolver = _SchemaResolver(table)
    tasks = []
    already = 0
    for e in entries:
        task = index_task(
            table, tuple(e.partition.values), e.bucket, e.total_buckets, e.file, configured, threshold, resolver, force
        )
        if task is ALREADY_INDEXED:
            already += 1
        elif task is not None:
            tasks.append(task)
    return snapshot, tasks, len(entries), already


def _read_columns(table, task: _Task):
    """The task's index columns of its one data file, every row in file order."""
    from pypaimon.read.split import DataSplit
    from pypaimon.table.row.generic_row import GenericRow

    split = DataSplit(
        files=[task.file],
        partition=GenericRow(list(task.partition), table.partition_keys_fields),
        bucket=task.bucket,
        raw_convertible=True,
        data_deletion_files=None,
    )
    rb = table.new_read_builder().with_projection(list(task.read_columns))
    return rb.new_read().to_arrow([split])


def build_file_index(table, task: _Task) -> bytes:
    """The file index container for one task (b"" when there is nothing to write)."""
    need = [
        c
        for c in task.read_columns
        if any(t not in task.keep.get(task.file_columns[c], {}) for t in task.indexes[task.file_columns[c]])
    ]
    data = None
    if need:
        task_cols = _Task(**{**task.__dict__, "read_columns": need})
        data = _read_columns(table, task_cols)
        if data.num_rows != task.file.row_count:
            raise RuntimeError(
                f"{task.file.file_name}: read {data.num_rows} rows, the manifest says {task.file.row_count}"
            )
    payloads: Dict[str, Dict[str, Optional[bytes]]] = {}
    for col in task.read_columns:
        fcol = task.file_columns[col]
        for itype, opts in task.indexes[fcol].items():
            kept = task.keep.get(fcol, {})
            if itype in kept:
                payloads.setdefault(fcol, {})[itype] = kept[itype]
                continue
            w = index_writer(itype, task.types[fcol], opts)
            w.write_batch(data.column(col))
            payloads.setdefault(fcol, {})[itype] = w.finish()
    return FileIndexFormat.write(payloads) if payloads else b""


def _write_atomic(file_io, path: str, data: bytes):
    from .globalindex_build import table_store

    store = table_store(type("_T", (), {"file_io": file_io})())
    if store is not None and store.object_store:
        # no rename there (a copy + delete); one PUT is atomic, the name is new and becomes
        # visible only through Paimon's commit
        with file_io.new_output_stream(path) as out:
            out.write(data)
        return
    tmp = posixpath.join(posixpath.dirname(path), "." + posixpath.basename(path) + ".tmp")
    with file_io.new_output_stream(tmp) as out:
        out.write(data)
    if not file_io.rename(tmp, path):
        file_io.delete_quietly(tmp)
        raise OSError(f"cannot rename {tmp} to {path}")


def finish_task(table, task: _Task, container: bytes):
    """Write the sidecar if needed; returns ``(new embedded bytes or None, new index file or None)``."""
    if len(container) > task.threshold:
        name = new_index_file_name(task.old_index_file, task.file.file_name)
        path = task.file.aligned_file_path(name)
        # an unreferenced file of that name may remain from an older snapshot: older
        # snapshots may still read it, so take Java's next name instead of overwriting
        for _ in range(1000):
            if not table.file_io.exists(path):
                break
            name = new_index_file_name(name, task.file.file_name)
            path = task.file.aligned_file_path(name)
        _write_atomic(table.file_io, path, container)
        return None, name
    return (container or None), None


def _new_meta(task: _Task, embedded, index_file):
    f = copy.copy(task.file)
    extras = [x for x in (task.file.extra_files or ()) if not x.endswith(INDEX_SUFFIX)]
    if index_file:
        extras.append(index_file)
    f.extra_files = extras
    f.embedded_index = embedded
    return f


def _run_local(table, tasks, max_workers):
    def one(t):
        return finish_task(table, t, build_file_index(table, t))

    if max_workers <= 1 or len(tasks) <= 1:
        return [one(t) for t in tasks]
    with ThreadPoolExecutor(max_workers) as ex:
        return list(ex.map(one, tasks))


def _spark_build(iterator):
    """mapInArrow body: each row is a pickled task; yields (i, embedded, index_file)."""
    import pyarrow as pa

    tables = {}
    for batch in iterator:
        ids, embs, files = [], [], []
        for i, blob in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            task = pickle.loads(blob)
            table = tables.get(task.table_path)
            if table is None:
                from pypaimon.table.file_store_table import FileStoreTable

                table = legacy_manifest_table(FileStoreTable.from_path(task.table_path))
                tables[task.table_path] = table
            emb, name = finish_task(table, task, build_file_index(table, task))
            ids.append(i)
            embs.append(emb)
            files.append(name)
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int64()), pa.array(embs, pa.binary()), pa.array(files, pa.string())],
            names=["i", "embedded", "index_file"],
        )


def _run_spark(spark, tasks, parallelism=None):
    # upward import (docs/ARCHITECTURE.md): the rewrite's Spark build runs with Arrow as the only
    # transfer format, as every Spark job does
    from ..spark.env import arrow_only

    with arrow_only():
        return _run_spark_tasks(spark, tasks, parallelism)


def _run_spark_tasks(spark, tasks, parallelism):
    rows = [(i, bytearray(pickle.dumps(t))) for i, t in enumerate(tasks)]
    try:
        sc = spark.sparkContext
        n = parallelism or max(1, min(len(tasks), sc.defaultParallelism * 2))
        # parallelize spreads the files over n partitions without a shuffle
        df = spark.createDataFrame(sc.parallelize(rows, n), "i long, task binary")
    except Exception:  # Spark Connect has no SparkContext
        n = parallelism or max(1, min(len(tasks), 8))
        df = spark.createDataFrame(rows, "i long, task binary").repartition(n)
    out = df.mapInArrow(_spark_build, "i long, embedded binary, index_file string").collect()
    res = [None] * len(tasks)
    for r in out:
        res[r["i"]] = (None if r["embedded"] is None else bytes(r["embedded"]), r["index_file"])
    return res


def commit_rewrite(table, tasks, results):
    """Commit through pypaimon: one message of deletions, then one of additions
    (per partition/bucket).  Returns the new snapshot id."""
    from pypaimon.write.commit_message import CommitMessage

    groups: Dict[tuple, list] = {}
    for t, (emb, name) in zip(tasks, results):
        total = t.total_buckets if t.total_buckets is not None and t.total_buckets > 0 else None
        groups.setdefault((t.partition, t.bucket, total), []).append((t, _new_meta(t, emb, name)))
    deletes, adds = [], []
    for (part, bucket, total), items in groups.items():
        deletes.append(
            CommitMessage(
                partition=part,
                bucket=bucket,
                new_files=[],
                deleted_files=[t.file for t, _ in items],
                total_buckets=total,
            )
        )
        adds.append(CommitMessage(partition=part, bucket=bucket, new_files=[m for _, m in items], total_buckets=total))
    return commit_messages(table, deletes + adds)


def commit_messages(table, messages) -> Optional[int]:
    """Commit ``messages`` (deletions before additions) in one pypaimon commit; the latest
    snapshot's id after it."""
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()
    snap = table.snapshot_manager().get_latest_snapshot()
    return None if snap is None else snap.id


def rewrite_file_index(
    spark,
    table,
    options: Optional[Mapping] = None,
    *,
    force: bool = False,
    mode: str = "auto",
    max_workers: int = 4,
    spark_min_rows: int = SPARK_MIN_ROWS,
    spark_parallelism: Optional[int] = None,
    commit: bool = True,
) -> RewriteReport:
    """Build the table's configured file indexes for its files that lack them, and commit.

    ``spark``: a SparkSession or None.  ``options`` override table options for
    this build (e.g. ``{"file-index.bloom-filter.columns": "name"}``).
    Indexes a file already has for a configured (column, type) are kept byte
    for byte and only the missing ones are built (so a Paimon 0.9 table keeps
    its bitmap V1, the only version 0.9 readers know); ``force`` rebuilds
    every index of every file, as Java's procedure does.  ``mode``:
    ``"local"``, ``"spark"``, or ``"auto"`` (Spark when a session is given and
    at least ``spark_min_rows`` rows are to be indexed); ``spark_parallelism``
    partitions (default: twice the default parallelism, at most one per file).
    """
    t0 = time.perf_counter()
    table = legacy_manifest_table(table)
    snapshot, tasks, total, already = plan_rewrite(table, options, force)
    rep = RewriteReport(files_total=total, files_already_indexed=already)
    rows = sum(t.file.row_count for t in tasks)
    use_spark = mode == "spark" or (mode == "auto" and spark is not None and rows >= spark_min_rows)
    if use_spark and spark is None:
        raise ValueError("mode='spark' needs a SparkSession")
    if tasks:
        results = _run_spark(spark, tasks, spark_parallelism) if use_spark else _run_local(table, tasks, max_workers)
        rep.mode = "spark" if use_spark else "local"
        rep.files_rewritten = len(tasks)
        rep.rows_indexed = rows
        rep.embedded = sum(1 for e, _ in results if e is not None)
        rep.sidecars_written = sum(1 for _, n in results if n is not None)
        rep.rewritten_files = [t.file.file_name for t in tasks]
        if commit:
            try:
                rep.snapshot_id = commit_rewrite(table, tasks, results)
            except BaseException:
                # a failed commit leaves no sidecar behind (they are not referenced)
                for t, (_, name) in zip(tasks, results):
                    if name:
                        table.file_io.delete_quietly(t.file.aligned_file_path(name))
                raise
            rep.committed = True
    rep.seconds = time.perf_counter() - t0
    return rep
