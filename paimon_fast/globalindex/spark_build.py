"""Sorted build of a bitmap global index on Spark, and the row-id mapping back to files.

A dataset is a directory of Parquet files.  Its stable file order is the sorted
relative POSIX paths of the data files; a row's global id is the row count of the
earlier files plus its index within its file (Spark's ``_metadata.row_index``).

:func:`build_global_index` range-partitions the rows by key
(``sorted-index.records-per-range`` rows per range, default 10,000,000, at most
``sorted-index.build.max-parallelism`` ranges, default 4096), sorts within the
partitions, and writes one index file per range on the executors
(``mapInArrow``; temporary name + atomic rename).  The driver collects each file's
``SortedIndexFileMeta`` and writes the listing
``<dataset>/_global_index/<column>/index.json``.  :func:`load_global_index` reads it
back as a :class:`~paimon_fast.globalindex.GlobalIndex`, and
:func:`row_ids_to_file_rows` maps answered row ids to (data file, row indexes).
"""
from __future__ import annotations

import json
import math
import os
import uuid

import numpy as np

INDEX_DIR = "_global_index"
LISTING = "index.json"
OPT_RECORDS_PER_RANGE = "sorted-index.records-per-range"
OPT_MAX_PARALLELISM = "sorted-index.build.max-parallelism"
LEGACY_RECORDS_PER_RANGE = "btree-index.records-per-range"
LEGACY_MAX_PARALLELISM = "btree-index.build.max-parallelism"


def data_files(path):
    """``[(relative POSIX path, row count)]`` of the dataset's Parquet files in the stable order."""
    import pyarrow.parquet as pq

    out = []
    root = os.path.abspath(path)
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        for f in files:
            if f.endswith(".parquet") and not f.startswith(("_", ".")):
                out.append(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/"))
    out.sort()
    return [(rel, pq.ParquetFile(os.path.join(root, rel)).metadata.num_rows) for rel in out]


def _file_states(root, files) -> list:
    """``[(size, mtime_ns)]`` of the data files: recorded so a reader can tell a stale index."""
    out = []
    for rel, _ in files:
        st = os.stat(os.path.join(root, rel))
        out.append((st.st_size, st.st_mtime_ns))
    return out


def index_dir(path, column) -> str:
    return os.path.join(os.path.abspath(path), INDEX_DIR, column)


def _opt(options, key, legacy, default) -> int:
    for k in (key, legacy):
        if k in options:
            return int(str(options[k]).strip())
    return default


def build_global_index(spark, path, column, options=None, dtype=None):
    """Build the bitmap global index of ``column`` over the Parquet dataset at ``path``.

    ``options``: Paimon's names (``bitmap-index.*`` for the files,
    ``sorted-index.records-per-range`` and ``sorted-index.build.max-parallelism`` for
    the ranges).  ``dtype``: the Paimon type of the column (default: from the Parquet
    schema).  Returns the listing (dict) written to ``index.json``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from ..types import DataType

    options = {str(k): str(v) for k, v in dict(options or {}).items()}
    root = os.path.abspath(path)
    files = data_files(root)
    if not files:
        raise FileNotFoundError(f"no Parquet data files under {root}")
    states = _file_states(root, files)  # before the job: a file changed during the build reads as stale
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    total = bases[-1]
    if dtype is None:
        field = pq.read_schema(os.path.join(root, files[0][0])).field(column)
        dtype = str(DataType.from_arrow(field.type))
    dtype = str(DataType.parse(dtype))
    per_range = max(1, _opt(options, OPT_RECORDS_PER_RANGE, LEGACY_RECORDS_PER_RANGE, 10_000_000))
    max_par = max(1, _opt(options, OPT_MAX_PARALLELISM, LEGACY_MAX_PARALLELISM, 4096))
    ranges = max(1, min(max_par, math.ceil(total / per_range)))
    out_dir = index_dir(root, column)
    os.makedirs(out_dir, exist_ok=True)
    build_id = uuid.uuid4().hex[:12]
    # file URI (as Spark reports it) -> first global row id
    base_of = {}
    for (rel, _), b in zip(files, bases):
        base_of[os.path.join(root, rel)] = b
    index_options = {k: v for k, v in options.items() if k.startswith("bitmap-index.")}

    # global row id = base of the file + row index in the file, computed in the JVM: the file URI
    # Spark reports is mapped to its base through a literal map (no Python pass over the rows)
    path_of = F.expr("url_decode(regexp_replace(_metadata.file_path, '^file:(//)?', ''))")
    base_map = F.create_map(*[x for p_, b in base_of.items() for x in (F.lit(p_), F.lit(b).cast("long"))])
    df = (spark.read.parquet(*[os.path.join(root, rel) for rel, _ in files])
          .select(F.col(column).alias("k"), (base_map[path_of] + F.col("_metadata.row_index")).alias("rid")))
    ranged = df.repartitionByRange(ranges, F.col("k").asc_nulls_first()).sortWithinPartitions("k", "rid")
    from pyspark.sql.types import LongType, StructField, StructType

    _RESULT_ARROW = _result_arrow()

    def write_range(batch_iter):
        from pyspark import TaskContext

        from . import writer as gi_writer

        w = gi_writer(dtype, index_options)
        for b in batch_iter:
            if b.num_rows:
                rid = b.column("rid")
                if rid.null_count:
                    raise ValueError("a row of an unknown data file reached the global index build")
                w.write_batch(b.column("k"), rid.to_numpy(zero_copy_only=False).view(np.uint64))
        part = TaskContext.get().partitionId()
        name = f"bitmap-{build_id}-{part:05d}.index"
        meta = w.finish_to(os.path.join(out_dir, name))
        if meta is not None:
            yield pa.RecordBatch.from_pylist([{
                "file": name, "row_count": w.row_count, "meta": meta,
                "size": os.path.getsize(os.path.join(out_dir, name)), "range": part}], schema=_RESULT_ARROW)

    from pyspark.sql.types import BinaryType, IntegerType, StringType

    result_schema = StructType([StructField("file", StringType()), StructField("row_count", LongType()),
                                StructField("meta", BinaryType()), StructField("size", LongType()),
                                StructField("range", IntegerType())])
    rows = ranged.mapInArrow(write_range, result_schema).collect()
    rows = sorted(rows, key=lambda r: r["range"])
    return _commit_listing(root, column, dtype, build_id, total, options, ranges, files, bases, states, rows)


def _commit_listing(root, column, dtype, build_id, total, options, ranges, files, bases, states, rows):
    """Write ``index.json`` atomically and remove index files of earlier builds."""
    from . import write_atomic

    out_dir = index_dir(root, column)
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
    write_atomic(os.path.join(out_dir, LISTING), json.dumps(listing, indent=1).encode())
    # files of earlier builds are no longer listed: remove them
    keep = {f["file"] for f in listing["files"]} | {LISTING}
    for name in os.listdir(out_dir):
        if name not in keep and name.endswith(".index"):
            try:
                os.unlink(os.path.join(out_dir, name))
            except OSError:
                pass
    return listing


def build_global_index_local(path, column, options=None, dtype=None, batch_rows=1 << 17):
    """:func:`build_global_index` in this process, without Spark: one index file for the
    whole column (for small datasets and tests); the same listing and row ids."""
    import pyarrow.parquet as pq

    from ..types import DataType
    from . import writer as gi_writer

    options = {str(k): str(v) for k, v in dict(options or {}).items()}
    root = os.path.abspath(path)
    files = data_files(root)
    if not files:
        raise FileNotFoundError(f"no Parquet data files under {root}")
    states = _file_states(root, files)
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    if dtype is None:
        dtype = str(DataType.from_arrow(pq.read_schema(os.path.join(root, files[0][0])).field(column).type))
    dtype = str(DataType.parse(dtype))
    out_dir = index_dir(root, column)
    os.makedirs(out_dir, exist_ok=True)
    build_id = uuid.uuid4().hex[:12]
    w = gi_writer(dtype, {k: v for k, v in options.items() if k.startswith("bitmap-index.")})
    for (rel, _), base in zip(files, bases):
        pos = base
        for b in pq.ParquetFile(os.path.join(root, rel)).iter_batches(batch_size=batch_rows, columns=[column]):
            w.write_batch(b.column(0), np.arange(pos, pos + b.num_rows, dtype=np.uint64))
            pos += b.num_rows
    name = f"bitmap-{build_id}-00000.index"
    meta = w.finish_to(os.path.join(out_dir, name))
    rows = [] if meta is None else [{"file": name, "row_count": w.row_count, "meta": meta,
                                     "size": os.path.getsize(os.path.join(out_dir, name))}]
    return _commit_listing(root, column, dtype, build_id, bases[-1], options, 1, files, bases, states, rows)


def _result_arrow():
    import pyarrow as pa

    return pa.schema([("file", pa.string()), ("row_count", pa.int64()), ("meta", pa.binary()),
                      ("size", pa.int64()), ("range", pa.int32())])


def read_listing(path, column) -> dict:
    with open(os.path.join(index_dir(path, column), LISTING), encoding="utf-8") as f:
        return json.load(f)


def has_global_index(path, column) -> bool:
    return os.path.exists(os.path.join(index_dir(path, column), LISTING))


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


def load_global_index(path, column, options=None):
    """The :class:`~paimon_fast.globalindex.GlobalIndex` of a built column (files pruned by meta)."""
    from . import GlobalIndex

    listing = read_listing(path, column)
    d = index_dir(path, column)
    files = [(os.path.join(d, f["file"]), bytes.fromhex(f["meta"])) for f in listing["files"]]
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
