"""The recovery of killed optimizes (:mod:`paimon_fast.tables.optimize`, "A killed optimize"): undo
the pending runs whose process is gone, move away the files committed runs replaced, forget the
replaced files that have left their place."""

from __future__ import annotations

import time
from typing import List, Mapping, Optional

from ..io.fs import CommitConflictError
from . import catalog as _catalog
from . import identity as _identity
from .optimize_common import PENDING, REPLACED, _abandoned, _move, rel_join, remove_tree
from .replaced import OPT_DIR, OPT_KEY, is_replaced, retired_rel

# ---------------------------------------------------------------- recovery


def recover(ds, min_age: Optional[float] = None) -> List[str]:
    """Undo pending runs whose process is gone (module docstring), finish moving away the files of
    committed runs; the runs handled, as text."""
    min_age = _catalog.GRACE_SECONDS if min_age is None else float(min_age)
    out = []
    cat = _catalog.read(ds.catalog, ds.io)
    opt = cat.get(OPT_KEY) or {}
    for oid, run in sorted((opt.get(PENDING) or {}).items()):
        if isinstance(run, dict) and _abandoned(run, min_age):
            _roll_back(ds, oid, run)
            out.append(f"undid the optimize {oid} (started {time.ctime(int(run.get('started_ns', 0)) / 1e9)})")
    moved = _retire(ds, (opt.get(REPLACED) or {}))
    if moved:
        out.append(f"moved away {moved} file(s) an earlier optimize replaced")
    if opt.get(REPLACED):
        _forget_replaced(ds)
    return out


def _roll_back(ds, oid: str, run: Mapping) -> None:
    """Undo the pending run ``oid``: mark it aborted (its commit then fails), remove its files,
    then its record."""
    store, root = ds.store, ds.root

    def mark(c, attempt):
        pend = dict((c.get(OPT_KEY) or {}).get(PENDING) or {})
        if oid not in pend:
            raise _catalog.Rebase("gone")
        if pend[oid].get("state") == "aborted":
            raise _catalog.Rebase("already marked")
        pend[oid] = dict(pend[oid], state="aborted")
        return dict(c, **{OPT_KEY: dict(c.get(OPT_KEY) or {}, **{PENDING: pend})})

    base = _catalog.read(ds.catalog, ds.io)
    try:
        _catalog.commit(ds.catalog, base, mark, counter=ds.io, what="marking an optimize aborted")
    except _catalog.Rebase as e:
        if str(e) == "gone":
            return  # committed or undone by another run meanwhile
    for rel in run.get("new") or ():
        store.delete(rel_join(store, root, rel))
    remove_tree(store, rel_join(store, root, f"{OPT_DIR}/{oid}"))

    def drop(c, attempt):
        pend = dict((c.get(OPT_KEY) or {}).get(PENDING) or {})
        pend.pop(oid, None)
        opt = dict(c.get(OPT_KEY) or {}, **{PENDING: pend})
        if not pend:
            del opt[PENDING]
        return dict(c, **{OPT_KEY: opt})

    _catalog.commit(ds.catalog, _catalog.read(ds.catalog, ds.io), drop, counter=ds.io, what="undoing an optimize")


def _retire(ds, replaced: Mapping) -> int:
    """Move the replaced files still at their place (with the identity recorded) to
    ``_optimize/retired/``; the files moved."""
    store, root = ds.store, ds.root
    n = 0
    for rel, ident in sorted(replaced.items()):
        path = rel_join(store, root, rel)
        now = _identity.current(store, path)
        if now is None or not is_replaced(now, ident):
            continue
        listed = _identity.Identity(
            int(ident["size"]), int(ident["mtime_ns"]), ident.get("ctime_ns"), ident.get("ino"), ident.get("etag")
        )
        try:
            _move(store, path, rel_join(store, root, retired_rel(rel, listed)))
            n += 1
        except FileNotFoundError:
            pass  # moved by another run meanwhile
    return n


def _forget_replaced(ds) -> None:
    """Drop the catalog's records of replaced files that have left their place (the catalog is
    then one earlier versions of paimon-fast read again); nothing to drop: no commit."""
    store, root = ds.store, ds.root

    def gone(rel, ident) -> bool:
        now = _identity.current(store, rel_join(store, root, rel))
        return now is None or not is_replaced(now, ident)

    base = _catalog.read(ds.catalog, ds.io)
    if not any(gone(r, i) for r, i in ((base.get(OPT_KEY) or {}).get(REPLACED) or {}).items()):
        return

    def change(c, attempt):
        opt = dict(c.get(OPT_KEY) or {})
        rep = {r: i for r, i in (opt.get(REPLACED) or {}).items() if not gone(r, i)}
        if rep:
            opt[REPLACED] = rep
        else:
            opt.pop(REPLACED, None)
        out = dict(c)
        if opt:
            out[OPT_KEY] = opt
        else:
            out.pop(OPT_KEY, None)
        return out

    try:
        _catalog.commit(ds.catalog, base, change, counter=ds.io, what="forgetting replaced files")
    except CommitConflictError:
        pass  # others kept committing: the next optimize forgets them
