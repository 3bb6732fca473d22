"""Shared benchmark plumbing.

Name benchmarks ``..._kernel`` / ``..._twin`` (or ``..._java``-style labels via
``benchmark.extra_info["impl"]``) inside one ``@pytest.mark.benchmark(group=...)``:
at the end of the run a table prints, per group, each implementation's median
and its ratio to the kernel's.
"""

import os
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.append(ROOT)  # tests.support
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _keys import bench_key  # noqa: E402

_MEDIANS = {}


def speed_probe_us() -> float:
    """The machine's speed now: the fastest of three runs of a fixed 2,000-step pure-Python
    loop, in microseconds.  Shared VMs move between spells of different speed (on the machine
    these benchmarks were written on, about 55 us in one and 105 us in the other, switching
    within a second); the report sets each benchmark's figure beside this."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        s = 0
        for i in range(2000):
            s += i
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


@pytest.fixture(autouse=True)
def _speed_probe(request):
    """Every benchmark records ``extra_info["speed_probe_us"] = [before, after]``, taken in its
    own process (the spells are not the same on every core)."""
    if "benchmark" not in request.fixturenames:
        yield
        return
    bench = request.getfixturevalue("benchmark")  # set up first, so torn down after this
    before = speed_probe_us()
    yield
    bench.extra_info["speed_probe_us"] = [round(before, 1), round(speed_probe_us(), 1)]


def pytest_configure(config):
    # anchors timed outside pytest-benchmark (Java) report their medians here
    config._pf_record_external = lambda group, params, impl, median: _MEDIANS.setdefault(
        (group, params), {}
    ).__setitem__(impl, median)


def pytest_runtest_makereport(item, call):
    bench = getattr(item, "funcargs", {}).get("benchmark")
    if call.when == "call" and bench is not None and getattr(bench, "stats", None):
        cs = getattr(item, "callspec", None)
        group, params, impl = bench_key(
            item.name, bench.group, cs.params if cs else {}, cs.id if cs else "", bench.extra_info
        )
        _MEDIANS.setdefault((group, params), {})[impl] = bench.stats.stats.median


def pytest_terminal_summary(terminalreporter):
    if not _MEDIANS:
        return
    tr = terminalreporter
    tr.section("medians and ratios (x = how many times slower than the kernel)")
    for (group, params), impls in sorted(_MEDIANS.items()):
        base = impls.get("kernel")
        parts = []
        for impl, med in sorted(impls.items(), key=lambda kv: kv[1]):
            ratio = f" ({med / base:.1f}x)" if base and impl != "kernel" else ""
            parts.append(f"{impl} {_fmt(med)}{ratio}")
        tr.write_line(f"{group}{'[' + params + ']' if params else ''}: " + ", ".join(parts))


def _fmt(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"
