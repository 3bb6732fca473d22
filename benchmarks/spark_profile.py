"""Where a Spark build's time goes: Python profiles of the executor functions, and the
JVM's per-stage figures, for the build benchmarks (``bench_spark.py``,
``bench_globalindex.py``, ``bench_paimon_globalindex.py``, ``bench_hudi.py``).

    with profile_executors(spark, "/tmp/prof") as prof:
        pfs.build(spark, data, options)
    print(prof.report())

Inside the block every function handed to ``DataFrame.mapInArrow`` or
``RDD.mapPartitions`` runs under ``cProfile`` on the executor; each task writes
``<dir>/<pid>-<n>.prof`` and its wall time.  ``report()`` merges the task profiles
(top entries by own time and by cumulative time) and lists the stages the block ran
with Spark's own task metrics: executor run / CPU / GC time, the time spent
deserialising results, input, shuffle and result bytes.  Nothing in ``paimon_fast``
is changed: the patch is on the driver's pyspark classes and undone on exit.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import pstats
import shutil
import sys


def _wrap(fn, out_dir):
    """``fn`` (an iterator -> iterator function) run under cProfile, one file per call."""

    def profiled(it):
        import cProfile
        import time

        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        try:
            yield from fn(it)
        finally:
            prof.disable()
            os.makedirs(out_dir, exist_ok=True)
            name = os.path.join(out_dir, f"{os.getpid()}-{next(_COUNTER)}-{time.time_ns()}")
            prof.dump_stats(name + ".prof")
            with open(name + ".json", "w") as f:
                json.dump({"wall": time.perf_counter() - t0}, f)

    return profiled


_COUNTER = iter(range(1 << 62))


def stages(spark, first_stage: int = 0):
    """Per-stage task metrics of the stages with id >= ``first_stage`` (completed ones)."""
    sc = spark.sparkContext
    store = sc._jsc.sc().statusStore()
    out = []
    for sid in range(first_stage, _next_stage(spark)):
        try:
            s = store.lastStageAttempt(sid)
        except Exception:  # noqa: BLE001 - a skipped or unknown stage
            continue
        sub, done = s.submissionTime(), s.completionTime()
        wall = (done.get().getTime() - sub.get().getTime()) / 1e3 if sub.isDefined() and done.isDefined() else None
        out.append(
            {
                "stage": sid,
                "name": s.name().split(" at ")[0],
                "tasks": s.numTasks(),
                "wall_s": wall,
                "run_s": s.executorRunTime() / 1e3,
                "cpu_s": s.executorCpuTime() / 1e9,
                "gc_s": s.jvmGcTime() / 1e3,
                "deser_s": s.executorDeserializeTime() / 1e3,
                "result_ser_s": s.resultSerializationTime() / 1e3,
                "input_mb": s.inputBytes() / 1e6,
                "shuffle_write_mb": s.shuffleWriteBytes() / 1e6,
                "shuffle_read_mb": s.shuffleReadBytes() / 1e6,
                "shuffle_write_s": s.shuffleWriteTime() / 1e9,
                "spill_mb": s.diskBytesSpilled() / 1e6,
                "result_mb": s.resultSize() / 1e6 if hasattr(s, "resultSize") else None,
            }
        )
    return out


def _next_stage(spark) -> int:
    """One more than the highest stage id Spark has used so far (0 if none)."""
    tracker = spark.sparkContext.statusTracker()
    ids = list(tracker.getActiveStageIds())
    for jid in tracker.getJobIdsForGroup(None):
        info = tracker.getJobInfo(jid)
        if info is not None:
            ids += list(info.stageIds)
    return max(ids, default=-1) + 1


class Profile:
    def __init__(self, spark, out_dir):
        self.spark, self.dir = spark, out_dir
        self.first_stage = _next_stage(spark)
        self.stages = []

    def task_walls(self):
        walls = []
        for p in glob.glob(os.path.join(self.dir, "*.json")):
            with open(p) as f:
                walls.append(json.load(f)["wall"])
        return walls

    def stats(self):
        files = sorted(glob.glob(os.path.join(self.dir, "*.prof")))
        if not files:
            return None
        st = pstats.Stats(files[0], stream=io.StringIO())
        for p in files[1:]:
            st.add(p)
        return st

    def top(self, n=15, sort="tottime"):
        """The ``n`` top entries of the merged executor profile, as text."""
        st = self.stats()
        if st is None:
            return "(no executor profile written)"
        buf = io.StringIO()
        st.stream = buf
        st.strip_dirs().sort_stats(sort).print_stats(n)
        lines = buf.getvalue().splitlines()
        start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
        return "\n".join(ln for ln in lines[start:] if ln.strip())

    def report(self, n=15) -> str:
        walls = self.task_walls()
        out = [f"executor tasks profiled: {len(walls)}, summed task wall {sum(walls):.2f} s"]
        out.append(
            "stages: "
            + ", ".join(
                f"{k}"
                for k in (
                    "stage",
                    "name",
                    "tasks",
                    "wall_s",
                    "run_s",
                    "cpu_s",
                    "gc_s",
                    "input_mb",
                    "shuffle_write_mb",
                    "shuffle_read_mb",
                    "spill_mb",
                )
            )
        )
        for s in self.stages:
            out.append(
                "  "
                + ", ".join(
                    f"{s[k]:.2f}" if isinstance(s[k], float) else str(s[k])
                    for k in (
                        "stage",
                        "name",
                        "tasks",
                        "wall_s",
                        "run_s",
                        "cpu_s",
                        "gc_s",
                        "input_mb",
                        "shuffle_write_mb",
                        "shuffle_read_mb",
                        "spill_mb",
                    )
                )
            )
        out.append(f"top {n} by own time:")
        out.append(self.top(n, "tottime"))
        out.append(f"top {n} by cumulative time:")
        out.append(self.top(n, "cumulative"))
        return "\n".join(out)


@contextlib.contextmanager
def profile_executors(spark, out_dir):
    """Profile every ``mapInArrow`` / ``mapPartitions`` function started inside the block
    (see the module docstring); yields a :class:`Profile` whose stages are filled on exit."""
    from pyspark import cloudpickle
    from pyspark import RDD
    from pyspark.sql.classic.dataframe import DataFrame

    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    prof = Profile(spark, out_dir)
    this = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(this)  # the workers need not find benchmarks/ on their path
    orig_arrow, orig_parts = DataFrame.mapInArrow, RDD.mapPartitions

    def map_in_arrow(self, func, schema, *a, **kw):
        return orig_arrow(self, _wrap(func, out_dir), schema, *a, **kw)

    def map_partitions(self, f, *a, **kw):
        return orig_parts(self, _wrap(f, out_dir), *a, **kw)

    DataFrame.mapInArrow, RDD.mapPartitions = map_in_arrow, map_partitions
    try:
        yield prof
    finally:
        DataFrame.mapInArrow, RDD.mapPartitions = orig_arrow, orig_parts
        cloudpickle.unregister_pickle_by_value(this)
        prof.stages = stages(spark, prof.first_stage)


def maybe_profile(spark, name, fn):
    """With ``PF_BENCH_PROFILE=<dir>`` set: run ``fn()`` once more under
    :func:`profile_executors` and write the report to ``<dir>/<name>.txt`` (the timed
    rounds are never profiled).  Returns the report text, or None when not asked."""
    out = os.environ.get("PF_BENCH_PROFILE")
    if not out:
        return None
    with profile_executors(spark, os.path.join(out, name + ".prof.d")) as prof:
        fn()
    text = f"{name} (load {' '.join(open('/proc/loadavg').read().split()[:3])})\n{prof.report()}\n"
    with open(os.path.join(out, name + ".txt"), "w") as f:
        f.write(text)
    return text
