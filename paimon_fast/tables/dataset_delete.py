"""Row-level deletes of a :class:`~paimon_fast.tables.parquet.ParquetDataset` in this process (a mixin).

:meth:`_DeleteMixin.delete` plans the predicate on a settled snapshot, finds the matching row
positions and commits them as deletion vectors (:mod:`paimon_fast.tables.deletes`), starting over
from a new snapshot up to :data:`WRITE_ATTEMPTS` times.  :class:`_DeleteMixin` is one of the
bases of ``ParquetDataset``; it imports nothing of :mod:`paimon_fast.tables.parquet`."""

from __future__ import annotations

import time
from typing import Dict, Optional

from . import catalog as _catalog
from . import identity as _identity
from .steps import step

WRITE_ATTEMPTS = 5  # a build or delete that cannot be rebased starts over from a new snapshot this often


class _DeleteMixin:
    """ParquetDataset's deletion vectors and its delete in this process."""

    # ------------------------------------------------------------ deletes
    def deletion_vectors(self) -> Dict[str, object]:
        """``{relative path: DeletionVector}`` of the files with deleted rows."""
        from .deletes import load_vectors

        return load_vectors(self._at())

    def delete(self, predicate, *, bitmap64: Optional[bool] = None, _fault: Optional[str] = None):
        """Mark the rows where ``predicate`` holds deleted, in this process (Spark:
        ``paimon_fast.spark.delete``): on a settled snapshot the plan prunes files, the exact filter
        finds row positions (each file read as the version listed), and
        :func:`paimon_fast.tables.deletes.commit_deletions` writes one deletion file and commits the
        catalog, merging with deletes committed meanwhile.  A file changed while it was read, or a
        change that cannot be merged, starts the delete over from a new snapshot (a few times, then
        :class:`~paimon_fast.tables.deletes.DeleteConflictError`).  Returns a
        :class:`~paimon_fast.tables.deletes.DeleteReport`."""
        from .deletes import DeleteConflictError, DeleteReport, commit_deletions, matching_positions

        if predicate is None:
            raise ValueError("delete needs a predicate (use a predicate that is always true to delete all rows)")
        t0 = time.perf_counter()
        last = None
        for _ in range(WRITE_ATTEMPTS):
            view = self.snapshot(settle=True)
            step("delete.snapshot", version=view.snapshot_version)
            plan = view.plan(predicate)
            step("delete.planned")
            rep = DeleteReport(
                files_scanned=len(plan.kept), files_skipped=plan.report.files_skipped, predicate=plan.report.predicate
            )
            try:
                positions = matching_positions(view, plan)
                step("delete.positions")
                rep.seconds = time.perf_counter() - t0
                return commit_deletions(view, positions, bitmap64=bitmap64, report=rep, _fault=_fault)
            except (_identity.DataFileChangedError, _catalog.Rebase) as e:
                last = e  # a file changed under the delete: start over from a new snapshot
        raise DeleteConflictError(f"the delete could not complete: data files kept changing under it ({last})")
