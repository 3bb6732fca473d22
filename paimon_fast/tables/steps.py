"""Named steps of the dataset's writers, where tests stop, interleave or kill them.

Builds, deletes, optimizes, catalog commits, ``gc`` and every snapshot (``snapshot.listed``) call
:func:`step` (``build.snapshot``, ``build.file.read``, ..., ``catalog.commit``; :data:`STEPS` lists
them).  Nothing happens there unless a test installed a hook (:func:`hook`): it may run another
operation to completion at that point (a forced interleaving, deterministic without threads),
raise, or kill the process.  The steps are what the docs' guarantees are tested against
(tests/tables/test_dataset_trust.py).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Optional

STEPS = (
    "build.snapshot",  # the build's listing and catalog version are taken
    "build.file.read",  # before a data file is read (ctx: path)
    "build.file.indexed",  # its rows are read and indexed, before its identity is checked again
    "build.file.stored",  # its index container is written (not yet named by any catalog)
    "build.commit",  # every file is done, before the catalog commit
    "build.committed",  # the new catalog version exists
    "delete.snapshot",
    "delete.planned",  # the plan is made (files and rows the indexes keep)
    "delete.positions",  # the matching rows' positions are found
    "delete.file_written",  # the new deletion file is written (not yet named by any catalog)
    "delete.commit",
    "delete.committed",
    "optimize.snapshot",
    "optimize.partition",  # before a partition's rows are read (ctx: partition)
    "optimize.file.written",  # a new file and its index are written, staged (ctx: path)
    "optimize.intent",  # every file is written, before the catalog records the run as pending
    "optimize.intended",
    "optimize.published",  # the new files are in place (hidden from our readers by the pending run)
    "optimize.global_index",  # a global index's listing over the new files is committed (ctx: column)
    "optimize.commit",
    "optimize.committed",  # the catalog names the new files, the old ones are replaced
    "optimize.retired",  # the old files are moved out of the directory's listing
    "snapshot.listed",  # a snapshot's data files are listed, before its catalog version is read (readers too)
    "catalog.commit",  # right before a catalog version is created (ctx: version, attempt)
    "gc.collected",  # gc decided what to remove, before removing it
)

_HOOK: Optional[Callable[[str, dict], None]] = None


def step(name: str, **ctx) -> None:
    """Mark that the running operation reached step ``name`` (a no-op unless a hook is set)."""
    h = _HOOK
    if h is not None:
        h(name, ctx)


@contextlib.contextmanager
def hook(fn: Callable[[str, dict], None]):
    """Call ``fn(step name, context)`` at every step inside the ``with`` block (tests)."""
    global _HOOK
    old = _HOOK
    _HOOK = fn
    try:
        yield
    finally:
        _HOOK = old
