"""The fast path's plan of a Paimon table: the live data files of its latest snapshot.

:func:`check_table` refuses (:class:`~.pruning.Fallback`) a table the fast path does not
cover; :func:`get_plan` reads the snapshot's manifest lists and manifests (:mod:`.avro`),
drops ADD entries cancelled by DELETE entries, attaches each file's path and deletion
vector and keeps the result per ``(table path, snapshot id, its manifest lists and time)``;
``paimon_fast.paimon.fastpath.clear_plan_cache()`` drops it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Tuple

from .avro import read_avro
from .pruning import Fallback


class _File:
    """One live data file of the snapshot (what the fast path needs of a manifest entry)."""

    __slots__ = (
        "partition",
        "bucket",
        "name",
        "rows",
        "schema_id",
        "level",
        "extra",
        "embedded",
        "external",
        "deletion",
        "dir",
        "fsdir",
        "raw",
        "layout",
        "first_row_id",
        "write_cols",
        "stored_row_ids",
    )

    def __init__(self, rec):
        f = rec["_FILE"]
        self.partition = rec["_PARTITION"]
        self.bucket = rec["_BUCKET"]
        self.name = f["_FILE_NAME"]
        self.rows = f["_ROW_COUNT"]
        self.schema_id = f["_SCHEMA_ID"]
        self.level = f.get("_LEVEL", 0)
        self.extra = tuple(f.get("_EXTRA_FILES") or ())
        self.embedded = f.get("_EMBEDDED_FILE_INDEX")
        self.external = f.get("_EXTERNAL_PATH")
        self.deletion = None
        self.dir = None  # the data file's directory (file IO path)
        self.fsdir = None  # the same for the pyarrow filesystem
        self.raw = f  # the decoded _FILE record (value stats)
        self.layout = None  # its index container's parsed header, once read (index files are immutable)
        self.first_row_id = f.get("_FIRST_ROW_ID")  # row tracking (Paimon 1.x+ manifests)
        self.write_cols = f.get("_WRITE_COLS")  # data evolution: a file holding some columns only
        self.stored_row_ids = None  # does the Parquet file carry a _ROW_ID column (checked once)

    def key(self):
        # pypaimon's ManifestFileManager identifier (partition, bucket, level,
        # name, extra files, embedded index, external path)
        return (self.partition, self.bucket, self.level, self.name, self.extra, self.embedded, self.external)


class _Plan:
    def __init__(self, snapshot_id, files, snapshot=None):
        self.snapshot_id = snapshot_id
        self.snapshot = snapshot  # the pypaimon Snapshot planned (global indexes are read at the same one)
        self.files: List[_File] = files
        self.schemas: Dict[int, object] = {}


_PLAN_CACHE: "OrderedDict[tuple, _Plan]" = OrderedDict()
_PLAN_LOCK = threading.Lock()
_PLAN_CACHE_SIZE = 16


_TIME_TRAVEL = (
    "scan.snapshot-id",
    "scan.tag-name",
    "scan.timestamp-millis",
    "scan.timestamp",
    "scan.watermark",
    "scan.version",
    "incremental-between",
    "incremental-between-timestamp",
    "incremental-to-auto-tag",
    "scan.file-creation-time-millis",
)
_ATOMIC = (
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "INTEGER",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
    "CHAR",
    "VARCHAR",
    "STRING",
    "BINARY",
    "VARBINARY",
    "BYTES",
    "DATE",
)


def _options(table):
    try:
        return dict(table.table_schema.options)
    except AttributeError:
        raise Fallback("not a pypaimon FileStoreTable")


def _is_true(opts, key, default=False):
    v = opts.get(key)
    return default if v is None else str(v).strip().lower() == "true"


def _type_ok(t) -> bool:
    s = str(t).replace(" NOT NULL", "").strip().upper()
    return s.split("(")[0].strip() in _ATOMIC


def check_table(table):
    """Raise :class:`Fallback` unless the fast path covers ``table``."""
    opts = _options(table)
    if getattr(table, "is_primary_key_table", True):
        raise Fallback("primary-key table")
    if _is_true(opts, "data-evolution.enabled") and not _is_true(opts, "row-tracking.enabled"):
        raise Fallback("data evolution without row tracking")
    keys = set(_TIME_TRAVEL)
    try:
        from pypaimon.snapshot.time_travel_util import SCAN_KEYS

        keys.update(SCAN_KEYS)
    except ImportError:  # pragma: no cover - other pypaimon versions
        pass
    for k in opts:
        if k in keys or k.startswith("incremental-") or (k.startswith("scan.") and k.endswith("-millis")):
            raise Fallback(f"option {k}")
    if getattr(table, "_read_snapshot", None) is not None:
        raise Fallback("table pinned to a snapshot")
    mode = str(opts.get("scan.mode", "default")).lower()
    if mode not in ("default", "latest-full", "latest"):
        raise Fallback(f"scan.mode {mode}")
    fmt = str(opts.get("file.format", "parquet")).lower()
    if fmt != "parquet":
        raise Fallback(f"file.format {fmt}")
    try:
        branch = table.current_branch()
    except AttributeError:
        branch = "main"
    if branch not in (None, "main"):
        raise Fallback(f"branch {branch}")
    if getattr(table, "file_io", None) is None or not hasattr(table.file_io, "filesystem"):
        raise Fallback("file IO without a pyarrow filesystem")
    for f in table.fields:
        if not _type_ok(f.type):
            raise Fallback(f"column {f.name} of type {f.type}")


def _read_bytes(file_io, path) -> bytes:
    if _is_local(file_io):
        with open(file_io.to_filesystem_path(path), "rb") as s:
            return s.read()
    with file_io.new_input_stream(path) as s:
        return s.read()


def _read_local(path) -> bytes:
    """A whole local file with plain ``os`` calls (cheaper than a buffered stream for small files)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _manifest_dir(table):
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    return ManifestListManager(table).manifest_path.rstrip("/")


def _load_plan(table, snapshot, workers: int) -> _Plan:
    file_io = table.file_io
    mdir = _manifest_dir(table)
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    metas = []
    for name in lists:
        if name:
            metas.extend(read_avro(_read_bytes(file_io, f"{mdir}/{name}")))
    names = [m["_FILE_NAME"] for m in metas]

    if _is_local(file_io):  # one path conversion for the directory, plain opens for the files
        fsdir = file_io.to_filesystem_path(mdir)

        def one(name):
            return read_avro(_read_local(f"{fsdir}/{name}"))
    else:

        def one(name):
            return read_avro(_read_bytes(file_io, f"{mdir}/{name}"))

    if workers > 1 and len(names) > 8 and not _is_local(file_io):  # threads pay off for remote reads only
        with ThreadPoolExecutor(workers) as ex:
            chunks = list(ex.map(lambda part: [one(n) for n in part], _split(names, workers)))
        per_manifest = [r for c in chunks for r in c]
    else:
        per_manifest = [one(n) for n in names]
    added: List[_File] = []
    deleted = set()
    for recs in per_manifest:
        for rec in recs:
            f = _File(rec)
            if rec["_KIND"] == 0:
                added.append(f)
            else:
                deleted.add(f.key())
    files = [f for f in added if f.key() not in deleted] if deleted else added
    plan = _Plan(snapshot.id, files, snapshot)
    _attach_paths(table, plan)
    if snapshot.index_manifest:
        _attach_deletions(table, snapshot, plan)
    return plan


def _split(items, k):
    k = max(1, min(k, len(items)))
    step = (len(items) + k - 1) // k
    return [items[i : i + step] for i in range(0, len(items), step)]


def _attach_paths(table, plan):
    from pypaimon.table.row.generic_row import GenericRowDeserializer
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    pfields = table.partition_keys_fields
    dirs = {}
    for f in plan.files:
        if f.external:
            from pypaimon.utils.path import to_file_io_path

            f.dir = to_file_io_path(str(f.external)).rsplit("/", 1)[0]
            f.fsdir = table.file_io.to_filesystem_path(f.dir)
            continue
        k = (f.partition, f.bucket)
        d = dirs.get(k)
        if d is None:
            values = GenericRowDeserializer.from_bytes(f.partition, pfields).values if pfields else ()
            d = canonical_data_file_path(table, tuple(values), f.bucket, "x").rsplit("/", 1)[0]
            d = (d, table.file_io.to_filesystem_path(d))
            dirs[k] = d
        f.dir, f.fsdir = d


def _attach_deletions(table, snapshot, plan):
    """Deletion files of the snapshot's index manifest, as pypaimon's scan attaches them."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.table.row.generic_row import GenericRowDeserializer
    from pypaimon.table.source.deletion_file import DeletionFile

    entries = IndexManifestFile(table).read(snapshot.index_manifest)
    pfields = table.partition_keys_fields
    by_bucket: Dict[tuple, Dict[str, object]] = {}
    for e in entries:
        if e.index_file.index_type != IndexManifestFile.DELETION_VECTORS_INDEX or not e.index_file.dv_ranges:
            continue
        values = tuple(e.partition.values)
        path = table.path_factory().bucket_index_path(values, e.bucket, e.index_file, table.file_io)
        d = by_bucket.setdefault((values, e.bucket), {})
        for name, m in e.index_file.dv_ranges.items():
            d[name] = DeletionFile(dv_index_path=path, offset=m.offset, length=m.length, cardinality=m.cardinality)
    if not by_bucket:
        return
    cache = {}
    for f in plan.files:
        values = cache.get(f.partition)
        if values is None:
            values = tuple(GenericRowDeserializer.from_bytes(f.partition, pfields).values) if pfields else ()
            cache[f.partition] = values
        f.deletion = by_bucket.get((values, f.bucket), {}).get(f.name)


def get_plan(table, use_cache: bool = True, workers: int = 2) -> Tuple[_Plan, bool]:
    """``(plan of the latest snapshot, came from the cache)``."""
    snapshot = table.snapshot_manager().get_latest_snapshot()
    if snapshot is None:
        raise Fallback("table without a snapshot")
    # the snapshot's own manifest lists and time too: a table dropped and re-created at the
    # same path starts its snapshot ids again
    key = (
        str(table.table_path),
        snapshot.id,
        getattr(snapshot, "base_manifest_list", None),
        getattr(snapshot, "delta_manifest_list", None),
        getattr(snapshot, "time_millis", None),
    )
    if use_cache:
        with _PLAN_LOCK:
            plan = _PLAN_CACHE.get(key)
            if plan is not None:
                _PLAN_CACHE.move_to_end(key)
                return plan, True
    plan = _load_plan(table, snapshot, workers)
    for f in plan.files:
        if not f.name.endswith(".parquet"):
            raise Fallback(f"data file {f.name} is not Parquet")
    if use_cache:
        with _PLAN_LOCK:
            _PLAN_CACHE[key] = plan
            while len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
                _PLAN_CACHE.popitem(last=False)
    return plan, False


# ---------------------------------------------------------------- reading
def _is_local(file_io) -> bool:
    import pyarrow.fs as pafs

    return isinstance(file_io.filesystem, pafs.LocalFileSystem)
