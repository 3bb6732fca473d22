"""A dataset's catalog: versions, snapshots and commits with optimistic concurrency.

**Versions.**  The catalog is a sequence of immutable versions
``<root>/_commits/_paimon_fast_catalog.json.<10-digit version>`` (:class:`paimon_fast.io.fs.CommitFile`),
each created exclusively: locally a hard link that fails onto an existing name, on S3 a conditional
PUT (``If-None-Match: *``), on HDFS a rename that fails onto an existing file.  Each version is sealed
JSON (its last member is a checksum of the rest: :func:`paimon_fast.io.checksum.seal_json`); one that does
not parse or fails its checksum raises :class:`~paimon_fast.errors.DamagedFileError` naming the file
and how to go back to the previous version.  Datasets indexed before versions existed have the plain
file ``<root>/_paimon_fast_catalog.json``: it is read as version 0 and, once version 1 exists,
replaced by a stub that earlier paimon-fast versions refuse (it says catalog version 2) instead of
reading the dataset without its deletion vectors.

**Snapshots.**  :func:`take` lists the data files (each with its identity:
:mod:`paimon_fast.tables.identity`) and reads the current catalog version, once; an operation works
on that and nothing else (:meth:`paimon_fast.tables.ParquetDataset.snapshot`).

**Commits** (:func:`commit`): a writer computes its change against the version of its snapshot and
creates the next version.  When another writer created it first, the change is applied again to the
newest version (a *rebase*: builds set the index entries of the files they indexed, deletes merge
their positions into the files' vectors, each keeping what the other commits put there) and the
commit is tried again, at most :data:`COMMIT_RETRIES` times; a change that cannot be rebased raises,
and so does the last failed try (:class:`~paimon_fast.io.fs.CommitConflictError`).  Commits never remove
files: superseded index, deletion and catalog files stay for readers of older versions until ``gc``
removes the ones no live version names (:mod:`paimon_fast.tables.gc`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from ..io.checksum import open_json, seal_json
from ..errors import DamagedFileError, DataFileChangedError, IndexFormatError
from ..io.fs import CommitConflictError, CommitFile
from .identity import SETTLE_NS, Identity, unsettled, wait_settled
from .layout import DataFile, is_data_file_name, parse_partition
from .replaced import hidden_filter
from .steps import step

CATALOG_FORMAT = "paimon-fast-dataset"
CATALOG_VERSION = 3  # read up to; 1 (before versions and checksums) is still read
# written: 2, or 3 while an optimize is pending or its replaced files are recorded (earlier versions
# of paimon-fast, which would read those files as the dataset's, refuse it)
CATALOG_VERSION_PLAIN = 2
FILE_ORDER_DOC = "files sorted by relative POSIX path; global row id = rows of earlier files + row position in the file"
COMMIT_RETRIES = 16
# listings a snapshot takes at most while commits keep landing during them (take)
SNAPSHOT_ROUNDS = 16
# gc's grace period (seconds): a superseded version stays live, and a file nothing names yet stays, this long
GRACE_SECONDS = 3600.0
STUB_NOTE = (
    "the catalog's versions are _commits/_paimon_fast_catalog.json.<version>, "
    "written by a later paimon-fast than the one reading this file"
)


class Catalog(dict):
    """One catalog version: the JSON object, the version it is (``commit_version``: None when the
    dataset has no catalog yet, 0 for the plain file of earlier versions) and the file it was read
    from (``where``, for messages)."""

    def __init__(self, data, commit_version=None, where: str = "", sealed: bool = False):
        super().__init__(data)
        self.commit_version = commit_version
        self.where = where
        self.sealed = sealed


def empty() -> dict:
    return {"format": CATALOG_FORMAT, "version": CATALOG_VERSION_PLAIN, "file_order": FILE_ORDER_DOC, "files": {}}


def read(cf: CommitFile, counter=None, memo: Optional[dict] = None) -> Catalog:
    """The current catalog version (see the module docstring).  ``memo`` (a dict the caller
    keeps; snapshots, which never modify what they read): the version parsed last time is
    returned again when the current version is the same one with the same bytes.  Locally, when
    the current version's file has the inode, size and times it had when it was last read (and
    had then been unchanged for :data:`~paimon_fast.tables.identity.SETTLE_NS`, so a rewrite
    within the filesystem's clock tick cannot keep them), it is not read again: a version file
    is created once and never rewritten, and its stat costs less than its bytes."""
    if memo is None:
        return _parse(cf, *cf.read(counter))
    seen = memo.get("catalog")
    now = time.time_ns()
    here = cf.current_stat()  # (taken before the bytes: a change after it is seen next time)
    if seen is not None and here is not None and seen[3] == here:
        return seen[2]
    v, data = cf.read(counter)
    if here is not None and (here[0] != v or here[1][3] > now - SETTLE_NS):
        here = None  # (another version by now, or changed too recently to be told by its stat)
    if seen is not None and seen[0] == v and seen[1] == data and data is not None:
        memo["catalog"] = (v, data, seen[2], here)
        return seen[2]
    cat = _parse(cf, v, data)
    memo["catalog"] = (v, data, cat, here)
    return cat


def _parse(cf: CommitFile, v: Optional[int], data: Optional[bytes]) -> Catalog:
    store = cf.store
    if data is None:
        return Catalog(empty(), None, store.uri(cf.path))
    where = store.uri(cf.version_path(v))
    back = (
        f"; restore it, or remove it to go back to version {v - 1} (the commits after that version are lost)"
        if v and v > 1
        else ""
    )
    try:
        obj, sealed = open_json(data, f"dataset catalog {where}")
    except DamagedFileError as e:
        raise DamagedFileError(f"{e}{back}") from None
    if obj.get("format") != CATALOG_FORMAT:
        raise DamagedFileError(f"{where} is not a paimon-fast dataset catalog{back}")
    try:
        fmt = int(obj.get("version", 0))
    except (TypeError, ValueError):
        raise DamagedFileError(f"dataset catalog {where} is damaged: version {obj.get('version')!r}{back}") from None
    if fmt > CATALOG_VERSION:
        raise IndexFormatError(
            f"{where} has catalog version {fmt}; this paimon-fast reads up to {CATALOG_VERSION} (upgrade paimon-fast)"
        )
    if v == 0 and "stub" in obj:
        raise DamagedFileError(
            f"the catalog versions of {store.uri(cf.dir)} are missing ({cf.path}.*): restore them, or remove "
            f"{where} to start without a catalog (indexes are rebuilt, deleted rows come back)"
        )
    if fmt >= 2 and not sealed:
        raise DamagedFileError(f"dataset catalog {where} is damaged: its checksum is missing{back}")
    if not isinstance(obj.setdefault("files", {}), dict):
        raise DamagedFileError(f"dataset catalog {where} is damaged: 'files' is not an object{back}")
    return Catalog(obj, v, where, sealed)


def encode(cat: dict) -> bytes:
    out = dict(cat)
    out["format"] = CATALOG_FORMAT
    out["version"] = CATALOG_VERSION if hidden_filter(cat) is not None else CATALOG_VERSION_PLAIN
    out["file_order"] = FILE_ORDER_DOC
    out["files"] = {k: cat.get("files", {})[k] for k in sorted(cat.get("files", {}))}
    return seal_json(out)


class Rebase(Exception):
    """Raised by a change that cannot be applied to the newest version: the operation starts over
    from a new snapshot (the caller's loop)."""


def commit(
    cf: CommitFile,
    base: Catalog,
    change: Callable[[Catalog, int], dict],
    *,
    counter=None,
    retries: int = COMMIT_RETRIES,
    what: str = "commit",
    _fault: Optional[str] = None,
) -> Catalog:
    """Create the catalog version after ``base`` holding ``change(base, 0)``; when another writer
    created it first, ``change(newest, attempt)`` is committed after the newest version instead, at
    most ``retries`` more times (see the module docstring).  ``change`` must not modify its argument.
    Returns the committed version."""
    cat = base
    for attempt in range(retries + 1):
        new = change(cat, attempt)
        data = encode(new)
        step("catalog.commit", version=(cat.commit_version or 0) + 1, attempt=attempt, what=what)
        try:
            v = cf.write(data, cat.commit_version, _fault)
        except CommitConflictError as e:
            if attempt == retries:
                raise CommitConflictError(
                    f"{what} gave up after {retries + 1} attempts: other writers committed each time ({e})"
                ) from None
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
            cat = read(cf, counter)
            continue
        _stub(cf)
        return Catalog(new, v, cf.store.uri(cf.version_path(v)), True)
    raise AssertionError("unreachable")


def _stub(cf: CommitFile) -> None:
    """Locally: make the plain catalog file of earlier versions a stub they refuse (module docstring)."""
    store = cf.store
    if not store.local:
        return
    path = cf.legacy_path
    try:
        with open(path, "rb") as fh:
            if b'"stub"' in fh.read(4096):
                return
    except FileNotFoundError:
        pass
    store.write_atomic(
        path, seal_json({"format": CATALOG_FORMAT, "version": CATALOG_VERSION_PLAIN, "stub": STUB_NOTE, "files": {}})
    )


# ---------------------------------------------------------------- snapshots


@dataclass
class Snapshot:
    """What one operation works on: the data files listed once (with their identities) and one
    catalog version, taken at ``taken_ns``; ``settled``: every identity was settled when listed
    (:func:`paimon_fast.tables.identity.unsettled`).  ``derived`` holds what is computed from them
    (schemas, row counts, global index listings) for the operation's other steps.  ``stable`` holds
    what is computed from the listed files and the catalog alone (schemas, row counts, identity
    verdicts): a later snapshot that finds the very same files and catalog version shares it
    (:meth:`paimon_fast.tables.parquet.ParquetDataset.snapshot`), while ``derived`` (global index
    listings: files the catalog does not name) starts empty in every snapshot."""

    files: List[DataFile]
    catalog: Catalog
    taken_ns: int
    settled: bool = False
    derived: Dict = field(default_factory=dict)
    stable: Dict = field(default_factory=dict)

    @property
    def version(self) -> Optional[int]:
        return self.catalog.commit_version


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def list_data_files(store, root: str, memo: Optional[dict] = None) -> List[DataFile]:
    """The dataset's data files now, in the stable order, each with its identity.  ``memo`` (a
    dict the caller keeps): when the listing finds the very entries of last time (names, sizes,
    times, inodes or ETags), last time's list is returned again."""
    entries = store.list_files(root, skip_dir=_hidden, keep=is_data_file_name)
    if memo is not None:
        seen = memo.get("listing")
        if seen is not None and seen[0] == entries:
            return list(seen[1])
    out = [
        DataFile(e.rel, e.path, e.size, e.mtime_ns, tuple(parse_partition(e.rel).items()), Identity.of_entry(e))
        for e in entries
    ]
    out.sort(key=lambda f: f.path)
    if memo is not None:
        memo["listing"] = (entries, out)
    return out


def take(store, root: str, cf: CommitFile, counter=None, settle: bool = False, memo: Optional[dict] = None) -> Snapshot:
    """List the data files, then read the catalog.  ``settle`` (writers): files changed within the
    last moments are waited for and listed again, so every identity taken would change with any
    later change of its file.  Files the catalog says an optimize is putting in place or has
    replaced are left out (:mod:`paimon_fast.tables.replaced`).

    The listing and the catalog version belong together: when a commit lands while the files are
    listed, they are listed again (at most :data:`SNAPSHOT_ROUNDS` times, then
    :class:`~paimon_fast.errors.DataFileChangedError`).  Without this, a listing taken before an
    optimize moved its files in or out, paired with a catalog version committed after, could miss
    the new files (hidden old ones, unlisted new ones: rows lost) or keep an old file the catalog
    had stopped recording once it moved away (its rows read beside their replacement).

    ``memo`` (a dict kept by the caller between snapshots): what is built from the listing and
    the catalog's bytes is reused when both are found unchanged, so a snapshot of an unchanged
    dataset costs a listing and a read of the catalog, not their parsing (the first snapshot
    after a commit lists twice: the version the memo holds is the one known to be current before
    its first listing).  The snapshot is the one a fresh take would give: the same entries, the
    same catalog version and bytes (its ``derived`` starts empty: global index listings are read
    again)."""
    waited = 0.0
    if settle:
        memo = None
    changed = 0
    while changed < SNAPSHOT_ROUNDS:
        # the version current before this listing: the one a snapshot read last (then current,
        # and versions only grow), else probed
        seen = memo.get("catalog") if memo is not None else None
        before = seen[0] if seen is not None else cf.current_version()
        t0 = time.time_ns()
        files = list_data_files(store, root, memo)
        step("snapshot.listed")
        late = unsettled((f.identity for f in files), t0) if settle else 0
        if late:
            w0 = time.monotonic()
            if wait_settled(late, waited):
                waited += time.monotonic() - w0
                continue
        cat = read(cf, counter, memo)
        if cat.commit_version != before:
            changed += 1
            continue  # committed while the files were listed: list them again
        hide = hidden_filter(cat)
        if hide is not None:
            files = [f for f in files if not hide(f)]
        return Snapshot(files, cat, t0, settled=settle and not late)
    raise DataFileChangedError(
        f"the catalog of {store.uri(root)} changed during each of {SNAPSHOT_ROUNDS} listings of its data files "
        "(other writers commit without pause): no snapshot could be taken; run the operation again"
    )
