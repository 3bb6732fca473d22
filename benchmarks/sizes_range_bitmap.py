"""File sizes of range-bitmap, bsi and bitmap V2 on the benchmark data, and
the peak memory of a range-bitmap build -- all measured with our real writers
(bytes identical to Java's, so these are Java's sizes too).

    PYTHONPATH=$PWD python benchmarks/sizes_range_bitmap.py              # 1e6 and 1e7 rows
    PYTHONPATH=$PWD python benchmarks/sizes_range_bitmap.py --rows 1000000
    PYTHONPATH=$PWD python benchmarks/sizes_range_bitmap.py --peak 10000000 int3000

Data as ``bench_range_bitmap.py`` (INT with 10% nulls uniform in [0, bound),
DOUBLE uniform in [0, 1)).  ``--peak`` runs one build in a fresh process and
prints its peak RSS growth (VmHWM, reset after making the data, minus the RSS then)
and the tracemalloc peak of a second build.
"""

import argparse
import os
import resource
import subprocess
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import paimon_fast as pf  # noqa: E402
from bench_range_bitmap import SHAPES, make  # noqa: E402


def build(index_type, t, arr):
    w = pf.fileindex.writer(index_type, t, {})
    w.write_batch(arr)
    return w.finish()


def _rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _hwm_mib():
    """Peak RSS of this process (VmHWM; ru_maxrss would carry the parent's peak over exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak(rows, shape):
    t, arr, _ = make(shape, rows)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak to the current RSS
    except OSError:
        pass
    before = _rss_mib()
    t0 = time.perf_counter()
    data = build("range-bitmap", t, arr)
    dt = time.perf_counter() - t0
    max_rss = _hwm_mib()
    del data
    tracemalloc.start()
    build("range-bitmap", t, arr)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    input_mib = sum(b.size for b in arr.buffers() if b is not None) / 2**20
    print(
        f"range-bitmap build {shape} rows={rows}: {dt * 1e3:.0f} ms, peak RSS growth {max_rss - before:.0f} MiB, "
        f"tracemalloc peak {traced / 2**20:.0f} MiB (input {input_mib:.0f} MiB)"
    )


def sizes(rows):
    print(f"rows={rows:,}  (MiB; ratio = size / bitmap V2)")
    print("| data | range-bitmap | bsi | bitmap V2 | range-bitmap / V2 | bsi / V2 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for shape in SHAPES:
        t, arr, _ = make(shape, rows)
        rb = len(build("range-bitmap", t, arr))
        bs = len(build("bsi", t, arr)) if t != "DOUBLE" else None  # bsi has no floating types
        v2 = len(build("bitmap", t, arr))
        mib = lambda b: f"{b / 2**20:.2f}" if b is not None else "n/a (no DOUBLE)"  # noqa: E731
        ratio = lambda b: f"{b / v2:.3f}" if b is not None else "-"  # noqa: E731
        print(f"| {shape} | {mib(rb)} | {mib(bs)} | {mib(v2)} | {ratio(rb)} | {ratio(bs)} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, action="append")
    ap.add_argument("--peak", nargs=2, metavar=("ROWS", "SHAPE"))
    a = ap.parse_args()
    if a.peak:
        peak(int(a.peak[0]), a.peak[1])
        return
    for rows in a.rows or [1_000_000, 10_000_000]:
        sizes(rows)
    for shape in SHAPES:  # each peak in a fresh process
        subprocess.run([sys.executable, __file__, "--peak", "10000000", shape], check=True)


if __name__ == "__main__":
    main()
