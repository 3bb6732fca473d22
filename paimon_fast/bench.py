"""``paimon-fast bench``: run the benchmark suite and write docs/benchmarks.md with plots.

    paimon-fast bench --quick              # the quick subset, under 3 minutes on 2 cores
    paimon-fast bench bloom scaling        # named parts (see benchmarks/report.py)

The suite lives in ``benchmarks/`` of a source checkout (it is not installed with the
package); this command runs ``benchmarks/report.py`` from the checkout this package
was imported from.
"""

from __future__ import annotations

import os
import sys

from .cli import command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _setup(sp):
    sp.add_argument("parts", nargs="*", help="parts to run (bloom, bitmap, globalindex, scaling, ...); default: all")
    sp.add_argument("--quick", action="store_true", help="the quick subset (under 3 minutes on 2 cores)")
    sp.add_argument("--out", help="report path (default: docs/benchmarks.md of the checkout)")
    sp.add_argument("--json", help="also write the raw results here")


@command("bench", "run the benchmark suite and write docs/benchmarks.md (medians, ratios to anchors, plots)")
def bench_main(args):
    report = os.path.join(ROOT, "benchmarks", "report.py")
    if not os.path.exists(report):
        print(
            f"paimon-fast bench needs a source checkout: {report} not found "
            "(the benchmarks are not installed with the package)",
            file=sys.stderr,
        )
        return 2
    import importlib.util

    spec = importlib.util.spec_from_file_location("_paimon_fast_bench_report", report)
    _report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_report)

    argv = (
        list(args.parts)
        + (["--quick"] if args.quick else [])
        + (["--out", args.out] if args.out else [])
        + (["--json", args.json] if args.json else [])
    )
    return _report.main(argv)


bench_main.setup = _setup
bench_main.examples = """
paimon-fast bench --quick
paimon-fast bench bloom globalindex --out /tmp/report.md
"""
