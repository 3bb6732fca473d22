"""Cluster a Paimon append table by columns: its files rewritten sorted, in one commit
(``paimon_fast.paimon.optimize``; Paimon's own name for it is sort compaction).

:func:`optimize` is the Paimon counterpart of :meth:`ParquetDataset.optimize
<paimon_fast.tables.ParquetDataset.optimize>` (issue 44), for append tables without buckets
(``bucket = -1``), the tables Paimon's own sort compaction rewrites.  Per partition it reads
every live row of the latest snapshot, orders the rows by the cluster columns (``"order"``: a
sort; ``"zorder"`` / ``"hilbert"``: the interleaved keys of
:func:`paimon_fast.core.order.sort_permutation`, as Paimon's ``order_strategy`` means them),
writes them through pypaimon's writer (its file size and format options; full value statistics,
since pypaimon writes none by default and a clustered file's min / max is what prunes it),
builds the table's configured file indexes for the new files (``file-index.*``, as
:func:`rewrite_file_index` does: embedded up to ``file-index.in-manifest-threshold``, else a
sidecar; a bitmap stays version 1 where the replaced files had version 1, the one Paimon 0.9
reads), and commits.  Java Paimon 0.9 reads the result and plans with it
(tests/paimon/test_paimon_java_interop.py).

**The commit** deletes exactly the files it read and adds the new ones, for every partition, in
one snapshot: readers see the old files or the new ones, never both.  It is not an ``INSERT
OVERWRITE``: pypaimon's overwrite deletes the partition's files as of the commit, so rows
appended by another writer between the read and the commit would be lost.  Here they stay.  A
commit that deleted some of the same files first (another optimize, a compaction) makes this
one fail on pypaimon's conflict check (:class:`~paimon_fast.errors.DataFileChangedError`); the
new files are then deleted and the table is as the other commit left it.  An optimize stopped
before its commit leaves the table as it was (the data files and sidecars it wrote are deleted
when it fails in Python; a killed process leaves them unreferenced, for Paimon's orphan-file
cleanup).  Once its commit has started, nothing it wrote is deleted, whatever happens next: the
commit may have landed.

**Refused**, with :class:`~paimon_fast.errors.OptionError`: primary-key tables (their files are
merged by key, not read as rows), tables with buckets (a row's bucket is fixed by its key),
tables with deletion vectors (their index entries of the old files would be left behind) and
row-tracking or data-evolution tables (a rewrite gives rows new ids, which the table's global
indexes and row-id reads depend on).

A partition's rows are read into memory at once.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field as dc_field
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from ..errors import ColumnNotFoundError, DataFileChangedError, OptionError


@dataclass
class OptimizeReport:
    """What :func:`optimize` did: files, bytes and rows before and after, per table."""

    cluster_by: List[str] = dc_field(default_factory=list)
    strategy: str = "order"
    partitions: int = 0
    files_before: int = 0
    bytes_before: int = 0
    files_after: int = 0
    bytes_after: int = 0
    rows: int = 0
    snapshot_id: Optional[int] = None
    seconds: float = 0.0

    def as_dict(self):
        return asdict(self)

    def __str__(self):
        return (
            f"{self.strategy} by {', '.join(self.cluster_by)}: {self.partitions} partition(s), "
            f"{self.files_before} files ({self.bytes_before:,} bytes) -> {self.files_after} files "
            f"({self.bytes_after:,} bytes), {self.rows:,} rows, snapshot {self.snapshot_id}, {self.seconds:.2f}s"
        )


def check_rewritable(table) -> None:
    """Raise :class:`OptionError` unless :func:`optimize` may rewrite ``table`` (module docstring)."""
    name = getattr(table, "identifier", None) or getattr(table, "table_path", "the table")
    opts = table.options
    if table.is_primary_key_table:
        raise OptionError(
            f"optimize rewrites append tables: {name} has primary keys {list(table.primary_keys)} "
            "(its files are merged by key; compact it with Paimon)"
        )
    bucket = int(opts.bucket() if opts.bucket() is not None else -1)
    if bucket != -1:
        raise OptionError(
            f"optimize rewrites append tables without buckets ('bucket' = -1): {name} has bucket = {bucket}, "
            "and a row's bucket is fixed by its bucket key"
        )
    if opts.deletion_vectors_enabled():
        raise OptionError(
            f"optimize does not rewrite tables with 'deletion-vectors.enabled' = true ({name}): "
            "the deletion vectors of the replaced files would stay in the table's index"
        )
    if opts.row_tracking_enabled() or opts.data_evolution_enabled():
        raise OptionError(
            f"optimize does not rewrite row-tracking or data-evolution tables ({name}): "
            "new files give their rows new row ids, which the table's global indexes and row-id "
            "reads depend on"
        )


def _partition_rows(table, partition, bucket, files):
    """Every row of ``files`` (the live files of one partition and bucket), in the current schema."""
    from pypaimon.read.split import DataSplit
    from pypaimon.table.row.generic_row import GenericRow

    split = DataSplit(
        files=list(files),
        partition=GenericRow(list(partition), table.partition_keys_fields),
        bucket=bucket,
        raw_convertible=True,
        data_deletion_files=None,
    )
    return table.new_read_builder().new_read().to_arrow([split])


def _write_sorted(table, data):
    """Write ``data`` through pypaimon's writer; its commit messages (nothing committed).  The
    files carry full value statistics (``metadata.stats-mode = full``) unless the table sets the
    mode: pypaimon writes none by default, and a clustered file's min / max is what prunes it
    (Java writes ``truncate(16)``, which pypaimon does not have)."""
    from .compat import legacy_manifest_table

    if "metadata.stats-mode" not in table.table_schema.options:
        table = legacy_manifest_table(table.copy({"metadata.stats-mode": "full"}))
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    try:
        w.write_arrow(data)
        return w.prepare_commit()
    finally:
        w.close()


def _bitmap_v1_columns(table, files) -> set:
    """The columns whose bitmap index is version 1 in any of ``files`` (their current indexes)."""
    from .rewrite import _existing_index

    out = set()
    for f in files:
        idx = _existing_index(table, f)
        if idx is None:
            continue
        for col, types in idx.index_metas().items():
            if "bitmap" in types and col not in out:
                payload = idx.payload(col, "bitmap")
                if payload and payload[0] == 1:
                    out.add(col)
    return out


def _index_new_files(table, messages, options: Optional[Mapping], replaced) -> List[str]:
    """Build the configured file indexes of the files in ``messages`` (in place: each message's
    ``new_files`` get their embedded index or sidecar); the sidecars written.  A bitmap index
    keeps version 1 where a file it replaces (``replaced``) has one and no ``version`` option is
    set: Paimon 0.9 reads version 1 only."""
    from .pruning import _SchemaResolver
    from .rewrite import (
        ALREADY_INDEXED,
        DEFAULT_IN_MANIFEST_THRESHOLD,
        IN_MANIFEST_THRESHOLD,
        _configured,
        _new_meta,
        build_file_index,
        finish_task,
        index_task,
        parse_memory_size,
    )

    configured, all_opts = _configured(table, options)
    if not configured:
        return []
    for col in _bitmap_v1_columns(table, replaced):
        opts = configured.get(col, {}).get("bitmap")
        if opts is not None and "version" not in opts:
            opts["version"] = "1"
    threshold = parse_memory_size(all_opts.get(IN_MANIFEST_THRESHOLD, DEFAULT_IN_MANIFEST_THRESHOLD))
    resolver = _SchemaResolver(table)
    sidecars = []
    for m in messages:
        files = []
        for f in m.new_files:
            task = index_task(
                table, tuple(m.partition), m.bucket, m.total_buckets, f, configured, threshold, resolver, True
            )
            if task is None or task is ALREADY_INDEXED:
                files.append(f)
                continue
            emb, name = finish_task(table, task, build_file_index(table, task))
            if name:
                sidecars.append(f.aligned_file_path(name))
            files.append(_new_meta(task, emb, name))
        m.new_files = files
    return sidecars


def optimize(
    table,
    cluster_by: Sequence[str],
    strategy: str = "order",
    *,
    partitions: Optional[Sequence[Mapping]] = None,
    options: Optional[Mapping] = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
) -> OptimizeReport:
    """Rewrite the live files of ``table`` (a pypaimon append table without buckets) clustered by
    ``cluster_by``, with its configured file indexes, in one commit (module docstring).

    ``strategy``: ``"order"``, ``"zorder"`` or ``"hilbert"``; ``partitions``: only these
    partitions (``[{"dt": "2024-01-01"}, ...]``, every value of the partition keys), default all;
    ``options``: file-index options for the new files over the table's (as
    :func:`rewrite_file_index` takes them); ``progress(phase, done, total)`` is called as
    partitions are written (``"partitions"``), once the new files are indexed, right before the
    commit (``"indexed"``), and after the commit (``"committed"``), as
    :meth:`ParquetDataset.optimize <paimon_fast.tables.ParquetDataset.optimize>` calls it; an
    exception it raises stops the optimize there (before the commit, nothing is committed and
    what was written is deleted).
    Returns an :class:`OptimizeReport`."""
    from ..core.order import check_strategy, sort_permutation
    from .rewrite import _live_entries, data_file_path

    t0 = time.perf_counter()
    if isinstance(cluster_by, str):
        cluster_by = [c.strip() for c in cluster_by.split(",") if c.strip()]
    cluster_by = list(cluster_by)
    strategy = check_strategy(strategy, cluster_by)
    check_rewritable(table)
    names = list(table.field_dict)
    for c in cluster_by:
        if c not in names:
            raise ColumnNotFoundError(c, names)
    keys = list(table.partition_keys)
    want = None
    if partitions is not None:
        want = set()
        for p in partitions:
            if set(p) != set(keys):
                raise OptionError(f"a partition names every partition key {keys}, got {dict(p)}")
            want.add(tuple(str(p[k]) for k in keys))

    rep = OptimizeReport(cluster_by=cluster_by, strategy=strategy)
    snapshot, entries = _live_entries(table)
    groups: Dict[tuple, list] = {}
    for e in entries:
        part = tuple(e.partition.values)
        if want is not None and tuple(str(v) for v in part) not in want:
            continue
        groups.setdefault(part, []).append(e)
    messages, written, sidecars = [], [], []
    committing = False  # from here on the new files are never deleted: the commit may have landed
    try:
        for part, es in groups.items():
            files = [e.file for e in es]
            for e in es:
                data_file_path(table, part, e.bucket, e.file)
            data = _partition_rows(table, part, es[0].bucket, files)
            if data.num_rows != sum(f.row_count for f in files):
                raise RuntimeError(
                    f"partition {part}: read {data.num_rows} rows, the manifest says {sum(f.row_count for f in files)}"
                )
            data = data.take(sort_permutation(data, cluster_by, strategy))
            new = _write_sorted(table, data)
            written += [data_file_path(table, tuple(m.partition), m.bucket, f) for m in new for f in m.new_files]
            rep.partitions += 1
            rep.files_before += len(files)
            rep.bytes_before += sum(f.file_size for f in files)
            rep.rows += data.num_rows
            messages.append((part, es, new))
            if progress is not None:
                progress("partitions", rep.partitions, len(groups))
        sidecars = _index_new_files(
            table, [m for _, _, new in messages for m in new], options, [e.file for _, es, _ in messages for e in es]
        )
        if progress is not None:
            progress("indexed", 1, 1)
        committing = True
        try:
            rep.snapshot_id = _commit(table, messages)
        except RuntimeError as e:
            if "conflict" not in str(e).lower():
                raise
            committing = False  # pypaimon's conflict check refuses before it writes a snapshot
            read_at = None if snapshot is None else snapshot.id
            raise DataFileChangedError(
                f"another commit replaced files this optimize read (at snapshot {read_at}): nothing was "
                f"committed, run it again ({e})"
            ) from e
        if progress is not None:
            progress("committed", 1, 1)
    except BaseException:
        if not committing:
            for path in written + sidecars:
                table.file_io.delete_quietly(path)
        raise
    rep.files_after = sum(len(m.new_files) for _, _, new in messages for m in new)
    rep.bytes_after = sum(f.file_size for _, _, new in messages for m in new for f in m.new_files)
    rep.seconds = time.perf_counter() - t0
    return rep


def _commit(table, messages) -> Optional[int]:
    """One commit: per partition a message deleting the files read, then the writer's messages
    adding the new ones (deletions first, as :func:`~paimon_fast.paimon.rewrite.commit_rewrite`
    orders them).  Returns the new snapshot's id (None when there was nothing to commit)."""
    from pypaimon.write.commit_message import CommitMessage

    from .rewrite import commit_messages

    deletes, adds = [], []
    for part, es, new in messages:
        by_bucket: Dict[tuple, list] = {}
        for e in es:
            total = e.total_buckets if e.total_buckets is not None and e.total_buckets > 0 else None
            by_bucket.setdefault((e.bucket, total), []).append(e.file)
        for (bucket, total), files in by_bucket.items():
            deletes.append(
                CommitMessage(partition=part, bucket=bucket, new_files=[], deleted_files=files, total_buckets=total)
            )
        adds += [m for m in new if m.new_files]
    if not deletes:
        return None
    return commit_messages(table, deletes + adds)
