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

_MEDIANS = {}


def pytest_runtest_makereport(item, call):
    bench = getattr(item, "funcargs", {}).get("benchmark")
    if call.when == "call" and bench is not None and getattr(bench, "stats", None):
        group = bench.group or getattr(item, "originalname", item.name)
        impl = bench.extra_info.get("impl") or item.name.rsplit("_", 1)[-1].split("[")[0]
        params = item.callspec.id if hasattr(item, "callspec") else ""
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
