"""Global index builds of Paimon tables on Spark: every row range read, sorted and
written on the executors, one commit on the driver (:func:`.globalindex.create_global_index`
with ``spark=``).

The driver plans the row ranges (the ranges no index covers yet) and, for each, the
Parquet files that hold it (local, or in the table's object store: executors read and
write them through pypaimon's pickled pyarrow filesystem, no Hadoop connector needed).  An RDD
of the ranges makes one executor task per range (largest first, no shuffle): each reads its
range's column with pyarrow (row ids from the files' first row ids), sorts and cuts it into
files with the kernels, writes them under the table's ``index/`` directory and returns their
names, sizes, record counts and metas.  With ``paimon-fast.global-index.split-rows`` set
(unset by default: on a busy 2-core machine the exchange cost more than the second core
gained, see benchmarks/README.md), a range of more rows is spread over several tasks, one per group of its
data files: each sorts and groups its rows
and writes the grouping as an Arrow IPC run in ``index/.runs-<build id>``; then one task per
range merges the runs (a gather per key, no sort of rows) and writes the range's files, the
same bytes as a one-task build.  Ranges whose files need pypaimon's reader (deletion
vectors, column groups) are built on the driver.  Nothing is committed by the
executors: a failed job leaves at most orphan files (and the runs of a killed driver).
While a task builds, its Python worker allocates from its heap and keeps it for its next
build task (:class:`worker_heap`; ``paimon-fast.global-index.keep-worker-heap=false`` turns
that off).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from ..io.fsutil import write_all
from .globalindex_build import (
    _type,
    build_range_files,
    direct_read_plan,
    files_from_range_groups,
    range_groups,
    read_direct,
    read_groups_direct,
)

__all__ = ["build_on_spark", "spark_read_column", "OPT_SPLIT_ROWS", "OPT_KEEP_WORKER_HEAP"]

OPT_SPLIT_ROWS = "paimon-fast.global-index.split-rows"
OPT_KEEP_WORKER_HEAP = "paimon-fast.global-index.keep-worker-heap"


def _index_root(table):
    """``(store, index directory in it)``, or ``(None, None)`` when the table's files are not
    on a pyarrow filesystem."""
    from .globalindex_build import table_store

    root = table.path_factory().global_index_path_factory().global_index_root_path()
    store = table_store(table)
    if store is None:
        p = root[len("file://") :] if root.startswith("file://") else root
        return (None, None) if "://" in p else (None, p)
    return store, (
        root[len("file://") :] if store.local and root.startswith("file://") else table.file_io.to_filesystem_path(root)
    )


def build_on_spark(spark, table, field, dtype, tasks, options, per_range, index_type, progress=None):
    """Per task, ``[(file name, size, row count, meta, range start, range end)]`` (the files are written)."""
    from .globalindex_build import _new_file_name, _read_task, _write_index_file

    store, root = _index_root(table)
    specs, local = [], []
    for i, task in enumerate(tasks):
        files = direct_read_plan(table, field, task) if root is not None else None
        if files is None:
            local.append(i)
        else:
            specs.append({"task": i, "start": task.start, "end": task.end, "files": files})
    results = [[] for _ in tasks]
    if specs:
        _build_specs(spark, store, root, specs, results, dtype, options, per_range, index_type)
        if progress is not None:
            progress(len(specs), len(tasks), sum(f[2] for files in results for f in files))
    for i in local:  # ranges whose files need pypaimon's reader: on the driver
        col, rids = _read_task(table, field, tasks[i])
        if col is None:
            continue
        for lo, hi, data, meta, n in build_range_files(
            dtype, col, rids, options, per_range, index_type, tasks[i].start, tasks[i].end
        ):
            name = _new_file_name(index_type)
            _write_index_file(table, name, data)
            results[i].append((name, len(data), n, meta, lo, hi))
        if progress is not None:
            progress(len(specs) + local.index(i) + 1, len(tasks), 0)
    return results


def _range_rows(files, start, end) -> int:
    return sum(max(0, min(end + 1, a + n) - max(start, a)) for _, a, n, _ in files)


def _pieces(spec, split_rows: int, per_range: int, index_type: str):
    """The range's files cut into consecutive groups of about ``split_rows`` rows (at most one
    group per file), or None to build the range in one task (one group, a type not built in
    pieces, or a sharded (``multivalue``) range over several shards)."""
    start, end = spec["start"], spec["end"]
    files = sorted((f for f in spec["files"] if _range_rows([f], start, end)), key=lambda f: f[1])
    rows = _range_rows(files, start, end)
    k = min(len(files), -(-rows // split_rows))
    t = _type(index_type)
    if k < 2 or not t.builds_in_pieces or (t.sharded and start // per_range != end // per_range):
        return None
    cum = np.cumsum([_range_rows([f], start, end) for f in files])
    target = np.array([rows * j / k for j in range(1, k)])
    at = np.minimum(np.searchsorted(cum, target), len(cum) - 1)  # the file boundary nearest each target
    at = np.where((at > 0) & (np.abs(cum[at - 1] - target) <= np.abs(cum[at] - target)), at - 1, at)
    cuts = [c for c in np.unique(at + 1).tolist() if 0 < c < len(files)]
    return [files[a:b] for a, b in zip([0] + cuts, cuts + [len(files)])]


def _build_specs(spark, store, root, specs, results, dtype, options, per_range, index_type):
    """Build the ranges of ``specs`` on the executors, adding each file's row to ``results``.

    With ``paimon-fast.global-index.split-rows`` set, a range of more rows is read and sorted by
    several tasks, one per group of its data files, each writing its :class:`Groups` as an
    Arrow IPC run into ``.runs-<build id>`` beside the index; then one task per range
    merges its runs (no sort of rows) and writes the range's files, the same bytes as one
    task's build.  Other ranges are one task each."""
    import uuid

    from ..io.fs import Store
    from ..globalindex.runs import RUNS_PREFIX, drop_runs

    runs_store = store if store is not None else Store()
    runs_store.makedirs(root)
    from ..globalindex import registry

    prefixes = tuple(p for p in (registry.get(n).option_prefix for n in registry.names()) if p)
    opts = {k: v for k, v in options.items() if k.startswith(prefixes)}
    sorted_build = _type(index_type).sorted
    sc = spark.sparkContext
    keep_heap = _keep_heap_option(options)
    split_rows = _split_rows(options)
    runs = runs_store.join(root, f"{RUNS_PREFIX}{uuid.uuid4().hex[:12]}")
    jobs, split = [], {}
    for sp in specs:
        groups = _pieces(sp, split_rows, per_range, index_type) if split_rows else None
        if groups is None:
            jobs.append(("range", _range_rows(sp["files"], sp["start"], sp["end"]), sp))
        else:
            split[sp["task"]] = (sp, len(groups))
            jobs += [
                ("piece", _range_rows(g, sp["start"], sp["end"]), dict(sp, files=g, piece=k))
                for k, g in enumerate(groups)
            ]
    jobs.sort(key=lambda j: -j[1])  # largest first

    def write_files(spec, files):
        for lo, hi, data, meta, n in files:
            name = f"{index_type}-global-index-{uuid.uuid4()}.index"
            if store is None:
                path = os.path.join(root, name)
                tmp = path + ".tmp"
                with open(tmp, "wb") as fh:
                    write_all(fh, data)
                os.replace(tmp, path)
            else:  # a unique name, visible only through Paimon's commit
                store.write_atomic(store.join(root, name), data)
            yield spec["task"], (name, len(data), n, meta, lo, hi)

    def read(spec):
        got = read_direct([tuple(f) for f in spec["files"]], spec["start"], spec["end"], store)
        if got is None:
            raise RuntimeError(f"row range {spec['start']}..{spec['end']}: a data file stores _ROW_ID")
        return got

    def first(batch):
        with worker_heap(keep_heap):
            yield from _first(batch)

    def _first(batch):
        for kind, _, spec in batch:
            if sorted_build:  # each file's rows grouped as it is read
                got = read_groups_direct(
                    [tuple(f) for f in spec["files"]], spec["start"], spec["end"], dtype, store, index_type
                )
                if got is None:
                    raise RuntimeError(f"row range {spec['start']}..{spec['end']}: a data file stores _ROW_ID")
                if got[0] is None:
                    continue
                if kind == "range":
                    yield from write_files(
                        spec,
                        files_from_range_groups(dtype, [got], opts, per_range, index_type, spec["start"], spec["end"]),
                    )
                else:
                    _write_run(runs_store, runs, spec, got)
                continue
            col, rids = read(spec)
            if kind == "range":
                if col is not None:
                    yield from write_files(
                        spec,
                        build_range_files(dtype, col, rids, opts, per_range, index_type, spec["start"], spec["end"]),
                    )
            elif col is not None:
                _write_run(runs_store, runs, spec, range_groups(dtype, _typed(col, dtype), rids, index_type))

    def merge(batch):
        with worker_heap(keep_heap):
            yield from _merge(batch)

    def _merge(batch):
        for spec, k in batch:
            pieces = [p for p in (_read_run(runs_store, runs, spec, j) for j in range(k)) if p is not None]
            yield from write_files(
                spec, files_from_range_groups(dtype, pieces, opts, per_range, index_type, spec["start"], spec["end"])
            )

    try:
        if split:
            drop_stale_runs(runs_store, root)
            runs_store.makedirs(runs)
        rows = sc.parallelize(jobs, len(jobs)).mapPartitions(first).collect() if jobs else []
        if split:  # one merge per split range, largest first
            todo = sorted(split.values(), key=lambda sk: sk[0]["start"] - sk[0]["end"])
            rows += sc.parallelize(todo, len(todo)).mapPartitions(merge).collect()
    finally:
        if split:
            drop_runs(runs_store, root, runs)
    for i, row in rows:
        results[i].append(row)


# a .runs-<id> directory with nothing written for this long was left by a killed driver (a build
# in progress writes its runs within minutes): the next split build removes it
STALE_RUNS_SECONDS = 24 * 3600


def drop_stale_runs(store, root, older_than: float = None, now: float = None) -> list:
    """Remove the exchange directories (``.runs-<id>``) under the index directory ``root`` whose
    newest file is older than ``older_than`` seconds (default :data:`STALE_RUNS_SECONDS`; an
    empty one counts as old): what a driver killed during a split build leaves. A concurrent
    build's fresh runs are kept. Returns the names removed."""
    import time

    from ..globalindex.runs import RUNS_PREFIX

    limit = STALE_RUNS_SECONDS if older_than is None else older_than
    cutoff = ((time.time() if now is None else now) - limit) * 1e9
    newest = {}
    for e in store.list_files(root):
        top = e.rel.split("/", 1)[0]
        if top.startswith(RUNS_PREFIX) and "/" in e.rel:
            newest[top] = max(newest.get(top, 0), e.mtime_ns)
    if store.local and os.path.isdir(root):  # empty directories list no files
        for n in os.listdir(root):
            if n.startswith(RUNS_PREFIX) and os.path.isdir(os.path.join(root, n)):
                newest.setdefault(n, 0)
    gone = sorted(n for n, t in newest.items() if t < cutoff)
    for n in gone:
        if store.local:
            import shutil

            shutil.rmtree(os.path.join(root, n), ignore_errors=True)
        else:
            for e in store.list_files(store.join(root, n)):
                store.delete(e.path)
    return gone


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_GLIBC_MMAP_MAX = 65536  # glibc's default M_MMAP_MAX
_heap_kept = []


class worker_heap:
    """While a build task runs in a Spark Python worker, allocations come from the process's heap
    instead of fresh mappings, and the heap is not given back afterwards (glibc's ``mallopt``;
    elsewhere nothing changes), so the worker's next build task reuses the memory of its last.

    A build touches a few times its rows' bytes in fresh buffers (1e7 strings: about 800 MB),
    and a buffer mapped fresh is zeroed page by page; on a VM whose freed memory goes back to
    the hypervisor, memory touched again after a pause costs far more (about 3 ms a MB here
    for the first touch against 0.16 when reused): 1e7 rows, one range per task, reading and
    grouping 1.0-1.6 s against 0.5-0.9 s with the heap kept.  The worker keeps up to its
    largest build's peak (as the JVM keeps its heap); other code in the worker maps its large
    buffers as before, except that glibc no longer raises its threshold for mapping (128 KB)
    as it sees large buffers freed.  Off with ``paimon-fast.global-index.keep-worker-heap=false``."""

    def __init__(self, enabled: bool = True):
        self.mallopt = _mallopt() if enabled else None

    def __enter__(self):
        if self.mallopt is not None:
            if not _heap_kept:  # once per worker: freed heap memory stays for the next task
                self.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
                _heap_kept.append(True)
            self.mallopt(_M_MMAP_MAX, 0)
        return self

    def __exit__(self, *exc):
        if self.mallopt is not None:
            self.mallopt(_M_MMAP_MAX, _GLIBC_MMAP_MAX)
        return False


@functools.lru_cache(maxsize=None)
def _mallopt():
    """glibc's ``mallopt`` (``(param, value) -> int``), or None on another C library (where
    the same parameter numbers could mean something else)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only
        fn = libc.mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn


def _keep_heap_option(options) -> bool:
    """``paimon-fast.global-index.keep-worker-heap``: true (the default) or false."""
    from ..errors import OptionError

    v = str(options.get(OPT_KEEP_WORKER_HEAP, "true")).strip().lower()
    if v not in ("true", "false"):
        raise OptionError(f"{OPT_KEEP_WORKER_HEAP} must be true or false, got {options.get(OPT_KEEP_WORKER_HEAP)!r}")
    return v == "true"


def _split_rows(options) -> int:
    """``paimon-fast.global-index.split-rows``; unset: no range is split (0)."""
    from ..errors import OptionError

    v = options.get(OPT_SPLIT_ROWS)
    if v is None:
        return 0
    try:
        n = int(str(v).strip())
    except ValueError:
        n = 0
    if n <= 0:
        raise OptionError(f"{OPT_SPLIT_ROWS} must be a positive number of rows, got {v!r}")
    return n


def _typed(col, dtype):
    """``col``, or nulls of the column's type where none of the piece's files holds it."""
    import pyarrow as pa

    if col.type != pa.null():
        return col
    from ..core.types import DataType

    return pa.nulls(len(col), DataType.parse(dtype).to_arrow())


def _run_path(store, runs, spec, k):
    return store.join(runs, f"{spec['task']:06d}-{k:04d}.arrow")


def _write_run(store, runs, spec, groups_rows) -> None:
    """A piece's :class:`Groups` and row count as an Arrow IPC file: one batch, row 0 the
    null rows, row g + 1 key g (``key`` its bytes, ``hi`` / ``lo`` its order keys for
    non-string keys, ``rids`` its row ids), a last row the non-null row ids ascending
    (null when not known)."""
    import pyarrow as pa

    g, n = groups_rows
    nn = len(g.nulls)
    sorted_nn = g.nonnull if g.nonnull is not None else g.nulls[:0]
    rid_off = np.concatenate([[0], g.bounds + nn, [nn + len(g.rids) + len(sorted_nn)]]).astype(np.int64)
    key_off = np.concatenate([[0], g.key_off, g.key_off[-1:]]).astype(np.int64)
    valid = np.ones(g.keys + 2, dtype=bool)
    valid[-1] = g.nonnull is not None
    cols = {
        "key": pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), g.keys + 2, [None, pa.py_buffer(key_off), pa.py_buffer(g.key_data)]
        ),
        "rids": pa.Array.from_buffers(
            pa.large_list(pa.uint64()),
            g.keys + 2,
            [pa.array(valid).buffers()[1], pa.py_buffer(rid_off)],
            children=[pa.array(np.concatenate([g.nulls, g.rids, sorted_nn]))],
        ),
    }
    if g.ghi is not None:
        cols["hi"] = pa.array(np.concatenate([[0], g.ghi, [0]]).astype(np.int64))
        cols["lo"] = pa.array(np.concatenate([[0], g.glo, [0]]).astype(np.uint64))
    batch = pa.record_batch(list(cols.values()), names=list(cols))
    batch = batch.replace_schema_metadata({"rows": str(n)})
    path = _run_path(store, runs, spec, spec["piece"])
    out = pa.OSFile(path, "wb") if store.local else store.fs.open_output_stream(path)
    with out, pa.ipc.new_file(out, batch.schema) as w:
        w.write_batch(batch)


def _read_run(store, runs, spec, k):
    """``(Groups, rows)`` of piece ``k`` (:func:`_write_run`), or None when it had no rows."""
    import pyarrow as pa

    from ..globalindex.format import Groups

    path = _run_path(store, runs, spec, k)
    if not store.exists(path):
        return None
    with pa.memory_map(path) if store.local else store.fs.open_input_file(path) as f:
        r = pa.ipc.open_file(f)
        b = r.get_batch(0)
        n = int(r.schema.metadata[b"rows"])
    key, rids = b.column(0), b.column(1)
    ko = np.frombuffer(key.buffers()[1], np.int64)[: len(key)]
    kd = np.frombuffer(key.buffers()[2], np.uint8) if key.buffers()[2] is not None else np.zeros(0, np.uint8)
    ro = rids.offsets.to_numpy()
    rv = rids.values.to_numpy()
    nn, end = int(ro[1]), int(ro[-2])
    hi = lo = None
    if b.num_columns > 2:
        hi, lo = b.column(2).to_numpy()[1:-1], b.column(3).to_numpy()[1:-1]
    nonnull = rv[end:] if rids.is_valid()[len(rids) - 1].as_py() else None
    return Groups(rv[:nn], rv[nn:end], ro[1:-1] - nn, ko[1:], kd, hi, lo, nonnull), n


def spark_read_column(spark, table, column) -> int:
    """A Spark pass that only reads ``column`` of the table's data files (the build's
    baseline in the benchmarks); returns the number of files read."""
    rb = table.new_read_builder()
    paths = sorted(
        {
            f.file_path[len("file://") :] if f.file_path.startswith("file://") else f.file_path
            for s in rb.new_scan().plan().splits()
            for f in s.files
        }
    )
    spark.read.parquet(*paths).select(column).write.format("noop").mode("overwrite").save()
    return len(paths)
