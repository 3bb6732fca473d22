"""Layouts where indexes pay: :meth:`ParquetDataset.optimize <paimon_fast.tables.ParquetDataset.optimize>`
rewrites a dataset's files clustered by chosen columns, in one catalog commit.

An index skips pages only where the rows it selects sit together.  ``optimize`` sorts the rows of
each partition across its files (``order``, ``zorder`` or ``hilbert``, as Paimon's sort compaction
names them: :mod:`paimon_fast.core.order`), so each new file and each of its row groups and
pages holds a narrow range of the cluster columns, and writes them for reads at known rows (a
page index, row-capped pages, ``sorting_columns``: :mod:`paimon_fast.tables.writer`).  Deleted rows
are not rewritten.  The dataset's file indexes are built for the new files from the rows in
memory, the catalog keeps each new file's statistics of the cluster and indexed columns (plans
skip files by them without opening anything), and global indexes that described the old files
are rebuilt over the new ones.

**One commit** (:func:`optimize`), with the catalog machinery of every writer
(:mod:`paimon_fast.tables.catalog`) and named steps where tests kill it (:mod:`.steps`):

1. ``optimize.snapshot``: a settled snapshot; in each partition the files to rewrite (every file,
   or with ``full=False`` those not yet clustered this way: files written since the last
   optimize).
2. ``optimize.partition`` / ``optimize.file.written``: each partition's rows are read (one
   native read over its files, deletion vectors applied, each file checked to be the version
   listed), ordered, cut into files of about the target size, written under
   ``_optimize/<run id>/`` (hidden from every reader) with their file indexes and statistics.
3. ``optimize.intent`` -> ``optimize.intended``: a catalog commit records the run as pending: the
   names its files will have, the identities of the files they replace.  Readers of ours leave
   pending files out (:mod:`paimon_fast.tables.replaced`).
4. ``optimize.published``: the new files are moved to their names in the partition directories
   (a rename locally; a copy on object stores).  From here until step 7, readers that list the
   directory themselves (Spark, pyarrow, DuckDB) see both the old and the new files: the window
   is the moves, the wait for the new files' identities to settle (25 ms), the global index
   rebuild and one commit (milliseconds to seconds locally; on object stores the copies).
5. ``optimize.global_index``: each global index that described the old files gets a new listing
   over the new ones (readers take the listing built over their snapshot's files:
   :func:`paimon_fast.tables.globalindex.listing_of`).
6. ``optimize.commit`` -> ``catalog.commit`` -> ``optimize.committed``: one catalog version drops
   the old files' entries, adds the new ones (identity, rows, file index, statistics) and records
   the old files as replaced.  A reader of ours sees the old files or the new ones, never both.
   The commit rebases onto concurrent commits; rows deleted from an old file since the snapshot
   make it fail (:class:`OptimizeConflictError`: the deletes stay, nothing of the optimize does).
7. ``optimize.retired``: the old files move to ``_optimize/retired/`` (out of every plain
   reader's listing); readers of ours on an older snapshot still read them there, until ``gc``
   removes them once no live catalog version names them (gc's grace period).

**A killed optimize** leaves the old state (killed before step 6) or the new one (after it): its
pending files are hidden from our readers.  The next ``optimize`` (or :func:`recover`) undoes a
run whose process is gone (the same host: at once; else after the grace period): it marks the run
aborted in the catalog, removes its files, then removes the record.  It also finishes step 7 of a
committed run.  The aborted mark makes a run that was only slow fail its commit instead of
committing files removed under it.

**Incremental** (``full=False``, the default): a file written by an optimize records how it was
clustered (``clustered``: columns and strategy); a partition is rewritten only where it has other
files, and then only those (they become a new sorted run of their own: each new file still holds a
narrow range).  ``full=True`` rewrites every file of the partitions.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional

import pyarrow as pa

from ..errors import OptionError, PaimonFastError
from . import catalog as _catalog
from . import identity as _identity
from .optimize_commit import _commit_intent, _commit_swap, _files_after, _settled_identities
from .optimize_common import (  # noqa: F401  (handed on at their old path)
    PENDING,
    REPLACED,
    NewFile,
    OptimizeConflictError,
    _abandoned,
    _alive,
    _move,
    _now,
    clustered_as,
    rel_join,
    remove_tree,
)
from .optimize_globalindex import _global_index_columns, _rebuild_global_index
from .optimize_recovery import _forget_replaced, _retire, _roll_back, recover
from .optimize_rewrite import (  # noqa: F401  (handed on at their old path)
    _contiguous,
    _rewrite_in_process,
    file_cuts,
    write_one,
    write_rows,
)
from ..core.order import check_strategy, check_types
from .replaced import OPT_DIR, OPT_KEY
from .steps import step
from .writer import WriteOptions, parquet_flavour


@dataclass
class OptimizeReport:
    """What an optimize did: files, bytes and rows before and after, time (``seconds`` and per
    phase), the catalog version committed."""

    cluster_by: List[str] = field(default_factory=list)
    strategy: str = "order"
    full: bool = False
    partitions: int = 0  # partitions rewritten
    files_before: int = 0  # files rewritten
    bytes_before: int = 0
    rows_before: int = 0  # their rows, deleted ones included
    rows_deleted_dropped: int = 0
    files_after: int = 0
    bytes_after: int = 0
    rows: int = 0  # rows written
    files_kept: int = 0  # files left as they were (clustered already, or not in the partitions asked)
    seconds: float = 0.0
    phases: Dict[str, float] = field(default_factory=dict)
    catalog_version: Optional[int] = None
    global_indexes: List[str] = field(default_factory=list)  # columns whose global index was rebuilt
    recovered: List[str] = field(default_factory=list)  # earlier runs undone or finished first
    run_id: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def __str__(self):
        if not self.files_before:
            return f"nothing to optimize ({self.files_kept} files clustered by {', '.join(self.cluster_by)} already)"
        dropped = f", {self.rows_deleted_dropped:,} deleted rows dropped" if self.rows_deleted_dropped else ""
        gi = f"; global indexes rebuilt: {', '.join(self.global_indexes)}" if self.global_indexes else ""
        return (
            f"{self.strategy} by {', '.join(self.cluster_by)}: {self.partitions} partition(s), "
            f"{self.files_before} files ({self.bytes_before:,} bytes) -> {self.files_after} files "
            f"({self.bytes_after:,} bytes), {self.rows:,} rows{dropped}, {self.files_kept} files kept, "
            f"{self.seconds:.2f}s{gi}"
        )


# ---------------------------------------------------------------- the run


def optimize(
    ds,
    cluster_by,
    strategy: str = "order",
    *,
    full: bool = False,
    partitions: Optional[Callable[[Mapping[str, Optional[str]]], bool]] = None,
    target_file_size: Optional[int] = None,
    row_group_rows: Optional[int] = None,
    page_rows: Optional[int] = None,
    compression: str = "snappy",
    compression_level: Optional[int] = None,
    min_compression_saving: Optional[float] = None,
    delta_encoding: Optional[bool] = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
    recover_after: Optional[float] = None,
    index_tools=None,
    rewrite=None,
    _fault: Optional[str] = None,
) -> OptimizeReport:
    """Rewrite the dataset ``ds`` clustered by ``cluster_by`` (module docstring); the
    :class:`OptimizeReport`.

    ``partitions(values) -> bool`` picks the partitions (``{column: raw value}``) to optimize
    (default: all); ``target_file_size`` (bytes; default the mean size of the files rewritten,
    within 8 and 128 MiB), ``row_group_rows`` (default 1,048,576), ``page_rows`` (default 4,096)
    and ``compression`` (``"snappy"`` or ``"zstd"``, ``compression_level``; a fixed-width column
    the codec shrinks by less than ``min_compression_saving``, default 0.15, is stored uncompressed;
    0 compresses every column; ``delta_encoding``, default True: columns without a dictionary get
    DELTA_LENGTH_BYTE_ARRAY / DELTA_BINARY_PACKED where they read faster, False keeps PLAIN) say how
    files are written
    (:class:`~paimon_fast.tables.writer.WriteOptions`);
    ``progress(phase, done, total)`` is called as partitions are read and files written;
    ``recover_after``: pending runs of other processes older than this many seconds are undone
    first (default: gc's grace period; runs of dead processes on this host at once).
    ``index_tools``: ``{"builder", "store_index", "ensure_types"}``, the file index writers of
    :mod:`paimon_fast.tables.dataset_build` (which imports this module: :meth:`ParquetDataset.optimize`
    hands them in).  ``rewrite``: a function that does step 2 on
    another engine (``rewrite(view, todo, plan) -> [NewFile]``, the Spark job)."""
    t_start = time.perf_counter()
    cluster_by = [cluster_by] if isinstance(cluster_by, str) else list(cluster_by)
    strategy = check_strategy(strategy, cluster_by)
    opts = WriteOptions(compression=compression, compression_level=compression_level)
    if target_file_size is not None:
        opts.target_file_size = target_file_size
    if row_group_rows is not None:
        opts.row_group_rows = row_group_rows
    if page_rows is not None:
        opts.page_rows = page_rows
    if min_compression_saving is not None:
        opts.min_compression_saving = min_compression_saving
    if delta_encoding is not None:
        opts.delta_encoding = delta_encoding
    opts.check()
    rep = OptimizeReport(cluster_by=cluster_by, strategy=strategy, full=full)
    phases = rep.phases
    rep.recovered = recover(ds, recover_after)

    view = ds.snapshot(settle=True)
    step("optimize.snapshot", version=view.snapshot_version)
    store, root = ds.store, ds.root
    files = view.files()
    if not files:
        rep.seconds = time.perf_counter() - t_start
        return rep
    schema = view.data_schema()
    check_types(schema, cluster_by, strategy)
    cat = view.read_catalog()
    entries = cat["files"]
    pending_old = set()
    for run in ((cat.get(OPT_KEY) or {}).get(PENDING) or {}).values():
        pending_old.update((run.get("old") or {}).keys())

    groups: Dict[tuple, list] = {}
    for f in files:
        groups.setdefault(f.partition, []).append(f)
    todo: Dict[tuple, list] = {}
    for part, fs_ in groups.items():
        if partitions is not None and not partitions(dict(part)):
            rep.files_kept += len(fs_)
            continue
        pick = [
            f
            for f in fs_
            if full
            or not (
                view._entry_matches(f, entries.get(f.path)) and clustered_as(entries.get(f.path), cluster_by, strategy)
            )
        ]
        busy = [f.path for f in pick if f.path in pending_old]
        if busy:
            raise OptimizeConflictError(
                f"another optimize is rewriting {busy[0]} (pending in the catalog); run it again later"
            )
        if not pick:
            rep.files_kept += len(fs_)
            continue
        todo[part] = pick
        rep.files_kept += len(fs_) - len(pick)
    if not todo:
        rep.seconds = time.perf_counter() - t_start
        return rep

    from .deletes import load_vectors

    vectors = load_vectors(view, cat)
    counts = view.row_counts()
    old = [f for fs_ in todo.values() for f in fs_]
    flavour = _check_schemas(view, old, schema)
    spec = _index_spec(view, cat, index_tools)
    gi_cols = _global_index_columns(view)
    stat_cols = list(dict.fromkeys([*cluster_by, *(spec.columns if spec else {}), *gi_cols]))
    oid = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
    plan = {
        "oid": oid,
        "cluster_by": cluster_by,
        "strategy": strategy,
        "opts": opts,
        "schema": schema,
        "flavour": flavour,
        "spec": spec,
        "stat_cols": stat_cols,
        "gi_cols": gi_cols,
        "index_tools": index_tools,
        "row_type": view.row_type(),
        "vectors": vectors,
        "counts": counts,
        "progress": progress,
        "phases": phases,
    }
    rep.run_id = oid
    rep.partitions = len(todo)
    rep.files_before = len(old)
    rep.bytes_before = sum(f.size for f in old)
    rep.rows_before = sum(counts[f.path] for f in old)
    rep.rows_deleted_dropped = sum(vectors[f.path].cardinality for f in old if f.path in vectors)
    opts.target_file_size = opts.target_for([f.size for f in old])
    staging = rel_join(store, root, f"{OPT_DIR}/{oid}")
    new: List[NewFile] = []
    intended = committed = False
    try:
        new = (rewrite or _rewrite_in_process)(view, todo, plan)
        rep.files_after = len(new)
        rep.bytes_after = sum(n.size for n in new)
        rep.rows = sum(n.rows for n in new)
        if rep.rows != rep.rows_before - rep.rows_deleted_dropped:
            raise PaimonFastError(
                f"optimize wrote {rep.rows:,} rows where {rep.rows_before - rep.rows_deleted_dropped:,} were to be kept"
            )
        t0 = time.perf_counter()
        old_idents = {f.path: f.identity.to_json() for f in old}
        step("optimize.intent")
        _commit_intent(ds, view, oid, [n.rel for n in new], old_idents, cluster_by, strategy)
        intended = True
        step("optimize.intended")
        for n in new:
            _move(store, n.staged, rel_join(store, root, n.rel))
        idents = _settled_identities(store, root, [n.rel for n in new])
        step("optimize.published")
        for f in old:  # the versions read must still be there: else their change would be lost
            now = _identity.current(store, f.abs_path)
            if now is None or not now.same(f.identity):
                raise OptimizeConflictError(f"data file {f.path} changed while the optimize ran; run it again")
        after = _files_after(view, old, new, idents)
        for col in gi_cols:
            _rebuild_global_index(ds, view, col, after, {n.rel: n for n in new})
            rep.global_indexes.append(col)
            step("optimize.global_index", column=col)
        phases["publish"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        step("optimize.commit")
        out = _commit_swap(ds, view, oid, new, idents, old, entries, _fault)
        committed = True
        rep.catalog_version = out.commit_version
        step("optimize.committed", version=out.commit_version)
        phases["commit"] = time.perf_counter() - t0
    except BaseException:
        if not committed:  # (committed: the next run finishes moving the old files away)
            _undo(ds, oid, new, intended, staging)
        raise
    t0 = time.perf_counter()
    _retire(ds, {f.path: f.identity.to_json() for f in old})
    step("optimize.retired")
    remove_tree(store, staging)
    _forget_replaced(ds)
    phases["retire"] = time.perf_counter() - t0
    rep.seconds = time.perf_counter() - t_start
    return rep


def _undo(ds, oid, new, intended, staging) -> None:
    """After a failure of this process's run before its commit: nothing of it stays visible (its
    index files, which no catalog version names, are removed too)."""
    store, root = ds.store, ds.root
    try:
        if intended:
            run = ((_catalog.read(ds.catalog, ds.io).get(OPT_KEY) or {}).get(PENDING) or {}).get(oid)
            if run is not None:
                _roll_back(ds, oid, run)
        for n in new:
            store.delete(n.staged)
            fi = n.entry.get("file_index") or {}
            if "path" in fi:
                store.delete(rel_join(store, root, fi["path"]))
        remove_tree(store, staging)
    except Exception:  # noqa: BLE001 - the first error is the one to report; recover() finishes this
        pass


def _check_schemas(view, files, schema: pa.Schema) -> dict:
    """Every file to rewrite has the dataset's schema (else OptionError naming it); the writer
    flavour that keeps their Parquet types."""
    import pyarrow.parquet as pq

    pschemas = []
    for f in files:
        pf = pq.ParquetFile(view._input(f))
        got = pf.schema_arrow
        if got.names != schema.names or any(a.type != b.type for a, b in zip(got, schema)):
            raise OptionError(
                f"data file {f.path} has another schema than the dataset's first file ({got} vs {schema}): "
                "optimize rewrites files of one schema"
            )
        pschemas.append(pf.schema)
    return parquet_flavour(pschemas)


def _index_spec(view, cat, tools):
    """The dataset's file index options as an IndexSpec (None: no file index configured)."""
    fi = cat.get("file_index") or {}
    if not fi.get("options"):
        return None
    if tools is None:
        raise OptionError(
            "the dataset has file indexes: optimize needs index_tools (ParquetDataset.optimize hands them in)"
        )
    tools["ensure_types"](fi.get("types") or {})
    return view.index_spec(fi["options"])
