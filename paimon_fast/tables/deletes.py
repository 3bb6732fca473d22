"""Row-level deletes of a :class:`~paimon_fast.tables.parquet.ParquetDataset` with Paimon deletion vectors.

Deleted rows are recorded, never rewritten out of the Parquet files: each data
file may have one deletion vector (its deleted row positions) stored in a
Paimon deletion index file (:func:`paimon_fast.tableindex.write_deletion_files`
format: version byte, then per vector ``size, bin, CRC-32``) under
``<root>/_deletion_vectors/``.  The catalog entry of the data file points at it,
beside the file index::

    "files": {"k=v/a.parquet": {..., "file_index": {...},
               "deletion_vector": {"file": "index-<uuid>-0", "offset": 1, "length": 42,
                                   "cardinality": 7, "bitmap64": false,
                                   "size": 123, "mtime_ns": 1700000000000000000}}}

``offset`` / ``length`` / ``cardinality`` are what Paimon's index metadata
records for the vector.  ``size`` / ``mtime_ns`` are the data file's when the
vector was written: a data file rewritten since then no longer matches its
positions, so its vector is ignored (and reported as stale) rather than
deleting the wrong rows.

**Commit protocol** (:func:`commit_deletions`): the new positions of every
touched file are merged with its current vector, all merged vectors go into
ONE new deletion file (temporary name + atomic rename), then the catalog is
rewritten (temporary name + atomic rename).  Until that rename the previous
catalog and the deletion files it references are untouched, so a crash leaves
the previous state readable (and at most an unreferenced deletion file).
After the rename, deletion files no entry references any more are removed.
A concurrent commit that changed a touched file's vector in between is
detected and raises :class:`DeleteConflictError` (nothing is committed).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

import numpy as np

from ..fs import CommitConflictError
from ..fsutil import TMP_MARK
from ..tableindex import DeletionVector, read_deletion_vector, serialize_deletion_files

DV_DIR = "_deletion_vectors"
DV_KEY = "deletion_vector"


class DeleteConflictError(CommitConflictError):
    """Another commit changed the deletion vector of a file this delete touches."""


@dataclass
class DeleteReport:
    """What a delete did: rows newly deleted, files touched, the deletion file written."""

    rows_deleted: int = 0
    files_touched: int = 0
    files_scanned: int = 0
    files_skipped: int = 0
    deletion_file: Optional[str] = None
    removed_deletion_files: List[str] = field(default_factory=list)
    seconds: float = 0.0
    predicate: str = ""
    touched: List[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def __str__(self):
        where = f" into {self.deletion_file}" if self.deletion_file else ""
        return (
            f"{self.rows_deleted:,} rows deleted in {self.files_touched} files{where} "
            f"({self.files_scanned} files scanned, {self.files_skipped} pruned by indexes), "
            f"{self.seconds:.2f}s"
        )


def dv_dir(ds) -> str:
    return ds.store.join(ds.root, DV_DIR)


def dv_entry_current(f, entry: Optional[dict]) -> bool:
    """The vector of ``entry`` was written for the data file's current bytes."""
    return bool(entry) and entry.get("size") == f.size and entry.get("mtime_ns") == f.mtime_ns


def dv_location(ds, entry: dict):
    """``(deletion file path, offset, length)`` of a catalog deletion-vector entry."""
    return ds.store.join(dv_dir(ds), entry["file"]), int(entry["offset"]), int(entry["length"])


def load_vectors(ds, catalog: Optional[dict] = None) -> Dict[str, DeletionVector]:
    """``{relative data file path: DeletionVector}`` of every file with a current vector
    (each deletion file is read once; CRC, size and cardinality checked)."""
    cat = catalog if catalog is not None else ds.read_catalog()
    entries = cat.get("files", {})
    blobs: Dict[str, bytes] = {}
    out = {}
    for f in ds.files():
        e = (entries.get(f.path) or {}).get(DV_KEY)
        if not dv_entry_current(f, e):
            continue
        path, off, length = dv_location(ds, e)
        if path not in blobs:
            blobs[path] = ds.store.read_bytes(path, ds.io)
        dv = read_deletion_vector(blobs[path], off, length, f.path)
        if int(e.get("cardinality", dv.cardinality)) != dv.cardinality:
            from ..errors import IndexFormatError

            raise IndexFormatError(
                f"deletion vector of {f.path!r}: cardinality {dv.cardinality}, catalog says {e.get('cardinality')}", off
            )
        out[f.path] = dv
    return out


def _clean_temp(store, d: str) -> None:
    if store.object_store:
        return  # a PUT is never partly visible: no temporary files
    for e in store.list_files(d, recursive=False, keep=lambda n: n.startswith(".") and TMP_MARK in n):
        store.delete(e.path)


def commit_deletions(
    ds,
    positions: Mapping[str, np.ndarray],
    *,
    bitmap64: Optional[bool] = None,
    report: Optional[DeleteReport] = None,
    _fault: Optional[str] = None,
) -> DeleteReport:
    """Mark ``positions`` (``{relative data file path: row positions}``) deleted.

    Merges with each file's current vector, writes ONE new deletion file and
    atomically rewrites the catalog (see the module docstring).  ``bitmap64``
    picks the kind of new vectors (default: 64-bit only for files with more
    than 2^31-1 rows); an existing vector keeps its kind.  ``_fault`` (tests):
    ``"before_catalog"`` fails after the deletion file is written, ``"catalog"``
    fails half-way through writing the catalog's temporary file.
    """
    rep = report or DeleteReport()
    t0 = time.perf_counter()
    files = {f.path: f for f in ds.files(refresh=True)}
    cat = ds.read_catalog()
    entries = cat["files"]
    current = load_vectors(ds, cat)
    counts = ds.row_counts()
    merged = []
    base = {}
    for path in sorted(positions):
        pos = np.unique(np.asarray(positions[path], dtype=np.int64))
        if pos.size == 0:
            continue
        f = files.get(path)
        if f is None:
            raise FileNotFoundError(f"{path!r} is not a data file of {ds.root}")
        rows = counts[path]
        if pos[0] < 0 or pos[-1] >= rows:
            raise ValueError(f"row positions of {path!r} must be in [0, {rows}), got {pos[0]}..{pos[-1]}")
        old = current.get(path)
        if old is not None:
            dv = old.with_deleted(pos)
        else:
            wide = bitmap64 if bitmap64 is not None else rows - 1 > 2**31 - 1
            dv = DeletionVector.from_positions(pos, bitmap64=wide)
        added = dv.cardinality - (old.cardinality if old is not None else 0)
        if added == 0:
            continue
        rep.rows_deleted += added
        merged.append((path, dv))
        base[path] = (entries.get(path) or {}).get(DV_KEY)
    rep.touched = [p for p, _ in merged]
    rep.files_touched = len(merged)
    if not merged:
        rep.seconds += time.perf_counter() - t0
        return rep

    d = dv_dir(ds)
    store = ds.store
    store.makedirs(d)
    _clean_temp(store, d)
    ((data, metas),) = serialize_deletion_files(merged, target_size=1 << 62)  # ONE file per commit
    name = f"index-{uuid.uuid4()}-0"
    store.write_atomic(store.join(d, name), data)
    if _fault == "before_catalog":
        raise RuntimeError("injected failure before the catalog rename")

    # re-read the catalog: a commit that happened meanwhile must not be lost silently
    cat = ds.read_catalog()
    entries = cat["files"]
    for path, _ in merged:
        if (entries.get(path) or {}).get(DV_KEY) != base[path]:
            store.delete(store.join(d, name))
            raise DeleteConflictError(f"the deletion vector of {path!r} changed during this delete; retry")
    before = {e[DV_KEY]["file"] for e in entries.values() if isinstance(e, dict) and e.get(DV_KEY)}
    for (path, dv), (_, off, length, card) in zip(merged, metas):
        f = files[path]
        e = dict(entries.get(path) or {})
        if not (e.get("size") == f.size and e.get("mtime_ns") == f.mtime_ns):
            e = {k: v for k, v in e.items() if k not in ("file_index",)}  # a stale index stays unused
            e.update(size=f.size, mtime_ns=f.mtime_ns, rows=int(counts[path]))
        e[DV_KEY] = {
            "file": name,
            "offset": off,
            "length": length,
            "cardinality": card,
            "bitmap64": bool(dv.bitmap64),
            "size": f.size,
            "mtime_ns": f.mtime_ns,
        }
        entries[path] = e
    try:
        ds.write_catalog(cat, _fault="raise" if _fault == "catalog" else None)
    except CommitConflictError as e:  # another commit won the race: this delete is not visible
        store.delete(store.join(d, name))
        raise DeleteConflictError(f"another commit changed the catalog during this delete; retry ({e})") from None

    after = {e[DV_KEY]["file"] for e in entries.values() if isinstance(e, dict) and e.get(DV_KEY)}
    for old in sorted(before - after):  # the new catalog is in place: unreferenced files may go
        if store.delete(store.join(d, old)):
            rep.removed_deletion_files.append(old)
    rep.deletion_file = name
    rep.seconds += time.perf_counter() - t0
    return rep


def matching_positions(ds, plan, schema=None) -> Dict[str, np.ndarray]:
    """In-process: ``{file: row positions}`` of the not-yet-deleted rows of ``plan``'s kept
    files where its predicate holds (index bitmaps and deletion vectors honoured)."""
    import pyarrow as pa

    from .arrow_filter import filter_table

    schema = schema or ds.schema()
    out = {}
    for p in plan.kept:
        t = ds.read_file(p.file, schema=schema)
        t = t.append_column("__pf_row", pa.array(np.arange(t.num_rows, dtype=np.int64)))
        pos = None
        if p.bitmap is not None:
            pos = np.asarray(p.bitmap.to_array(), dtype=np.int64)
            pos = pos[pos < t.num_rows]
        if p.deletion_vector is not None:
            if pos is None:
                pos = np.arange(t.num_rows, dtype=np.int64)
            pos = pos[~p.deletion_vector.is_deleted_batch(pos)]
        if pos is not None:
            t = t.take(pa.array(pos))
        t = filter_table(t, plan.predicate)
        if t.num_rows:
            out[p.file.path] = t.column("__pf_row").to_numpy()
    return out
