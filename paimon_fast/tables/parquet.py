"""A directory of Parquet files with Paimon file indexes, that stays a plain Parquet dataset.

Layout::

    <root>/[k=v/...]<name>.parquet                      data files (hive-style partitions optional)
    <root>/_file_index/[k=v/...]<name>.parquet.index    Paimon FileIndexFormat container of that file
    <root>/_paimon_fast_catalog.json                    the dataset catalog (versioned JSON)
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

**Catalog** (``_paimon_fast_catalog.json``; a leading underscore keeps Spark's
file listing away from it)::

    {"format": "paimon-fast-dataset", "version": 1,
     "file_order": "...", "file_index": {"options": {...}, "digest": "...", "types": {...}},
     "files": {"k=v/a.parquet": {"size": 123, "mtime_ns": 1700000000000000000, "rows": 1000,
                                 "file_index": {"digest": "...", "path": "_file_index/k=v/a.parquet.index",
                                                "size": 456}
                                            or {"digest": "...", "inline": "<base64>", "size": 80}
                                            or (old layout) {"digest": "...", "file": "a.parquet.index", ...},
                                 "deletion_vector": {"file": "index-<uuid>-0", "offset": 1, ...}},
               ...},
     ...}

``size`` / ``mtime_ns`` of the data file decide staleness: an index whose data
file changed, or whose options digest differs from the current options, is
rebuilt and never used for pruning.  Indexes smaller than or equal to
``file-index.in-manifest-threshold`` (default 500 bytes) are kept inline
(base64) instead of in a ``.index`` file, as Paimon embeds them in its
manifest.  A ``path`` is relative to the root; an old-layout ``file`` is a name
in the data file's directory.  Keys this module does not know, at the top level or in a file's
entry, are preserved on rewrite, so other features (global indexes, deletion
vectors) add their own keys next to ``file_index``.  Deleted rows are Paimon
deletion vectors in ``_deletion_vectors/`` (:mod:`paimon_fast.tables.deletes`):
:meth:`ParquetDataset.plan` loads them, removes deleted rows from exact index
bitmaps, skips files whose rows are all deleted, and :meth:`ParquetDataset.scan`
/ :meth:`ParquetDataset.read_file` drop the deleted rows.

Index files and the catalog are written to a hidden temporary name and
renamed into place; a killed writer leaves at most a ``.<name>.tmp-*`` file
that the next build removes, never a partial ``.index``.

**Object stores and HDFS** (``ParquetDataset("s3://bucket/events")`` or any
``filesystem=``, see :mod:`paimon_fast.fs`): there is no atomic rename, so index
files get unique names (``_file_index/<data file>.<content hash>.index``, recorded in
the entry's ``path``) and become visible only through the catalog, which is
committed last as a new immutable version
(``_commits/_paimon_fast_catalog.json.<version>``) created with a conditional PUT
where the store offers one: a commit that lost a race raises
:class:`~paimon_fast.fs.CommitConflictError` instead of overwriting.  A killed
build leaves the previous catalog and unreferenced files that ``paimon-fast gc``
lists and removes (:mod:`paimon_fast.tables.gc`).  Reads are ranged (index
headers and blocks, Parquet footers and the column chunks needed), and
:attr:`ParquetDataset.io` counts the bytes read (``bytes_read`` in reports).
"""

from __future__ import annotations

import base64
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

from ..errors import IndexFormatError, OptionError, PaimonFastError, UnsupportedTypeError
from ..fileindex import FileIndexFormat, evaluate_tree, get_factory
from ..fileindex._bitslice import NullLiteralError, range_bitmap
from ..fileindex.options import (
    DEFAULT_IN_MANIFEST_THRESHOLD,
    IN_MANIFEST_THRESHOLD,
    indexes_from_table_options,
    parse_memory_size,
)
from ..fs import CommitFile, IOCounter, Store, resolve
from ..fsutil import TMP_MARK, write_atomic  # noqa: F401  (re-exported for callers)
from ..predicate import Leaf, Predicate
from ..result import REMAIN, SKIP, BitmapResult, FileIndexResult
from ..types import DataType
from .arrow_filter import coerce_literals, filter_table, to_arrow_expression
from .layout import (
    CATALOG_NAME,
    DATA_SUFFIXES,  # noqa: F401 (handed on)
    FILE_INDEX_DIR,
    HIVE_NULL,  # noqa: F401 (handed on)
    INDEX_SUFFIX,  # noqa: F401 (handed on)
    DataFile,  # noqa: F401
    index_rel_path,
    is_data_file_name,
    local_path,  # noqa: F401 (handed on)
    parse_partition,
)
from .globalindex import GlobalAnswers
from .stats import leaf_answer
from .plan import FilePlan, ScanPlan, ScanReport  # noqa: F401 (the plan types, handed on)

CATALOG_FORMAT = "paimon-fast-dataset"
CATALOG_VERSION = 1
HEAD_PREFETCH = 16384  # first bytes of a remote index container fetched with its header
FILE_ORDER_DOC = "files sorted by relative POSIX path; global row id = rows of earlier files + row position in the file"


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

    On a non-local ``store`` the file is ``_file_index/<rel>.<content hash>.index``: a new
    name for new bytes, visible only once the catalog names it."""
    if blob is None:
        return {"digest": digest, "none": True}
    typed = {"types": dict(types)} if types else {}
    if len(blob) <= threshold:
        return {"digest": digest, "inline": base64.b64encode(blob).decode("ascii"), "size": len(blob), **typed}
    tag = None if store.local else hashlib.sha256(blob).hexdigest()[:16]
    rel_index = index_rel_path(rel, tag)
    store.write_atomic(store.join(root, *rel_index.split("/")), blob, _fault)
    return {"digest": digest, "path": rel_index, "size": len(blob), **typed}


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
) -> Tuple[int, dict]:
    """Index the data file ``rel`` (relative path under ``root``), read with pyarrow in row
    order, and store the index (:func:`store_index`): ``(rows, catalog entry)``.  Indexed
    columns the file lacks are left out of its index.  The per-file step of the in-process
    build and of the Spark build's executor tasks (:func:`paimon_fast.spark.build`)."""
    pf = pq.ParquetFile(store.open_input(store.join(root, *rel.split("/")), counter))
    present = set(pf.schema_arrow.names)
    b = FileIndexBuilder(row_type, {c: per for c, per in columns.items() if c in present}, pf.metadata.num_rows)
    if b.writers:
        for batch in pf.iter_batches(batch_size=batch_rows, columns=list(b.writers)):
            b.add(batch)
    return pf.metadata.num_rows, store_index(store, root, rel, b.finish(), threshold, digest, _fault, types=b.types)


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

    def __str__(self):
        return (
            f"{self.files_built} of {self.files_total} files indexed ({self.files_current} already current, "
            f"{self.inline} inline), {self.rows:,} rows, {self.index_bytes:,} index bytes, {self.seconds:.2f}s"
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
    """A directory of Parquet files with per-file Paimon indexes (see the module docstring)."""

    def __init__(self, root: str, filesystem=None):
        """``root``: a path or URI (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ``file://``);
        ``filesystem``: a ``pyarrow.fs.FileSystem`` (or fsspec filesystem) ``root`` is a path in."""
        self.store, self.root = resolve(root, filesystem)
        if not self.store.is_dir(self.root):
            raise FileNotFoundError(f"dataset directory {self.store.uri(self.root)!r} does not exist")
        self.catalog = CommitFile(self.store, self.root, CATALOG_NAME)
        self.catalog_path = self.catalog.path
        self.io = IOCounter()  # bytes read through this dataset (reports show the part of each call)
        self._files: Optional[List[DataFile]] = None
        self._schema: Optional[pa.Schema] = None
        self._row_type: Optional[Dict[str, str]] = None

    @property
    def uri(self) -> str:
        """The dataset's root as a path or ``scheme://`` URI (never with credentials)."""
        return self.store.uri(self.root)

    def _input(self, f: "DataFile"):
        """What pyarrow.parquet opens for a data file (ranged reads, counted in :attr:`io`)."""
        return self.store.open_input(f.abs_path, None if self.store.local else self.io)

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
        """Data files in the dataset's stable order (sorted relative POSIX paths)."""
        if self._files is None or refresh:
            out = [
                DataFile(e.rel, e.path, e.size, e.mtime_ns, tuple(parse_partition(e.rel).items()))
                for e in self.store.list_files(self.root, skip_dir=_hidden, keep=is_data_file_name)
            ]
            out.sort(key=lambda f: f.path)
            self._files = out
        return self._files

    def temp_files(self) -> List[str]:
        """Leftover temporary files of interrupted writes (beside the data files: the old layout's
        index files; and under ``_file_index/``)."""
        if self.store.object_store:
            return []  # a PUT is never partly visible: no temporary files
        keep = lambda n: n.startswith(".") and TMP_MARK in n  # noqa: E731
        out = [e.path for e in self.store.list_files(self.root, skip_dir=_hidden, keep=keep)]
        index_dir = self.store.join(self.root, FILE_INDEX_DIR)
        if self.store.is_dir(index_dir):
            out += [e.path for e in self.store.list_files(index_dir, keep=keep)]
        return out

    def clean_temp_files(self) -> int:
        return sum(self.store.delete(p) for p in self.temp_files())

    # ------------------------------------------------------------ schema
    def data_schema(self) -> pa.Schema:
        """Arrow schema of the data columns (from the first file's footer)."""
        if self._schema is None:
            files = self.files()
            if not files:
                raise FileNotFoundError(f"no Parquet data files under {self.root!r}")
            self._schema = pq.read_schema(self._input(files[0]))
        return self._schema

    def partition_schema(self) -> pa.Schema:
        cols: Dict[str, list] = {}
        for f in self.files():
            for k, v in f.partition:
                cols.setdefault(k, []).append(v)
        data_names = set(self.data_schema().names)
        return pa.schema([pa.field(k, _infer_partition_type(v)) for k, v in cols.items() if k not in data_names])

    def schema(self) -> pa.Schema:
        """Data columns followed by partition columns (as Spark orders them)."""
        s = self.data_schema()
        for f in self.partition_schema():
            s = s.append(f)
        return s

    def row_type(self) -> Dict[str, str]:
        """``{column: Paimon type}`` of the data columns an index can be built on (a copy)."""
        if self._row_type is None:
            self._row_type = self.row_type_of_schema(self.data_schema())
        return dict(self._row_type)

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
        """The current catalog (a dict; on versioned stores it remembers the version it was read
        at, so :meth:`write_catalog` of it fails if another commit came in between)."""
        version, data = self.catalog.read(self.io)
        if data is None:
            return _Catalog(
                {"format": CATALOG_FORMAT, "version": CATALOG_VERSION, "file_order": FILE_ORDER_DOC, "files": {}},
                version,
            )
        cat = _Catalog(json.loads(data.decode("utf-8")), version)
        if cat.get("format") != CATALOG_FORMAT:
            raise ValueError(f"{self.catalog_path} is not a paimon-fast dataset catalog")
        if int(cat.get("version", 0)) > CATALOG_VERSION:
            raise ValueError(
                f"{self.catalog_path} has catalog version {cat.get('version')}; "
                f"this paimon-fast reads up to {CATALOG_VERSION}"
            )
        cat.setdefault("files", {})
        return cat

    def write_catalog(self, catalog: dict, _fault: Optional[str] = None) -> None:
        """Commit ``catalog`` (atomically; on versioned stores as the version after the one
        it was read at: :class:`~paimon_fast.fs.CommitConflictError` if another commit won)."""
        base = catalog.commit_version if isinstance(catalog, _Catalog) else self.catalog.read()[0]
        catalog = dict(catalog)
        catalog["format"] = CATALOG_FORMAT
        catalog["version"] = CATALOG_VERSION
        catalog["file_order"] = FILE_ORDER_DOC
        catalog["files"] = {k: catalog["files"][k] for k in sorted(catalog.get("files", {}))}
        self.catalog.write(json.dumps(catalog, indent=1, sort_keys=False).encode("utf-8"), base, _fault)

    @staticmethod
    def _entry_matches(f: DataFile, entry: Optional[dict]) -> bool:
        return bool(entry) and entry.get("size") == f.size and entry.get("mtime_ns") == f.mtime_ns

    def _index_current(self, f: DataFile, entry: Optional[dict], digest: Optional[str]) -> bool:
        if not self._entry_matches(f, entry):
            return False
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

    def index_spec(self, options: Mapping) -> IndexSpec:
        return IndexSpec.from_options(options, self.row_type())

    def files_to_build(self, spec: IndexSpec, force: bool = False) -> Tuple[List[DataFile], List[DataFile]]:
        """``(to_build, current)``: files whose index is missing or stale, and the others."""
        entries = self.read_catalog()["files"]
        todo, current = [], []
        for f in self.files(refresh=True):
            if not force and self._index_current(f, entries.get(f.path), spec.digest):
                current.append(f)
            else:
                todo.append(f)
        return todo, current

    def commit_build(self, spec: IndexSpec, results: Iterable[Mapping]) -> int:
        """Record built indexes in the catalog: ``results`` rows have ``path`` (relative), ``rows``,
        ``file_index`` (the entry from :func:`store_index`).  Returns index bytes recorded."""
        cat = self.read_catalog()
        cat["file_index"] = spec.to_json()
        files = {f.path: f for f in self.files(refresh=True)}
        entries = cat["files"]
        for stale in [p for p in entries if p not in files]:
            del entries[stale]
        nbytes = 0
        replaced = []
        for r in results:
            f = files.get(r["path"])
            if f is None:
                continue
            e = dict(entries.get(f.path) or {})
            old = e.get("file_index") or {}
            e.update(size=f.size, mtime_ns=f.mtime_ns, rows=int(r["rows"]), file_index=r["file_index"])
            entries[f.path] = e
            nbytes += int(r["file_index"].get("size", 0))
            was, now = self.index_file_path(f, old), self.index_file_path(f, r["file_index"])
            if was is not None and was != now:
                replaced.append(was)  # an old-layout file, a superseded unique name, or replaced by inline
        self.write_catalog(cat)
        for p in replaced:  # an old index goes only once the new catalog is in place
            self.store.delete(p)
        return nbytes

    def migrate_layout(self) -> int:
        """Move the containers of current old-layout entries (``<data file>.index`` beside the data
        file, written before the ``_file_index/`` layout) to ``_file_index/``: the same bytes under
        the new name, one catalog commit, then the old files removed.  Stale entries are left to
        the build, which rewrites them in the new layout.  Returns the files moved; run by every
        build."""
        cat = self.read_catalog()
        moved, old_paths = 0, []
        for f in self.files():
            e = cat["files"].get(f.path)
            fi = (e or {}).get("file_index") or {}
            if "file" not in fi or not self._index_current(f, e, None):
                continue
            old = self.index_file_path(f, fi)
            blob = self.store.read_bytes(old, self.io)
            if len(blob) != fi.get("size"):
                continue  # changed under us: the build's staleness check decides
            entry = {k: v for k, v in fi.items() if k != "file"}
            tag = None if self.store.local else hashlib.sha256(blob).hexdigest()[:16]
            entry["path"] = index_rel_path(f.path, tag)
            self.store.write_atomic(self.store.join(self.root, *entry["path"].split("/")), blob)
            e = dict(e)
            e["file_index"] = entry
            cat["files"][f.path] = e
            old_paths.append(old)
            moved += 1
        if moved:
            self.write_catalog(cat)
            for p in old_paths:
                self.store.delete(p)
        return moved

    # ------------------------------------------------------------ in-process build
    def build(self, options: Mapping, force: bool = False, batch_rows: int = 1 << 17) -> BuildReport:
        """Build missing / stale indexes in this process with pyarrow (Spark: ``paimon_fast.spark.build``)."""
        t0 = time.perf_counter()
        spec = self.index_spec(options)
        self.clean_temp_files()
        self.migrate_layout()
        todo, current = self.files_to_build(spec, force)
        row_type = self.row_type()
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
            )
            results.append({"path": f.path, "rows": rows, "file_index": entry})
            rep.rows += rows
            rep.inline += "inline" in entry
            rep.built.append(f.path)
        rep.index_bytes = self.commit_build(spec, results)
        rep.files_built = len(todo)
        rep.seconds = time.perf_counter() - t0
        return rep

    # ------------------------------------------------------------ rows
    def row_counts(self, catalog: Optional[dict] = None) -> Dict[str, int]:
        """Rows per file (from the catalog where current, else the Parquet footer)."""
        entries = (catalog if catalog is not None else self.read_catalog())["files"]
        out = {}
        for f in self.files():
            e = entries.get(f.path)
            if self._entry_matches(f, e) and "rows" in e:
                out[f.path] = int(e["rows"])
            else:
                out[f.path] = pq.ParquetFile(self._input(f)).metadata.num_rows
        return out

    def row_offsets(self) -> Dict[str, int]:
        """Global row id of each file's first row, in the stable file order."""
        counts = self.row_counts()
        out, acc = {}, 0
        for f in self.files():
            out[f.path] = acc
            acc += counts[f.path]
        return out

    # ------------------------------------------------------------ evaluation
    def _file_stats(self, f: DataFile, column: str):
        """The statistics of ``column`` in data file ``f``'s footer (None: none usable, or the
        footer not readable here)."""
        from ..parquet.footer import _footer
        from ..parquet.native import _open
        from .stats import file_stats

        try:
            src, key, _, owned = _open(f.abs_path)
        except OSError:
            return None
        try:
            return file_stats(_footer(src, key), column)
        except Exception:  # noqa: BLE001 - statistics only ever help: the index or the filter decides
            return None
        finally:
            if owned:
                src.close()

    def open_index(self, f: DataFile, entry: Optional[dict] = None):
        """The file's index container (FileIndexFile) if it is current, else None."""
        if entry is None:
            entry = self.read_catalog()["files"].get(f.path)
        if not self._index_current(f, entry, None):
            return None
        fi = entry["file_index"]
        path = self.index_file_path(f, fi)
        if "inline" in fi:
            data = base64.b64decode(fi["inline"])
        elif path is not None:
            # the container header (and small indexes whole) in one ranged read
            data = self.store.open_source(path, self.io, head=HEAD_PREFETCH)
        else:
            return None
        row_type = self.row_type()
        why = self._types_mismatch(fi.get("types") or {}, row_type)
        if why is not None:
            col, built, now = why
            raise IndexFormatError(
                f"the index of {f.path} on column {col!r} was built for type {built}, "
                f"the column is {now} now: rebuild the index (ParquetDataset.build)"
            )
        return FileIndexFormat.open(data, row_type)

    def _types_mismatch(self, built: Mapping[str, str], row_type: Mapping[str, str]):
        """``(column, built for, now)`` of the first column an index was built for another type of
        (the index formats do not record the type: such an index would be read wrongly), or None;
        decided once per set of types (the files of a dataset mostly share theirs)."""
        key = (tuple(sorted(built.items())), tuple(sorted(row_type.items())))
        memo = self.__dict__.setdefault("_types_memo", {})
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

    def plan(self, predicate: Optional[Predicate], threads: Optional[int] = None) -> ScanPlan:
        """Evaluate every file's index (and partition values) against ``predicate``.

        Index evaluation runs in a thread pool; a file whose index is missing,
        stale or unreadable is kept (REMAIN) and counted in the report.
        """
        from ..sqlpredicate import parse_predicate

        t0 = time.perf_counter()
        b0 = self.io.snapshot()[0]
        cat = self.read_catalog()
        ensure_index_types(cat.get("file_index", {}).get("types", {}))
        entries = cat["files"]
        files = self.files()
        pred = None if predicate is None else parse_predicate(predicate)
        if pred is not None:
            pred = coerce_literals(pred, {f.name: f.type for f in self.schema()})
        counts = self.row_counts(cat)
        part_types = {f.name: f.type for f in self.partition_schema()}
        from .deletes import load_vectors

        vectors = load_vectors(self, cat)
        gi = GlobalAnswers(self, pred, counts, part_types) if pred is not None else None
        # the files' own statistics answer leaves first (local files: their footers are cached)
        use_stats = self.store.local and pred is not None
        data_types = {fl.name: fl.type for fl in self.data_schema()} if use_stats else {}

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

        def evaluate(f: DataFile) -> FilePlan:
            rows = counts[f.path]
            entry = entries.get(f.path)
            # an index over the file's current bytes answers correctly whatever options built it
            indexed = self._index_current(f, entry, None)
            if pred is None:
                return FilePlan(f, REMAIN, rows, indexed, exact=True)
            err = None
            opened = [False, None]  # the index, opened when a leaf first needs it
            exact = [True]  # every leaf visited was answered exactly
            part = dict(f.partition)
            stats = {}  # column -> the file's statistics of it (read on first need)

            def index():
                nonlocal err
                if not opened[0]:
                    opened[0] = True
                    if indexed:
                        try:
                            opened[1] = self.open_index(f, entry)
                        except Exception as e:  # a broken index never fails a query: read the file
                            err = f"{type(e).__name__}: {e}"
                return opened[1]

            def answered(res, is_exact):
                if not is_exact:
                    exact[0] = False
                return res

            def visit(leaf: Leaf):
                if leaf.name in part_types:
                    return answered(*_partition_leaf(leaf, part.get(leaf.name), part_types[leaf.name]))
                if use_stats and leaf.name in data_types:
                    if leaf.name not in stats:
                        stats[leaf.name] = self._file_stats(f, leaf.name)
                    said = leaf_answer(leaf, stats[leaf.name], data_types[leaf.name])
                    if said == "skip":
                        return answered(SKIP, True)
                    if said == "all":
                        return answered(BitmapResult(range_bitmap(0, rows)), True)
                    if isinstance(said, list):  # row groups wholly in, the others wholly out
                        bm = BitMap()
                        for a, b in said:
                            bm.add_range(a, b)
                        return answered(BitmapResult(bm), True)
                g = gi.result(leaf, f.path)
                if g is not None:
                    return answered(g, gi.exact(leaf))
                idx = index()
                if idx is None:
                    return answered(REMAIN, False)
                try:
                    return answered(*idx.visit_leaf_exact(leaf))
                except NullLiteralError:
                    # a NULL literal in a BSI / range-bitmap comparison (Java: NullPointerException):
                    # not a broken index; the file is read and the exact filter answers (no rows)
                    return answered(REMAIN, False)
                except Exception as e:
                    nonlocal err
                    err = f"{type(e).__name__}: {e}"
                    return answered(REMAIN, False)

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
            return FilePlan(f, res, rows, indexed, err, exact=exact[0] and err is None)

        n = len(files)
        from ..pool import threads as cores

        # locally the per-file work holds the GIL (threads only add hand-offs: one thread); on object
        # stores reads wait on the network, so up to 4 per core overlap their latency
        workers = threads or min(16, 4 * cores())
        if n > 1 and not self.store.local and workers > 1:
            from ..pool import map_on_pool

            plans = map_on_pool(one, files, workers)  # the process's threads: none started per plan
        else:
            plans = [one(f) for f in files]
        rep = ScanReport(files_total=n, predicate="" if pred is None else repr(pred))
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
            rep.index_errors += p.error is not None
            if p.skipped:
                rep.files_skipped += 1
                rep.rows_skipped_by_file += p.rows
            elif p.bitmap is not None:
                rep.files_with_bitmap += 1
                rep.rows_skipped_by_bitmap += p.rows - p.rows_to_read
        rep.eval_seconds = time.perf_counter() - t0
        rep.bytes_read = self.io.snapshot()[0] - b0
        return ScanPlan(plans, rep, pred)

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
        (:func:`paimon_fast.parquet.rows.read_rows`, which adds to ``stats``)."""
        from ..parquet.rows import file_shape, read_rows

        schema = schema or self.schema()
        if bitmap is not None:
            src = self._input(f)
            names, nrows = file_shape(src)
            read_cols = [c for c in schema.names if c in names]
            pos = np.asarray(bitmap.to_array(), dtype=np.int64)
            pos = pos[pos < nrows]
            if deletion_vector is not None:
                pos = pos[~deletion_vector.is_deleted_batch(pos)]
            return filter_table(
                self._conform(f, read_rows(src, pos, read_cols, stats=stats), schema, set(names)), predicate
            )
        data_names = set(pq.read_schema(self._input(f)).names)
        read_cols = [c for c in schema.names if c in data_names]
        t = pq.read_table(self._input(f), columns=read_cols)
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
        (:func:`paimon_fast.parquet.rows.read_rows`, which adds to ``stats``) and
        only the columns asked for plus those ``predicate`` needs."""
        from ..parquet.rows import file_shape, read_rows
        from .topn import POS

        schema = schema or self.schema()
        positions = np.asarray(positions, dtype=np.int64)
        need = set(columns) | (predicate.fields() if predicate is not None else set())
        src = self._input(f)
        data_names = set(file_shape(src).columns)
        t = read_rows(src, positions, [c for c in schema.names if c in need and c in data_names], stats=stats)
        keep = [fl for fl in schema if fl.name in need]
        out = self._conform(f, t, pa.schema(keep), data_names).append_column(POS, pa.array(positions))
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
        (:func:`paimon_fast.parquet.native.read_files`) across files, column chunks and pages
        on all threads: only the pages holding those rows are read and decoded, and each file
        only at its selected rows (``stats``, a ``PageReadStats``, is added to).  Where a file's
        plan is exact (:attr:`FilePlan.exact`) the predicate is not evaluated and its columns are
        not read unless asked for (none at all for a count); elsewhere the predicate's columns
        are read at the selected rows, the predicate applied, and the other ``columns`` read only
        at the rows that hold it.  Deleted rows are never read."""
        from ..parquet.native import read_files
        from ..parquet.rows import no_columns
        from .topn import POS

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
                t, n = read_files(
                    its, data, schema=pa.schema([data_schema.field(c) for c in data]), stats=stats, threads=threads
                )
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
        if inexact:
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
        return self._assemble(out_tables, parts, counts, columns, schema, positions), counts

    def _kept_positions(self, p: FilePlan, rows: Optional[Tuple[int, int]]):
        """The positions of file ``p`` to read: a sorted array, a ``range``, or None (every row)."""
        nrows = p.rows
        dv = p.deletion_vector
        bm = p.bitmap
        if bm is not None:
            pos = np.asarray(bm.to_array(), dtype=np.int64)
            pos = pos[pos < nrows]
            if rows is not None:
                pos = pos[np.searchsorted(pos, max(0, int(rows[0]))) : np.searchsorted(pos, int(rows[1]))]
        elif rows is not None:
            lo, hi = max(0, int(rows[0])), min(nrows, int(rows[1]))
            pos = range(lo, max(lo, hi))
        else:
            pos = None
        if dv is not None:
            if pos is None:
                pos = np.arange(nrows, dtype=np.int64)
            elif isinstance(pos, range):
                pos = np.arange(pos.start, pos.stop, dtype=np.int64)
            pos = pos[~dv.is_deleted_batch(pos)]
        return pos

    @staticmethod
    def _assemble(tables, parts, counts, columns, schema, positions) -> pa.Table:
        from .topn import POS

        names = [*columns, POS] if positions else list(columns)
        fields = [schema.field(c) if c != POS else pa.field(POS, pa.int64()) for c in names]
        got = [t for t in tables if t is not None and t.num_rows]
        if not names:  # a count: rows without columns
            from ..parquet.rows import no_columns

            return no_columns(sum(t.num_rows for t in got))
        if not got:
            return pa.Table.from_arrays([pa.array([], f.type) for f in fields], schema=pa.schema(fields))
        if len(got) == 1:
            return got[0]
        return pa.concat_tables(got)

    def _read_at(self, f: DataFile, src, pos: Optional[np.ndarray], fields, data_names, stats, whole) -> pa.Table:
        """``fields`` of file ``f`` at the sorted positions ``pos`` (None: every row), conformed to
        the dataset's types (partition columns from the path, absent columns as nulls).
        ``whole``: True reads the whole file with pyarrow, a list of row groups those row groups
        (``pos`` is then their rows), False only the pages holding ``pos``."""
        from ..parquet.rows import file_shape, no_columns, read_rows

        read_cols = [fl.name for fl in fields if fl.name in data_names]
        if not read_cols:  # partition (or absent) columns only: nothing to read but the row count
            n = len(pos) if pos is not None and whole is not True else file_shape(src).rows
            t = no_columns(n)
        elif (isinstance(whole, list) and whole) or pos is None or whole is True:
            # one file, no discovery: pq.read_table(path) would take its hive directories for a
            # partitioning (and fail on a __HIVE_DEFAULT_PARTITION__ segment)
            with pq.ParquetFile(src if self.store.local else self._input(f)) as pf:
                t = pf.read_row_groups(whole, columns=read_cols) if isinstance(whole, list) else pf.read(read_cols)
        else:
            t = read_rows(src, pos, read_cols, stats=stats)
        return self._conform(f, t, pa.schema(fields), data_names)

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
        from ..parquet.rows import column_sizes

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
                            sizes.append(column_sizes(self._input(p.file)))
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
        :class:`~paimon_fast.tables.topn.TopNReport`) is filled in when given.
        """
        from .topn import TopNReport, top_n

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
        from .topn import check_orderable

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
        from ..parquet.rows import PageReadStats
        from .topn import TopNSource

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
        :class:`~paimon_fast.lazyread.LazyRead`, lazy until asked (``to_arrow()``,
        ``to_arrow_batch_reader()``, ``to_pandas()``, ``to_polars()``, ``to_duckdb(name)``,
        ``count()``, ``explain()``, ``report``).  The indexes prune files and rows once, on first
        need; the kept files stream range by range (:mod:`paimon_fast.tables.stream`); ``limit``
        stops reading once that many rows are out.  A predicate naming a column the dataset lacks
        (or comparing one with a literal of another type) raises here."""
        from ..lazyread import LazyRead
        from .stream import DatasetSource

        return LazyRead(DatasetSource(self, where, columns).check(), limit)

    def scan(self, predicate=None, columns: Optional[List[str]] = None):
        """Exact answer without Spark, as :meth:`read` (``read(predicate, columns)``, the same
        :class:`~paimon_fast.lazyread.LazyRead`).  Unpacking it as the former ``(table, report)``
        tuple still works, warned (DeprecationWarning): the indexes prune, whole files or their
        bitmap rows are read and filtered."""
        from .stream import DatasetSource, ScanResult

        return ScanResult(DatasetSource(self, predicate, columns).check())

    def _scan_table(self, plan: ScanPlan, columns: Optional[List[str]] = None) -> pa.Table:
        """The former eager read of :meth:`scan`: every kept file (its bitmap rows only, without
        deleted rows) filtered and concatenated; fills ``plan.report`` (bytes read, decoded)."""
        from ..parquet.rows import PageReadStats

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

    # ------------------------------------------------------------ deletes
    def deletion_vectors(self) -> Dict[str, object]:
        """``{relative path: DeletionVector}`` of the files with deleted rows."""
        from .deletes import load_vectors

        return load_vectors(self)

    def delete(self, predicate, *, bitmap64: Optional[bool] = None, _fault: Optional[str] = None):
        """Mark the rows where ``predicate`` holds deleted, in this process (Spark:
        ``paimon_fast.spark.delete``): the plan prunes files, the exact filter finds
        row positions, :func:`paimon_fast.tables.deletes.commit_deletions` writes one
        deletion file and the catalog.  Returns a :class:`~paimon_fast.tables.deletes.DeleteReport`."""
        from .deletes import DeleteReport, commit_deletions, matching_positions

        if predicate is None:
            raise ValueError("delete needs a predicate (use a predicate that is always true to delete all rows)")
        t0 = time.perf_counter()
        plan = self.plan(predicate)
        rep = DeleteReport(
            files_scanned=len(plan.kept), files_skipped=plan.report.files_skipped, predicate=plan.report.predicate
        )
        positions = matching_positions(self, plan)
        rep.seconds = time.perf_counter() - t0
        return commit_deletions(self, positions, bitmap64=bitmap64, report=rep, _fault=_fault)


class _Catalog(dict):
    """A catalog dict that remembers the commit version it was read at (versioned stores)."""

    def __init__(self, data, commit_version=None):
        super().__init__(data)
        self.commit_version = commit_version


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _fixed_width(t: pa.DataType) -> int:
    """Bytes a value of a fixed-width Arrow type takes (0: variable width or nested)."""
    try:
        bits = t.bit_width
    except ValueError:
        return 0
    return max(1, bits // 8)


def _whole_groups(src, lo: int, hi: int):
    """The row groups ``[lo, hi)`` is exactly (a non-empty list), else False."""
    from ..parquet.rows import row_group_starts

    if hi <= lo:
        return False
    starts = row_group_starts(src)
    g0, g1 = int(np.searchsorted(starts, lo)), int(np.searchsorted(starts, hi))
    if g1 >= len(starts) or starts[g0] != lo or starts[g1] != hi:
        return False
    return list(range(g0, g1))


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
