"""Sorted build of a Parquet dataset's bitmap global index on Spark.

The index's files, listing and row ids are those of
:mod:`paimon_fast.tables.globalindex` (which also builds it in this process).

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

The exchange directory is removed at the end (after a crash, by ``paimon-fast gc``
once it is older than the grace period); like the index files, it must be on storage every executor reaches.
Exchanging arrays through files costs far less than Spark's shuffle of rows,
which converts every row from Parquet to Spark's format and then to Arrow (see
``benchmarks/bench_globalindex.py``).  The driver collects each file's
``SortedIndexFileMeta`` and commits the listing
``<dataset>/_global_index/<column>/index.json``.  Datasets on object stores or HDFS:
the tasks read and write through the store (no Hadoop connector needed).
"""

from __future__ import annotations

import math
import os
import uuid

import numpy as np

from ..io.fs import resolve
from ..globalindex.runs import RUNS_PREFIX, drop_runs
from .globalindex import _commit_listing, _file_states, _listing_file, data_files, index_dir

OPT_RECORDS_PER_RANGE = "sorted-index.records-per-range"
OPT_MAX_PARALLELISM = "sorted-index.build.max-parallelism"
LEGACY_RECORDS_PER_RANGE = "btree-index.records-per-range"
LEGACY_MAX_PARALLELISM = "btree-index.build.max-parallelism"
_TASK_BYTES = 128 << 20


def _opt(options, key, legacy, default) -> int:
    for k in (key, legacy):
        if k in options:
            return int(str(options[k]).strip())
    return default


def build_global_index(spark, path, column, options=None, dtype=None, filesystem=None, index_type="bitmap"):
    """Build the bitmap global index of ``column`` over the Parquet dataset at ``path``
    (a path or URI; ``filesystem``: see :func:`paimon_fast.io.fs.resolve`); ``index_type``:
    another type of :mod:`paimon_fast.globalindex.registry` over a column of atomic type (its
    files cut by key ranges as the bitmap's; the executors must know the type too, so it is
    registered by a module they import).

    ``options``: Paimon's names (``bitmap-index.*`` for the files,
    ``sorted-index.records-per-range`` and ``sorted-index.build.max-parallelism`` for
    the ranges).  ``dtype``: the Paimon type of the column (default: from the Parquet
    schema).  Returns the listing (dict) written to ``index.json``.
    """
    import pyarrow.parquet as pq

    from ..core.types import DataType
    from ..globalindex import registry

    itype = registry.get(index_type)
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
    if itype.column != "scalar":  # key ranges need comparable column values: one range
        ranges = 1
    out_dir = index_dir(root, column, store)
    store.makedirs(out_dir)  # exchange files of an interrupted build are gc's (a young one may be a running build's)
    build_id = uuid.uuid4().hex[:12]
    index_options = itype.options(options)
    # (file number, path, first row id, rows), packed into read tasks of similar sizes
    jobs = [(i, store.join(root, rel), int(b), int(n)) for i, ((rel, n), b) in enumerate(zip(files, bases))]
    sc = spark.sparkContext
    groups = _pack(jobs, [st.size for st in states], sc.defaultParallelism)
    src = (store, column, arrow_type, dtype, index_type)

    bounds = []
    if ranges > 1:  # key range bounds from a sample of every file, weighted by its rows
        per_row = 3 * min(20 * ranges, 1_000_000) / max(total, 1)
        got = (
            sc.parallelize(groups, len(groups))
            .mapPartitions(lambda it: (x for g in it for x in _sample_files(src, g, per_row)))
            .collect()
        )
        bounds = _bounds(got, ranges)
    nr = len(bounds) + 1
    runs = store.join(out_dir, f"{RUNS_PREFIX}{build_id}")

    def merge(numbers):
        for r in numbers:
            name = f"{index_type}-{build_id}-{r:05d}.index"
            row = _merge_range(src, index_options, jobs, runs if nr > 1 else None, r, store.join(out_dir, name))
            if row is not None:
                yield dict(row, file=name, range=r)

    try:
        if nr > 1:  # every file's rows cut into the key ranges, exchanged through files beside the index
            store.makedirs(runs)
            sc.parallelize(groups, len(groups)).mapPartitions(
                lambda it: (n for g in it for n in _split_files(src, g, bounds, runs))
            ).collect()
        rows = sc.parallelize(range(nr), nr).mapPartitions(merge).collect()
    finally:
        drop_runs(store, out_dir, runs)
    rows = sorted(rows, key=lambda r: r["range"])
    return _commit_listing(
        store,
        root,
        column,
        dtype,
        build_id,
        total,
        options,
        ranges,
        files,
        bases,
        states,
        rows,
        base_version,
        index_type=index_type,
    )


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

    store, column, arrow_type = src[:3]
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
    from ..globalindex.keys import KeyCodec

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

    from .._kernels import load

    _k = load("globalindex")
    from ..core.types import binary_buffers

    lead = 1 if bounds and bounds[0] is None else 0
    real = bounds[lead:]
    arr, valid = codec.column(arr)
    if codec.is_string:
        off, data = binary_buffers(arr)
        rank, koff, kdata = _k.string_ranks(
            np.ascontiguousarray(off), data, None if valid is None else valid.view(np.uint8)
        )
        kb = kdata.tobytes() if isinstance(kdata, np.ndarray) else bytes(kdata)
        koff = koff.tolist()

        class _Keys:  # the sorted distinct keys, as a sequence for bisect
            def __len__(self):
                return len(koff) - 1

            def __getitem__(self, g):
                return kb[koff[g] : koff[g + 1]]

        cuts = np.array([bisect.bisect_right(_Keys(), b) for b in real], np.int64)
        # the range of each distinct key, gathered by rank (nulls, rank -1, are set below)
        lut = np.searchsorted(cuts, np.arange(len(koff) - 1), side="right") + lead
        out = lut[rank[: len(arr)]] if len(lut) else np.zeros(len(arr), np.int64)
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

    from ..globalindex.keys import KeyCodec

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
                sel = order[ends[r] : ends[r + 1]]
                w.write_batch(pa.record_batch([col.take(pa.array(sel)), pa.array(rid[sel])], schema=schema))
        if store.local:
            os.replace(dst + ".tmp", dst)
        yield n


def _merge_range(src, index_options, files, runs, r, path):
    """Write key range ``r``'s index file from every file's batch ``r`` (``runs``), or from the
    data files themselves when there is one range (``runs`` None).  None for no rows."""
    import pyarrow as pa

    from ..globalindex import writer as gi_writer

    store = src[0]
    w = gi_writer(src[3], index_options, index_type=src[4])
    for i, data_path, base, n in files:
        if runs is None:
            w.write_batch(_read_column(src, data_path, n), np.arange(base, base + n, dtype=np.uint64))
            continue
        p = store.join(runs, f"{i:08d}.arrow")
        with pa.memory_map(p) if store.local else store.fs.open_input_file(p) as f:
            b = pa.ipc.open_file(f).get_batch(r)
            if b.num_rows:
                w.write_batch(b.column(0), b.column(1).to_numpy())
    data, meta = w.finish()
    if data is None:
        return None
    store.write_atomic(path, data)
    from ..io.checksum import block_checksums

    return {"row_count": w.row_count, "meta": meta, "size": len(data), "checksum": block_checksums(data)}
