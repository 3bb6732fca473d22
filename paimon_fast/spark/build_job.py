"""Index builds of a Parquet dataset on Spark: the file indexes (:func:`build`, one task per
data file) and the bitmap global index of a column (:func:`build_global_index`)."""

from __future__ import annotations

import threading
import time
from typing import Callable, Mapping, Optional

from ..tables.parquet import BuildReport, ParquetDataset
from ..tables.steps import step


def _progress_thread(spark, total: int, report: Callable[[int, int], None], stop: threading.Event):
    tracker = spark.sparkContext.statusTracker()

    def loop():
        done_before = 0
        while not stop.wait(0.5):
            done = done_before
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done = max(done, info.numCompletedTasks)
            done_before = done
            report(min(done, total), total)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def build(
    spark,
    path: str,
    options: Mapping,
    *,
    force: bool = False,
    progress: Optional[Callable[[int, int], None]] = None,
    _fault: Optional[dict] = None,
    filesystem=None,
) -> BuildReport:
    """Build the file indexes of the Parquet dataset at ``path`` on Spark's executors.

    ``options`` are Paimon table options (``file-index.bloom-filter.columns``,
    ``file-index.bloom-filter.<col>.fpp`` / ``.items``, ``file-index.bitmap.columns``,
    ``file-index.in-manifest-threshold``...).  Files whose index is current are
    skipped (``force=True`` rebuilds all).  ``progress(done_files, total_files)``
    is called about twice a second while the job runs.  Returns a
    :class:`~paimon_fast.tables.parquet.BuildReport`.

    The driver takes a settled snapshot (each file's identity); an executor reads its file as that
    version and checks its identity again after the read, so a file changed while the job ran is
    not indexed (``report.changed``); the commit rebases onto concurrent commits
    (:meth:`ParquetDataset.commit_build <paimon_fast.tables.parquet.ParquetDataset.commit_build>`).
    """
    t0 = time.perf_counter()
    ds = ParquetDataset(path, filesystem)
    ds.clean_temp_files()  # only those older than gc's grace period: a younger one may be a running writer's
    ds.snapshot(settle=True).migrate_layout()  # containers of datasets indexed before the _file_index/ layout
    ds = ds.snapshot(settle=True)  # the files' identities the executors read against
    step("build.snapshot", version=ds.snapshot_version)
    spec = ds.index_spec(options)
    todo, current = ds.files_to_build(spec, force)
    rep = BuildReport(files_total=len(todo) + len(current), files_current=len(current))
    results = []
    row_type = ds.row_type()
    cols = [c for c in spec.columns if c in row_type]
    if todo:
        from . import remote

        # one task per file, largest first, each reading its file with pyarrow on the executor
        todo = sorted(todo, key=lambda f: -f.size)
        stop = threading.Event()
        th = _progress_thread(spark, len(todo), progress, stop) if progress else None
        try:
            results = remote.build_files(
                spark,
                ds,
                todo,
                row_type,
                {c: spec.columns[c] for c in cols},
                spec.threshold,
                spec.digest,
                spec.types,
                _fault,
                parallelism=len(todo),
            )
        finally:
            stop.set()
            if th is not None:
                th.join()
        if progress:
            progress(len(todo), len(todo))
        missing = {f.path for f in todo} - {r["path"] for r in results}
        if missing:
            raise RuntimeError(f"the build job returned no index for {sorted(missing)[:5]}")
    rep.changed = sorted(r["path"] for r in results if r["file_index"] is None)
    results = [r for r in results if r["file_index"] is not None]
    rep.index_bytes = ds.commit_build(spec, results)
    rep.catalog_version = ds._last_commit
    rep.files_built = len(results)
    rep.rows = sum(int(r["rows"]) for r in results)
    rep.inline = sum("inline" in r["file_index"] for r in results)
    rep.built = sorted(r["path"] for r in results)
    rep.seconds = time.perf_counter() - t0
    return rep


def build_global_index(
    spark, path: str, column: str, options: Optional[Mapping] = None, dtype: Optional[str] = None, filesystem=None
):
    """Build the bitmap global index of ``column`` over the dataset at ``path`` on Spark
    (:func:`paimon_fast.tables.globalindex_spark.build_global_index`; options
    ``bitmap-index.*``, ``sorted-index.records-per-range``,
    ``sorted-index.build.max-parallelism``).  Returns the listing written to
    ``<path>/_global_index/<column>/index.json``.  :func:`read`,
    :meth:`ParquetDataset.scan <paimon_fast.tables.parquet.ParquetDataset.scan>` and the Data
    Source then prune with it while it is current (no data file added, removed or changed
    since the build); a stale index is ignored."""
    from ..tables.globalindex_spark import build_global_index as _build

    return _build(spark, path, column, options, dtype, filesystem)
