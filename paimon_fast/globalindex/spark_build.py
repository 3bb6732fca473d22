"""Sorted build of a bitmap global index on Spark, and the row-id mapping back to files.

A dataset is a directory of Parquet files.  Its stable file order is the sorted
relative POSIX paths of the data files; a row's global id is the row count of the
earlier files plus its index within its file (Spark's ``_metadata.row_index``).

:func:`build_global_index` cuts the rows into key ranges
(``sorted-index.records-per-range`` rows per range, default 10,000,000, at most
``sorted-index.build.max-parallelism`` ranges, default 4096) and writes one index
file per range, without a Spark shuffle and without Spark's Parquet reader.  Three
jobs of Python tasks (RDDs), each data file read with pyarrow on the executors:

1. sample: a few random keys of every file, weighted by its rows; the driver picks
   the range bounds from them as Spark's ``RangePartitioner`` does (nulls first; a
   key never spans two ranges);
2. split: every file's rows (key, global row id) cut into the ranges and written as
   one Arrow IPC file per data file, one batch per range, in a hidden directory
   beside the index (``.runs-<build id>``);
3. merge: one task per range reads its batch of every IPC file; the writer sorts
   them by key and row id with its kernel and the index file is written.  With one
   range, its task reads the data files directly.

The exchange directory is removed at the end (and by the next build after a
crash); like the index files, it must be on storage every executor reaches.
Exchanging arrays through files costs far less than Spark's shuffle of rows,
which converts every row from Parquet to Spark's format and then to Arrow (see
``benchmarks/bench_globalindex.py``).  The driver collects each file's
``SortedIndexFileMeta`` and writes the listing
``<dataset>/_global_index/<column>/index.json``.  Datasets on object stores or HDFS
(``s3://...`` or a ``filesystem``; :mod:`paimon_fast.fs`): the tasks read and write
through the store (no Hadoop connector needed), the index files uniquely named;
the listing is the commit object, a new immutable version created with a
conditional PUT (:class:`paimon_fast.fs.CommitFile`), so a killed build leaves the
previous listing and orphans ``paimon-fast gc`` removes.  :func:`load_global_index` reads it
back as a :class:`~paimon_fast.globalindex.GlobalIndex`, and
:func:`row_ids_to_file_rows` maps answered row ids to (data file, row indexes).
"""
from __future__ import annotations

import json
import math
import os
import uuid

import numpy as np

from ..fs import CommitFile, LazySource, resolve

INDEX_DIR = "_global_index"
LISTING = "index.json"
OPT_RECORDS_PER_RANGE = "sorted-index.records-per-range"
OPT_MAX_PARALLELISM = "sorted-index.build.max-parallelism"
LEGACY_RECORDS_PER_RANGE = "btree-index.records-per-range"
LEGACY_MAX_PARALLELISM = "btree-index.build.max-parallelism"


def _listed(store, root):
    from ..tables.parquet import is_data_file_name

    return store.list_files(root, skip_dir=lambda d: d.startswith(("_", ".")), keep=is_data_file_name)


def data_files(path, filesystem=None):
    """``[(relative POSIX path, row count)]`` of the dataset's Parquet files in the stable order."""
    import pyarrow.parquet as pq

    store, root = resolve(path, filesystem)
    return [(e.rel, pq.ParquetFile(store.open_input(e.path)).metadata.num_rows) for e in _listed(store, root)]


def _file_states(store, root, files) -> list:
    """``[(size, mtime_ns)]`` of the data files: recorded so a reader can tell a stale index."""
    out = []
    for rel, _ in files:
        st = store.stat(store.join(root, *rel.split("/")))
        if st is None:
            raise FileNotFoundError(store.uri(store.join(root, rel)))
        out.append(st)
    return out


def index_dir(path, column, filesystem=None) -> str:
    store, root = resolve(path, filesystem)
    return store.join(root, INDEX_DIR, column)


def _listing_file(path, column, filesystem=None) -> CommitFile:
    store, root = resolve(path, filesystem)
    return CommitFile(store, store.join(root, INDEX_DIR, column), LISTING)


def _opt(options, key, legacy, default) -> int:
    for k in (key, legacy):
        if k in options:
            return int(str(options[k]).strip())
    return default


def build_global_index(spark, path, column, options=None, dtype=None, filesystem=None):
    """Build the bitmap global index of ``column`` over the Parquet dataset at ``path``
    (a path or URI; ``filesystem``: see :func:`paimon_fast.fs.resolve`).

    ``options``: Paimon's names (``bitmap-index.*`` for the files,
    ``sorted-index.records-per-range`` and ``sorted-index.build.max-parallelism`` for
    the ranges).  ``dtype``: the Paimon type of the column (default: from the Parquet
    schema).  Returns the listing (dict) written to ``index.json``.
    """
    import pyarrow.parquet as pq

    from ..types import DataType

    options = {str(k): str(v) for k, v in dict(options or {}).items()}
    store, root = resolve(path, filesystem)
    listing_file = _listing_file(root, column, store)
    base_version = listing_file.read()[0]
    files = data_files(root, store)
    if not files:
        raise FileNotFoundError(f"no Parquet data files under {store.uri(root)}")
    states = _file_states(store, root, files)  # before the job: a file changed during the build reads as stale
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    total = bases[-1]
    schema = pq.read_schema(store.open_input(store.join(root, files[0][0])))
    if dtype is None:
        dtype = str(DataType.from_arrow(schema.field(column).type))
    dtype = str(DataType.parse(dtype))
    arrow_type = schema.field(column).type if column in schema.names else DataType.parse(dtype).to_arrow()
    per_range = max(1, _opt(options, OPT_RECORDS_PER_RANGE, LEGACY_RECORDS_PER_RANGE, 10_000_000))
    max_par = max(1, _opt(options, OPT_MAX_PARALLELISM, LEGACY_MAX_PARALLELISM, 4096))
    ranges = max(1, min(max_par, math.ceil(total / per_range)))
    out_dir = index_dir(root, column, store)
    store.makedirs(out_dir)
    _drop_runs(store, out_dir)  # exchange files of an interrupted build
    build_id = uuid.uuid4().hex[:12]
    index_options = {k: v for k, v in options.items() if k.startswith("bitmap-index.")}
    # (file number, path, first row id, rows), packed into read tasks of similar sizes
    jobs = [(i, store.join(root, rel), int(b), int(n)) for i, ((rel, n), b) in enumerate(zip(files, bases))]
    sc = spark.sparkContext
    groups = _pack(jobs, [st[0] for st in states], sc.defaultParallelism)
    src = (store, column, arrow_type, dtype)

    bounds = []
    if ranges > 1:  # key range bounds from a sample of every file, weighted by its rows
        per_row = 3 * min(20 * ranges, 1_000_000) / max(total, 1)
        got = sc.parallelize(groups, len(groups)).mapPartitions(
            lambda it: (x for g in it for x in _sample_files(src, g, per_row))).collect()
        bounds = _bounds(got, ranges)
    nr = len(bounds) + 1
    runs = store.join(out_dir, f"{RUNS_PREFIX}{build_id}")

    def merge(numbers):
        for r in numbers:
            name = f"bitmap-{build_id}-{r:05d}.index"
            row = _merge_range(src, index_options, jobs, runs if nr > 1 else None, r, store.join(out_dir, name))
            if row is not None:
                yield dict(row, file=name, range=r)

    try:
        if nr > 1:  # every file's rows cut into the key ranges, exchanged through files beside the index
            store.makedirs(runs)
            sc.parallelize(groups, len(groups)).mapPartitions(
                lambda it: (n for g in it for n in _split_files(src, g, bounds, runs))).collect()
        rows = sc.parallelize(range(nr), nr).mapPartitions(merge).collect()
    finally:
        _drop_runs(store, out_dir, runs)
    rows = sorted(rows, key=lambda r: r["range"])
    return _commit_listing(store, root, column, dtype, build_id, total, options, ranges, files, bases, states, rows,
                           base_version)


RUNS_PREFIX = ".runs-"  # the exchange directory of a build in progress (or killed)
_TASK_BYTES = 128 << 20


def _drop_runs(store, out_dir, runs=None) -> None:
    """Remove the exchange directory ``runs`` (default: every one under ``out_dir``)."""
    if store.local:
        import shutil

        names = [os.path.basename(runs)] if runs else os.listdir(out_dir)
        for n in (n for n in names if n.startswith(RUNS_PREFIX)):
            shutil.rmtree(os.path.join(out_dir, n), ignore_errors=True)
        return
    prefix = store.basename(runs) + "/" if runs else RUNS_PREFIX
    for e in store.list_files(out_dir):
        if e.rel.startswith(prefix):
            store.delete(e.path)


def _pack(jobs, sizes, parallelism) -> list:
    """The files in read tasks: at least 2 per core (at most one per file) and about
    128 MiB of Parquet each, largest files first into the lightest task."""
    total = sum(sizes)
    n = max(1, min(len(jobs), max(2 * max(1, parallelism), math.ceil(total / _TASK_BYTES))))
    tasks, load = [[] for _ in range(n)], [0] * n
    for j, size in sorted(zip(jobs, sizes), key=lambda x: -x[1]):
        i = load.index(min(load))
        tasks[i].append(j)
        load[i] += size
    return [sorted(t) for t in tasks if t]


def _read_column(src, path, rows):
    """One data file's column (all null where the file lacks it), read with pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store, column, arrow_type, _ = src
    pf = pq.ParquetFile(store.open_input(path))
    if column not in pf.schema_arrow.names:
        return pa.nulls(rows, arrow_type)
    col = pf.read(columns=[column], use_threads=False).column(0)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(col) != rows:
        raise RuntimeError(f"{store.uri(path)} has {len(col)} rows, {rows} when the build started")
    return col


def _order_keys(codec, arr, rows=None):
    """Sortable Python keys of ``arr``'s rows (``rows``: their indexes, default all): None
    for null, UTF-8 bytes for strings, ``(hi, lo)`` for the other types (Java's order)."""
    import pyarrow as pa

    if rows is not None:
        arr = arr.take(pa.array(rows, pa.int64()))
    arr, _ = codec.column(arr)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    if codec.is_string:
        vals = arr.cast(pa.large_binary()).to_pylist()
    else:
        hi, lo = codec.order_keys(arr)
        vals = list(zip(hi.tolist(), lo.tolist()))
    return [v if ok else None for v, ok in zip(vals, valid.tolist())]


def _sample_files(src, files, per_row):
    """``(key, weight)`` samples of each file: about ``per_row`` x rows keys of random rows
    (a fixed seed per file), each weighing rows / samples."""
    from .keys import KeyCodec

    codec = KeyCodec(src[3])
    for i, path, _, n in files:
        k = min(n, math.ceil(per_row * n))
        if k == 0:
            continue
        rows = np.sort(np.random.default_rng(i).choice(n, size=k, replace=False))
        w = n / k
        yield from ((key, w) for key in _order_keys(codec, _read_column(src, path, n), rows))


def _bounds(samples, ranges) -> list:
    """At most ``ranges - 1`` ascending distinct keys cutting the weighted samples into
    ranges of equal weight (Spark's ``RangePartitioner`` rule; None = the null key)."""
    ordered = sorted(samples, key=lambda kw: (kw[0] is not None, kw[0] if kw[0] is not None else b""))
    step = sum(w for _, w in ordered) / ranges
    out, cum, target = [], 0.0, step
    for key, w in ordered:
        if len(out) == ranges - 1:
            break
        cum += w
        if cum >= target and (not out or _key_gt(key, out[-1])):
            out.append(key)
            target += step
    return out


def _key_gt(a, b) -> bool:
    return a is not None and (b is None or a > b)


def _range_ids(codec, arr, bounds) -> np.ndarray:
    """The key range of every row: the number of bounds below its key (a key equal to a
    bound falls in the range that bound ends; nulls in range 0)."""
    import bisect

    from ..types import binary_buffers
    from .format import _k

    lead = 1 if bounds and bounds[0] is None else 0
    real = bounds[lead:]
    arr, valid = codec.column(arr)
    if codec.is_string:
        off, data = binary_buffers(arr)
        rank, koff, kdata = _k.string_ranks(np.ascontiguousarray(off), data,
                                            None if valid is None else valid.view(np.uint8))
        kb = kdata.tobytes() if isinstance(kdata, np.ndarray) else bytes(kdata)
        koff = koff.tolist()

        class _Keys:  # the sorted distinct keys, as a sequence for bisect
            def __len__(self):
                return len(koff) - 1

            def __getitem__(self, g):
                return kb[koff[g]:koff[g + 1]]

        cuts = np.array([bisect.bisect_right(_Keys(), b) for b in real], np.int64)
        # the range of each distinct key, gathered by rank (nulls, rank -1, are set below)
        lut = np.searchsorted(cuts, np.arange(len(koff) - 1), side="right") + lead
        out = lut[rank[:len(arr)]] if len(lut) else np.zeros(len(arr), np.int64)
    else:
        hi, lo = codec.order_keys(arr)
        bh = np.array([b[0] for b in real], np.int64)
        bl = np.array([b[1] for b in real], np.uint64)
        out = np.searchsorted(bh, hi, side="left")
        while len(bh):  # bounds with the same hi: count those whose lo is below the row's
            at = np.minimum(out, len(bh) - 1)
            more = (out < len(bh)) & (bh[at] == hi) & (bl[at] < lo)
            if not more.any():
                break
            out += more
        out = out + lead
    if valid is not None:
        out[~valid] = 0
    return out.astype(np.int64, copy=False)


def _split_files(src, files, bounds, runs):
    """Cut each file's rows into the key ranges: ``<runs>/<file number>.arrow``, an Arrow IPC
    file with one batch per range (key, global row id); yields the rows done."""
    import pyarrow as pa

    from .keys import KeyCodec

    store = src[0]
    codec = KeyCodec(src[3])
    nr = len(bounds) + 1
    for i, path, base, n in files:
        col = _read_column(src, path, n)
        rg = _range_ids(codec, col, bounds)
        # a stable sort of 16-bit range numbers is numpy's radix sort
        order = np.argsort(rg.astype(np.uint16) if nr < 1 << 16 else rg, kind="stable")
        ends = np.concatenate([[0], np.cumsum(np.bincount(rg, minlength=nr))])
        rid = np.arange(base, base + n, dtype=np.uint64)
        schema = pa.schema([("k", col.type), ("rid", pa.uint64())])
        dst = store.join(runs, f"{i:08d}.arrow")
        # locally a temporary name and a rename (no fsync: the files live for one build); on
        # other stores one upload
        out = pa.OSFile(dst + ".tmp", "wb") if store.local else store.fs.open_output_stream(dst)
        with out, pa.ipc.new_file(out, schema) as w:
            for r in range(nr):
                sel = order[ends[r]:ends[r + 1]]
                w.write_batch(pa.record_batch([col.take(pa.array(sel)), pa.array(rid[sel])], schema=schema))
        if store.local:
            os.replace(dst + ".tmp", dst)
        yield n


def _merge_range(src, index_options, files, runs, r, path):
    """Write key range ``r``'s index file from every file's batch ``r`` (``runs``), or from the
    data files themselves when there is one range (``runs`` None).  None for no rows."""
    import pyarrow as pa

    from . import writer as gi_writer

    store = src[0]
    w = gi_writer(src[3], index_options)
    for i, data_path, base, n in files:
        if runs is None:
            w.write_batch(_read_column(src, data_path, n), np.arange(base, base + n, dtype=np.uint64))
            continue
        p = store.join(runs, f"{i:08d}.arrow")
        with (pa.memory_map(p) if store.local else store.fs.open_input_file(p)) as f:
            b = pa.ipc.open_file(f).get_batch(r)
            if b.num_rows:
                w.write_batch(b.column(0), b.column(1).to_numpy())
    data, meta = w.finish()
    if data is None:
        return None
    store.write_atomic(path, data)
    return {"row_count": w.row_count, "meta": meta, "size": len(data)}


def _commit_listing(store, root, column, dtype, build_id, total, options, ranges, files, bases, states, rows,
                    base_version=None):
    """Commit ``index.json`` (atomically; a new version on versioned stores, refused if another
    build committed since ``base_version``) and remove index files of earlier builds."""
    out_dir = index_dir(root, column, store)
    listing = {
        "format": "paimon-fast bitmap global index listing",
        "index_type": "bitmap",
        "column": column,
        "type": dtype,
        "build_id": build_id,
        "total_row_count": total,
        "options": options,
        "ranges": ranges,
        "data_files": [{"path": rel, "row_count": n, "first_row_id": b, "size": st[0], "mtime_ns": st[1]}
                       for (rel, n), b, st in zip(files, bases, states)],
        "files": [{"file": r["file"], "row_count": r["row_count"], "meta": bytes(r["meta"]).hex(),
                   "size": r["size"]} for r in rows],
    }
    lf = _listing_file(root, column, store)
    prev = lf.read()[1] if not store.local else None
    lf.write(json.dumps(listing, indent=1).encode(), base_version)
    # files of earlier builds are no longer listed: remove them (on versioned stores the previous
    # listing's files only: files of a concurrent or killed build are left to paimon-fast gc)
    keep = {f["file"] for f in listing["files"]} | {LISTING}
    if store.local:
        gone = [e.rel for e in store.list_files(out_dir, recursive=False) if e.rel.endswith(".index")]
    else:
        gone = [f["file"] for f in json.loads(prev.decode("utf-8")).get("files", [])] if prev else []
    for name in gone:
        if name not in keep:
            store.delete(store.join(out_dir, name))
    return listing


def build_global_index_local(path, column, options=None, dtype=None, batch_rows=1 << 17, filesystem=None):
    """:func:`build_global_index` in this process, without Spark: one index file for the
    whole column (for small datasets and tests); the same listing and row ids."""
    import pyarrow.parquet as pq

    from ..types import DataType
    from . import writer as gi_writer

    options = {str(k): str(v) for k, v in dict(options or {}).items()}
    store, root = resolve(path, filesystem)
    base_version = _listing_file(root, column, store).read()[0]
    files = data_files(root, store)
    if not files:
        raise FileNotFoundError(f"no Parquet data files under {store.uri(root)}")
    states = _file_states(store, root, files)
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    if dtype is None:
        dtype = str(DataType.from_arrow(pq.read_schema(store.open_input(store.join(root, files[0][0])))
                                        .field(column).type))
    dtype = str(DataType.parse(dtype))
    out_dir = index_dir(root, column, store)
    store.makedirs(out_dir)
    build_id = uuid.uuid4().hex[:12]
    w = gi_writer(dtype, {k: v for k, v in options.items() if k.startswith("bitmap-index.")})
    for (rel, _), base in zip(files, bases):
        pos = base
        for b in pq.ParquetFile(store.open_input(store.join(root, rel))).iter_batches(batch_size=batch_rows,
                                                                                     columns=[column]):
            w.write_batch(b.column(0), np.arange(pos, pos + b.num_rows, dtype=np.uint64))
            pos += b.num_rows
    name = f"bitmap-{build_id}-00000.index"
    data, meta = w.finish()
    if data is not None:
        store.write_atomic(store.join(out_dir, name), data)
    rows = [] if data is None else [{"file": name, "row_count": w.row_count, "meta": meta, "size": len(data)}]
    return _commit_listing(store, root, column, dtype, build_id, bases[-1], options, 1, files, bases, states, rows,
                           base_version)


def read_listing(path, column, filesystem=None) -> dict:
    data = _listing_file(path, column, filesystem).read()[1]
    if data is None:
        store, root = resolve(path, filesystem)
        raise FileNotFoundError(f"no global index listing for {column!r} in {store.uri(root)}")
    return json.loads(data.decode("utf-8"))


def has_global_index(path, column, filesystem=None) -> bool:
    store, root = resolve(path, filesystem)
    if store.local:
        return os.path.exists(os.path.join(root, INDEX_DIR, column, LISTING))
    return bool(_listing_file(root, column, store).versions())


def listing_is_current(listing, files) -> bool:
    """Whether ``listing`` was built over exactly ``files`` (``DataFile`` objects in the stable
    order, or ``(path, size, mtime_ns)`` tuples): same paths, sizes and modification times.
    A listing without recorded sizes / times is never current."""
    recorded = listing.get("data_files") or []
    if len(recorded) != len(files):
        return False
    for r, f in zip(recorded, files):
        cur = (f.path, f.size, f.mtime_ns) if hasattr(f, "path") else tuple(f)
        if "size" not in r or "mtime_ns" not in r or (r["path"], r["size"], r["mtime_ns"]) != cur:
            return False
    return True


def load_global_index(path, column, options=None, filesystem=None, counter=None):
    """The :class:`~paimon_fast.globalindex.GlobalIndex` of a built column (files pruned by meta;
    a file is opened, with ranged reads counted in ``counter``, only when a query needs it)."""
    from . import GlobalIndex

    store, root = resolve(path, filesystem)
    listing = read_listing(root, column, store)
    d = index_dir(root, column, store)
    if store.local and counter is None:
        files = [(os.path.join(d, f["file"]), bytes.fromhex(f["meta"])) for f in listing["files"]]
    else:
        files = [(LazySource(store, store.join(d, f["file"]), f.get("size"), counter), bytes.fromhex(f["meta"]))
                 for f in listing["files"]]
    return GlobalIndex(files, listing["type"], options or listing.get("options") or {},
                       total_row_count=listing["total_row_count"])


def row_ids_to_file_rows(row_ids, listing) -> dict:
    """Map global row ids (BitMap64 or array) to ``{relative data file: int64 row indexes}``."""
    if hasattr(row_ids, "to_array"):
        ids = np.frombuffer(row_ids.to_array(), dtype=np.uint64).astype(np.int64) if len(row_ids) else np.zeros(0, np.int64)
    else:
        ids = np.asarray(row_ids, dtype=np.int64)
    files = listing["data_files"]
    firsts = np.array([f["first_row_id"] for f in files], dtype=np.int64)
    which = np.searchsorted(firsts, ids, side="right") - 1
    out = {}
    for fi in np.unique(which).tolist():
        if fi < 0:
            continue
        sel = ids[which == fi] - firsts[fi]
        sel = sel[sel < files[fi]["row_count"]]
        if len(sel):
            out[files[fi]["path"]] = sel
    return out
