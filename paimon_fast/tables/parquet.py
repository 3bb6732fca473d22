"""A directory of Parquet files with Paimon file indexes, that stays a plain Parquet dataset.

Layout::

    <root>/[k=v/...]<name>.parquet                      data files (hive-style partitions optional)
    <root>/_file_index/[k=v/...]<name>.parquet.<hash>.index   Paimon FileIndexFormat container of that file
    <root>/_commits/_paimon_fast_catalog.json.<version> the dataset catalog's versions (sealed JSON)
    <root>/_global_index/<column>/...                   global indexes (:mod:`.globalindex`)
    <root>/_deletion_vectors/...                        deleted rows (:mod:`.deletes`)

Everything but the data files sits under a name starting with ``_``, which Spark,
Hive, pyarrow (``pq.read_table(root)``, ``pyarrow.dataset``) skip and DuckDB's
``read_parquet('<root>/**/*.parquet')`` never matches: indexing a dataset changes
nothing other readers see.  Datasets indexed by earlier versions keep their containers
beside the data files (``<name>.parquet.index``, which those readers refuse); they are
still read there, and the next build moves them into ``_file_index/``
(:meth:`ParquetDataset.migrate_layout`).

Data files are the ``*.parquet`` files under ``root``; names and directories
starting with ``_`` or ``.`` are ignored (as Spark does).

**Stable file order and global row ids.**  The dataset's files are ordered by
their relative POSIX path (``sorted()`` on ``"k=v/name.parquet"`` strings).
The global row id of a row is the number of rows in all earlier files plus
the row's position in its own file (:meth:`ParquetDataset.row_offsets`).
Row positions in a file index are positions in the data file, so a
``BitmapResult`` from a file's index maps to global ids by adding the file's
offset.

**Catalog** (versions ``_commits/_paimon_fast_catalog.json.<version>``, each created exclusively
and sealed with a checksum: :mod:`paimon_fast.tables.catalog`; a leading underscore keeps Spark's
file listing away from it)::

    {"format": "paimon-fast-dataset", "version": 2,
     "file_order": "...", "file_index": {"options": {...}, "digest": "...", "types": {...}},
     "files": {"k=v/a.parquet": {"size": 123, "mtime_ns": 1700000000000000000,
                                 "ctime_ns": 1700000000000000000, "ino": 42,     (local files)
                                 "etag": "\"9b2cf535f27731c974343645a3985328\"",   (S3)
                                 "rows": 1000, "row_groups": 1,
                                 "stats": {"x": {"min": 0.5, "max": 99.5, "nulls": 0}, ...},
                                 "file_index": {"digest": "...", "path": "_file_index/k=v/a.parquet.<hash>.index",
                                                "size": 456, "checksum": {"xxh3": "...", "block": 16384}}
                                            or {"digest": "...", "inline": "<base64>", "size": 80}
                                            or (old layout) {"digest": "...", "file": "a.parquet.index", ...},
                                 "deletion_vector": {"file": "index-<uuid>-0", "offset": 1, ...}},
               ...},
     ...,
     "checksum": "xxh3:..."}

The identity keys (``size``, ``mtime_ns``, ``ctime_ns`` / ``ino`` or ``etag``:
:mod:`paimon_fast.tables.identity`) are those of the data file the index was built from: an index
is used only for a file whose identity in the operation's listing is the same (an index whose
options digest differs from the current options is rebuilt by the next build, but still answers for
its file).  ``stats`` (the indexed columns' bounds and null counts, read by the build with the
index; an optimize adds its cluster columns' and marks ``clustered``) and ``row_groups`` describe
that version too: a commit recording another version of the file drops them
(:data:`paimon_fast.tables.writer.VERSION_FACTS`).  Indexes smaller than or equal to
``file-index.in-manifest-threshold`` (default 500 bytes) are kept inline (base64) instead of in a
``.index`` file, as Paimon embeds them in its manifest.  A ``path`` is relative to the root; an
old-layout ``file`` is a name in the data file's directory; ``checksum`` holds the checksums of the
index file's blocks (:mod:`paimon_fast.io.checksum`), checked on every block a reader reads.  Keys
this module does not know, at the top level or in a file's entry, are preserved on rewrite, so
other features (global indexes, deletion vectors) add their own keys next to ``file_index``.
Deleted rows are Paimon deletion vectors in ``_deletion_vectors/``
(:mod:`paimon_fast.tables.deletes`): :meth:`ParquetDataset.plan` loads them, removes deleted rows
from exact index bitmaps, skips files whose rows are all deleted, and the reads drop the deleted
rows.

**Snapshots.**  Every operation (plan, read, count, top-N, explain, delete, build, gc) works on one
listing of the data files and one catalog version taken when it starts
(:meth:`ParquetDataset.snapshot`); a read object keeps the snapshot of its plan.  Nothing is kept
between calls on the dataset itself, so a long-lived :class:`ParquetDataset` sees files added,
changed and removed since the last call.

**Writes.**  Index files get a new name for new bytes (``_file_index/<data file>.<content
hash>.index``), deletion files a UUID, and both become visible only through the catalog version
committed last, with optimistic concurrency (:func:`paimon_fast.tables.catalog.commit`).  No commit
removes a file: superseded ones stay for readers of older versions until ``paimon-fast gc`` removes
what no live version names, after a grace period (:mod:`paimon_fast.tables.gc`).  A killed writer
leaves the previous version current and at most files no version names.  Locally files are written
to a hidden temporary name and renamed into place (``.<name>.tmp-*``: only their writer or ``gc``,
after the grace period, removes them).

**Object stores and HDFS** (``ParquetDataset("s3://bucket/events")`` or any ``filesystem=``, see
:mod:`paimon_fast.io.fs`): the same layout and commits (a conditional PUT creates each version).
Reads are ranged (index headers and blocks, Parquet footers and the column chunks needed), and
:attr:`ParquetDataset.io` counts the bytes read (``bytes_read`` in reports).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib
import json
import os
import time
from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap

from ..io.checksum import ChecksummedSource, block_checksums
from ..errors import DataFileError, IndexFormatError, OptionError, PaimonFastError, UnsupportedTypeError
from ..fileindex import FileIndexFormat, evaluate_tree, get_factory
from ..fileindex.format import FileIndexFile, HeldReaders
from ..io.source import ReopeningSource, as_source
from ..fileindex._bitslice import NullLiteralError, range_bitmap
from ..fileindex.options import (
    DEFAULT_IN_MANIFEST_THRESHOLD,
    IN_MANIFEST_THRESHOLD,
    indexes_from_table_options,
    parse_memory_size,
)
from ..io.fs import CommitFile, IOCounter, Store, resolve
from ..io.fsutil import TMP_MARK, write_atomic  # noqa: F401  (re-exported for callers)
from ..core.predicate import Leaf, Predicate
from ..core.result import REMAIN, SKIP, BitmapResult, FileIndexResult
from ..core.types import DataType
from . import catalog as _catalog
from . import identity as _identity
from . import replaced as _replaced
from ..read.arrow_filter import coerce_literals, filter_table, to_arrow_expression
from .catalog import CATALOG_FORMAT, CATALOG_VERSION, FILE_ORDER_DOC, Catalog  # noqa: F401 (handed on)
from .layout import (
    CATALOG_NAME,
    DATA_SUFFIXES,  # noqa: F401 (handed on)
    FILE_INDEX_DIR,
    HIVE_NULL,  # noqa: F401 (handed on)
    INDEX_SUFFIX,  # noqa: F401 (handed on)
    DataFile,  # noqa: F401
    index_rel_path,
    is_data_file_name,  # noqa: F401 (handed on)
    local_path,  # noqa: F401 (handed on)
    parse_partition,  # noqa: F401 (handed on)
)
from .globalindex import GlobalAnswers
from .stats import stats_arrays, leaf_answer, leaf_prepared, leaf_skips, stat_kind, tree_skips
from .writer import VERSION_FACTS, StatsAccumulator, clustered_columns, entry_stats
from .plan import FilePlan, ScanPlan, ScanReport  # noqa: F401 (the plan types, handed on)
from .steps import step

# the parsed headers of index containers, by (path, size, checksum): a plan opens each file's again
_LAYOUTS: Dict[tuple, tuple] = {}
_LAYOUTS_MAX = 4096
# the readers of those containers' indexes, with what they decoded, by the same key (and column):
# a plan of the same file reads and decodes none of its index bytes again (bounded in bytes)
HELD_READERS = HeldReaders()
# Whether plans answer leaves from the files' Parquet statistics when a dataset does not say
# (ParquetDataset(statistics=...)): None, on local files only
STATISTICS: Optional[bool] = None
# an inexact read testing at most this many rows reads every asked column with the predicate's
# (one pass), not the predicate's columns first and the others at the rows that hold it
ONE_PASS_ROWS = 1 << 15
# plans settle the files the catalog's statistics exclude with arrays, all files at once (tests turn
# it off to compare with the file-by-file answers)
_CATALOG_VECTORS = True
HEAD_PREFETCH = 16384  # first bytes of a remote index container fetched with its header
# a leaf whose page index keeps at most 1/8 of a file's rows is answered from those pages: the rows
# of the column's index where it answers exactly, else the pages read and filtered; a leaf that
# keeps more is asked of the index first
PAGES_BEFORE_INDEX = 8
# the Arrow schema of a data file version, by (its URI, its strong identity): every dataset object
# of the process takes a snapshot's schema from its first file without opening it again
_SCHEMAS: Dict[tuple, pa.Schema] = {}
WRITE_ATTEMPTS = 5  # a build or delete that cannot be rebased starts over from a new snapshot this often


# ---------------------------------------------------------------- index options


@dataclass
class IndexSpec:
    """Which indexes to build, from Paimon table options (``file-index.<type>.columns`` ...).

    ``columns`` is ``{column: {index_type: {option: value}}}``; ``types`` maps
    each index type to the module that registered it, so worker processes can
    import index types registered outside the built-ins; ``digest`` identifies
    the options (an index built with other options is stale).
    """

    options: Dict[str, str]
    columns: Dict[str, Dict[str, Dict[str, str]]]
    threshold: int
    types: Dict[str, str]
    digest: str

    @staticmethod
    def from_options(options: Mapping, row_type: Optional[Mapping[str, str]] = None) -> "IndexSpec":
        opts = {str(k): str(v) for k, v in dict(options or {}).items()}
        cols = indexes_from_table_options(opts)
        if row_type is not None:
            missing = [c for c in cols if c not in row_type]
            if missing:
                raise OptionError(
                    f"index columns {missing} are not data columns of the dataset (columns: {sorted(row_type)})"
                )
        types = {}
        for c, per in cols.items():
            for t in per:
                f = get_factory(t)  # raises UnknownIndexTypeError for a name nobody registered
                if row_type is not None:
                    f.check_type(DataType.parse(row_type[c]))
                types[t] = type(f).__module__
        threshold = parse_memory_size(opts.get(IN_MANIFEST_THRESHOLD, DEFAULT_IN_MANIFEST_THRESHOLD))
        canon = json.dumps({"columns": cols, "threshold": threshold}, sort_keys=True)
        return IndexSpec(opts, cols, threshold, types, hashlib.sha1(canon.encode()).hexdigest()[:16])

    def to_json(self) -> dict:
        return {"options": self.options, "digest": self.digest, "types": self.types}


def ensure_index_types(types: Mapping[str, str]) -> None:
    """Import the modules that register these index types (needed in fresh worker processes)."""
    for t, mod in (types or {}).items():
        try:
            get_factory(t)
        except PaimonFastError:
            importlib.import_module(mod)


class FileIndexBuilder:
    """Builds one file's index container from its column batches, in row order.

    Used by the Spark build's Arrow UDF on executors and by the in-process
    :meth:`ParquetDataset.build`; columns missing from a file are left out.
    """

    def __init__(
        self,
        row_type: Mapping[str, str],
        columns: Mapping[str, Mapping[str, Mapping[str, str]]],
        rows: Optional[int] = None,
    ):
        """``rows``: the file's row count, when known: a bloom filter without an ``items`` option
        is sized for it (:func:`sized_options`) instead of Paimon's default of 1,000,000."""
        from .. import fileindex

        self.writers: Dict[str, Dict[str, object]] = {}
        for col, per in columns.items():
            if col not in row_type:
                continue
            self.writers[col] = {
                t: fileindex.writer(t, row_type[col], sized_options(t, o, rows)) for t, o in per.items()
            }
        # the types the indexes are built for: recorded in the catalog, checked when opening
        self.types = {col: str(row_type[col]) for col in self.writers}
        self.rows = 0

    def add(self, batch) -> None:
        """Add a ``pa.RecordBatch`` / ``pa.Table`` holding (at least) the indexed columns."""
        names = batch.schema.names
        for col, ws in self.writers.items():
            if col not in names:
                raise KeyError(f"batch has no column {col!r}")
            arr = batch.column(names.index(col))
            for w in ws.values():
                w.write_batch(arr)
        self.rows += batch.num_rows

    def finish(self) -> Optional[bytes]:
        """The container bytes (None when no column of this file is indexed)."""
        if not self.writers:
            return None
        return FileIndexFormat.write({c: {t: w.finish() for t, w in ws.items()} for c, ws in self.writers.items()})


def sized_options(index_type: str, options: Mapping[str, str], rows: Optional[int]) -> Mapping[str, str]:
    """The options a dataset's file of ``rows`` rows builds an index with: a bloom filter whose
    ``items`` is not set expects as many items as the file has rows (a file cannot hold more
    distinct values), where Paimon's writer assumes 1,000,000 whatever the file (a 599 KB filter
    on a 20,000-row file).  ``items`` set keeps its meaning (Java's bytes for the same options);
    Paimon tables keep Java's default (their indexes are rewritten by Java too)."""
    if index_type != "bloom-filter" or rows is None or "items" in options:
        return options
    return {**options, "items": str(max(1, int(rows)))}


def store_index(
    store: Store,
    root: str,
    rel: str,
    blob: Optional[bytes],
    threshold: int,
    digest: str,
    _fault: Optional[str] = None,
    types: Optional[Mapping[str, str]] = None,
) -> dict:
    """Store the container ``blob`` of the data file ``rel`` (relative path under ``root``):
    kept inline in the catalog entry when small, else written to ``_file_index/<rel>.index``
    (atomically); the catalog entry (with ``types``, the column types the indexes were built
    for: :attr:`FileIndexBuilder.types`).

    The file is ``_file_index/<rel>.<content hash>.index``: a new name for new bytes, visible only
    once a catalog version names it (a reader of an older version keeps reading the bytes it names).
    The entry records the checksums of its blocks (:func:`paimon_fast.io.checksum.block_checksums`)."""
    if blob is None:
        return {"digest": digest, "none": True}
    typed = {"types": dict(types)} if types else {}
    if len(blob) <= threshold:
        return {"digest": digest, "inline": base64.b64encode(blob).decode("ascii"), "size": len(blob), **typed}
    rel_index = index_rel_path(rel, hashlib.sha256(blob).hexdigest()[:16])
    store.write_atomic(store.join(root, *rel_index.split("/")), blob, _fault)
    return {"digest": digest, "path": rel_index, "size": len(blob), "checksum": block_checksums(blob), **typed}


def build_file_index(
    store: Store,
    root: str,
    rel: str,
    row_type: Mapping[str, str],
    columns: Mapping,
    threshold: int,
    digest: str,
    batch_rows: int = 1 << 17,
    _fault: Optional[str] = None,
    counter=None,
    identity=None,
) -> Tuple[int, Optional[dict]]:
    """Index the data file ``rel`` (relative path under ``root``), read with pyarrow in row
    order, and store the index (:func:`store_index`): ``(rows, catalog entry)``.  Indexed
    columns the file lacks are left out of its index.  The per-file step of the in-process
    build and of the Spark build's executor tasks (:func:`paimon_fast.spark.build`).

    ``identity`` (:class:`paimon_fast.tables.identity.Identity`): the file's identity in the
    build's snapshot.  The file is read as that version (on S3 every read is conditional on its
    ETag) and its identity is checked again after the read; a file that changed meanwhile gives
    ``(0, None)``: it is not indexed (its index would describe other bytes)."""
    path = store.join(root, *rel.split("/"))
    step("build.file.read", path=rel)
    try:
        with pq.ParquetFile(_identity.open_data_file(store, path, identity, counter)) as pf:
            present = set(pf.schema_arrow.names)
            b = FileIndexBuilder(row_type, {c: per for c, per in columns.items() if c in present}, pf.metadata.num_rows)
            stats = {c: StatsAccumulator() for c in b.writers}
            if b.writers:
                for batch in pf.iter_batches(batch_size=batch_rows, columns=list(b.writers)):
                    b.add(batch)
                    for c, acc in stats.items():
                        acc.add(batch.column(c))
            rows = pf.metadata.num_rows
            row_groups = pf.metadata.num_row_groups
        step("build.file.indexed", path=rel)
        witness = None
        if identity is not None:
            witness = _identity.read_witness(store, path, identity, counter)
            pinned = identity.etag is not None and store.type_name == "s3" and store._boto_client() is not None
            now = identity if pinned else _identity.current(store, path)  # pinned reads fail when it changed
            if now is None or not now.same(identity):
                return 0, None
    except _identity.DataFileChangedError:
        return 0, None
    except FileNotFoundError:
        if identity is None:
            raise
        return 0, None
    except (pa.ArrowInvalid, OSError) as e:
        raise DataFileError(f"{store.uri(path)} is not a readable Parquet file: {e}") from None
    entry = store_index(store, root, rel, b.finish(), threshold, digest, _fault, types=b.types)
    if witness is not None:  # of the data file version indexed (moved beside its identity on commit)
        entry["witness"] = witness
    # the indexed columns' statistics and the row groups (moved into the file's entry on commit)
    entry["stats"] = {c: r for c, acc in stats.items() if (r := acc.result()) is not None}
    entry["row_groups"] = row_groups
    step("build.file.stored", path=rel)
    return rows, entry


# ---------------------------------------------------------------- build reports


@dataclass
class BuildReport:
    files_total: int = 0
    files_built: int = 0
    files_current: int = 0
    inline: int = 0
    index_bytes: int = 0
    rows: int = 0
    seconds: float = 0.0
    built: List[str] = field(default_factory=list)
    changed: List[str] = field(default_factory=list)  # changed (or removed) while the build read them: not indexed
    catalog_version: Optional[int] = None  # the catalog version the build committed

    def __str__(self):
        ch = (
            f"; {len(self.changed)} changed while being read, not indexed ({', '.join(self.changed[:3])}"
            f"{', ...' if len(self.changed) > 3 else ''}: build again)"
            if self.changed
            else ""
        )
        return (
            f"{self.files_built} of {self.files_total} files indexed ({self.files_current} already current, "
            f"{self.inline} inline), {self.rows:,} rows, {self.index_bytes:,} index bytes, {self.seconds:.2f}s" + ch
        )


# ---------------------------------------------------------------- the dataset


def _infer_partition_type(values: Iterable[Optional[str]]) -> pa.DataType:
    vals = [v for v in values if v is not None]
    try:
        ints = [int(v) for v in vals]
    except ValueError:
        return pa.string()
    if vals and all(-(2**31) <= i < 2**31 for i in ints):
        return pa.int32()
    return pa.int64() if vals else pa.string()


class ParquetDataset:
    """A directory of Parquet files with per-file Paimon indexes (see the module docstring).

    Every call works on a snapshot taken when it starts (one listing, one catalog version); a
    :meth:`snapshot` holds one for several calls."""

    def __init__(self, root: str, filesystem=None, statistics: Optional[bool] = None):
        """``root``: a path or URI (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ``file://``);
        ``filesystem``: a ``pyarrow.fs.FileSystem`` (or fsspec filesystem) ``root`` is a path in.
        ``statistics``: whether a plan answers leaves from the files' Parquet statistics before
        their indexes (:mod:`paimon_fast.tables.stats`); None: on local files (their footers are
        parsed once and cached; on an object store each would cost a request per file)."""
        self.store, self.root = resolve(root, filesystem)
        self.statistics = statistics
        if not self.store.is_dir(self.root):
            raise FileNotFoundError(f"dataset directory {self.store.uri(self.root)!r} does not exist")
        self.catalog = CommitFile(self.store, self.root, CATALOG_NAME)
        self.catalog_path = self.catalog.path
        self.io = IOCounter()  # bytes read through this dataset (reports show the part of each call)
        self._snap: Optional[_catalog.Snapshot] = None
        self._schemas: Dict[tuple, pa.Schema] = {}  # a data file version's schema (shared by snapshots)
        self._memo: dict = {}  # the last listing and catalog a snapshot parsed (catalog.take)
        self._last_commit: Optional[int] = None  # the catalog version this object's last commit created

    def __getstate__(self):  # shipped to executors without its snapshot: a plan ships what they need
        d = dict(self.__dict__)
        d["_snap"] = None
        d["_schemas"] = {}
        d["_memo"] = {}
        return d

    @property
    def uri(self) -> str:
        """The dataset's root as a path or ``scheme://`` URI (never with credentials)."""
        return self.store.uri(self.root)

    # ------------------------------------------------------------ snapshots
    def snapshot(self, settle: bool = False) -> "ParquetDataset":
        """The dataset as of now: a dataset object pinned to one listing of the data files (each with
        its identity) and one catalog version, which every call on it uses (plans, reads, counts,
        top-N, explain, row counts).  Calls on an unpinned dataset take a snapshot each when they
        start (what was parsed from an unchanged listing and catalog is reused:
        :func:`paimon_fast.tables.catalog.take`).  ``settle`` (writers): files changed in the last few
        milliseconds are waited for, so every identity taken changes with any later change of its file
        (:mod:`paimon_fast.tables.identity`)."""
        view = copy.copy(self)
        view._schemas = self._schemas  # (copy.copy goes through __getstate__, which leaves them out)
        view._memo = self._memo
        snap = view._snap = _catalog.take(self.store, self.root, self.catalog, self.io, settle, self._memo)
        # what the last snapshot computed from the same listed files and catalog version is valid
        # for this one (take() hands back the very objects it parsed when it finds them unchanged)
        last = self._memo.get("stable")
        if (
            last is not None
            and last[0] is snap.catalog
            and len(last[1]) == len(snap.files)
            and all(a is b for a, b in zip(last[1], snap.files))
        ):
            snap.stable = last[2]
        else:
            self._memo["stable"] = (snap.catalog, list(snap.files), snap.stable)
        return view

    @property
    def snapshot_version(self) -> Optional[int]:
        """The catalog version a snapshot holds (None: not a snapshot, or no catalog yet)."""
        return None if self._snap is None else self._snap.version

    def _at(self) -> "ParquetDataset":
        return self if self._snap is not None else self.snapshot()

    def _input(self, f: "DataFile"):
        """What pyarrow.parquet opens for a data file (ranged reads, counted in :attr:`io`; on S3
        conditional on the listed ETag: :func:`paimon_fast.tables.identity.open_data_file`)."""
        return _identity.open_data_file(
            self.store,
            _replaced.locate(self.store, self.root, f),  # (an optimize may have moved it away since)
            f.identity,
            None if self.store.local else self.io,
            self.store.uri(f.abs_path),
        )

    def _on_input(self, f: "DataFile", read):
        """``read(input)`` of data file ``f`` (:meth:`_input`).  ``read`` may open the file by name
        more than once; an optimize moving it away between two opens makes it located again and
        ``read`` run again, once (a file moves once, then stays until gc): a file gone for good
        raises :class:`~paimon_fast.errors.DataFileChangedError`."""
        try:
            return read(self._input(f))
        except FileNotFoundError:
            pass
        try:
            return read(self._input(f))
        except FileNotFoundError:
            raise _identity.DataFileChangedError(
                f"data file {f.path} was removed after this operation's snapshot was taken; run it again"
            ) from None

    def _read_done(self, f: "DataFile") -> None:
        """After reading ``f``: what was read is the listed version (else DataFileChangedError)."""
        _replaced.check_read(self.store, self.root, f, f.path)

    def index_file_path(self, f: "DataFile", fi: Mapping) -> Optional[str]:
        """Where the index file named by a catalog ``file_index`` entry lives: its ``path`` under
        the root, or, in the old layout, its ``file`` beside the data file; None when inline."""
        if "path" in fi:
            return self.store.join(self.root, *fi["path"].split("/"))
        if "file" in fi:
            return self.store.join(self.store.dirname(f.abs_path), fi["file"])
        return None

    # ------------------------------------------------------------ listing
    def files(self, refresh: bool = False) -> List[DataFile]:
        """Data files in the dataset's stable order (sorted relative POSIX paths), each with its
        identity: the snapshot's listing on a :meth:`snapshot`, else listed now (``refresh``: list
        now on a snapshot too)."""
        if self._snap is not None and not refresh:
            return self._snap.files
        return _catalog.list_data_files(self.store, self.root)

    def temp_files(self, min_age: float = 0.0) -> List[str]:
        """Temporary files of interrupted writes older than ``min_age`` seconds (beside the data
        files: the old layout's index files; and under ``_file_index/``)."""
        if self.store.object_store:
            return []  # a PUT is never partly visible: no temporary files
        keep = lambda n: n.startswith(".") and TMP_MARK in n  # noqa: E731
        found = self.store.list_files(self.root, skip_dir=_hidden, keep=keep)
        index_dir = self.store.join(self.root, FILE_INDEX_DIR)
        if self.store.is_dir(index_dir):
            found += self.store.list_files(index_dir, keep=keep)
        now = time.time_ns()
        return [e.path for e in found if now - e.mtime_ns >= min_age * 1e9]

    def clean_temp_files(self, min_age: Optional[float] = None) -> int:
        """Remove temporary files of interrupted writes older than ``min_age`` seconds (default: gc's
        grace period, one hour): a younger one may belong to a writer still running."""
        grace = _catalog.GRACE_SECONDS if min_age is None else min_age
        return sum(self.store.delete(p) for p in self.temp_files(grace))

    # ------------------------------------------------------------ schema
    def _derived(self, key, make, stable: bool = False):
        """``make()``, computed once per snapshot (``stable``: it depends on the listed files and the
        catalog alone, so it is computed once for every snapshot of the same ones: Snapshot.stable)."""
        if self._snap is None:
            return make()
        d = self._snap.stable if stable else self._snap.derived
        if key not in d:
            d[key] = make()
        return d[key]

    def data_schema(self) -> pa.Schema:
        """Arrow schema of the data columns (from the first file's footer)."""

        def make():
            files = self.files()
            if not files:
                raise FileNotFoundError(f"no Parquet data files under {self.root!r}")
            f = files[0]
            key = (f.path, f.identity)
            # a version every rewrite changes is known process-wide; another only to this object
            shared = (self.store.uri(f.abs_path), f.identity) if f.identity is not None and f.identity.strong else None
            s = self._schemas.get(key) or (_SCHEMAS.get(shared) if shared is not None else None)
            if s is None:
                try:
                    try:
                        s = pq.read_schema(self._input(f))
                    except FileNotFoundError:  # moved away by an optimize after it was located
                        s = pq.read_schema(self._input(f))
                except (pa.ArrowInvalid, OSError) as e:
                    if isinstance(e, FileNotFoundError):
                        raise
                    raise DataFileError(f"{self.store.uri(f.abs_path)} is not a readable Parquet file: {e}") from None
                if len(self._schemas) > 64:
                    self._schemas.clear()
                self._schemas[key] = s
                if shared is not None:
                    if len(_SCHEMAS) > 256:
                        _SCHEMAS.clear()
                    _SCHEMAS[shared] = s
            return s

        return self._derived("data_schema", make, stable=True)

    def partition_schema(self) -> pa.Schema:
        def make():
            cols: Dict[str, list] = {}
            for f in self.files():
                for k, v in f.partition:
                    cols.setdefault(k, []).append(v)
            data_names = set(self.data_schema().names)
            return pa.schema([pa.field(k, _infer_partition_type(v)) for k, v in cols.items() if k not in data_names])

        return self._derived("partition_schema", make, stable=True)

    def schema(self) -> pa.Schema:
        """Data columns followed by partition columns (as Spark orders them)."""
        s = self.data_schema()
        for f in self.partition_schema():
            s = s.append(f)
        return s

    def row_type(self) -> Dict[str, str]:
        """``{column: Paimon type}`` of the data columns an index can be built on (a copy)."""
        return dict(self._derived("row_type", lambda: self.row_type_of_schema(self.data_schema()), stable=True))

    @staticmethod
    def row_type_of_schema(schema: pa.Schema) -> Dict[str, str]:
        out = {}
        for f in schema:
            try:
                out[f.name] = str(DataType.from_arrow(f.type))
            except UnsupportedTypeError:
                pass
        return out

    @staticmethod
    def row_type_of(data_file: str) -> Dict[str, str]:
        """``{column: Paimon type}`` of one Parquet file."""
        return ParquetDataset.row_type_of_schema(pq.read_schema(data_file))

    # ------------------------------------------------------------ catalog
    def read_catalog(self) -> dict:
        """The catalog: the snapshot's version on a :meth:`snapshot` (do not modify it), else the
        current version (a :class:`~paimon_fast.tables.catalog.Catalog`: it remembers the version it
        is, so :meth:`write_catalog` of it fails if another commit came in between).  A damaged
        version raises :class:`~paimon_fast.errors.DamagedFileError` naming it."""
        if self._snap is not None:
            return self._snap.catalog
        return _catalog.read(self.catalog, self.io)

    def write_catalog(self, catalog: dict, _fault: Optional[str] = None) -> None:
        """Commit ``catalog`` as the version after the one it was read at
        (:class:`~paimon_fast.io.fs.CommitConflictError` if another commit won; nothing is rebased:
        the builds and deletes of this class rebase their own changes)."""
        base = catalog if isinstance(catalog, Catalog) else _catalog.read(self.catalog, self.io)

        def change(cat, attempt):
            return dict(catalog)

        _catalog.commit(self.catalog, base, change, counter=self.io, retries=0, what="write_catalog", _fault=_fault)

    def trust(self, f: DataFile, entry: Optional[dict]) -> str:
        """How ``f`` (as listed) compares with the identity ``entry`` recorded: one of the verdicts of
        :func:`paimon_fast.tables.identity.judge` (a file's witness is read once per snapshot, and only
        when its identity differs but its size does not)."""
        if f.identity is None:
            return _identity.UNKNOWN
        snap = self._snap
        if snap is None or entry is None or snap.catalog["files"].get(f.path) is not entry:
            return _identity.judge(f.identity, entry, lambda: self._witness(f))
        # the snapshot's own entry: judged once for every snapshot of the same listing and catalog,
        # except a verdict that read the file's witness (its bytes may change under a weak identity)
        verdicts = snap.stable.setdefault("trust", {})
        got = verdicts.get(f.path)
        if got is None or got[0] is not f:
            asked = []

            def witness():
                asked.append(True)
                return self._witness(f)

            v = _identity.judge(f.identity, entry, witness)
            if asked:
                return v
            got = verdicts[f.path] = (f, v)
        return got[1]

    def _witness(self, f: DataFile) -> Optional[str]:
        return self._derived(
            ("witness", f.path),
            lambda: _identity.read_witness(
                self.store,
                _replaced.locate(self.store, self.root, f),
                f.identity,
                None if self.store.local else self.io,
            ),
        )

    def _entry_matches(self, f: DataFile, entry: Optional[dict]) -> bool:
        return _identity.usable(self.trust(f, entry))

    def _index_current(
        self, f: DataFile, entry: Optional[dict], digest: Optional[str], verdict: Optional[str] = None
    ) -> bool:
        """Does ``entry``'s file index describe ``f`` as listed (and, with ``digest``, was it built
        with those options)?  ``verdict``: :meth:`trust` of the two, when the caller has it."""
        verdict = self.trust(f, entry) if verdict is None else verdict
        if not _identity.usable(verdict):
            return False
        if digest is not None and verdict == _identity.COPIED:
            return False  # a build makes a copy's index exact again
        fi = entry.get("file_index")
        if not fi or (digest is not None and fi.get("digest") != digest):
            return False
        path = self.index_file_path(f, fi)
        if path is not None and self.store.local:  # elsewhere the file is immutable and committed with the entry
            try:
                return os.path.getsize(path) == fi.get("size")
            except OSError:
                return False
        return True

    def why_unindexed(self, f: DataFile, entry: Optional[dict]) -> Optional[str]:
        """Why ``f``'s index cannot answer for it (None: it can, or there is none to use)."""
        verdict = self.trust(f, entry)
        if not _identity.usable(verdict):
            return _identity.REASONS.get(verdict, verdict)
        fi = (entry or {}).get("file_index")
        if not fi:
            return "not indexed"
        if fi.get("none"):
            return None
        if not self._index_current(f, entry, None):
            return "index file missing"
        return None

    def index_spec(self, options: Mapping) -> IndexSpec:
        return IndexSpec.from_options(options, self.row_type())

    def files_to_build(self, spec: IndexSpec, force: bool = False) -> Tuple[List[DataFile], List[DataFile]]:
        """``(to_build, current)``: files whose index is missing or stale, and the others (in this
        dataset's snapshot: a builder takes a settled one, :meth:`snapshot` ``settle=True``)."""
        entries = self.read_catalog()["files"]
        todo, current = [], []
        for f in self.files():
            if not force and self._index_current(f, entries.get(f.path), spec.digest):
                current.append(f)
            else:
                todo.append(f)
        return todo, current

    def commit_build(self, spec: IndexSpec, results: Iterable[Mapping], _fault: Optional[str] = None) -> int:
        """Record built indexes in the catalog: ``results`` rows have ``path`` (relative), ``rows``,
        ``file_index`` (the entry from :func:`store_index`) and ``identity`` (the data file's identity
        the index was built from; without it, the file's in this dataset's snapshot).  Rows with a
        ``file_index`` of None (the file changed during the build) are left out.  Returns index bytes
        recorded.

        The commit starts from this dataset's snapshot (on an unpinned dataset: the current version)
        and rebases onto newer versions (:func:`paimon_fast.tables.catalog.commit`): an entry a
        concurrent commit gave a deletion vector keeps it; a file another build indexed as a newer
        version than this build read keeps that index; entries of files this snapshot no longer lists
        are dropped unless another commit touched them since."""
        view = self._at()
        base = view.read_catalog()
        listed = {f.path: f for f in view.files()}
        done = []
        for r in results:
            if r.get("file_index") is None:
                continue
            f = listed.get(r["path"])
            ident = r.get("identity")
            if ident is None:
                if f is None or f.identity is None:
                    continue
                ident = f.identity.to_json()
            fi = dict(r["file_index"])
            ident = dict(ident)
            if fi.get("witness"):
                ident["witness"] = fi.pop("witness")
            facts = {k: fi.pop(k) for k in ("stats", "row_groups") if k in fi}
            done.append((r["path"], ident, int(r["rows"]), fi, facts))
        before = base["files"]
        gone = [p for p in before if p not in listed]

        def change(cat, attempt):
            new = dict(cat)
            new["file_index"] = spec.to_json()
            files = dict(cat["files"])
            for p in gone:  # dropped only if no commit touched the entry since this snapshot
                if p in files and files[p] == before.get(p):
                    del files[p]
            for path, ident, rows, fi, facts in done:
                cur = files.get(path)
                if cur is not None and cur != before.get(path):
                    had = _identity.recorded(cur)
                    if had is not None and had != ident and had != _identity.recorded(before.get(path)):
                        continue  # another build recorded a newer version of the file meanwhile
                e = dict(cur or {})
                if _identity.recorded(e) != ident:  # what the entry said of another version goes with it
                    for k in VERSION_FACTS:
                        e.pop(k, None)
                for k in _identity.IDENTITY_KEYS:
                    e.pop(k, None)
                e.update(ident)
                e.update(rows=rows, file_index=fi)
                if "stats" in facts:  # (of this version: an optimize's of other columns stay)
                    e["stats"] = {**(e.get("stats") or {}), **facts["stats"]}
                if "row_groups" in facts:
                    e["row_groups"] = facts["row_groups"]
                files[path] = e
            new["files"] = files
            return new

        step("build.commit")
        if not done and not gone and base.get("file_index") == spec.to_json():
            return 0  # nothing to record: no new version
        out = _catalog.commit(self.catalog, base, change, counter=self.io, what="the build's commit", _fault=_fault)
        self._last_commit = out.commit_version
        step("build.committed", version=out.commit_version)
        self._drop_old_layout(
            [(listed[p], (before.get(p) or {}).get("file_index") or {}) for p, _, _, _, _ in done if p in listed]
        )
        return sum(int(fi.get("size", 0)) for _, _, _, fi, _ in done)

    def _drop_old_layout(self, replaced) -> None:
        """Remove old-layout containers (``<data file>.index`` beside the data file) a committed
        version no longer names.  The one exception to "commits remove nothing": beside the data
        files they keep Spark and pyarrow from reading the directory; a reader still at an older
        version reads those files without their index."""
        for f, fi in replaced:
            if "file" in fi:
                self.store.delete(self.index_file_path(f, fi))

    def migrate_layout(self) -> int:
        """Move the containers of current old-layout entries (``<data file>.index`` beside the data
        file, written before the ``_file_index/`` layout) to ``_file_index/``: the same bytes under
        the new name, one catalog commit, then the old files removed.  Stale entries (and entries
        without a strong identity) are left to the build, which rewrites them in the new layout.
        Returns the files moved; run by every build."""
        view = self._at()
        cat = view.read_catalog()
        moved = {}
        for f in view.files():
            e = cat["files"].get(f.path)
            fi = (e or {}).get("file_index") or {}
            if "file" not in fi or not view._index_current(f, e, None):
                continue
            blob = self.store.read_bytes(view.index_file_path(f, fi), self.io)
            if len(blob) != fi.get("size"):
                continue  # changed under us: the build's staleness check decides
            entry = {k: v for k, v in fi.items() if k != "file"}
            entry["path"] = index_rel_path(f.path, hashlib.sha256(blob).hexdigest()[:16])
            entry["checksum"] = block_checksums(blob)
            self.store.write_atomic(self.store.join(self.root, *entry["path"].split("/")), blob)
            moved[f.path] = (fi, entry)
        if moved:

            def change(c, attempt):
                new = dict(c)
                files = new["files"] = dict(c["files"])
                for p, (old, entry) in moved.items():
                    e = files.get(p)
                    if e is not None and e.get("file_index") == old:
                        files[p] = dict(e, file_index=entry)
                return new

            _catalog.commit(self.catalog, cat, change, counter=self.io, what="the layout migration")
            listed = {f.path: f for f in view.files()}
            self._drop_old_layout([(listed[p], old) for p, (old, _) in moved.items()])
        return len(moved)

    # ------------------------------------------------------------ in-process build
    def build(self, options: Mapping, force: bool = False, batch_rows: int = 1 << 17) -> BuildReport:
        """Build missing / stale indexes in this process with pyarrow (Spark: ``paimon_fast.spark.build``).

        Works on a settled snapshot taken when it starts; each file is read as the version listed
        and its identity checked again after the read: a file that changed meanwhile is not indexed
        (``report.changed``); the commit rebases onto concurrent commits
        (:meth:`commit_build`)."""
        t0 = time.perf_counter()
        self.clean_temp_files()
        self.snapshot(settle=True).migrate_layout()
        view = self.snapshot(settle=True)
        step("build.snapshot", version=view.snapshot_version)
        spec = view.index_spec(options)
        todo, current = view.files_to_build(spec, force)
        row_type = view.row_type()
        results = []
        rep = BuildReport(files_total=len(todo) + len(current), files_current=len(current))
        for f in todo:
            rows, entry = build_file_index(
                self.store,
                self.root,
                f.path,
                row_type,
                spec.columns,
                spec.threshold,
                spec.digest,
                batch_rows,
                counter=None if self.store.local else self.io,
                identity=f.identity,
            )
            if entry is None:
                rep.changed.append(f.path)
                continue
            results.append({"path": f.path, "rows": rows, "file_index": entry, "identity": f.identity.to_json()})
            rep.rows += rows
            rep.inline += "inline" in entry
            rep.built.append(f.path)
        rep.index_bytes = view.commit_build(spec, results)
        rep.catalog_version = view._last_commit
        rep.files_built = len(results)
        rep.seconds = time.perf_counter() - t0
        return rep

    # ------------------------------------------------------------ rows
    def row_counts(self, catalog: Optional[dict] = None) -> Dict[str, int]:
        """Rows per file (from the catalog where it describes the listed version, else the Parquet
        footer)."""
        if self._snap is None:
            return self.snapshot().row_counts(catalog)

        def make():
            entries = (catalog if catalog is not None else self.read_catalog())["files"]
            out = {}
            for f in self.files():
                e = entries.get(f.path)
                if self._entry_matches(f, e) and "rows" in e:
                    out[f.path] = int(e["rows"])
                else:
                    out[f.path] = self._footer_rows(f)
            return out

        return make() if catalog is not None else self._derived("row_counts", make, stable=True)

    def _footer_rows(self, f: DataFile) -> int:
        try:
            return self._on_input(f, lambda src: pq.ParquetFile(src).metadata.num_rows)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataFileError(f"{self.store.uri(f.abs_path)} is not a readable Parquet file: {e}") from None

    def row_offsets(self) -> Dict[str, int]:
        """Global row id of each file's first row, in the stable file order."""
        view = self._at()
        counts = view.row_counts()
        out, acc = {}, 0
        for f in view.files():
            out[f.path] = acc
            acc += counts[f.path]
        return out

    # ------------------------------------------------------------ evaluation
    def _uses_statistics(self) -> bool:
        """Do plans answer leaves from the files' Parquet statistics (``statistics``, else the
        module's :data:`STATISTICS`, else: on local files)?"""
        if self.statistics is not None:
            return bool(self.statistics)
        return bool(self.store.local if STATISTICS is None else STATISTICS)

    def _file_stats(self, f: DataFile, column: str):
        """The statistics of ``column`` in data file ``f``'s footer (None: none usable, or the
        footer not readable here)."""
        from ..io.parquet.footer import footer_for, cached
        from ..io.parquet.native import open_source
        from .stats import file_stats

        ident = getattr(f, "identity", None)
        if ident is not None and ident.ctime_ns is not None and ident.ino is not None:
            # the listing's version of the file: its footer, parsed before, found without opening it
            fo = cached((f.abs_path, ident.size, ident.mtime_ns, ident.ctime_ns, ident.ino))
            if fo is not None:
                try:
                    return file_stats(fo, column)
                except Exception:  # noqa: BLE001 - statistics only ever help
                    return None
        try:
            src, key, _, owned = open_source(_replaced.locate(self.store, self.root, f))
        except OSError:
            return None
        try:
            return file_stats(footer_for(src, key), column)
        except Exception:  # noqa: BLE001 - statistics only ever help: the index or the filter decides
            return None
        finally:
            if owned:
                src.close()

    def _pages_asked_for(self, f: DataFile, entry: Optional[dict], column: str) -> Optional[bool]:
        """:func:`_pages_asked` for ``f`` (its catalog ``entry``) as :meth:`plan` decides it."""
        trusted = bool(entry) and "stats" in entry and self._entry_matches(f, entry)
        indexed = self._index_current(f, entry, None)
        file_indexed = ((entry or {}).get("file_index") or {}).get("types") or {} if indexed else {}
        return _pages_asked(column, trusted, clustered_columns(entry) if trusted else (), file_indexed)

    def _page_answer(self, f: DataFile, leaf: Leaf, t: pa.DataType, sorted_only: bool = False):
        """The row ranges of ``f`` its page index keeps for ``leaf`` (None: no answer; with
        ``sorted_only``, none unless the file's footer says it is sorted by the column)."""
        from .pagestats import page_answer

        try:
            return page_answer(_replaced.locate(self.store, self.root, f), leaf.name, leaf, t, sorted_only)
        except Exception:  # noqa: BLE001 - statistics only ever help: the filter decides
            return None

    def open_index(self, f: DataFile, entry: Optional[dict] = None, current: bool = False):
        """The file's index container (FileIndexFile) if it describes the listed version of ``f``,
        else None.  Every block read from an index file is checked against the checksums the
        catalog recorded (:class:`~paimon_fast.io.checksum.ChecksumMismatchError` on a mismatch).
        ``current``: the caller has just found :meth:`_index_current` of ``entry`` true."""
        if entry is None:
            entry = self._at().read_catalog()["files"].get(f.path)
        if not current and not self._index_current(f, entry, None):
            return None
        fi = entry["file_index"]
        path = self.index_file_path(f, fi)
        inline = "inline" in fi
        if not inline and path is None:
            return None
        row_type = self.row_type()
        why = self._types_mismatch(fi.get("types") or {}, row_type)
        if why is not None:
            col, built, now = why
            raise IndexFormatError(
                f"the index of {f.path} on column {col!r} was built for type {built}, "
                f"the column is {now} now: rebuild the index (ParquetDataset.build)"
            )
        # an index file's bytes never change under its name and checksum: its header, parsed once
        key = None
        ck = fi.get("checksum")
        if path is not None and ck is not None:
            key = (path, fi.get("size"), str(sorted(ck.items())) if isinstance(ck, dict) else repr(ck))
        layout = _LAYOUTS.get(key) if key is not None else None
        held = (HELD_READERS, key) if key is not None else None  # its readers may be held
        if inline:
            src = as_source(base64.b64decode(fi["inline"]))
        else:
            store, io, size = self.store, self.io, int(fi.get("size", -1))

            def opener(head: int = 0):
                # the container header (and small indexes whole) in one ranged read
                d = store.open_source(path, io, head=head)
                return d if ck is None else ChecksummedSource(d, ck, size, f"index file {path}")

            if key is None:
                src = opener(HEAD_PREFETCH)
            elif layout is not None and size >= 0:
                # the header is known: the file is opened when a reader first needs bytes of it (the
                # held readers may need none), then, once closed, through a new source per read
                src = ReopeningSource(None, opener, size=size, first=lambda: opener(HEAD_PREFETCH))
            else:
                src = ReopeningSource(opener(HEAD_PREFETCH), opener)
        idx = FileIndexFile(src, row_type, {}, layout=layout, held=held)
        if key is not None and layout is None:
            if len(_LAYOUTS) >= _LAYOUTS_MAX:
                _LAYOUTS.pop(next(iter(_LAYOUTS)))
            _LAYOUTS[key] = idx.layout()
        return idx

    def _types_mismatch(self, built: Mapping[str, str], row_type: Mapping[str, str]):
        """``(column, built for, now)`` of the first column an index was built for another type of
        (the index formats do not record the type: such an index would be read wrongly), or None;
        decided once per set of types (the files of a dataset mostly share theirs)."""
        key = (tuple(sorted(built.items())), tuple(sorted(row_type.items())))
        memo = self._memo.setdefault("types", {})
        if key not in memo:
            got = None
            for col, b in built.items():
                now = row_type.get(col)
                if now is not None and replace(DataType.parse(now), nullable=True) != replace(
                    DataType.parse(b), nullable=True
                ):
                    got = (col, b, now)
                    break
            memo[key] = got
        return memo[key]

    def verified(self, f: DataFile, entry: Optional[dict], verdict: Optional[str] = None) -> bool:
        """May the index answers for ``f`` be taken as exact: its identity is strong and the same as
        recorded, and its index bytes are checksummed (an inline index is, by the catalog's seal).
        ``verdict``: :meth:`trust` of the two, when the caller has it."""
        if (self.trust(f, entry) if verdict is None else verdict) != _identity.VERIFIED:
            return False
        fi = (entry or {}).get("file_index") or {}
        return "inline" in fi and self.read_catalog().sealed or fi.get("checksum") is not None

    def _catalog_excluded(self, pred, files, entries, counts, part_types, data_types, prepared) -> frozenset:
        """The paths of ``files`` whose catalog statistics exclude ``pred`` (what the per-file
        ``evaluate_tree`` over the catalog's statistics says SKIP to), found with arrays of every
        file's statistics per column (kept while the listing and the catalog stay the same).  Only
        leaves on numeric columns are answered here; the plan still checks each file's identity
        before it takes the answer."""
        if pred is None or not files or _CATALOG_VECTORS is False:
            return frozenset()
        memo = self._memo.get("catalog-columns")
        if (
            memo is None
            or memo[0] is not entries
            or len(memo[1]) != len(files)
            or any(a is not b for a, b in zip(memo[1], files))
        ):
            memo = self._memo["catalog-columns"] = (entries, list(files), {})
        cols = memo[2]

        def leaf(lf: Leaf):
            t = data_types.get(lf.name)
            if t is None or lf.name in part_types:
                return None
            col = cols.get(lf.name)
            if col is None:
                col = cols[lf.name] = stats_arrays(
                    [entry_stats(entries.get(f.path), lf.name, counts[f.path]) for f in files], stat_kind(t)
                )
            return leaf_skips(prepared(lf), col)

        mask = tree_skips(pred, leaf, len(files))
        return frozenset(files[i].path for i in np.flatnonzero(mask).tolist())

    def _bound(self, predicate) -> Optional[Predicate]:
        """``predicate`` (a :class:`~paimon_fast.core.predicate.Predicate`, SQL text or None) parsed and
        bound to this dataset's schema: its literals made exact values of their columns' types
        (:func:`~paimon_fast.read.arrow_filter.coerce_literals`; a column the dataset lacks
        raises).  SQL text is bound once for every snapshot of the same files and catalog."""
        if predicate is None:
            return None
        from ..core.sqlpredicate import parse_predicate

        def make():
            return coerce_literals(parse_predicate(predicate), {f.name: f.type for f in self.schema()})

        if not isinstance(predicate, str) or self._snap is None:
            return make()
        known = self._snap.stable.setdefault("bound", {})
        got = known.get(predicate)
        if got is None:
            if len(known) >= 256:
                known.clear()
            got = known[predicate] = make()
        return got

    def plan(self, predicate: Optional[Predicate], threads: Optional[int] = None) -> ScanPlan:
        """Evaluate every file's index (and partition values) against ``predicate``.

        Works on this dataset's snapshot (an unpinned dataset takes one now).  Index evaluation
        runs in a thread pool; a file whose index is missing, describes another version of the
        file (:mod:`paimon_fast.tables.identity`), fails its checksum or is unreadable is kept
        (REMAIN) and counted in the report, which says why (``report.unindexed``).  A file's plan
        is exact (its rows are not filtered again) only where every index that answered for it
        was verified: the file's strong identity is the one recorded and the index bytes read
        passed their checksums.  A file the catalog's statistics of its listed version exclude
        is settled first, before its index file is looked for (it counts as indexed if its entry
        names an index)."""
        if self._snap is None:
            return self.snapshot().plan(predicate, threads)
        t0 = time.perf_counter()
        b0 = self.io.snapshot()[0]
        cat = self.read_catalog()
        ensure_index_types(cat.get("file_index", {}).get("types", {}))
        entries = cat["files"]
        files = self.files()
        pred = self._bound(predicate)
        counts = self.row_counts()
        part_types = {f.name: f.type for f in self.partition_schema()}
        from .deletes import load_vectors

        vectors = load_vectors(self, cat)
        gi = GlobalAnswers(self, pred, counts, part_types) if pred is not None else None
        # the files' own statistics answer leaves first: the catalog's (no file opened: on every
        # store, whatever ``statistics`` says), then the footers' row groups and the page indexes'
        # pages (``statistics``; by default local files only: their footers are parsed once, cached)
        use_stats = self._uses_statistics() and pred is not None
        data_types = {fl.name: fl.type for fl in self.data_schema()} if pred is not None else {}

        def one(f: DataFile) -> FilePlan:
            p = evaluate(f)
            dv = p.deletion_vector = vectors.get(f.path)
            if dv is None or p.skipped:
                return p
            if dv.cardinality >= p.rows:
                p.result = SKIP  # every row of the file is deleted
            elif p.bitmap is not None:
                kept = dv.remove_deleted(p.bitmap)
                p.result = BitmapResult(kept) if len(kept) else SKIP
            return p

        preps: dict = {}  # id(leaf) -> leaf_prepared of it (the predicate's leaves live as long)

        def prepared(leaf: Leaf):
            got = preps.get(id(leaf), preps)
            if got is preps:
                got = preps[id(leaf)] = leaf_prepared(leaf, data_types[leaf.name])
            return got

        def by_catalog(leaf: Leaf, entry: Optional[dict], rows: int, part: Mapping, trusted: bool):
            """``(answer or None, exact, the catalog's statistics of the leaf's column or None)``
            of a leaf from the file's partition values and (``trusted``: they describe its listed
            version) the catalog's statistics alone."""
            if leaf.name in part_types:
                res, is_exact = _partition_leaf(leaf, part.get(leaf.name), part_types[leaf.name])
                return res, is_exact, None
            cs = entry_stats(entry, leaf.name, rows) if trusted and leaf.name in data_types else None
            if cs is not None:
                said = leaf_answer(leaf, [cs], data_types[leaf.name], prepared(leaf))
                if said == "skip":
                    return SKIP, True, cs
                if said == "all":
                    return BitmapResult(range_bitmap(0, rows)), True, cs
            return None, True, cs

        # the files the catalog's statistics exclude for sure, found for all files at once (numeric
        # leaves; a file left out here is asked one by one below, as before)
        excluded = self._catalog_excluded(pred, files, entries, counts, part_types, data_types, prepared)

        def evaluate(f: DataFile) -> FilePlan:
            rows = counts[f.path]
            entry = entries.get(f.path)
            verdict = self.trust(f, entry)  # (judged once: every check below asks it)
            if pred is not None and entry and "stats" in entry and _identity.usable(verdict):
                # a file the catalog's statistics exclude is settled before anything else is
                # looked at (AND / OR only refine: a SKIP from fewer answers stays one)
                if f.path in excluded:
                    fi = entry.get("file_index")
                    return FilePlan(f, SKIP, rows, bool(fi), exact=True, why=None if fi else "not indexed")
                part = dict(f.partition)

                def catalog_only(leaf: Leaf):
                    res = by_catalog(leaf, entry, rows, part, True)[0]
                    return REMAIN if res is None else res

                if evaluate_tree(pred, catalog_only) is SKIP:
                    fi = entry.get("file_index")
                    return FilePlan(f, SKIP, rows, bool(fi), exact=True, why=None if fi else "not indexed")
            # an index over the file's current bytes answers correctly whatever options built it
            indexed = self._index_current(f, entry, None, verdict)
            why = None if indexed else self.why_unindexed(f, entry)
            if pred is None:
                return FilePlan(f, REMAIN, rows, indexed, exact=True, why=why)
            sure = indexed and self.verified(f, entry, verdict)  # its index answers may be taken as exact
            err = None
            opened = [False, None]  # the index, opened when a leaf first needs it
            exact = [True]  # every leaf visited was answered exactly
            part = dict(f.partition)
            stats = {}  # column -> the file's statistics of it (read on first need)
            # the catalog's statistics of the file, if they describe its listed version
            trusted = bool(entry) and "stats" in entry and _identity.usable(verdict)
            file_indexed = ((entry or {}).get("file_index") or {}).get("types") or {} if indexed else {}
            clustered = clustered_columns(entry) if trusted else ()
            one_group = trusted and entry.get("row_groups") == 1

            def index():
                nonlocal err
                if not opened[0]:
                    opened[0] = True
                    if indexed:
                        try:
                            opened[1] = self.open_index(f, entry, current=True)
                        except Exception as e:  # a broken index never fails a query: read the file
                            err = f"{type(e).__name__}: {e}"
                return opened[1]

            def answered(res, is_exact):
                if not is_exact:
                    exact[0] = False
                return res

            def ask_index(leaf: Leaf):
                """``(answer, exact)`` of the file's index for ``leaf``, or None: no index, a NULL
                literal in a BSI / range-bitmap comparison (Java: NullPointerException; not a broken
                index: the file is read and the filter answers, no rows), or a failure (``err``: a
                broken index never fails a query)."""
                idx = index()
                if idx is None:
                    return None
                try:
                    return idx.visit_leaf_exact(leaf)
                except NullLiteralError:
                    return None
                except Exception as e:
                    nonlocal err
                    err = f"{type(e).__name__}: {e}"
                    return None

            def visit(leaf: Leaf):
                res, is_exact, cs = by_catalog(leaf, entry, rows, part, trusted)
                if res is not None:
                    return answered(res, is_exact)
                # (a file of one row group: its footer's statistics are the catalog's)
                if use_stats and leaf.name in data_types and not (cs is not None and one_group):
                    if leaf.name not in stats:
                        stats[leaf.name] = self._file_stats(f, leaf.name)
                    said = leaf_answer(leaf, stats[leaf.name], data_types[leaf.name], prepared(leaf))
                    if said == "skip":
                        return answered(SKIP, True)
                    if said == "all":
                        return answered(BitmapResult(range_bitmap(0, rows)), True)
                    if isinstance(said, list):  # row groups wholly in, the others wholly out
                        return answered(BitmapResult.of_ranges(said), True)
                g = gi.result(leaf, f.path)
                if g is not None:
                    return answered(g, gi.exact(leaf))
                sorted_only = _pages_asked(leaf.name, trusted, clustered, file_indexed) if use_stats else None
                if sorted_only is not None and leaf.name in data_types:
                    pages = self._page_answer(f, leaf, data_types[leaf.name], sorted_only)
                    if pages is not None:  # the pages that may hold the leaf
                        sure_pages = all(x for _, _, x in pages)
                        kept = sum(b - a for a, b, _ in pages)
                        if not pages:
                            return answered(SKIP, True)
                        # pages wholly in (or out): their rows are the answer.  A few pages that
                        # may hold the leaf (a clustered column's boundary): the column's index
                        # answers exactly if it can (one file's index, held between plans, costs less
                        # than reading and filtering the pages), else they are read and filtered;
                        # many pages: the index, if any, may answer exactly
                        few = kept * PAGES_BEFORE_INDEX <= rows if leaf.name in file_indexed else kept < rows
                        if sure_pages:
                            return answered(BitmapResult.of_ranges(pages), True)
                        if few:
                            said = ask_index(leaf) if leaf.name in file_indexed else None
                            if said is not None and said[1]:  # (exact as below: if verified)
                                return answered(said[0], sure)
                            return answered(BitmapResult.of_ranges(pages), False)
                said = ask_index(leaf)
                if said is None:
                    return answered(REMAIN, False)
                return answered(said[0], said[1] and sure)

            res = evaluate_tree(pred, visit)
            idx = opened[1]
            if idx is not None:
                if isinstance(res, BitmapResult):
                    try:  # a lazy result (bitmap index) reads the index: materialise it before closing
                        res.bitmap
                    except Exception as e:
                        err = f"{type(e).__name__}: {e}"
                        res = REMAIN
                        exact[0] = False
                idx.close()
            if err is not None and "ChecksumMismatchError" in err:
                # damaged or foreign index bytes: nothing this index said is used for the file
                res, why = REMAIN, f"index checksum mismatch: {err.split(': ', 1)[-1]}"
                if gi.used:  # the global indexes' answers stand on their own
                    res = evaluate_tree(pred, lambda leaf: visit_without_file_index(leaf, f, part))
            return FilePlan(f, res, rows, indexed, err, exact=exact[0] and err is None, why=why)

        def visit_without_file_index(leaf: Leaf, f: DataFile, part):
            if leaf.name in part_types:
                return _partition_leaf(leaf, part.get(leaf.name), part_types[leaf.name])[0]
            g = gi.result(leaf, f.path)
            return REMAIN if g is None else g

        n = len(files)
        from ..io.pool import threads as cores

        # locally the per-file work holds the GIL (threads only add hand-offs: one thread); on object
        # stores reads wait on the network, so up to 4 per core overlap their latency
        workers = threads or min(16, 4 * cores())
        if n > 1 and not self.store.local and workers > 1:
            from ..io.pool import map_on_pool

            plans = map_on_pool(one, files, workers)  # the process's threads: none started per plan
        else:
            plans = [one(f) for f in files]
        rep = ScanReport(files_total=n, predicate="" if pred is None else repr(pred))
        rep.catalog_version = self.snapshot_version
        if gi is not None:
            rep.global_index_used = sorted(gi.used)
            rep.global_index_stale = sorted(gi.stale)
            rep.index_errors += len(gi.errors)
        for p in plans:
            rep.rows_total += p.rows
            dv = p.deletion_vector
            if dv is not None:
                rep.rows_deleted_total += dv.cardinality
                rep.files_all_deleted += dv.cardinality >= p.rows
                if not p.skipped and p.bitmap is None:
                    rep.rows_skipped_by_deletion += dv.cardinality
            rep.files_without_index += not p.indexed
            if p.why is not None:
                rep.unindexed[p.file.path] = p.why
            rep.index_errors += p.error is not None
            if p.skipped:
                rep.files_skipped += 1
                rep.rows_skipped_by_file += p.rows
            elif p.bitmap is not None:
                rep.files_with_bitmap += 1
                rep.rows_skipped_by_bitmap += p.rows - p.rows_to_read
        rep.eval_seconds = time.perf_counter() - t0
        rep.bytes_read = self.io.snapshot()[0] - b0
        plan = ScanPlan(plans, rep, pred)
        plan.dataset = self
        return plan

    # ------------------------------------------------------------ reading without Spark
    def read_file(
        self,
        f: DataFile,
        bitmap: Optional[BitMap] = None,
        predicate: Optional[Predicate] = None,
        columns: Optional[List[str]] = None,
        schema: Optional[pa.Schema] = None,
        deletion_vector=None,
        stats=None,
    ) -> pa.Table:
        """One file's rows (data + partition columns), only the bitmap's positions
        when given, without the rows ``deletion_vector`` deletes, filtered by
        ``predicate``; columns in ``schema`` (default: :meth:`schema`).  With a
        bitmap only the pages holding its rows are decoded
        (:func:`paimon_fast.io.parquet.rows.read_rows`, which adds to ``stats``)."""
        from ..io.parquet.rows import file_shape, read_rows

        schema = schema or self.schema()
        if bitmap is not None:

            def at_bitmap(src):
                names, nrows = file_shape(src)
                read_cols = [c for c in schema.names if c in names]
                pos = np.asarray(bitmap.to_array(), dtype=np.int64)
                pos = pos[pos < nrows]
                if deletion_vector is not None:
                    pos = pos[~deletion_vector.is_deleted_batch(pos)]
                return read_rows(src, pos, read_cols, stats=stats), names

            t, names = self._on_input(f, at_bitmap)
            self._read_done(f)
            return filter_table(self._conform(f, t, schema, set(names)), predicate)

        def whole(src):
            names = set(pq.read_schema(src).names)
            return pq.read_table(src, columns=[c for c in schema.names if c in names]), names

        t, data_names = self._on_input(f, whole)
        self._read_done(f)
        if deletion_vector is not None:
            from ..tableindex import apply_deletion_vector

            t = pa.Table.from_batches(
                [apply_deletion_vector(deletion_vector, b, off) for b, off in _with_offsets(t.to_batches())],
                schema=t.schema,
            )
        out = self._conform(f, t, schema, data_names)
        return filter_table(out, predicate)

    @staticmethod
    def _conform(f: DataFile, t: pa.Table, schema: pa.Schema, data_names) -> pa.Table:
        """Rows ``t`` of file ``f`` in ``schema``: data columns cast to the dataset's
        types, partition columns from the file's path, absent columns as nulls."""
        part = dict(f.partition)
        arrays = []
        for fld in schema:
            if fld.name in data_names:
                col = t.column(fld.name)
                arrays.append(col if col.type == fld.type else col.cast(fld.type))
            elif fld.name in part:
                v = part[fld.name]
                arrays.append(pa.array([v] * t.num_rows, pa.string()).cast(fld.type))
            else:
                arrays.append(pa.nulls(t.num_rows, fld.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def read_rows(
        self,
        f: DataFile,
        positions,
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
        stats=None,
    ) -> pa.Table:
        """Rows at ``positions`` (sorted row positions of ``f``) with ``columns`` and a
        ``__pf_pos`` column holding each row's position, filtered by ``predicate``.

        Decodes only the pages holding those positions
        (:func:`paimon_fast.io.parquet.rows.read_rows`, which adds to ``stats``) and
        only the columns asked for plus those ``predicate`` needs."""
        from ..io.parquet.rows import file_shape, read_rows
        from ..read.topn import POS

        schema = schema or self.schema()
        positions = np.asarray(positions, dtype=np.int64)
        need = set(columns) | (predicate.fields() if predicate is not None else set())

        def at_positions(src):
            names = set(file_shape(src).columns)
            return read_rows(src, positions, [c for c in schema.names if c in need and c in names], stats=stats), names

        t, data_names = self._on_input(f, at_positions)
        keep = [fl for fl in schema if fl.name in need]
        out = self._conform(f, t, pa.schema(keep), data_names).append_column(POS, pa.array(positions))
        self._read_done(f)
        return filter_table(out, predicate).select([*columns, POS])

    def read_kept(
        self,
        p: FilePlan,
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
        positions: bool = False,
        stats=None,
        rows: Optional[Tuple[int, int]] = None,
    ) -> pa.Table:
        """The rows of the kept file ``p`` where ``predicate`` holds, with ``columns`` (data or
        partition columns of ``schema``, default :meth:`schema`) and, with ``positions``, a
        ``__pf_pos`` column of each row's position in the file: :meth:`read_kept_many` of one
        file (the one read of a planned file that every reader of a dataset shares, in this
        process and on Spark's executors).  ``rows=(start, stop)`` reads only the file's rows
        in that range of positions."""
        t, _ = self.read_kept_many([(p, rows)], columns, predicate, schema, positions=positions, stats=stats)
        return t

    def read_kept_many(
        self,
        parts: Sequence[Tuple[FilePlan, Optional[Tuple[int, int]]]],
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
        positions: bool = False,
        stats=None,
        threads: Optional[int] = None,
    ) -> Tuple[pa.Table, np.ndarray]:
        """The rows of kept files where ``predicate`` holds, one file after another, as one table
        (and the rows each part gave): ``parts`` are ``(FilePlan, (start, stop) or None)``, a
        file or a range of its row positions.

        Every file is read at the rows its plan selects (a row bitmap's positions, or every row
        not deleted), in one call of the native Parquet reader
        (:func:`paimon_fast.io.parquet.native.read_files`) across files, column chunks and pages
        on all threads: only the pages holding those rows are read and decoded, and each file
        only at its selected rows (``stats``, a ``PageReadStats``, is added to).  Where a file's
        plan is exact (:attr:`FilePlan.exact`) the predicate is not evaluated and its columns are
        not read unless asked for (none at all for a count); elsewhere the predicate's columns
        are read at the selected rows, the predicate applied, and the other ``columns`` read only
        at the rows that hold it (or, at most ``ONE_PASS_ROWS`` rows to test, every column read at
        them in one pass and then filtered).  Deleted rows are never read."""
        from ..io.parquet.native import read_files
        from ..io.parquet.rows import no_columns
        from ..read.topn import POS

        schema = schema or self.schema()
        columns = list(columns)
        data_schema = self.data_schema()
        data_names = set(data_schema.names)
        items = []  # per part: (input, positions: ndarray / range / None)
        for p, rows in parts:
            items.append((self._input(p.file), self._kept_positions(p, rows)))
        counts = np.zeros(len(parts), dtype=np.int64)
        if not parts:
            return self._assemble([], [], [], columns, schema, positions), counts
        exact = [predicate is None or p.exact for p, _ in parts]
        pred_cols = predicate.fields() if predicate is not None else set()
        out_tables: List[Optional[pa.Table]] = [None] * len(parts)

        def read(idx, want, pos_list):
            """``want`` columns (data or partition) of parts ``idx`` at ``pos_list``: a table with
            the part's rows in order, and the rows of each part."""
            data = [c for c in want if c in data_names]
            its = [(items[i][0], pos_list[k]) for k, i in enumerate(idx)]
            if data:
                sch = pa.schema([data_schema.field(c) for c in data])
                # an optimize moves the files it replaced away one after another: a file located
                # before its move is not found after it, and is located again (each file moves
                # once, so this ends)
                for attempt in range(len(idx) + 1):
                    try:
                        t, n = read_files(its, data, schema=sch, stats=stats, threads=threads, sorted_positions=True)
                        break
                    except FileNotFoundError:
                        if attempt == len(idx):
                            raise
                        its = [(self._input(parts[i][0].file), pos_list[k]) for k, i in enumerate(idx)]
            else:
                n = np.array([_count(x, parts[i][0]) for x, i in zip(pos_list, idx)], dtype=np.int64)
                t = no_columns(int(n.sum()))
            if not want:  # rows without columns (a count, positions)
                return no_columns(t.num_rows), n
            arrays = []
            for c in want:
                fld = schema.field(c)
                if c in data_names:
                    col = t.column(c)
                    arrays.append(col if col.type == fld.type else col.cast(fld.type))
                else:
                    arrays.append(_partition_column(fld, [parts[i][0].file for i in idx], n))
            return pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(c) for c in want])), n

        def positions_of(idx, pos_list, n):
            """Each row's position in its file, for parts ``idx`` read at ``pos_list``."""
            out = []
            for x, i, k in zip(pos_list, idx, n):
                if x is None:
                    out.append(np.arange(int(k), dtype=np.int64))
                elif isinstance(x, range):
                    out.append(np.arange(x.start, x.start + int(k), dtype=np.int64))
                else:
                    out.append(np.asarray(x, dtype=np.int64))
            return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

        # parts whose plan is exact: the columns asked for, at the selected rows
        ex = [i for i in range(len(parts)) if exact[i]]
        if ex:
            t, n = read(ex, columns, [items[i][1] for i in ex])
            if positions:
                t = t.append_column(POS, pa.array(positions_of(ex, [items[i][1] for i in ex], n), pa.int64()))
            _split_into(out_tables, ex, t, n, counts)
        # the others: the predicate's columns at the selected rows, the predicate, then the rest
        inexact = [i for i in range(len(parts)) if not exact[i]]
        candidates = sum(_count(items[i][1], parts[i][0]) for i in inexact)
        if inexact and candidates <= ONE_PASS_ROWS:
            # few rows to test (a clustered column's boundary pages): every column read at them in
            # one call, then filtered (the rows that fail cost less than a second read would)
            pos_list = [items[i][1] for i in inexact]
            want = [fl.name for fl in schema if fl.name in pred_cols or fl.name in columns]
            t, n = read(inexact, want, pos_list)
            if positions:
                t = t.append_column(POS, pa.array(positions_of(inexact, pos_list, n), pa.int64()))
            t = t.append_column("__pf_part", pa.array(np.repeat(np.arange(len(inexact), dtype=np.int32), n)))
            t = filter_table(t, predicate)
            n = np.bincount(t.column("__pf_part").to_numpy(), minlength=len(inexact)).astype(np.int64)
            names = [*columns, POS] if positions else columns
            t = t.select(names) if names else no_columns(t.num_rows)  # (select([]) keeps no rows)
            _split_into(out_tables, inexact, t, n, counts)
        elif inexact:
            first = [fl.name for fl in schema if fl.name in pred_cols]
            pos_list = [items[i][1] for i in inexact]
            t, n = read(inexact, first, pos_list)
            # each row's number in the read, filtered with the rows: the kept rows' parts and positions
            total = t.num_rows
            t = t.append_column("__pf_i", pa.array(np.arange(total, dtype=np.int32 if total < 1 << 31 else np.int64)))
            t = filter_table(t, predicate)
            idx = t.column("__pf_i").to_numpy().astype(np.int64)
            t = t.drop_columns(["__pf_i"])
            starts = np.concatenate(([0], np.cumsum(n)))
            part_of = np.searchsorted(starts, idx, side="right") - 1
            local = idx - starts[part_of]
            pos = np.empty(len(idx), dtype=np.int64)
            for k, x in enumerate(pos_list):  # local row numbers -> positions in the file
                sel = part_of == k
                if not sel.any():
                    continue
                if x is None:
                    pos[sel] = local[sel]
                elif isinstance(x, range):
                    pos[sel] = x.start + local[sel]
                else:
                    pos[sel] = np.asarray(x, dtype=np.int64)[local[sel]]
            n = np.bincount(part_of, minlength=len(inexact)).astype(np.int64)
            if positions:
                t = t.append_column(POS, pa.array(pos, pa.int64()))
            rest = [fl.name for fl in schema if fl.name in columns and fl.name not in pred_cols]
            if rest:
                cuts = np.concatenate(([0], np.cumsum(n)))
                kept = [pos[cuts[k] : cuts[k + 1]] for k in range(len(inexact))]
                more, _ = read(inexact, rest, kept)
                for fl in rest:
                    t = t.append_column(schema.field(fl), more.column(fl))
            names = [*columns, POS] if positions else columns
            t = t.select(names) if names else no_columns(t.num_rows)  # (select([]) keeps no rows)
            _split_into(out_tables, inexact, t, n, counts)
        for f in {id(p.file): p.file for p, _ in parts}.values():
            self._read_done(f)  # what was read is the snapshot's version of each file
        return self._assemble(out_tables, parts, counts, columns, schema, positions), counts

    def _kept_positions(self, p: FilePlan, rows: Optional[Tuple[int, int]]):
        """The positions of file ``p`` to read: a sorted array, a ``range``, or None (every row)."""
        nrows = p.rows
        dv = p.deletion_vector
        bm = p.bitmap
        if bm is not None and not (len(bm) and bm.max() - bm.min() + 1 == len(bm)):
            pos = np.asarray(bm.to_array())  # sorted (a bitmap's); a view, uint32: the reader widens it
            if len(pos) and pos[-1] >= nrows:
                pos = pos[: np.searchsorted(pos, nrows)]
            if rows is not None:
                pos = pos[np.searchsorted(pos, max(0, int(rows[0]))) : np.searchsorted(pos, int(rows[1]))]
        else:
            # every row, or one run of them (a clustered column's answer), within the window: a
            # range, which the reader reads by whole pages and row groups, not row by row
            lo, hi = (0, nrows) if bm is None else (int(bm.min()), min(nrows, int(bm.max()) + 1))
            if rows is not None:
                lo, hi = max(lo, int(rows[0])), min(hi, int(rows[1]))
            pos = None if (lo, hi) == (0, nrows) else range(lo, max(lo, hi))
        if dv is not None:
            if pos is None:
                pos = np.arange(nrows, dtype=np.int64)
            elif isinstance(pos, range):
                pos = np.arange(pos.start, pos.stop, dtype=np.int64)
            else:
                pos = pos.astype(np.int64)
            pos = pos[~dv.is_deleted_batch(pos)]
        return pos

    @staticmethod
    def _assemble(tables, parts, counts, columns, schema, positions) -> pa.Table:
        from ..read.topn import POS

        names = [*columns, POS] if positions else list(columns)
        fields = [schema.field(c) if c != POS else pa.field(POS, pa.int64()) for c in names]
        got = [t for t in tables if t is not None and t.num_rows]
        if not names:  # a count: rows without columns
            from ..io.parquet.rows import no_columns

            return no_columns(sum(t.num_rows for t in got))
        if not got:
            return pa.Table.from_arrays([pa.array([], f.type) for f in fields], schema=pa.schema(fields))
        if len(got) == 1:
            return got[0]
        return pa.concat_tables(got)

    def read_cost(
        self,
        plan: "ScanPlan",
        columns: Sequence[str],
        predicate: Optional[Predicate] = None,
        schema: Optional[pa.Schema] = None,
    ) -> int:
        """Estimated bytes in memory of :meth:`read_kept` of every kept file of ``plan`` with
        ``columns`` (the predicate default: the plan's): the predicate's columns at the rows the
        plan selects, and the other columns at the rows that may match: every selected row of a
        file an index answered with rows (such answers are mostly exact) or without a predicate
        (or one on partition columns only), none of a file kept whole by a partial answer (what
        the predicate keeps there is known only once it is read: a driver read that passes its
        threshold gives up).  Fixed-width columns count their width, the others the file's
        uncompressed column size (at least 12 bytes a value); a file whose plan is exact counts
        only the columns asked for at its selected rows.  Reads the kept files' footers (cached
        for local files)."""
        from ..io.parquet.rows import column_sizes

        schema = schema or self.schema()
        pred = plan.predicate if predicate is None else predicate
        pred_cols = pred.fields() if pred is not None else set()
        part_names = set(self.partition_schema().names)
        exact_whole = pred is None or pred_cols <= part_names
        first = [fl for fl in schema if fl.name in pred_cols]
        rest = [fl for fl in schema if fl.name in set(columns) and fl.name not in pred_cols]
        total = 0
        every = [fl for fl in schema if fl.name in set(columns)]
        for p in plan.kept:
            n = p.rows_to_read
            if n <= 0:
                continue
            part = dict(p.file.partition)
            sizes = []

            def cost(fields, rows):
                out = 0
                for fl in fields:
                    width = _fixed_width(fl.type)
                    if fl.name in part_names:
                        out += rows * (width or 4 + len(part.get(fl.name) or ""))
                    elif width:
                        out += rows * width + rows // 8
                    else:
                        if not sizes:
                            sizes.append(self._on_input(p.file, column_sizes))
                        raw = sizes[0].uncompressed.get(fl.name, 0) * rows // max(1, sizes[0].rows)
                        out += rows * 4 + max(raw, 8 * rows)
                return out

            if p.exact:  # the selected rows are the answer: only the columns asked for, there
                total += cost(every, n)
            else:
                total += cost(first, n) + cost(rest, n if (p.bitmap is not None or exact_whole) else 0)
        return total

    def top_n(
        self,
        column: str,
        k: int,
        *,
        desc: bool = True,
        where=None,
        columns: Optional[List[str]] = None,
        nulls_first: bool = False,
        report=None,
        _plan=None,
    ) -> pa.Table:
        """``SELECT columns WHERE where ORDER BY column [DESC] NULLS LAST|FIRST LIMIT k``, exact.

        Ties go to the earlier file (the dataset's file order) and then the
        lower row position; NaN ranks above every other float; deleted rows
        never count.  Files with a current ``range-bitmap`` index on ``column``
        are answered from it (files that cannot beat the current k-th row are
        not read, others only at their candidate rows); the rest read the
        column.  ``where`` is a predicate or SQL text; ``report`` (a
        :class:`~paimon_fast.read.topn.TopNReport`) is filled in when given.
        """
        from ..read.topn import TopNReport, top_n

        if self._snap is None and _plan is None:
            return self.snapshot().top_n(
                column, k, desc=desc, where=where, columns=columns, nulls_first=nulls_first, report=report
            )
        rep = report if report is not None else TopNReport()
        schema, columns, pred, files = _plan or self._top_n_plan(column, columns, where)
        opened = []
        sources = []
        try:
            for p, eligible in files:
                idx, reader, err = self._range_reader(p.file, column, None) if p.indexed else (None, None, None)
                if idx is not None:
                    opened.append(idx)
                if err:
                    rep.index_errors.append(err)
                sources.append(self._top_n_source(p.file, p.rows, eligible, reader, pred, schema, column))
            out = top_n(
                sources,
                column,
                k,
                desc=desc,
                nulls_first=nulls_first,
                where_columns=sorted(pred.fields()) if pred is not None else (),
                columns=columns,
                report=rep,
            )
        finally:
            for idx in opened:
                idx.close()
        return out if out is not None else schema.empty_table().select(columns)

    def _top_n_plan(self, column: str, columns, where):
        """``(schema, output columns, predicate, [(FilePlan, eligible rows or None)])`` of a top-N:
        the columns checked, the ``where`` planned with the indexes, deleted rows removed."""
        from ..errors import ColumnNotFoundError
        from ..read.topn import check_orderable

        schema = self.schema()
        columns = list(schema.names) if columns is None else list(columns)
        for c in [column, *columns]:
            if c not in schema.names:
                raise ColumnNotFoundError(c, schema.names)
        check_orderable(column, schema.field(column).type)
        plan = self.plan(where)
        files = []
        for p in plan.kept:
            eligible = p.bitmap
            if p.deletion_vector is not None:
                eligible = p.deletion_vector.remove_deleted(eligible if eligible is not None else BitMap(range(p.rows)))
            files.append((p, eligible))
        return schema, columns, plan.predicate, files

    def _range_reader(self, f: DataFile, column: str, entry: Optional[dict]):
        """``(open index container or None, its range-bitmap reader of column or None, error text or None)``;
        a broken index never fails a query (the column is read instead)."""
        idx = None
        try:
            idx = self.open_index(f, entry)
            return idx, (idx.reader(column, "range-bitmap") if idx is not None else None), None
        except KeyError:
            return idx, None, None
        except Exception as e:
            return idx, None, f"{f.path}: {type(e).__name__}: {e}"

    def _top_n_source(
        self, f: DataFile, rows: int, eligible: Optional[BitMap], reader, pred, schema, column: Optional[str] = None
    ):
        from ..io.parquet.rows import PageReadStats
        from ..read.topn import TopNSource

        decoded = PageReadStats()

        def read(positions, cols):
            return self.read_rows(f, positions, cols, pred, schema, decoded)

        def read_all(cols):
            pos = np.arange(rows, dtype=np.int64) if eligible is None else np.asarray(eligible.to_array(), np.int64)
            return read(pos, cols)

        return TopNSource(
            f.path,
            rows,
            eligible,
            reader,
            read,
            read_all,
            exact=pred is None,
            arrow_type=schema.field(column).type if column is not None else None,
            decoded=decoded,
        )

    def read(self, where=None, columns: Optional[List[str]] = None, limit: Optional[int] = None):
        """The rows where ``where`` (a predicate or SQL text) holds, with ``columns``: a
        :class:`~paimon_fast.read.lazy.LazyRead`, lazy until asked (``to_arrow()``,
        ``to_arrow_batch_reader()``, ``to_pandas()``, ``to_polars()``, ``to_duckdb(name)``,
        ``count()``, ``explain()``, ``report``).  The indexes prune files and rows once, on first
        need; the kept files stream range by range (:mod:`paimon_fast.tables.stream`); ``limit``
        stops reading once that many rows are out.  A predicate naming a column the dataset lacks
        (or comparing one with a literal of another type) raises here."""
        from ..read.lazy import LazyRead
        from .stream import DatasetSource

        return LazyRead(DatasetSource(self._at(), where, columns).check(), limit)

    def scan(self, predicate=None, columns: Optional[List[str]] = None):
        """Exact answer without Spark, as :meth:`read` (``read(predicate, columns)``, the same
        :class:`~paimon_fast.read.lazy.LazyRead`).  Unpacking it as the former ``(table, report)``
        tuple still works, warned (DeprecationWarning): the indexes prune, whole files or their
        bitmap rows are read and filtered."""
        from .stream import DatasetSource, ScanResult

        return ScanResult(DatasetSource(self._at(), predicate, columns).check())

    def _scan_table(self, plan: ScanPlan, columns: Optional[List[str]] = None) -> pa.Table:
        """The former eager read of :meth:`scan`: every kept file (its bitmap rows only, without
        deleted rows) filtered and concatenated; fills ``plan.report`` (bytes read, decoded)."""
        from ..io.parquet.rows import PageReadStats

        b0 = self.io.snapshot()[0]
        schema = self.schema()
        plan.report.decoded = PageReadStats()
        parts = [
            self.read_file(
                p.file,
                p.bitmap,
                plan.predicate,
                schema=schema,
                deletion_vector=p.deletion_vector,
                stats=plan.report.decoded,
            )
            for p in plan.kept
        ]
        t = pa.concat_tables(parts) if parts else schema.empty_table()
        if columns:
            t = t.select(columns)
        plan.report.bytes_read += self.io.snapshot()[0] - b0
        return t

    # ------------------------------------------------------------ layout
    def optimize(self, cluster_by, strategy: str = "order", **options):
        """Rewrite the dataset's files clustered by ``cluster_by`` (a column or a list), in one
        catalog commit: ``strategy`` ``"order"`` (sorted), ``"zorder"`` or ``"hilbert"`` (as
        Paimon's sort compaction names them).  Each partition's rows are ordered across its files
        (deleted rows dropped), written with a page index, small row-capped pages and
        ``sorting_columns``, their file indexes, global indexes and per-file statistics rebuilt;
        the old files leave every reader's listing after the commit and are removed by ``gc``
        after its grace period.  ``options``: ``full`` (rewrite files clustered already too),
        ``partitions`` (a function of a partition's ``{column: value}``), ``target_file_size``
        (bytes; default the mean size of the files rewritten, within 8 and 128 MiB),
        ``row_group_rows`` (1,048,576), ``page_rows`` (4,096), ``compression`` (``"snappy"`` or
        ``"zstd"``), ``compression_level``, ``progress(phase, done, total)``, ``recover_after``
        (seconds).  Returns an :class:`~paimon_fast.tables.optimize.OptimizeReport`
        (files and bytes before and after, time); see :mod:`paimon_fast.tables.optimize`."""
        from .optimize import optimize

        tools = {"builder": FileIndexBuilder, "store_index": store_index, "ensure_types": ensure_index_types}
        return optimize(self, cluster_by, strategy, index_tools=tools, **options)

    # ------------------------------------------------------------ deletes
    def deletion_vectors(self) -> Dict[str, object]:
        """``{relative path: DeletionVector}`` of the files with deleted rows."""
        from .deletes import load_vectors

        return load_vectors(self._at())

    def delete(self, predicate, *, bitmap64: Optional[bool] = None, _fault: Optional[str] = None):
        """Mark the rows where ``predicate`` holds deleted, in this process (Spark:
        ``paimon_fast.spark.delete``): on a settled snapshot the plan prunes files, the exact filter
        finds row positions (each file read as the version listed), and
        :func:`paimon_fast.tables.deletes.commit_deletions` writes one deletion file and commits the
        catalog, merging with deletes committed meanwhile.  A file changed while it was read, or a
        change that cannot be merged, starts the delete over from a new snapshot (a few times, then
        :class:`~paimon_fast.tables.deletes.DeleteConflictError`).  Returns a
        :class:`~paimon_fast.tables.deletes.DeleteReport`."""
        from .deletes import DeleteConflictError, DeleteReport, commit_deletions, matching_positions

        if predicate is None:
            raise ValueError("delete needs a predicate (use a predicate that is always true to delete all rows)")
        t0 = time.perf_counter()
        last = None
        for _ in range(WRITE_ATTEMPTS):
            view = self.snapshot(settle=True)
            step("delete.snapshot", version=view.snapshot_version)
            plan = view.plan(predicate)
            step("delete.planned")
            rep = DeleteReport(
                files_scanned=len(plan.kept), files_skipped=plan.report.files_skipped, predicate=plan.report.predicate
            )
            try:
                positions = matching_positions(view, plan)
                step("delete.positions")
                rep.seconds = time.perf_counter() - t0
                return commit_deletions(view, positions, bitmap64=bitmap64, report=rep, _fault=_fault)
            except (_identity.DataFileChangedError, _catalog.Rebase) as e:
                last = e  # a file changed under the delete: start over from a new snapshot
        raise DeleteConflictError(f"the delete could not complete: data files kept changing under it ({last})")


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _fixed_width(t: pa.DataType) -> int:
    """Bytes a value of a fixed-width Arrow type takes (0: variable width or nested)."""
    try:
        bits = t.bit_width
    except ValueError:
        return 0
    return max(1, bits // 8)


def _with_offsets(batches):
    off = 0
    for b in batches:
        yield b, off
        off += b.num_rows


def _partition_leaf(leaf: Leaf, raw: Optional[str], t: pa.DataType) -> Tuple[FileIndexResult, bool]:
    """``(answer, exact)`` of a leaf on a partition column (the file has one value): REMAIN when
    every row holds, SKIP when none does; ``exact`` False when the value could not be compared
    (REMAIN: the rows are read and filtered)."""
    arr = pa.array([raw], pa.string()).cast(t)
    tab = pa.table({leaf.name: arr})
    try:
        keep = tab.filter(to_arrow_expression(leaf, tab.schema)).num_rows > 0
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return REMAIN, False
    return (REMAIN if keep else SKIP), True


def _pages_asked(column: str, trusted: bool, clustered, file_indexed) -> Optional[bool]:
    """Whether a plan asks a file's page index about ``column``: None (it does not), else its
    ``sorted_only`` (the pages answer only when the footer says the file is sorted by the column).

    Pages narrow a column the file is clustered by (an optimize wrote it: the catalog says so,
    ``trusted`` and ``clustered``) and one it is sorted by (the footer says so); of the others every
    page spans about the file's range.  A file no optimize wrote (no trusted catalog statistics)
    has its pages asked for a column without a file index (``file_indexed``: nothing else narrows
    it), for an indexed column only when the footer says the file is sorted by it."""
    if trusted and column not in clustered:
        return None
    return column not in clustered and column in file_indexed


def _count(x, p: FilePlan) -> int:
    """Rows a part reads: its positions' count, its range's length, or the file's rows."""
    if x is None:
        return p.rows
    return len(x)


def _split_into(out: list, idx: List[int], t: pa.Table, n: np.ndarray, counts: np.ndarray) -> None:
    """``t`` (parts ``idx`` one after another, ``n`` rows each) cut into the parts' slots of ``out``."""
    at = 0
    for i, k in zip(idx, n.tolist()):
        out[i] = t.slice(at, k)
        counts[i] = k
        at += k


def _partition_column(fld: pa.Field, files: List[DataFile], n: np.ndarray) -> pa.Array:
    """A partition column of parts read from ``files`` (``n`` rows each): each file's value from
    its path, repeated."""
    values = [dict(f.partition).get(fld.name) for f in files]
    one = pa.array(values, pa.string()).cast(fld.type)
    return one.take(pa.array(np.repeat(np.arange(len(files), dtype=np.int64), n)))
