"""The global index of a Parquet dataset (``bitmap`` by default, or another type of
:mod:`paimon_fast.globalindex.registry`): its files and listing, a build in this process,
loading it, and mapping its row ids back to files.

A dataset is a directory of Parquet files.  Its stable file order is the sorted
relative POSIX paths of the data files; a row's global id is the row count of the
earlier files plus its index within its file (Spark's ``_metadata.row_index``).

A column's index is a set of index files in ``<dataset>/_global_index/<column>/``
and the listing ``index.json`` beside them (as versions
``_global_index/<column>/_commits/index.json.<version>``, each created exclusively and sealed
with a checksum, like the dataset's catalog): every index file's ``SortedIndexFileMeta``, size
and block checksums (:mod:`paimon_fast.io.checksum`, checked on every block read), and the data
files (path, rows and identity: :mod:`paimon_fast.tables.identity`) the index was built over.
:func:`build_global_index_local` builds it in this
process (one index file); the sorted build on Spark is
:func:`paimon_fast.tables.globalindex_spark.build_global_index`; both commit the
listing with :func:`_commit_listing`.  The index files are uniquely named; the
listing is the commit object, a new immutable version created exclusively (a
conditional PUT on S3: :class:`paimon_fast.io.fs.CommitFile`), so a killed build leaves
the previous listing and orphans ``paimon-fast gc`` removes; files of superseded
listings stay for their readers until ``gc`` removes them after its grace period.
:func:`load_global_index` reads it back as a
:class:`~paimon_fast.globalindex.GlobalIndex`, and :func:`row_ids_to_file_rows`
maps answered row ids to (data file, row indexes).
"""

from __future__ import annotations

import os
import uuid

from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from ..io.checksum import ChecksummedSource, block_checksums, open_json, seal_json
from ..io.fs import CommitFile, LazySource, resolve
from ..core.predicate import Leaf, Predicate
from ..core.result import SKIP, UNSUPPORTED, BitmapResult, FileIndexResult
from ..read.explain import leaves_of
from . import identity as _identity
from .layout import is_data_file_name

INDEX_DIR = "_global_index"
LISTING = "index.json"


def _listed(store, root):
    return store.list_files(root, skip_dir=lambda d: d.startswith(("_", ".")), keep=is_data_file_name)


def data_files(path, filesystem=None):
    """``[(relative POSIX path, row count)]`` of the dataset's Parquet files in the stable order."""
    import pyarrow.parquet as pq

    store, root = resolve(path, filesystem)
    return [(e.rel, pq.ParquetFile(store.open_input(e.path)).metadata.num_rows) for e in _listed(store, root)]


def _file_states(store, root, files) -> list:
    """The data files' identities (:class:`~paimon_fast.tables.identity.Identity`), settled, taken
    before they are read: recorded so a reader can tell a stale index (a file changed while the
    build read it has another identity afterwards, so the index is never used for it)."""
    import time

    waited = 0.0
    while True:
        t0 = time.time_ns()
        out = []
        for rel, _ in files:
            ident = _identity.current(store, store.join(root, *rel.split("/")))
            if ident is None:
                raise FileNotFoundError(store.uri(store.join(root, rel)))
            out.append(ident)
        late = _identity.unsettled(out, t0)
        if not late:
            return out
        w0 = time.monotonic()
        if not _identity.wait_settled(late, waited):
            return out
        waited += time.monotonic() - w0


def index_dir(path, column, filesystem=None) -> str:
    store, root = resolve(path, filesystem)
    return store.join(root, INDEX_DIR, column)


def _listing_file(path, column, filesystem=None) -> CommitFile:
    store, root = resolve(path, filesystem)
    return CommitFile(store, store.join(root, INDEX_DIR, column), LISTING)


def _commit_listing(
    store,
    root,
    column,
    dtype,
    build_id,
    total,
    options,
    ranges,
    files,
    bases,
    states,
    rows,
    base_version=None,
    index_type="bitmap",
):
    """Commit ``index.json`` (atomically; a new version on versioned stores, refused if another
    build committed since ``base_version``) and remove index files of earlier builds."""
    out_dir = index_dir(root, column, store)
    listing = {
        "format": f"paimon-fast {index_type} global index listing",
        "index_type": index_type,
        "column": column,
        "type": dtype,
        "build_id": build_id,
        "total_row_count": total,
        "options": options,
        "ranges": ranges,
        "data_files": [
            dict({"path": rel, "row_count": n, "first_row_id": b}, **_state_json(st))
            for (rel, n), b, st in zip(files, bases, states)
        ],
        "files": [
            dict(
                {"file": r["file"], "row_count": r["row_count"], "meta": bytes(r["meta"]).hex(), "size": r["size"]},
                **({"checksum": r["checksum"]} if r.get("checksum") else {}),
            )
            for r in rows
        ],
    }
    del out_dir  # files of earlier builds stay for readers of earlier listings until gc removes them
    _listing_file(root, column, store).write(seal_json(listing), base_version)
    return listing


def _state_json(st) -> dict:
    if isinstance(st, _identity.Identity):
        return st.to_json()
    return {"size": st[0], "mtime_ns": st[1]}


def build_global_index_local(
    path, column, options=None, dtype=None, batch_rows=1 << 17, filesystem=None, index_type="bitmap"
):
    """:func:`build_global_index` in this process, without Spark: one index file for the
    whole column (for small datasets and tests); the same listing and row ids.  ``index_type``:
    a global index type of :mod:`paimon_fast.globalindex.registry` (default ``bitmap``)."""
    import pyarrow.parquet as pq

    from ..globalindex import registry
    from ..core.types import DataType

    itype = registry.get(index_type)

    options = {str(k): str(v) for k, v in dict(options or {}).items()}
    store, root = resolve(path, filesystem)
    base_version = _listing_file(root, column, store).read()[0]
    files = data_files(root, store)
    if not files:
        raise FileNotFoundError(f"no Parquet data files under {store.uri(root)}")
    states = _file_states(store, root, files)
    bases = np.cumsum([0] + [n for _, n in files]).tolist()
    if dtype is None:
        dtype = str(
            DataType.from_arrow(pq.read_schema(store.open_input(store.join(root, files[0][0]))).field(column).type)
        )
    dtype = str(DataType.parse(dtype))
    out_dir = index_dir(root, column, store)
    store.makedirs(out_dir)
    build_id = uuid.uuid4().hex[:12]
    w = itype.new_writer(dtype, itype.options(options))
    for (rel, _), base in zip(files, bases):
        pos = base
        for b in pq.ParquetFile(store.open_input(store.join(root, rel))).iter_batches(
            batch_size=batch_rows, columns=[column]
        ):
            w.write_batch(b.column(0), np.arange(pos, pos + b.num_rows, dtype=np.uint64))
            pos += b.num_rows
    name = f"{index_type}-{build_id}-00000.index"
    data, meta = w.finish()
    if data is not None:
        store.write_atomic(store.join(out_dir, name), data)
    rows = (
        []
        if data is None
        else [
            {"file": name, "row_count": w.row_count, "meta": meta, "size": len(data), "checksum": block_checksums(data)}
        ]
    )
    return _commit_listing(
        store,
        root,
        column,
        dtype,
        build_id,
        bases[-1],
        options,
        1,
        files,
        bases,
        states,
        rows,
        base_version,
        index_type=index_type,
    )


def read_listing(path, column, filesystem=None) -> dict:
    """The current listing of ``column``'s global index (a damaged one raises
    :class:`~paimon_fast.errors.DamagedFileError` naming it)."""
    lf = _listing_file(path, column, filesystem)
    v, data = lf.read()
    if data is None:
        store, root = resolve(path, filesystem)
        raise FileNotFoundError(f"no global index listing for {column!r} in {store.uri(root)}")
    obj, _ = open_json(data, f"global index listing {lf.store.uri(lf.version_path(v))}")
    return obj


def has_global_index(path, column, filesystem=None) -> bool:
    store, root = resolve(path, filesystem)
    lf = _listing_file(root, column, store)
    if lf.versions():
        return True
    return store.exists(lf.legacy_path)


def listing_trust(listing, files) -> Optional[str]:
    """How ``listing`` compares with ``files`` (``DataFile`` objects in the stable order, listed
    with their identities): :data:`~paimon_fast.tables.identity.VERIFIED` when it was built over
    exactly these versions of these files, :data:`~paimon_fast.tables.identity.WEAK` when only
    sizes and times could be compared, None when it is stale."""
    recorded = listing.get("data_files") or []
    if len(recorded) != len(files):
        return None
    worst = _identity.VERIFIED
    for r, f in zip(recorded, files):
        if r.get("path") != f.path or "size" not in r or "mtime_ns" not in r:
            return None
        ident = f.identity if f.identity is not None else _identity.Identity(f.size, f.mtime_ns)
        verdict = _identity.judge(ident, r)
        if not _identity.usable(verdict):
            return None
        if verdict == _identity.WEAK:
            worst = _identity.WEAK
    return worst


def listing_is_current(listing, files) -> bool:
    """Whether ``listing`` was built over exactly ``files`` (``DataFile`` objects in the stable
    order, or ``(path, size, mtime_ns)`` tuples): the same versions of the same files
    (:func:`listing_trust`).  A listing without recorded sizes / times is never current."""
    if files and not hasattr(files[0], "path"):
        from .layout import DataFile

        files = [DataFile(p, p, size, mtime) for p, size, mtime in files]
    return listing_trust(listing, files) is not None


def load_global_index(path, column, options=None, filesystem=None, counter=None, _listing=None):
    """The :class:`~paimon_fast.globalindex.GlobalIndex` of a built column (files pruned by meta;
    a file is opened, with ranged reads counted in ``counter``, only when a query needs it): the
    many-file class of the listing's ``index_type`` (:mod:`paimon_fast.globalindex.registry`)."""
    from ..globalindex import registry

    store, root = resolve(path, filesystem)
    listing = _listing if _listing is not None else read_listing(root, column, store)
    d = index_dir(root, column, store)

    def source(f):
        p = store.join(d, f["file"])
        if f.get("checksum") is not None:  # every block read is checked
            return ChecksummedSource(
                LazySource(store, p, f.get("size"), counter), f["checksum"], int(f["size"]), f"global index file {p}"
            )
        if store.local and counter is None:
            return p
        return LazySource(store, p, f.get("size"), counter)

    files = [(source(f), bytes.fromhex(f["meta"])) for f in listing["files"]]
    return registry.get(listing.get("index_type", "bitmap")).index_class()(
        files, listing["type"], options or listing.get("options") or {}, total_row_count=listing["total_row_count"]
    )


def row_ids_to_file_rows(row_ids, listing) -> dict:
    """Map global row ids (BitMap64 or array) to ``{relative data file: int64 row indexes}``."""
    if hasattr(row_ids, "to_array"):
        ids = (
            np.frombuffer(row_ids.to_array(), dtype=np.uint64).astype(np.int64)
            if len(row_ids)
            else np.zeros(0, np.int64)
        )
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


# ---------------------------------------------------------------- answers for a dataset read


LOOK_BACK = 8  # older listing versions tried for one built over the snapshot's files


def _listing_for(ds, column: str) -> dict:
    """The newest listing of ``column``, or, when it was not built over the snapshot's files, the
    newest of the :data:`LOOK_BACK` before it that was: an optimize commits the listing of its new
    files before the catalog commit that puts them in place, so a reader of either catalog version
    finds the listing of its files (and a killed optimize leaves the previous one in use)."""
    newest = read_listing(ds.root, column, ds.store)
    files = ds.files()
    if listing_trust(newest, files) is not None:
        return newest
    lf = _listing_file(ds.root, column, ds.store)
    for v in reversed(lf.versions()[-1 - LOOK_BACK : -1]):
        try:
            obj, _ = open_json(ds.store.read_bytes(lf.version_path(v), ds.io), "global index listing")
        except Exception:  # noqa: BLE001 - gone (gc) or damaged: only the newest is judged for damage
            continue
        if listing_trust(obj, files) is not None:
            return obj
    return newest


def listing_of(ds, column: str) -> dict:
    """``column``'s global index listing, read once per snapshot of ``ds`` (every step of an
    operation sees the same listing): the one built over the snapshot's files (:func:`_listing_for`)."""
    snap = getattr(ds, "_snap", None)
    if snap is None:
        return read_listing(ds.root, column, ds.store)
    key = ("global index listing", column)
    if key not in snap.derived:
        try:
            snap.derived[key] = _listing_for(ds, column)
        except Exception as e:  # kept too: the same answer for every step
            snap.derived[key] = e
    got = snap.derived[key]
    if isinstance(got, Exception):
        raise got
    return got


def has_listing(ds, column: str) -> bool:
    snap = getattr(ds, "_snap", None)
    if snap is None:
        return has_global_index(ds.root, column, ds.store)
    derived = snap.derived
    if ds.store.local:  # no directory, no column's index: one look a snapshot, not two a column
        if "global index dir" not in derived:
            derived["global index dir"] = os.path.isdir(ds.store.join(ds.root, INDEX_DIR))
        if not derived["global index dir"]:
            return False
    key = ("has global index", column)
    if key not in derived:
        derived[key] = has_global_index(ds.root, column, ds.store)
    return derived[key]


class GlobalAnswers:
    """Leaf answers of the dataset's bitmap global indexes, per file.

    A column's global index (``<root>/_global_index/<column>/index.json``, see
    :mod:`paimon_fast.tables.globalindex`) is used only when its listing
    records exactly the files of the dataset's snapshot (paths, identities, row
    counts); otherwise it is stale and ignored.  Its answers are exact only where
    every file's identity is strong and verified (and its bytes pass their checksums).  Each leaf on such a
    column is evaluated once over the whole dataset; its global row ids are
    split by the files' row offsets: a file with none is SKIP, the others get a
    BitmapResult of row positions.  UNSUPPORTED or an error -> None (the file
    index answers instead, or REMAIN).
    """

    def __init__(self, ds, pred: Predicate, counts: Mapping[str, int], part_types):
        self.used, self.stale, self.errors = set(), set(), []
        self._ids: Dict[int, np.ndarray] = {}
        self._exact: Dict[int, bool] = {}
        self._offsets: Dict[str, Tuple[int, int]] = {}
        leaves = [x for x in leaves_of(pred) if x.name not in part_types]
        cols = sorted({x.name for x in leaves if has_listing(ds, x.name)})
        if not cols:
            return

        files = ds.files()
        acc = 0
        for f in files:
            self._offsets[f.path] = (acc, counts[f.path])
            acc += counts[f.path]
        indexes, verified = {}, {}
        for c in cols:
            try:
                listing = listing_of(ds, c)
                trust = listing_trust(listing, files)
                if trust is None or [d["row_count"] for d in listing["data_files"]] != [counts[f.path] for f in files]:
                    self.stale.add(c)
                    continue
                verified[c] = trust == _identity.VERIFIED and all(f.get("checksum") for f in listing["files"])
                indexes[c] = load_global_index(ds.root, c, filesystem=ds.store, counter=ds.io, _listing=listing)
            except Exception as e:  # an unreadable listing never fails a query
                self.errors.append(f"{c}: {type(e).__name__}: {e}")
        try:
            for leaf in leaves:
                g = indexes.get(leaf.name)
                if g is None:
                    continue
                try:
                    r = g.visit(leaf)
                except Exception as e:
                    self.errors.append(f"{leaf!r}: {type(e).__name__}: {e}")
                    continue
                if r is UNSUPPORTED:
                    continue
                self._ids[id(leaf)] = np.frombuffer(r.to_array(), dtype=np.uint64) if len(r) else np.zeros(0, np.uint64)
                self._exact[id(leaf)] = g.answers_exactly(leaf) and verified[leaf.name]
                self.used.add(leaf.name)
        finally:
            for g in indexes.values():
                g.close()

    def exact(self, leaf: Leaf) -> bool:
        """Are the leaf's row ids exactly the rows where it holds?"""
        return self._exact.get(id(leaf), False)

    def result(self, leaf: Leaf, path: str) -> Optional[FileIndexResult]:
        ids = self._ids.get(id(leaf))
        if ids is None:
            return None
        from ..core.roaring import bitmap_of

        first, n = self._offsets[path]
        # the bounds as uint64: Python ints would make numpy compare every id as a float
        lo, hi = np.searchsorted(ids, np.array([first, first + n], dtype=np.uint64))
        if lo == hi:
            return SKIP
        return BitmapResult(bitmap_of(ids[lo:hi] - np.uint64(first)))
