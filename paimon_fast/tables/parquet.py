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

**Where the code is.**  This module defines :class:`ParquetDataset` with its constructor, snapshots,
data file inputs and index containers (:meth:`ParquetDataset.open_index`, the module's caches of
them and :data:`STATISTICS`); the rest of the class comes from mixins, one module each (none
imports this one): :mod:`.dataset_catalog` (listing, schema, catalog versions, trust in catalog
entries, row counts), :mod:`.dataset_build` (:class:`IndexSpec`, :class:`FileIndexBuilder`,
:func:`build_file_index`, :class:`BuildReport`; the build, its commit, the layout migration,
optimize), :mod:`.dataset_plan` (:meth:`ParquetDataset.plan`), :mod:`.dataset_read` (the reads),
:mod:`.dataset_topn` (top-N) and :mod:`.dataset_delete` (deletes).  The names other modules import
from here are handed on.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Dict, Mapping, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from ..io.checksum import ChecksummedSource
from ..errors import IndexFormatError
from ..fileindex.format import FileIndexFile, HeldReaders
from ..io.source import ReopeningSource, as_source
from ..io.fs import CommitFile, IOCounter, resolve
from ..io.fsutil import TMP_MARK, write_atomic  # noqa: F401  (re-exported for callers)
from ..core.types import DataType
from . import catalog as _catalog
from . import identity as _identity
from . import replaced as _replaced
from .catalog import CATALOG_FORMAT, CATALOG_VERSION, FILE_ORDER_DOC, Catalog  # noqa: F401 (handed on)
from .layout import (
    CATALOG_NAME,
    DATA_SUFFIXES,  # noqa: F401 (handed on)
    FILE_INDEX_DIR,  # noqa: F401 (handed on)
    HIVE_NULL,  # noqa: F401 (handed on)
    INDEX_SUFFIX,  # noqa: F401 (handed on)
    DataFile,  # noqa: F401
    is_data_file_name,  # noqa: F401 (handed on)
    local_path,  # noqa: F401 (handed on)
    parse_partition,  # noqa: F401 (handed on)
)
from .plan import FilePlan, ScanPlan, ScanReport  # noqa: F401 (the plan types, handed on)
from .dataset_build import (
    BuildReport,  # noqa: F401 (handed on)
    FileIndexBuilder,  # noqa: F401 (handed on)
    IndexSpec,  # noqa: F401 (handed on)
    _BuildMixin,
    build_file_index,  # noqa: F401 (handed on)
    ensure_index_types,  # noqa: F401 (handed on)
    sized_options,  # noqa: F401 (handed on)
    store_index,  # noqa: F401 (handed on)
)
from .dataset_catalog import _CatalogMixin
from .dataset_delete import _DeleteMixin
from .dataset_plan import _PlanMixin
from .dataset_read import _ReadMixin
from .dataset_topn import _TopNMixin

# the parsed headers of index containers, by (path, size, checksum): a plan opens each file's again
_LAYOUTS: Dict[tuple, tuple] = {}
_LAYOUTS_MAX = 4096
# the readers of those containers' indexes, with what they decoded, by the same key (and column):
# a plan of the same file reads and decodes none of its index bytes again (bounded in bytes)
HELD_READERS = HeldReaders()
# Whether plans answer leaves from the files' Parquet statistics when a dataset does not say
# (ParquetDataset(statistics=...)): None, on local files only
STATISTICS: Optional[bool] = None
HEAD_PREFETCH = 16384  # first bytes of a remote index container fetched with its header


# ---------------------------------------------------------------- the dataset


class ParquetDataset(_CatalogMixin, _BuildMixin, _PlanMixin, _ReadMixin, _TopNMixin, _DeleteMixin):
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
        view = object.__new__(type(self))  # (a copy sharing the parsed schemas and the memo)
        view.__dict__.update(self.__dict__)
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

    # ------------------------------------------------------------ schema
    @staticmethod
    def row_type_of(data_file: str) -> Dict[str, str]:
        """``{column: Paimon type}`` of one Parquet file."""
        return ParquetDataset.row_type_of_schema(pq.read_schema(data_file))

    # ------------------------------------------------------------ statistics and index containers
    def _uses_statistics(self) -> bool:
        """Do plans answer leaves from the files' Parquet statistics (``statistics``, else the
        module's :data:`STATISTICS`, else: on local files)?"""
        if self.statistics is not None:
            return bool(self.statistics)
        return bool(self.store.local if STATISTICS is None else STATISTICS)

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
        path, key, why = self._index_where(f, entry)
        inline = "inline" in fi
        if not inline and path is None:
            return None
        row_type = self.row_type()
        if why is not None:
            col, built, now = why
            raise IndexFormatError(
                f"the index of {f.path} on column {col!r} was built for type {built}, "
                f"the column is {now} now: rebuild the index (ParquetDataset.build)"
            )
        ck = fi.get("checksum")
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

    @staticmethod
    def _held_readers() -> HeldReaders:
        """The index readers held between plans (:data:`HELD_READERS`)."""
        return HELD_READERS

    def _index_where(self, f: DataFile, entry: dict) -> tuple:
        """``(path, key, mismatch)`` of ``entry``'s index: :meth:`index_file_path`, the key its
        bytes are known by (the path, size and recorded checksums: None without checksums; an index
        file's bytes never change under it, so its header is parsed once and its readers may be
        held) and :meth:`_types_mismatch` against the dataset's row type.  Worked out once for every
        snapshot of the same listing and catalog (the snapshot's own entry), else each time."""
        snap = self._snap
        known = snap.stable.setdefault("index-where", {}) if snap is not None else None
        got = known.get(f.path) if known is not None else None
        if got is not None and got[0] is entry:
            return got[1]
        fi = entry["file_index"]
        path = self.index_file_path(f, fi)
        why = self._types_mismatch(fi.get("types") or {}, self.row_type())
        ck = fi.get("checksum")
        key = None
        if path is not None and ck is not None:
            key = (path, fi.get("size"), str(sorted(ck.items())) if isinstance(ck, dict) else repr(ck))
        if known is not None and snap.catalog["files"].get(f.path) is entry:
            known[f.path] = (entry, (path, key, why))
        return path, key, why

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
