"""Global indexes inside Paimon 2.x tables: build them, and answer predicates with them.

A row-tracking table (``row-tracking.enabled``) gives every row a ``_ROW_ID``.
A global index is a set of index files under the table's ``index/`` directory,
each listed in the index manifest with a ``GlobalIndexMeta``: the row range it
covers, the indexed field id, and the file's own meta bytes (for ``bitmap`` a
``SortedIndexFileMeta``).  The row ids inside a file are relative to the start
of its row range.

* :func:`create_global_index` builds ``bitmap``, ``btree`` and ``multivalue`` indexes the
  way Java's ``create_global_index`` procedure (and pypaimon 2.1's) plans them: only the
  row ranges no index of that type on that field covers yet, one range per
  contiguous run of data files of a partition, the records sorted by
  (nulls first, key, row id) and cut into a new file every
  ``sorted-index.records-per-range`` x 1.2 records.  All files are committed
  in one snapshot through pypaimon's commit, each entry with Java's ``DEIX`` source meta
  (the snapshot the build scanned); a build that fails before the commit deletes what it
  wrote and adds no entry.
* :class:`GlobalIndexAnswer` turns a predicate into candidate row ids with
  every ``bitmap``, ``btree`` and ``multivalue`` global index the table holds (ours,
  pypaimon's or Java's), as Java combines them: a field's indexes of every type and row
  range united (any of them unable to answer: the leaf is not answered), leaves
  intersected under AND, an OR not answered when a child is not; :mod:`.scan` turns those
  into row ranges inside files.

Search modes (``scalar-index.search-mode``, falling back to the legacy
``global-index.search-mode``, default ``fast``): Java and pypaimon consult
global indexes only on data-evolution tables; there ``fast`` answers from the
indexed row ranges only, ``full`` / ``detail`` also read (and filter) the rows
no index covers.  On row-tracking tables without data evolution Java reads no
global index, so we use them only to skip rows (the answer is Java's: rows no
index covers are always read).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from pyroaring import BitMap64

from ..errors import ColumnNotFoundError, InvalidArgumentError, OptionError, PaimonFastError, UnsupportedTypeError
from ..core.predicate import And, Leaf, Or, Predicate
from ..core.result import UNSUPPORTED
from ..core.roaring import bitmap_of

from .globalindex_build import (
    DEFAULT_RECORDS_PER_RANGE,  # noqa: F401 (handed on)
    RECORDS_FLOATING,  # noqa: F401 (handed on)
    RECORDS_PER_RANGE,  # noqa: F401
    RECORDS_PER_RANGE_LEGACY,  # noqa: F401 (handed on)
    _local_path,
    _new_file_name,
    _plan_build,
    _read_task,  # noqa: F401 (handed on)
    _Task,  # noqa: F401 (handed on)
    _write_index_file,
    build_range_files,  # noqa: F401 (handed on)
    direct_read_plan,  # noqa: F401 (handed on)
    read_direct,  # noqa: F401 (handed on)
    records_per_file,  # noqa: F401 (handed on)
    records_per_range,
    task_range_files,
)

__all__ = ["create_global_index", "GlobalIndexAnswer", "search_mode", "SUPPORTED_INDEX_TYPES"]  # noqa: F822 (__getattr__)

# Java's DataEvolutionIndexSourceMeta: "DEIX", version 1, the snapshot a build scanned (big-endian)
SOURCE_META_MAGIC = 0x44454958


def _registry():
    from ..globalindex import registry

    return registry


def __getattr__(name):
    # the types paimon-fast builds and reads (SUPPORTED_INDEX_TYPES) and the scalar global index
    # types Java and pypaimon answer predicates with (SCALAR_INDEX_TYPES), as registered
    # (paimon_fast.globalindex.registry): a module attribute read when asked, so a type registered
    # later is in them and importing this module does not load the index formats
    if name == "SUPPORTED_INDEX_TYPES":
        return tuple(sorted(_registry().names()))
    if name == "SCALAR_INDEX_TYPES":
        r = _registry()
        return tuple(sorted(n for n in r.names() if r.get(n).scalar))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _supported(index_type) -> bool:
    return index_type in _registry().names()


def _scalar(index_type) -> bool:
    r = _registry()
    return index_type in r.names() and r.get(index_type).scalar


# ================================================================ options
def _table_options(table) -> Dict[str, str]:
    try:
        return dict(table.table_schema.options)
    except AttributeError:  # pragma: no cover - other table kinds
        return {}


def _true(opts, key) -> bool:
    return str(opts.get(key, "false")).strip().lower() == "true"


def search_mode(table) -> str:
    """``fast``, ``full`` or ``detail``: ``scalar-index.search-mode`` when set, else the
    legacy ``global-index.search-mode``, else ``fast`` (as Java's CoreOptions resolve it)."""
    opts = _table_options(table)
    mode = opts.get("scalar-index.search-mode")
    if mode is None:
        mode = opts.get("global-index.search-mode", "fast")
    mode = str(mode).strip().lower()
    if mode not in ("fast", "full", "detail"):
        raise ValueError(f"unknown global index search mode {mode!r}")
    return mode


def source_meta(snapshot_id) -> Optional[bytes]:
    """Java's ``DataEvolutionIndexSourceMeta`` bytes of the snapshot a build scanned (None when
    unknown): ``i32 0x44454958 ("DEIX"), i32 version 1, i64 snapshot id``, big-endian."""
    if snapshot_id is None or int(snapshot_id) <= 0:
        return None
    import struct

    return struct.pack(">iiq", SOURCE_META_MAGIC, 1, int(snapshot_id))


def _entries(table, task_partition, field_id, index_type, files, snapshot_id=None):
    """IndexManifestEntry list for ``files`` = ``[(name, size, row count, meta, range start, range end)]``,
    with Java's source meta of the scanned snapshot."""
    from pypaimon.globalindex.global_index_meta import GlobalIndexMeta
    from pypaimon.index.index_file_meta import IndexFileMeta
    from pypaimon.manifest.index_manifest_entry import IndexManifestEntry

    pf = table.path_factory().global_index_path_factory()
    out = []
    for name, size, records, meta, start, end in files:
        ifm = IndexFileMeta(
            index_type=index_type,
            file_name=name,
            file_size=size,
            row_count=records,
            global_index_meta=GlobalIndexMeta(
                row_range_start=start,
                row_range_end=end,
                index_field_id=field_id,
                extra_field_ids=None,
                index_meta=meta,
                source_meta=source_meta(snapshot_id),
            ),
            external_path=pf.to_path(name) if pf.is_external_path() else None,
        )
        out.append(IndexManifestEntry(kind=0, partition=task_partition, bucket=0, index_file=ifm))
    return out


def _commit(table, messages) -> None:
    """One snapshot with every index entry of the build (pypaimon's commit)."""
    commit = table.new_batch_write_builder().new_commit()
    try:
        commit.commit(messages)
    finally:
        commit.close()


def _table_name(table) -> str:
    """``db.table`` of a pypaimon table (its Identifier's repr otherwise)."""
    ident = getattr(table, "identifier", None)
    full = getattr(ident, "get_full_name", None)
    if callable(full):
        return full()
    db, obj = getattr(ident, "database", None), getattr(ident, "object", None)
    return f"{db}.{obj}" if db and obj else str(ident)


def create_global_index(
    table,
    index_column: str,
    index_type: str = "bitmap",
    *,
    partitions=None,
    options=None,
    spark=None,
    progress: Optional[Callable[[int, int, int], None]] = None,
) -> int:
    """Build a global index over ``index_column`` of a row-tracking Paimon table; returns the
    number of index files added (pypaimon 2.1's ``table.create_global_index`` call shape).

    Only the row ranges that no ``index_type`` index on that column covers yet are built
    (as Java's procedure and pypaimon do), so running it twice adds nothing the second
    time and appended rows get their own ranges.  ``partitions``: a partition spec dict or
    a list of them.  ``index_type``: ``"bitmap"`` (default), ``"btree"`` or ``"multivalue"``
    (an ARRAY column).  ``options`` override the table's (``bitmap-index.*``,
    ``btree-index.*``, ``sorted-index.records-per-range``).  With ``spark`` (a SparkSession) every row range
    is read, sorted and written on the executors and the driver commits once; with the option
    ``paimon-fast.global-index.split-rows`` set, a range of more rows is read and sorted by
    several tasks and merged by one (see :mod:`.globalindex_spark`).
    ``progress(done ranges, all ranges, rows)`` is called after each range.

    Everything is committed in one snapshot; an error before the commit deletes the
    files written so far and leaves the table's index manifest unchanged.
    """
    index_type = index_type.lower().strip()
    if not _supported(index_type):
        raise OptionError(f"index type {index_type!r}: paimon-fast builds {tuple(sorted(_registry().names()))}")
    if isinstance(index_column, (list, tuple)):
        if len(index_column) != 1:
            raise InvalidArgumentError(f"a global index covers one column, got {index_column}")
        index_column = index_column[0]
    index_column = index_column.strip()
    name = _table_name(table)
    if not table.options.row_tracking_enabled():
        raise OptionError(f"table {name} must enable 'row-tracking.enabled=true' before creating a global index")
    if index_column not in table.field_dict:
        raise ColumnNotFoundError(index_column, list(table.field_dict))
    field = table.field_dict[index_column]
    opts = _table_options(table)
    opts.update({k: str(v) for k, v in (options or {}).items()})
    per_range = records_per_range(opts)
    dtype = str(field.type).replace(" NOT NULL", "")
    tasks = _plan_build(table, field, index_type, partitions)
    if not tasks:
        return 0
    written: List[str] = []
    try:
        if spark is not None:
            from .globalindex_spark import build_on_spark

            results = build_on_spark(spark, table, field, dtype, tasks, opts, per_range, index_type, progress)
        else:
            results = []
            rows = 0
            for i, task in enumerate(tasks):
                built, n_rows = task_range_files(table, field, task, dtype, opts, per_range, index_type)
                files = []
                for lo, hi, data, meta, n in built:
                    name = _new_file_name(index_type)
                    written.append(_write_index_file(table, name, data))
                    files.append((name, len(data), n, meta, lo, hi))
                rows += n_rows
                results.append(files)
                if progress is not None:
                    progress(i + 1, len(tasks), rows)
        from pypaimon.write.commit_message import CommitMessage

        messages = []
        pf = table.path_factory().global_index_path_factory()
        for task, files in zip(tasks, results):
            written.extend(pf.to_path(f[0]) for f in files if pf.to_path(f[0]) not in written)
            if not files:
                continue
            adds = _entries(table, task.split.partition, field.id, index_type, files, task.snapshot_id)
            messages.append(CommitMessage(partition=task.partition, bucket=0, new_files=[], index_adds=adds))
        if not messages:
            return 0
        _commit(table, messages)
        return sum(len(m.index_adds) for m in messages)
    except BaseException:
        for path in written:
            table.file_io.delete_quietly(path)
        raise


# ================================================================ answering
@dataclass
class _Part:
    """One answer over global row ids: candidates ``rows`` within ``cover``; rows outside
    ``cover`` are unknown (may match)."""

    rows: BitMap64
    cover: BitMap64


def _ranges_bitmap(ranges) -> BitMap64:
    bm = BitMap64()
    for a, b in ranges:
        bm.add_range(a, b + 1)
    return bm


class _FieldIndex:
    """The global index files of one field: per index type, grouped by row range (Java unites
    a field's indexes of every type, as alternative sources of its matches)."""

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype
        self.by_type: Dict[str, Dict[Tuple[int, int], list]] = {}
        self.files: Dict[str, List[str]] = {}

    def add(self, index_type, start, end, path, meta, file_name):
        self.by_type.setdefault(index_type, {}).setdefault((start, end), []).append((path, meta))
        self.files.setdefault(index_type, []).append(file_name)

    @property
    def by_range(self) -> Dict[Tuple[int, int], list]:
        """Every row range any index of the field covers (files of all types)."""
        out: Dict[Tuple[int, int], list] = {}
        for ranges in self.by_type.values():
            for r, files in ranges.items():
                out.setdefault(r, []).extend(files)
        return out

    @property
    def index_type(self) -> str:
        """The field's index types, joined with '+' (one name for one type)."""
        return "+".join(sorted(self.by_type))

    def cover(self) -> BitMap64:
        return _ranges_bitmap(self.by_range)


# (table path, index manifest file name) -> its entries carrying a GlobalIndexMeta: an index
# manifest is written once under a unique name, so a table's next query reuses the read (about
# 0.3 ms of Avro); fastpath.clear_plan_cache forgets them
_ENTRIES: "OrderedDict[tuple, list]" = OrderedDict()
_ENTRIES_MAX = 64
_ENTRIES_LOCK = threading.Lock()


def _global_index_entries(table, snapshot) -> list:
    """The entries of ``snapshot``'s index manifest that carry a ``GlobalIndexMeta``."""
    from pypaimon.index.index_file_handler import IndexFileHandler

    name = getattr(snapshot, "index_manifest", None)
    if not name:
        return []
    key = (str(table.table_path), name)
    with _ENTRIES_LOCK:
        got = _ENTRIES.get(key)
        if got is not None:
            _ENTRIES.move_to_end(key)
            return got
    got = IndexFileHandler(table).scan(snapshot, lambda e: e.index_file.global_index_meta is not None)
    with _ENTRIES_LOCK:
        _ENTRIES[key] = got
        while len(_ENTRIES) > _ENTRIES_MAX:
            _ENTRIES.popitem(last=False)
    return got


def clear_index_entries() -> None:
    """Forget the index manifests read (see :func:`_global_index_entries`)."""
    with _ENTRIES_LOCK:
        _ENTRIES.clear()


class GlobalIndexAnswer:
    """Every ``bitmap``, ``btree`` and ``multivalue`` global index of a snapshot of a
    row-tracking table, for one predicate.

    :meth:`evaluate` gives, per predicate leaf and for the whole tree, candidate row ids
    and the row ids the answer covers.  ``used`` names each index consulted (field, type,
    files, row ranges) and the rows it selected;
    ``foreign_types`` the scalar index types on predicate columns we do not read (Java
    and pypaimon would use them, so a data-evolution scan defers to pypaimon).
    """

    def __init__(self, table, predicate: Predicate, snapshot=None, max_workers: int = 8):
        self.table = table
        self.predicate = predicate
        self.max_workers = max_workers
        self.snapshot = snapshot if snapshot is not None else table.snapshot_manager().get_latest_snapshot()
        self.next_row_id = getattr(self.snapshot, "next_row_id", None) or 0
        self.data_evolution = _true(_table_options(table), "data-evolution.enabled")
        self.mode = search_mode(table)
        self.fields: Dict[str, _FieldIndex] = {}
        self.foreign_types: List[str] = []
        self._used: Dict[Tuple[str, str], BitMap64] = {}  # (field, index type) -> rows it selected
        self._index_bytes_read = 0  # whole files read through pypaimon's streams
        self._io = None  # ranged reads of remote files (paimon_fast.io.fs.IOCounter)
        self.seconds = 0.0
        self._leaf_parts: Dict[int, _Part] = {}
        self._stored: Dict[str, bool] = {}
        if self.snapshot is None or predicate is None:
            return
        self._load(predicate.fields())

    def _load(self, names) -> None:
        """The global index entries of the fields ``names`` (of every type we read)."""
        table = self.table
        by_id = {f.id: f for f in table.fields if f.name in names}
        if not by_id:
            return
        entries = [
            e
            for e in _global_index_entries(table, self.snapshot)
            if e.index_file.global_index_meta.index_field_id in by_id
        ]
        pf = table.path_factory().global_index_path_factory()
        for e in entries:
            if getattr(e, "kind", 0) != 0:
                continue
            ifm = e.index_file
            meta = ifm.global_index_meta
            f = by_id[meta.index_field_id]
            if not _supported(ifm.index_type) or meta.extra_field_ids:
                if _scalar(ifm.index_type) and ifm.index_type not in self.foreign_types:
                    self.foreign_types.append(ifm.index_type)
                continue
            fi = self.fields.get(f.name)
            if fi is None:
                fi = self.fields[f.name] = _FieldIndex(f.name, str(f.type).replace(" NOT NULL", ""))
            path = ifm.external_path or f"{pf.index_path()}/{ifm.file_name}"
            fi.add(ifm.index_type, meta.row_range_start, meta.row_range_end, path, meta.index_meta, ifm.file_name)

    @property
    def used(self) -> List[str]:
        """Each index consulted (field, type, files, row ranges) and the rows it selected."""
        out = []
        for (name, itype), rows in self._used.items():
            fi = self.fields[name]
            out.append(
                f"{name} ({itype}, {len(fi.files[itype])} files over {len(fi.by_type[itype])} row ranges, "
                f"{len(rows):,} rows selected)"
            )
        return out

    @property
    def has_index(self) -> bool:
        return bool(self.fields)

    @property
    def index_bytes_read(self) -> int:
        """Bytes of global index files read so far (ranged reads counted as read)."""
        return self._index_bytes_read + (self._io.bytes if self._io is not None else 0)

    # ------------------------------------------------------------ leaves
    def _source(self, path):
        p = path[len("file://") :] if path.startswith("file://") else path
        if "://" not in p and os.path.exists(p):
            return p  # read block by block (footer, dictionary, bitmaps)
        from .globalindex_build import table_store

        store = table_store(self.table)
        if store is not None and not store.local:  # ranged reads: footer, then the blocks a leaf needs
            from ..io.fs import IOCounter

            if self._io is None:
                self._io = IOCounter()
            return store.open_source(self.table.file_io.to_filesystem_path(path), self._io)
        with self.table.file_io.new_input_stream(path) as s:
            data = s.read()
        self._index_bytes_read += len(data)
        return data

    def _leaf(self, leaf: Leaf) -> _Part:
        got = self._leaf_parts.get(id(leaf))
        if got is not None:
            return got
        registry = _registry()
        fi = self.fields.get(leaf.name)
        part = _Part(BitMap64(), BitMap64())
        if fi is not None:
            # Java's UnionGlobalIndexReader over the field's index types and row ranges: the
            # rows any of them selects; one that cannot answer leaves the leaf unanswered
            rows = BitMap64()
            cover = BitMap64()
            per_type: Dict[str, BitMap64] = {}
            ok = True
            for itype, ranges in sorted(fi.by_type.items()):
                sel = per_type[itype] = BitMap64()
                for (start, end), files in sorted(ranges.items()):
                    try:
                        gi = registry.get(itype).index_class()(
                            [(self._source(p), m) for p, m in files],
                            fi.dtype,
                            _table_options(self.table),
                            total_row_count=end - start + 1,
                            max_workers=self.max_workers,
                        )
                        with gi:
                            got = gi.evaluate(leaf)
                    except (UnsupportedTypeError, TypeError, ValueError, PaimonFastError, OSError):
                        ok = False
                        break
                    if got is UNSUPPORTED:
                        ok = False
                        break
                    if len(got):
                        if start:
                            got = got.shift(start)
                        sel |= got
                    cover.add_range(start, end + 1)
                if not ok:
                    break
                rows |= sel
            if ok:
                part = _Part(rows, cover)
                for itype, sel in per_type.items():
                    self._used[(fi.name, itype)] = self._used.get((fi.name, itype), BitMap64()) | sel
        self._leaf_parts[id(leaf)] = part
        return part

    def leaf_part(self, leaf: Leaf) -> _Part:
        t0 = time.perf_counter()
        try:
            return self._leaf(leaf)
        finally:
            self.seconds += time.perf_counter() - t0

    # ------------------------------------------------------------ tree
    def evaluate(self, predicate: Optional[Predicate] = None) -> _Part:
        """Candidates and cover of the whole predicate (AND: covers unite; OR: they intersect)."""
        p = self.predicate if predicate is None else predicate
        if isinstance(p, Leaf):
            return self.leaf_part(p)
        parts = [self.evaluate(c) for c in p.children]
        if isinstance(p, And):
            cover = BitMap64()
            for x in parts:
                cover |= x.cover
            rows = cover.copy()
            for x in parts:
                rows &= x.rows | (cover - x.cover)
            return _Part(rows, cover)
        if isinstance(p, Or):
            cover = parts[0].cover.copy()
            for x in parts[1:]:
                cover &= x.cover
            rows = BitMap64()
            for x in parts:
                rows |= x.rows
            return _Part(rows & cover, cover)
        raise TypeError(f"not a predicate: {p!r}")

    def row_ranges(self) -> Optional[List[Tuple[int, int]]]:
        """The row ranges a data-evolution scan reads under the search mode (``fast``: the
        candidates only; ``full`` / ``detail``: plus every row the answer does not cover),
        or None when no index answers the predicate."""
        part = self.evaluate()
        if not len(part.cover):
            return None
        rows = part.rows
        if self.mode != "fast" and self.next_row_id:
            every = BitMap64()
            every.add_range(0, self.next_row_id)
            rows = rows | (every - part.cover)
        return bitmap_ranges(rows)

    def stores_row_ids(self, data_file) -> bool:
        """Does a data file (pypaimon ``DataFileMeta``) carry a physical ``_ROW_ID`` column, so
        that its rows' ids are not first row id + position?  Unknown counts as yes."""
        path = getattr(data_file, "external_path", None) or getattr(data_file, "file_path", None)
        got = self._stored.get(path)
        if got is None:
            import pyarrow.parquet as pq

            try:
                local = _local_path(path)
                if local is not None:
                    names = pq.read_schema(local).names
                else:
                    with self.table.file_io.filesystem.open_input_file(path) as fh:
                        names = pq.read_schema(fh).names
                got = "_ROW_ID" in names
            except Exception:  # noqa: BLE001 - not Parquet, unreadable: do not map positions to row ids
                got = True
            self._stored[path] = got
        return got

    def file_leaf_result(self, leaf: Leaf, first_row_id: int, row_count: int):
        """A leaf's answer inside one data file (positions relative to the file), or None
        when the file's rows are not all covered by the leaf's index."""
        from ..core.result import BitmapResult

        if leaf.name not in self.fields:
            return None
        part = self.leaf_part(leaf)
        end = first_row_id + row_count
        if not row_count or not part.cover.contains_range(first_row_id, end):
            return None
        r = BitMap64()
        r.add_range(first_row_id, end)
        r &= part.rows
        arr = np.asarray(r.to_array(), dtype=np.int64) - first_row_id
        return BitmapResult(bitmap_of(arr))


def bitmap_ranges(bm: BitMap64) -> List[Tuple[int, int]]:
    """Inclusive ``(from, to)`` runs of a bitmap."""
    if not len(bm):
        return []
    a = np.asarray(bm.to_array(), dtype=np.int64)
    breaks = np.flatnonzero(np.diff(a) != 1)
    starts = np.concatenate(([a[0]], a[breaks + 1]))
    ends = np.concatenate((a[breaks], [a[-1]]))
    return list(zip(starts.tolist(), ends.tolist()))


def read_ranges_direct(table, splits, columns: List[str], stats=None):
    """Read the row ranges of pypaimon ``IndexedSplit`` s straight from local Parquet files:
    only the pages holding selected rows (:func:`paimon_fast.io.parquet.rows.read_rows`, which
    adds to ``stats``), then only those rows.  Returns a ``pyarrow.Table`` with ``columns``
    typed as pypaimon types them, or None when a file needs pypaimon's reader (deletion
    vectors, column groups, stored row ids, another schema, remote files, blob columns)."""
    import pyarrow as pa
    from pypaimon.schema.data_types import PyarrowFieldParser

    from ..io.parquet.rows import PageReadStats, file_shape, ranges_to_positions, read_rows

    by_name = {f.name: f for f in table.fields}
    if any(c not in by_name for c in columns):
        return None
    try:
        out_schema = PyarrowFieldParser.from_paimon_schema([by_name[c] for c in columns])
    except Exception:  # noqa: BLE001 - a type pypaimon maps specially: its reader decides
        return None
    sid = table.table_schema.id
    jobs = []  # (path, positions inside the file)
    for s in splits:
        ranges = s.row_ranges() if callable(getattr(s, "row_ranges", None)) else None
        split = s.data_split() if callable(getattr(s, "data_split", None)) else s
        if ranges is None or any(d is not None for d in (getattr(split, "data_deletion_files", None) or ())):
            return None
        bounds = np.array(sorted((r.from_, r.to) for r in ranges), dtype=np.int64).reshape(-1, 2)
        for f in split.files:
            path = _local_path(getattr(f, "external_path", None) or getattr(f, "file_path", None))
            if (
                path is None
                or not path.endswith(".parquet")
                or getattr(f, "write_cols", None)
                or f.first_row_id is None
                or f.schema_id != sid
            ):
                return None
            lo, hi = f.first_row_id, f.first_row_id + f.row_count - 1
            sel = bounds[(bounds[:, 1] >= lo) & (bounds[:, 0] <= hi)]
            if len(sel):
                pos = ranges_to_positions(np.stack([np.maximum(sel[:, 0], lo), np.minimum(sel[:, 1], hi) + 1], 1) - lo)
                jobs.append((path, f.row_count, pos))

    decoded = [PageReadStats() for _ in jobs]  # one per job: the jobs run in threads

    def take(k):
        path, row_count, pos = jobs[k]
        names, rows = file_shape(path)
        if "_ROW_ID" in names or any(c not in names for c in columns) or rows != row_count:
            return None
        return read_rows(path, pos, columns, stats=decoded[k])  # the pages holding the rows only

    if len(jobs) > 1:
        from concurrent.futures import ThreadPoolExecutor

        from ..io.pool import threads

        with ThreadPoolExecutor(min(len(jobs), threads())) as ex:
            parts = list(ex.map(take, range(len(jobs))))
    else:
        parts = [take(k) for k in range(len(jobs))]
    if any(p is None for p in parts):
        return None
    if stats is not None:
        for d in decoded:
            stats.add(d)
    if not parts:
        return out_schema.empty_table()
    try:
        return pa.concat_tables([p.select(columns).cast(out_schema) for p in parts])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
