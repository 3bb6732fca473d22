"""The exchange directory of a sorted global index build on Spark: the executors' sorted runs of a
build in progress (or of a killed one), shared by the dataset's and the Paimon table's builds."""

from __future__ import annotations

import os

RUNS_PREFIX = ".runs-"  # the exchange directory of a build in progress (or killed)


def drop_runs(store, out_dir, runs=None) -> None:
    """Remove the exchange directory ``runs`` (default: every one under ``out_dir``)."""
    if store.local:
        import shutil

        names = [os.path.basename(runs)] if runs else os.listdir(out_dir)
        for n in (n for n in names if n.startswith(RUNS_PREFIX)):
            shutil.rmtree(os.path.join(out_dir, n), ignore_errors=True)
        return
    prefix = store.basename(runs) + "/" if runs else RUNS_PREFIX
    for e in store.list_files(out_dir):
        if e.rel.startswith(prefix):
            store.delete(e.path)
