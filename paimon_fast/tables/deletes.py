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
                                   "size": 123, "mtime_ns": 1700000000000000000,
                                   "ctime_ns": ..., "ino": ... (or "etag": ...),
                                   "file_xxh3": 3735928559, "file_size": 1234}}}

``offset`` / ``length`` / ``cardinality`` are what Paimon's index metadata
records for the vector.  The identity keys (:mod:`paimon_fast.tables.identity`)
are the data file's as the delete read it: a data file rewritten since then no
longer matches its positions, so its vector is ignored rather than deleting the
wrong rows.  ``file_xxh3`` / ``file_size`` are the deletion file's
(:func:`paimon_fast.io.checksum.digest32`): it is read whole and checked; a
deletion file that is missing or fails its checksum raises
:class:`~paimon_fast.errors.DamagedFileError` (rows deleted must never come back
silently).

**Commit protocol** (:func:`commit_deletions`): the new positions of every
touched file are merged with its vector in the delete's snapshot, all merged
vectors go into ONE new deletion file (a new name), then the catalog version
after the snapshot's is created (:func:`paimon_fast.tables.catalog.commit`).  If
another commit created it first, the change is rebased onto the newest version:
a file whose vector another delete changed meanwhile gets the union of both
(deletes commute), written to a new deletion file; a file whose vector is now
for another version of the file makes the delete start over from a new snapshot.
Until the version exists nothing of the delete is visible; a killed delete
leaves at most a deletion file no version names.  Deletion files are never
removed by a commit (readers of older versions still read them); ``gc``
removes those no live version names.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

import numpy as np

from ..io.checksum import ChecksumMismatchError, digest32, verify_whole
from ..errors import DamagedFileError, IndexFormatError
from ..io.fs import CommitConflictError
from ..tableindex import DeletionVector, read_deletion_vector, serialize_deletion_files
from . import catalog as _catalog
from . import identity as _identity
from .steps import step
from .writer import VERSION_FACTS

DV_DIR = "_deletion_vectors"
DV_KEY = "deletion_vector"


class DeleteConflictError(CommitConflictError):
    """A delete could not be committed: other commits kept winning, or the files it deletes from
    kept changing under it.  Nothing of it is visible; run it again."""


@dataclass
class DeleteReport:
    """What a delete did: rows newly deleted, files touched, the deletion file written, the catalog
    version committed."""

    rows_deleted: int = 0
    files_touched: int = 0
    files_scanned: int = 0
    files_skipped: int = 0
    deletion_file: Optional[str] = None
    removed_deletion_files: List[str] = field(default_factory=list)  # always empty: gc removes superseded files
    seconds: float = 0.0
    predicate: str = ""
    touched: List[str] = field(default_factory=list)
    catalog_version: Optional[int] = None
    rebased: int = 0  # times the commit was applied again onto a newer catalog version

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


def dv_applies(f, entry: Optional[dict], ds=None) -> bool:
    """The vector of ``entry`` was written for the listed version of the data file ``f`` (or for a
    copy of it: :data:`~paimon_fast.tables.identity.COPIED`, told by the witness ``ds`` reads)."""
    if not entry or f.identity is None:
        return bool(entry) and entry.get("size") == f.size and entry.get("mtime_ns") == f.mtime_ns
    verdict = ds.trust(f, entry) if ds is not None else _identity.judge(f.identity, entry)
    # an entry of an earlier version (no strong identity recorded) is applied when size and time
    # match: ignoring it would bring deleted rows back
    return verdict in (_identity.VERIFIED, _identity.WEAK, _identity.COPIED, _identity.UNVERIFIED)


dv_entry_current = dv_applies  # the former name


def dv_location(ds, entry: dict):
    """``(deletion file path, offset, length)`` of a catalog deletion-vector entry."""
    return ds.store.join(dv_dir(ds), entry["file"]), int(entry["offset"]), int(entry["length"])


def _deletion_file(ds, path: str, entry: dict, blobs: Dict[str, bytes]) -> bytes:
    blob = blobs.get(path)
    if blob is None:
        shown = ds.store.uri(path)
        try:
            blob = ds.store.read_bytes(path, ds.io)
        except FileNotFoundError:
            raise DamagedFileError(
                f"deletion file {shown} named by the catalog is missing: the rows it deletes cannot be known "
                "(restore it; reads refuse to return rows that may have been deleted)"
            ) from None
        if entry.get("file_size") is not None and len(blob) != int(entry["file_size"]):
            raise DamagedFileError(
                f"deletion file {shown} has {len(blob)} bytes, the catalog recorded {entry['file_size']}"
            )
        try:
            verify_whole(blob, entry.get("file_xxh3"), f"deletion file {shown}")
        except ChecksumMismatchError as e:
            raise DamagedFileError(f"{e}: the rows it deletes cannot be known (restore it)") from None
        blobs[path] = blob
    return blob


def read_vector(ds, data_path: str, entry: dict, blobs: Optional[Dict[str, bytes]] = None) -> DeletionVector:
    """The deletion vector a catalog entry names (its file checked; see the module docstring)."""
    path, off, length = dv_location(ds, entry)
    blob = _deletion_file(ds, path, entry, {} if blobs is None else blobs)
    try:
        dv = read_deletion_vector(blob, off, length, data_path)
    except IndexFormatError as e:
        raise DamagedFileError(f"deletion file {ds.store.uri(path)}: {e}") from None
    if int(entry.get("cardinality", dv.cardinality)) != dv.cardinality:
        raise DamagedFileError(
            f"deletion vector of {data_path!r} in {ds.store.uri(path)}: cardinality {dv.cardinality}, "
            f"catalog says {entry.get('cardinality')}"
        )
    return dv


def load_vectors(ds, catalog: Optional[dict] = None) -> Dict[str, DeletionVector]:
    """``{relative data file path: DeletionVector}`` of every listed file with a vector written for
    its listed version (each deletion file is read once; size, checksum, CRC and cardinality
    checked)."""
    cat = catalog if catalog is not None else ds.read_catalog()
    entries = cat.get("files", {})

    def with_entries():
        got = [(f, (entries.get(f.path) or {}).get(DV_KEY)) for f in ds.files()]
        return [(f, e) for f, e in got if e]

    # the files with a vector entry: once for every snapshot of the same files and catalog
    snap = getattr(ds, "_snap", None)
    if snap is not None and cat is snap.catalog:
        listed = snap.stable.get("vector entries")
        if listed is None:
            listed = snap.stable["vector entries"] = with_entries()
    else:
        listed = with_entries()
    blobs: Dict[str, bytes] = {}
    out = {}
    for f, e in listed:
        if not dv_applies(f, e, ds):
            continue
        out[f.path] = read_vector(ds, f.path, e, blobs)
    return out


def commit_deletions(
    ds,
    positions: Mapping[str, np.ndarray],
    *,
    bitmap64: Optional[bool] = None,
    report: Optional[DeleteReport] = None,
    _fault: Optional[str] = None,
) -> DeleteReport:
    """Mark ``positions`` (``{relative data file path: row positions}``, found in the snapshot
    ``ds``: a :meth:`~paimon_fast.tables.ParquetDataset.snapshot`) deleted.

    Merges with each file's vector, writes ONE new deletion file and commits the next catalog
    version, rebased onto commits made meanwhile (see the module docstring).  ``bitmap64`` picks
    the kind of new vectors (default: 64-bit only for files with more than 2^31-1 rows); an
    existing vector keeps its kind.  ``_fault`` (tests): ``"before_catalog"`` fails after the
    deletion file is written, ``"catalog"`` fails right before the catalog version is created.
    Raises :class:`paimon_fast.tables.catalog.Rebase` when a touched file's vector is now for
    another version of the file (the caller starts over from a new snapshot)."""
    rep = report or DeleteReport()
    t0 = time.perf_counter()
    if getattr(ds, "_snap", None) is None:
        ds = ds.snapshot(settle=True)
    files = {f.path: f for f in ds.files()}
    base = ds.read_catalog()
    current = load_vectors(ds, base)
    counts = ds.row_counts()
    merged = {}
    base_dv = {}
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
        if dv.cardinality == (old.cardinality if old is not None else 0):
            continue
        merged[path] = (dv, pos)
        base_dv[path] = (base["files"].get(path) or {}).get(DV_KEY)
    rep.touched = list(merged)
    rep.files_touched = len(merged)
    if not merged:
        rep.seconds += time.perf_counter() - t0
        return rep

    store = ds.store
    idents = {}  # the identity (and witness) of the version of each touched file the positions are of
    for path in merged:
        f = files[path]
        if f.identity is None:
            idents[path] = {"size": f.size, "mtime_ns": f.mtime_ns}
            continue
        w = _identity.read_witness(store, f.abs_path, f.identity, None if store.local else ds.io)
        _identity.check_unchanged(store, f.abs_path, f.identity, path)  # the witness is of that version
        idents[path] = dict(f.identity.to_json(), **({"witness": w} if w else {}))
    d = dv_dir(ds)
    store.makedirs(d)
    written: List[str] = []  # our deletion files: each one no commit named is removed by us

    def write(vectors: Dict[str, DeletionVector]):
        ((data, metas),) = serialize_deletion_files(list(vectors.items()), target_size=1 << 62)  # ONE file
        name = f"index-{uuid.uuid4()}-0"
        store.write_atomic(store.join(d, name), data)
        written.append(name)
        return name, {p: m[1:] for p, m in zip(vectors, metas)}, digest32(data), len(data)

    first = write({p: dv for p, (dv, _) in merged.items()})
    step("delete.file_written", file=first[0])
    if _fault == "before_catalog":
        _drop(store, d, written)
        raise RuntimeError("injected failure before the catalog commit")
    state = {"file": first, "added": 0}

    def change(cat, attempt):
        entries = dict(cat["files"])
        vectors, redo, added = {}, False, 0
        for path, (dv, pos) in merged.items():
            now = (entries.get(path) or {}).get(DV_KEY)
            if now == base_dv[path]:
                vectors[path] = dv
                added += dv.cardinality - (current[path].cardinality if path in current else 0)
                continue
            # another commit changed this file's vector since the snapshot: deletes commute, so ours
            # is merged into it, if it is for the same version of the file
            redo = True
            if now is None:
                other = None
            elif dv_applies(files[path], now, ds):
                other = read_vector(ds, path, now)
            else:
                raise _catalog.Rebase(f"the deletion vector of {path!r} is for another version of the file now")
            vectors[path] = (
                other.with_deleted(pos)
                if other is not None
                else DeletionVector.from_positions(pos, bitmap64=dv.bitmap64)
            )
            added += vectors[path].cardinality - (other.cardinality if other is not None else 0)
        if redo:
            state["file"] = write(vectors)
            rep.rebased += 1
        name, metas, file_crc, file_size = state["file"]
        state["added"] = added
        for path, dv in vectors.items():
            e = dict(entries.get(path) or {})
            ident = idents[path]
            if _identity.recorded(e) is None:  # a file no build indexed yet: its rows are known now
                for k in VERSION_FACTS:  # (nothing said of an unrecorded version is kept)
                    e.pop(k, None)
                e.update(ident)
                e["rows"] = int(counts[path])
            off, length, card = metas[path]
            e[DV_KEY] = {
                "file": name,
                "offset": off,
                "length": length,
                "cardinality": card,
                "bitmap64": bool(dv.bitmap64),
                **ident,
                "file_xxh3": file_crc,
                "file_size": file_size,
            }
            entries[path] = e
        new = dict(cat)
        new["files"] = entries
        return new

    step("delete.commit")
    try:
        out = _catalog.commit(
            ds.catalog,
            base,
            change,
            counter=ds.io,
            what="the delete's commit",
            _fault="raise" if _fault == "catalog" else None,
        )
    except CommitConflictError as e:  # other commits kept winning: nothing of this delete is visible
        _drop(store, d, written)
        raise DeleteConflictError(f"another commit changed the catalog during this delete; retry ({e})") from None
    except BaseException:
        _drop(store, d, written)
        raise
    step("delete.committed", version=out.commit_version)
    _drop(store, d, [n for n in written if n != state["file"][0]])
    rep.rows_deleted = state["added"]
    rep.deletion_file = state["file"][0]
    rep.catalog_version = out.commit_version
    rep.seconds += time.perf_counter() - t0
    return rep


def _drop(store, d: str, names) -> None:
    """Remove deletion files this delete wrote that no catalog version names."""
    for n in names:
        store.delete(store.join(d, n))


def matching_positions(ds, plan, schema=None) -> Dict[str, np.ndarray]:
    """In-process: ``{file: row positions}`` of the not-yet-deleted rows of ``plan``'s kept
    files where its predicate holds (index bitmaps and deletion vectors honoured)."""
    import pyarrow as pa

    from ..read.arrow_filter import filter_table

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
