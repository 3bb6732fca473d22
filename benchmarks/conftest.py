"""Shared benchmark plumbing.

Name benchmarks ``..._kernel`` / ``..._twin`` (or ``..._java``-style labels via
``benchmark.extra_info["impl"]``) inside one ``@pytest.mark.benchmark(group=...)``:
at the end of the run a table prints, per group, each implementation's median
and its ratio to the kernel's.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _keys import bench_key  # noqa: E402

_MEDIANS = {}


def pytest_configure(config):
    # anchors timed outside pytest-benchmark (Java) report their medians here
    config._pf_record_external = lambda group, params, impl, median: \
        _MEDIANS.setdefault((group, params), {}).__setitem__(impl, median)


def pytest_runtest_makereport(item, call):
    bench = getattr(item, "funcargs", {}).get("benchmark")
    if call.when == "call" and bench is not None and getattr(bench, "stats", None):
        cs = getattr(item, "callspec", None)
        group, params, impl = bench_key(item.name, bench.group, cs.params if cs else {}, cs.id if cs else "",
                                        bench.extra_info)
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
