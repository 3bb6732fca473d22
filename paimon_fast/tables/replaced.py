"""Data files an optimize adds or replaces, as the catalog tells every reader of ours.

A dataset's files are the ``*.parquet`` files its directory lists; an optimize
(:mod:`paimon_fast.tables.optimize`) replaces some by others in one catalog commit, and the catalog
says which listed files belong to the dataset meanwhile:

* ``optimize.pending[<run id>].new``: files a running optimize is putting in place.  Not part of
  the dataset until its commit (an operation that lists them leaves them out).
* ``optimize.replaced[<path>]``: the identity of a file an optimize replaced.  A listed file at
  that path with that identity is left out: it waits to be moved away, or a reader listed it just
  before it was.  Locally the change time is not compared: the move is a rename, which sets the
  file's change time before the name leaves its directory, so a listing that stats the name
  during the move sees the file there with a new change time (the same inode, size and
  modification time).  Compared in full, such a file was kept as a file of the dataset that no
  catalog entry describes: read beside its replacement (every row twice), or not found where it
  was moved.  The move itself and the record's removal judge the file at its place the same way
  (:func:`is_replaced`): a chmod between the commit and the move changes no byte.

After its commit the optimize moves each replaced file to ``_optimize/retired/<path>.<token>``
(:func:`retired_rel`; the token is a digest of the identity the file had when listed), where the
directory's other readers (Spark, pyarrow, DuckDB) no longer see it.  A reader of ours still on an
earlier snapshot finds it there (:func:`locate`: the same inode, size and modification time
locally) until ``gc`` removes it, once no live catalog version names the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Optional

from . import identity as _identity

OPT_DIR = "_optimize"
RETIRED_DIR = "retired"
OPT_KEY = "optimize"


def hidden_filter(cat) -> Optional[Callable[[object], bool]]:
    """``hide(data_file)`` for a catalog version's pending and replaced files (None: nothing to hide)."""
    opt = cat.get(OPT_KEY) if isinstance(cat, dict) else None
    if not isinstance(opt, dict):
        return None
    pending = set()
    for run in (opt.get("pending") or {}).values():
        if isinstance(run, dict):
            pending.update(run.get("new") or ())
    replaced = opt.get("replaced") or {}
    if not pending and not replaced:
        return None

    def hide(f) -> bool:
        if f.path in pending:
            return True
        r = replaced.get(f.path)
        if r is None:
            return False
        if f.identity is None:
            return r.get("size") == f.size and r.get("mtime_ns") == f.mtime_ns
        return is_replaced(f.identity, r)

    return hide


def is_replaced(ident, r) -> bool:
    """Is a file with identity ``ident`` (listed, or found at the path now) the replaced file whose
    identity ``r`` was recorded?  The same version by :func:`~paimon_fast.tables.identity.judge`,
    or locally the same inode, size and modification time with another change time (a rename
    sets it: module docstring; so does a chmod, which changes no byte)."""
    if _identity.judge(ident, r) in (_identity.VERIFIED, _identity.WEAK):
        return True
    return (
        ident.etag is None
        and ident.ino is not None
        and (r.get("ino"), r.get("size"), r.get("mtime_ns")) == (ident.ino, ident.size, ident.mtime_ns)
    )


def token(ident) -> str:
    """A digest of a listed identity (:class:`~paimon_fast.tables.identity.Identity`)."""
    d = ident.to_json() if hasattr(ident, "to_json") else dict(ident)
    d = {k: d[k] for k in ("size", "mtime_ns", "ctime_ns", "ino", "etag") if k in d}
    return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def retired_rel(rel: str, ident) -> str:
    """Where an optimize moves the replaced file ``rel`` listed with identity ``ident``."""
    return f"{OPT_DIR}/{RETIRED_DIR}/{rel}.{token(ident)}"


def locate(store, root: str, f) -> str:
    """Where the listed data file ``f`` is now: its path, or (locally) the place an optimize moved
    it to when it is no longer there and the file there is the one listed."""
    if not store.local or f.identity is None:
        return f.abs_path
    if os.path.exists(f.abs_path):
        return f.abs_path
    moved = store.join(root, *retired_rel(f.path, f.identity).split("/"))
    return moved if _same_file(moved, f.identity) else f.abs_path


def _same_file(path: str, ident) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    # a rename changes the change time, never the inode, size or modification time
    return (st.st_ino, st.st_size, st.st_mtime_ns) == (ident.ino, ident.size, ident.mtime_ns)


def check_read(store, root: str, f, shown: str = "") -> None:
    """After a read of ``f``: what was read is the listed version (moved away by an optimize, it
    is still that version), else :class:`~paimon_fast.errors.DataFileChangedError`."""

    def moved_away() -> bool:  # gone from its place: is the listed version where an optimize moves it?
        return _same_file(store.join(root, *retired_rel(f.path, f.identity).split("/")), f.identity)

    # one look at its place: an optimize may move it away between any two
    _identity.check_unchanged(store, f.abs_path, f.identity, shown or f.path, if_gone=moved_away)
