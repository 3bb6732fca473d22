"""Layouts where indexes pay: :meth:`ParquetDataset.optimize <paimon_fast.tables.ParquetDataset.optimize>`
rewrites a dataset's files clustered by chosen columns, in one catalog commit.

An index skips pages only where the rows it selects sit together.  ``optimize`` sorts the rows of
each partition across its files (``order``, ``zorder`` or ``hilbert``, as Paimon's sort compaction
names them: :mod:`paimon_fast.tables.order`), so each new file and each of its row groups and
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

import math
import os
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..errors import OptionError, PaimonFastError
from ..io.fs import CommitConflictError
from ..core.result import REMAIN
from . import catalog as _catalog
from . import identity as _identity
from .order import check_strategy, check_types, sort_permutation, take
from .plan import FilePlan
from .replaced import OPT_DIR, OPT_KEY, retired_rel
from .steps import step
from .writer import WriteOptions, parquet_flavour, table_stats, write_file

PENDING = "pending"
REPLACED = "replaced"


class OptimizeConflictError(CommitConflictError):
    """An optimize could not commit: another commit deleted rows of, or replaced, files it
    rewrote, or another optimize is rewriting them.  Nothing of it is visible; run it again."""


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


# ---------------------------------------------------------------- helpers


def _now() -> int:
    return time.time_ns()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True


def _abandoned(run: Mapping, min_age: float) -> bool:
    """Is the pending run ``run`` no longer being carried out (module docstring)?"""
    if run.get("state") == "aborted":
        return True
    if run.get("host") == socket.gethostname() and isinstance(run.get("pid"), int):
        if run["pid"] != os.getpid() and not _alive(run["pid"]):
            return True
    return _now() - int(run.get("started_ns", 0)) >= min_age * 1e9


def clustered_as(entry: Optional[Mapping], cluster_by: Sequence[str], strategy: str) -> bool:
    """Was the file of this catalog entry written clustered by these columns and strategy?"""
    c = (entry or {}).get("clustered")
    return isinstance(c, dict) and c.get("by") == list(cluster_by) and c.get("strategy") == strategy


def rel_join(store, root: str, rel: str) -> str:
    return store.join(root, *rel.split("/"))


def _move(store, src: str, dst: str) -> None:
    """Move a file: a rename locally, the filesystem's move elsewhere (a copy then a delete on
    object stores)."""
    store.makedirs(store.dirname(dst))
    if store.local:
        os.replace(src, dst)
    else:
        store.fs.move(src, dst)


def remove_tree(store, path: str) -> None:
    """Remove what is left of a run's directory (empty directories locally)."""
    if store.local:
        for d, dirs, files in os.walk(path, topdown=False):
            for f in files:
                try:
                    os.unlink(os.path.join(d, f))
                except OSError:
                    pass
            try:
                os.rmdir(d)
            except OSError:
                pass
        return
    for e in store.list_files(path):
        store.delete(e.path)


# ---------------------------------------------------------------- recovery


def recover(ds, min_age: Optional[float] = None) -> List[str]:
    """Undo pending runs whose process is gone (module docstring), finish moving away the files of
    committed runs; the runs handled, as text."""
    min_age = _catalog.GRACE_SECONDS if min_age is None else float(min_age)
    out = []
    cat = _catalog.read(ds.catalog, ds.io)
    opt = cat.get(OPT_KEY) or {}
    for oid, run in sorted((opt.get(PENDING) or {}).items()):
        if isinstance(run, dict) and _abandoned(run, min_age):
            _roll_back(ds, oid, run)
            out.append(f"undid the optimize {oid} (started {time.ctime(int(run.get('started_ns', 0)) / 1e9)})")
    moved = _retire(ds, (opt.get(REPLACED) or {}))
    if moved:
        out.append(f"moved away {moved} file(s) an earlier optimize replaced")
    if opt.get(REPLACED):
        _forget_replaced(ds)
    return out


def _roll_back(ds, oid: str, run: Mapping) -> None:
    """Undo the pending run ``oid``: mark it aborted (its commit then fails), remove its files,
    then its record."""
    store, root = ds.store, ds.root

    def mark(c, attempt):
        pend = dict((c.get(OPT_KEY) or {}).get(PENDING) or {})
        if oid not in pend:
            raise _catalog.Rebase("gone")
        if pend[oid].get("state") == "aborted":
            raise _catalog.Rebase("already marked")
        pend[oid] = dict(pend[oid], state="aborted")
        return dict(c, **{OPT_KEY: dict(c.get(OPT_KEY) or {}, **{PENDING: pend})})

    base = _catalog.read(ds.catalog, ds.io)
    try:
        _catalog.commit(ds.catalog, base, mark, counter=ds.io, what="marking an optimize aborted")
    except _catalog.Rebase as e:
        if str(e) == "gone":
            return  # committed or undone by another run meanwhile
    for rel in run.get("new") or ():
        store.delete(rel_join(store, root, rel))
    remove_tree(store, rel_join(store, root, f"{OPT_DIR}/{oid}"))

    def drop(c, attempt):
        pend = dict((c.get(OPT_KEY) or {}).get(PENDING) or {})
        pend.pop(oid, None)
        opt = dict(c.get(OPT_KEY) or {}, **{PENDING: pend})
        if not pend:
            del opt[PENDING]
        return dict(c, **{OPT_KEY: opt})

    _catalog.commit(ds.catalog, _catalog.read(ds.catalog, ds.io), drop, counter=ds.io, what="undoing an optimize")


def _retire(ds, replaced: Mapping) -> int:
    """Move the replaced files still at their place (with the identity recorded) to
    ``_optimize/retired/``; the files moved."""
    store, root = ds.store, ds.root
    n = 0
    for rel, ident in sorted(replaced.items()):
        path = rel_join(store, root, rel)
        now = _identity.current(store, path)
        if now is None or _identity.judge(now, ident) not in (_identity.VERIFIED, _identity.WEAK):
            continue
        listed = _identity.Identity(
            int(ident["size"]), int(ident["mtime_ns"]), ident.get("ctime_ns"), ident.get("ino"), ident.get("etag")
        )
        try:
            _move(store, path, rel_join(store, root, retired_rel(rel, listed)))
            n += 1
        except FileNotFoundError:
            pass  # moved by another run meanwhile
    return n


def _forget_replaced(ds) -> None:
    """Drop the catalog's records of replaced files that have left their place (the catalog is
    then one earlier versions of paimon-fast read again); nothing to drop: no commit."""
    store, root = ds.store, ds.root

    def gone(rel, ident) -> bool:
        now = _identity.current(store, rel_join(store, root, rel))
        return now is None or _identity.judge(now, ident) not in (_identity.VERIFIED, _identity.WEAK)

    base = _catalog.read(ds.catalog, ds.io)
    if not any(gone(r, i) for r, i in ((base.get(OPT_KEY) or {}).get(REPLACED) or {}).items()):
        return

    def change(c, attempt):
        opt = dict(c.get(OPT_KEY) or {})
        rep = {r: i for r, i in (opt.get(REPLACED) or {}).items() if not gone(r, i)}
        if rep:
            opt[REPLACED] = rep
        else:
            opt.pop(REPLACED, None)
        out = dict(c)
        if opt:
            out[OPT_KEY] = opt
        else:
            out.pop(OPT_KEY, None)
        return out

    try:
        _catalog.commit(ds.catalog, base, change, counter=ds.io, what="forgetting replaced files")
    except CommitConflictError:
        pass  # others kept committing: the next optimize forgets them


# ---------------------------------------------------------------- the run


@dataclass
class NewFile:
    rel: str
    staged: str
    rows: int
    size: int
    entry: dict  # rows, file_index, stats, clustered, witness
    columns: Dict[str, pa.ChunkedArray]  # the global index columns' values, for their rebuild


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
    and ``compression`` (``"snappy"`` or ``"zstd"``, ``compression_level``) say how files are
    written (:class:`~paimon_fast.tables.writer.WriteOptions`);
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


def _global_index_columns(view) -> List[str]:
    """The columns whose global index describes the snapshot's files (rebuilt for the new ones)."""
    from .globalindex import INDEX_DIR, listing_of, listing_trust

    d = view.store.join(view.root, INDEX_DIR)
    if not view.store.is_dir(d):
        return []
    out = []
    for e in sorted({x.rel.split("/")[0] for x in view.store.list_files(d)}):
        try:
            if listing_trust(listing_of(view, e), view.files()) is not None:
                out.append(e)
        except Exception:  # noqa: BLE001 - not a built listing: nothing to rebuild
            continue
    return out


# ---------------------------------------------------------------- step 2 in this process


def _rewrite_in_process(view, todo: Dict[tuple, list], plan: dict) -> List[NewFile]:
    from ..io.pool import threads

    out: List[NewFile] = []
    phases = plan["phases"]
    progress = plan["progress"]
    names = plan["schema"].names
    done_parts = 0
    with ThreadPoolExecutor(max_workers=max(1, threads())) as pool:
        for part, files in todo.items():
            step("optimize.partition", partition=dict(part))
            t0 = time.perf_counter()
            parts = [
                (FilePlan(f, REMAIN, plan["counts"][f.path], False, deletion_vector=plan["vectors"].get(f.path)), None)
                for f in files
            ]
            table, _ = view.read_kept_many(parts, names, schema=plan["schema"])
            table = _contiguous(table)
            phases["read"] = phases.get("read", 0.0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            perm = sort_permutation(table, plan["cluster_by"], plan["strategy"])
            phases["sort"] = phases.get("sort", 0.0) + time.perf_counter() - t0
            t0 = time.perf_counter()
            cuts = file_cuts(len(perm), sum(f.size for f in files), plan["opts"])
            rel_dir = "/".join(files[0].path.split("/")[:-1])
            jobs = []
            for k, (a, b) in enumerate(cuts):
                rel = f"{rel_dir + '/' if rel_dir else ''}part-{plan['oid']}-{len(out) + k:05d}.parquet"
                jobs.append(pool.submit(write_one, view, rel, table, perm[a:b], plan))
            for j in jobs:
                out.append(j.result())
                if progress:
                    progress("files written", len(out), -1)
            del table, perm
            phases["write"] = phases.get("write", 0.0) + time.perf_counter() - t0
            done_parts += 1
            if progress:
                progress("partitions", done_parts, len(todo))
    return out


def _contiguous(table: pa.Table) -> pa.Table:
    """One chunk per column (each new file takes its rows from it): variable-width columns past
    2 GiB become their large types (the writer casts each file's rows back)."""
    cols = []
    for c in table.columns:
        try:
            cols.append(c.combine_chunks() if c.num_chunks != 1 else c.chunk(0))
        except (pa.ArrowInvalid, pa.ArrowCapacityError):
            t = c.type
            big = pa.large_string() if pa.types.is_string(t) else pa.large_binary() if pa.types.is_binary(t) else None
            if big is None:
                raise
            cols.append(c.cast(big).combine_chunks())
    return pa.Table.from_arrays(cols, names=table.column_names)


def file_cuts(rows: int, source_bytes: int, opts: WriteOptions) -> List[tuple]:
    """``[(start, stop)]`` row ranges of the files a partition of ``rows`` rows (``source_bytes``
    on disk before) is cut into: about :attr:`WriteOptions.target_file_size` bytes each, the same
    number of rows each (whole row groups where the files hold several)."""
    if rows <= 0:
        return []
    n = max(1, math.ceil(source_bytes / max(1, opts.target_file_size)))
    per = math.ceil(rows / n)
    if per > opts.row_group_rows:  # whole row groups, the last file the rest
        per = math.ceil(per / opts.row_group_rows) * opts.row_group_rows
    return [(a, min(rows, a + per)) for a in range(0, rows, per)]


def write_one(view, rel: str, table: pa.Table, order: np.ndarray, plan: dict) -> NewFile:
    """Write the rows ``table[order]`` as the new file ``rel`` (staged under the run's directory),
    with its file index and statistics; the file's :class:`NewFile`."""
    store, root = view.store, view.root
    return write_rows(store, root, rel, take(table, order), plan)


def write_rows(store, root: str, rel: str, part: pa.Table, plan: dict) -> NewFile:
    """The per-file step of the in-process run and of the Spark job's tasks."""
    staged = rel_join(store, root, f"{OPT_DIR}/{plan['oid']}/{rel}")
    sink = pa.BufferOutputStream()
    write_file(
        sink,
        part,
        plan["opts"],
        plan["schema"],
        sorting=plan["cluster_by"] if plan["strategy"] == "order" else None,
        flavour=plan["flavour"],
    )
    buf = sink.getvalue()
    store.makedirs(store.dirname(staged))
    store.write_atomic(staged, memoryview(buf))
    tail = memoryview(buf)[max(0, buf.size - _identity.WITNESS_BYTES) :]
    entry = {
        "rows": part.num_rows,
        "row_groups": math.ceil(part.num_rows / plan["opts"].row_group_rows),
        "clustered": {"by": list(plan["cluster_by"]), "strategy": plan["strategy"]},
        "stats": table_stats(part, plan["stat_cols"]),
        "witness": _identity.witness_of(tail),
    }
    spec = plan["spec"]
    if spec is not None:
        tools = plan["index_tools"]
        b = tools["builder"](plan["row_type"], spec.columns, part.num_rows)
        if b.writers:
            b.add(part)
        blob = b.finish()
        entry["file_index"] = tools["store_index"](store, root, rel, blob, spec.threshold, spec.digest, types=b.types)
    step("optimize.file.written", path=rel)
    return NewFile(
        rel,
        staged,
        part.num_rows,
        buf.size,
        entry,
        {c: part.column(c) for c in plan["gi_cols"] if c in part.schema.names},
    )


# ---------------------------------------------------------------- commits


def _commit_intent(ds, view, oid, new_rels, old_idents, cluster_by, strategy) -> None:
    run = {
        "new": sorted(new_rels),
        "old": old_idents,
        "started_ns": _now(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "state": "running",
        "by": list(cluster_by),
        "strategy": strategy,
    }

    def change(c, attempt):
        opt = dict(c.get(OPT_KEY) or {})
        pend = dict(opt.get(PENDING) or {})
        for other, r in pend.items():
            both = set(r.get("old") or ()) & set(old_idents)
            if both:
                raise OptimizeConflictError(
                    f"another optimize ({other}) is rewriting {sorted(both)[0]}; nothing of this one is visible"
                )
        pend[oid] = run
        opt[PENDING] = pend
        return dict(c, **{OPT_KEY: opt})

    _catalog.commit(ds.catalog, view.read_catalog(), change, counter=ds.io, what="the optimize's intent")


def _settled_identities(store, root, rels) -> Dict[str, _identity.Identity]:
    """The identities of the files just put in place, once settled (a change within the clock's
    tick after a rename could keep the change time)."""
    if store.local:
        time.sleep(_identity.SETTLE_NS / 1e9 + 0.002)
    out = {}
    for rel in rels:
        ident = _identity.current(store, rel_join(store, root, rel))
        if ident is None:
            raise OptimizeConflictError(f"new data file {rel} disappeared before the commit")
        out[rel] = ident
    return out


def _files_after(view, old, new, idents) -> list:
    """``[(path, identity, rows)]`` of the dataset after the commit, in the stable order."""
    gone = {f.path for f in old}
    counts = view.row_counts()
    out = [(f.path, f.identity, counts[f.path]) for f in view.files() if f.path not in gone]
    out += [(n.rel, idents[n.rel], n.rows) for n in new]
    return sorted(out, key=lambda x: x[0])


def _commit_swap(ds, view, oid, new, idents, old, base_entries, _fault):
    replaced_now = {f.path: f.identity.to_json() for f in old}

    def change(c, attempt):
        opt = dict(c.get(OPT_KEY) or {})
        pend = dict(opt.get(PENDING) or {})
        run = pend.get(oid)
        if run is None or run.get("state") != "running":
            raise OptimizeConflictError(
                f"the optimize {oid} was undone by another run while it wrote (it took longer than the grace "
                "period, or its process was thought gone); nothing of it is visible"
            )
        files = dict(c["files"])
        for f in old:
            e, b = files.get(f.path), base_entries.get(f.path)
            if e != b and (e or {}).get("deletion_vector") != (b or {}).get("deletion_vector"):
                raise OptimizeConflictError(
                    f"rows of {f.path} were deleted while the optimize ran: nothing of the optimize is visible "
                    "(the deletes are); run it again"
                )
            files.pop(f.path, None)
        for n in new:
            e = dict(n.entry)
            witness = e.pop("witness", None)
            e.update(idents[n.rel].to_json())
            if witness:
                e["witness"] = witness
            files[n.rel] = e
        del pend[oid]
        if pend:
            opt[PENDING] = pend
        else:
            opt.pop(PENDING, None)
        rep = dict(opt.get(REPLACED) or {})
        for p in list(rep):  # earlier runs' replaced files already moved away are forgotten
            if p not in replaced_now and _identity.current(ds.store, rel_join(ds.store, ds.root, p)) is None:
                del rep[p]
        rep.update(replaced_now)
        opt[REPLACED] = rep
        return dict(c, files=files, **{OPT_KEY: opt})

    return _catalog.commit(
        ds.catalog, _catalog.read(ds.catalog, ds.io), change, counter=ds.io, what="the optimize's commit", _fault=_fault
    )


def _rebuild_global_index(ds, view, column: str, after: list, new_by_rel: Mapping[str, NewFile]) -> None:
    """A new listing of ``column``'s global index over the files ``after`` the commit (one index
    file, built in this process as ``build_global_index_local`` does)."""
    import pyarrow.parquet as pq

    from ..io.checksum import block_checksums
    from ..globalindex import writer as gi_writer
    from .globalindex import _commit_listing, _listing_file, index_dir, listing_of

    store, root = ds.store, ds.root
    old_listing = listing_of(view, column)
    options = dict(old_listing.get("options") or {})
    dtype = old_listing["type"]
    base_version = _listing_file(root, column, store).read()[0]
    out_dir = index_dir(root, column, store)
    store.makedirs(out_dir)
    build_id = uuid.uuid4().hex[:12]
    w = gi_writer(dtype, {k: v for k, v in options.items() if k.startswith("bitmap-index.")})
    files = [(p, n) for p, _, n in after]
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    for (rel, _), base in zip(files, bases):
        pos = base
        nf = new_by_rel.get(rel)
        if nf is not None and column in nf.columns:  # (the in-process run keeps them)
            batches = nf.columns[column].chunks
        else:
            path = rel_join(store, root, rel)
            batches = (b.column(0) for b in pq.ParquetFile(store.open_input(path)).iter_batches(columns=[column]))
        for arr in batches:
            w.write_batch(arr, np.arange(pos, pos + len(arr), dtype=np.uint64))
            pos += len(arr)
    name = f"bitmap-{build_id}-00000.index"
    data, meta = w.finish()
    rows = []
    if data is not None:
        store.write_atomic(store.join(out_dir, name), data)
        rows = [
            {"file": name, "row_count": w.row_count, "meta": meta, "size": len(data), "checksum": block_checksums(data)}
        ]
    states = [ident for _, ident, _ in after]
    _commit_listing(
        store, root, column, dtype, build_id, bases[-1], options, 1, files, bases, states, rows, base_version
    )
