"""The optimize's catalog commits (:mod:`paimon_fast.tables.optimize`, steps 3 and 6): the intent
that records the run as pending, the identities of the new files once settled, the files after the
commit, and the swap of the old files' entries for the new ones."""

from __future__ import annotations

import os
import socket
import time
from typing import Dict

from . import catalog as _catalog
from . import identity as _identity
from .optimize_common import PENDING, REPLACED, OptimizeConflictError, _now, rel_join
from .replaced import OPT_KEY

# ---------------------------------------------------------------- commits


def _commit_intent(ds, view, oid, new_rels, old_idents, cluster_by, strategy) -> None:
    run = {
        "new": sorted(new_rels),
        "old": old_idents,
        "started_ns": _now(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "state": "running",
        "by": list(cluster_by),
        "strategy": strategy,
    }

    def change(c, attempt):
        opt = dict(c.get(OPT_KEY) or {})
        pend = dict(opt.get(PENDING) or {})
        for other, r in pend.items():
            both = set(r.get("old") or ()) & set(old_idents)
            if both:
                raise OptimizeConflictError(
                    f"another optimize ({other}) is rewriting {sorted(both)[0]}; nothing of this one is visible"
                )
        pend[oid] = run
        opt[PENDING] = pend
        return dict(c, **{OPT_KEY: opt})

    _catalog.commit(ds.catalog, view.read_catalog(), change, counter=ds.io, what="the optimize's intent")


def _settled_identities(store, root, rels) -> Dict[str, _identity.Identity]:
    """The identities of the files just put in place, once settled (a change within the clock's
    tick after a rename could keep the change time)."""
    if store.local:
        time.sleep(_identity.SETTLE_NS / 1e9 + 0.002)
    out = {}
    for rel in rels:
        ident = _identity.current(store, rel_join(store, root, rel))
        if ident is None:
            raise OptimizeConflictError(f"new data file {rel} disappeared before the commit")
        out[rel] = ident
    return out


def _files_after(view, old, new, idents) -> list:
    """``[(path, identity, rows)]`` of the dataset after the commit, in the stable order."""
    gone = {f.path for f in old}
    counts = view.row_counts()
    out = [(f.path, f.identity, counts[f.path]) for f in view.files() if f.path not in gone]
    out += [(n.rel, idents[n.rel], n.rows) for n in new]
    return sorted(out, key=lambda x: x[0])


def _commit_swap(ds, view, oid, new, idents, old, base_entries, _fault):
    replaced_now = {f.path: f.identity.to_json() for f in old}

    def change(c, attempt):
        opt = dict(c.get(OPT_KEY) or {})
        pend = dict(opt.get(PENDING) or {})
        run = pend.get(oid)
        if run is None or run.get("state") != "running":
            raise OptimizeConflictError(
                f"the optimize {oid} was undone by another run while it wrote (it took longer than the grace "
                "period, or its process was thought gone); nothing of it is visible"
            )
        files = dict(c["files"])
        for f in old:
            e, b = files.get(f.path), base_entries.get(f.path)
            if e != b and (e or {}).get("deletion_vector") != (b or {}).get("deletion_vector"):
                raise OptimizeConflictError(
                    f"rows of {f.path} were deleted while the optimize ran: nothing of the optimize is visible "
                    "(the deletes are); run it again"
                )
            files.pop(f.path, None)
        for n in new:
            e = dict(n.entry)
            witness = e.pop("witness", None)
            e.update(idents[n.rel].to_json())
            if witness:
                e["witness"] = witness
            files[n.rel] = e
        del pend[oid]
        if pend:
            opt[PENDING] = pend
        else:
            opt.pop(PENDING, None)
        rep = dict(opt.get(REPLACED) or {})
        for p in list(rep):  # earlier runs' replaced files already moved away are forgotten
            if p not in replaced_now and _identity.current(ds.store, rel_join(ds.store, ds.root, p)) is None:
                del rep[p]
        rep.update(replaced_now)
        opt[REPLACED] = rep
        return dict(c, files=files, **{OPT_KEY: opt})

    return _catalog.commit(
        ds.catalog, _catalog.read(ds.catalog, ds.io), change, counter=ds.io, what="the optimize's commit", _fault=_fault
    )
