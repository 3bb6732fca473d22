"""What the modules of the dataset's optimize share (:mod:`paimon_fast.tables.optimize`): the
catalog's keys of its runs, its conflict error, the helpers of its file moves and of runs left
behind, and :class:`NewFile` (a file the run wrote)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence

import pyarrow as pa

from ..io.fs import CommitConflictError

PENDING = "pending"
REPLACED = "replaced"


class OptimizeConflictError(CommitConflictError):
    """An optimize could not commit: another commit deleted rows of, or replaced, files it
    rewrote, or another optimize is rewriting them.  Nothing of it is visible; run it again."""


# ---------------------------------------------------------------- helpers


def _now() -> int:
    return time.time_ns()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True


def _abandoned(run: Mapping, min_age: float) -> bool:
    """Is the pending run ``run`` no longer being carried out (module docstring)?"""
    if run.get("state") == "aborted":
        return True
    if run.get("host") == socket.gethostname() and isinstance(run.get("pid"), int):
        if run["pid"] != os.getpid() and not _alive(run["pid"]):
            return True
    return _now() - int(run.get("started_ns", 0)) >= min_age * 1e9


def clustered_as(entry: Optional[Mapping], cluster_by: Sequence[str], strategy: str) -> bool:
    """Was the file of this catalog entry written clustered by these columns and strategy?"""
    c = (entry or {}).get("clustered")
    return isinstance(c, dict) and c.get("by") == list(cluster_by) and c.get("strategy") == strategy


def rel_join(store, root: str, rel: str) -> str:
    return store.join(root, *rel.split("/"))


def _move(store, src: str, dst: str) -> None:
    """Move a file: a rename locally, the filesystem's move elsewhere (a copy then a delete on
    object stores)."""
    store.makedirs(store.dirname(dst))
    if store.local:
        os.replace(src, dst)
    else:
        store.fs.move(src, dst)


def remove_tree(store, path: str) -> None:
    """Remove what is left of a run's directory (empty directories locally)."""
    if store.local:
        for d, dirs, files in os.walk(path, topdown=False):
            for f in files:
                try:
                    os.unlink(os.path.join(d, f))
                except OSError:
                    pass
            try:
                os.rmdir(d)
            except OSError:
                pass
        return
    for e in store.list_files(path):
        store.delete(e.path)


@dataclass
class NewFile:
    rel: str
    staged: str
    rows: int
    size: int
    entry: dict  # rows, file_index, stats, clustered, witness
    columns: Dict[str, pa.ChunkedArray]  # the global index columns' values, for their rebuild
