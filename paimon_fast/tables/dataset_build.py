"""Building a :class:`~paimon_fast.tables.parquet.ParquetDataset`'s file indexes, and rewriting its layout.

The index options (:class:`IndexSpec`), one file's index container (:class:`FileIndexBuilder`,
:func:`build_file_index`, :func:`store_index`: the per-file step of the in-process build, of the
Spark build and of an optimize), the build's report (:class:`BuildReport`), and the dataset's
build, commit of built indexes, migration of the old layout and optimize (:class:`_BuildMixin`,
one of the bases of ``ParquetDataset``; it imports nothing of :mod:`paimon_fast.tables.parquet`,
which hands these names on)."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import time
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from ..io.checksum import block_checksums
from ..errors import DataFileError, OptionError, PaimonFastError
from ..fileindex import FileIndexFormat, get_factory
from ..fileindex.options import (
    DEFAULT_IN_MANIFEST_THRESHOLD,
    IN_MANIFEST_THRESHOLD,
    indexes_from_table_options,
    parse_memory_size,
)
from ..io.fs import Store
from ..core.types import DataType
from . import catalog as _catalog
from . import identity as _identity
from .layout import DataFile, index_rel_path
from .writer import VERSION_FACTS, StatsAccumulator
from .steps import step


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
        data = _identity.open_data_file(store, path, identity, counter)
        with pq.ParquetFile(data) as pf:
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
            witness = _identity.read_witness(store, path, identity, counter, data)  # (on S3: the footer's GET)
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


class _BuildMixin:
    """ParquetDataset's index build (in this process, and the commit of any build), layout migration and optimize."""

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
        ``"zstd"``), ``compression_level``, ``min_compression_saving`` (0.15: a fixed-width column
        the codec shrinks by less is stored uncompressed; 0: none is), ``delta_encoding`` (True:
        strings without a dictionary DELTA_LENGTH_BYTE_ARRAY, integers DELTA_BINARY_PACKED where
        smaller; False: PLAIN), ``progress(phase, done, total)``, ``recover_after``
        (seconds).  Returns an :class:`~paimon_fast.tables.optimize.OptimizeReport`
        (files and bytes before and after, time); see :mod:`paimon_fast.tables.optimize`."""
        from .optimize import optimize

        tools = {"builder": FileIndexBuilder, "store_index": store_index, "ensure_types": ensure_index_types}
        return optimize(self, cluster_by, strategy, index_tools=tools, **options)
