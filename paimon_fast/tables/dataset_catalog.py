"""The catalog and snapshot state of a :class:`~paimon_fast.tables.parquet.ParquetDataset` (a mixin).

The listing of the data files (and of interrupted writes' temporary files), the schema, the
catalog's versions read and written, how far a file's entry (its index, its row count, its
statistics) can be trusted for the listed version of the file, and the files' row counts and
offsets.  :class:`_CatalogMixin` is one of the bases of ``ParquetDataset``; it imports nothing of
:mod:`paimon_fast.tables.parquet`."""

from __future__ import annotations

import os
import time
from typing import Dict, Iterable, List, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DataFileError, UnsupportedTypeError
from ..io.fsutil import TMP_MARK
from ..core.types import DataType
from . import catalog as _catalog
from . import identity as _identity
from . import replaced as _replaced
from .catalog import Catalog
from .layout import FILE_INDEX_DIR, DataFile

# the Arrow schema of a data file version, by (its URI, its strong identity): every dataset object
# of the process takes a snapshot's schema from its first file without opening it again
_SCHEMAS: Dict[tuple, pa.Schema] = {}


def _infer_partition_type(values: Iterable[Optional[str]]) -> pa.DataType:
    vals = [v for v in values if v is not None]
    try:
        ints = [int(v) for v in vals]
    except ValueError:
        return pa.string()
    if vals and all(-(2**31) <= i < 2**31 for i in ints):
        return pa.int32()
    return pa.int64() if vals else pa.string()


class _CatalogMixin:
    """ParquetDataset's listing, schema, catalog versions, trust in catalog entries and row counts."""

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

    def _judged_once(self, f: DataFile) -> bool:
        """Was :meth:`trust` of ``f`` (as this snapshot lists it) judged once for every snapshot of
        the same listing and catalog?  Not when the verdict read the file's witness (it holds for
        one snapshot), nor before it was asked: what is kept for later snapshots asks this."""
        return self._snap is not None and self._snap.stable.get("trust", {}).get(f.path, (None,))[0] is f

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
        path = self._index_where(f, entry)[0]
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

    def verified(self, f: DataFile, entry: Optional[dict], verdict: Optional[str] = None) -> bool:
        """May the index answers for ``f`` be taken as exact: its identity is strong and the same as
        recorded, and its index bytes are checksummed (an inline index is, by the catalog's seal).
        ``verdict``: :meth:`trust` of the two, when the caller has it."""
        if (self.trust(f, entry) if verdict is None else verdict) != _identity.VERIFIED:
            return False
        fi = (entry or {}).get("file_index") or {}
        return "inline" in fi and self.read_catalog().sealed or fi.get("checksum") is not None

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


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))
