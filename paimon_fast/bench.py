"""``paimon-fast bench``: run the benchmark suite and write a report (Markdown + PNG plots).

    paimon-fast bench --quick                          # the quick subset, about 2 minutes on 2 cores
    paimon-fast bench bloom scaling                    # named parts (see benchmarks/report.py)
    paimon-fast bench --quick --output docs/benchmarks.md   # refresh the checkout's committed report

The suite lives in ``benchmarks/`` of a source checkout (it is not installed with the
package): the checkout this package was imported from (an editable install), else the one in
the current directory (``pip install ".[bench]"`` run in it).  It runs against the installed
package.  The report goes to a new directory of the system's temporary directory unless
``--output`` names a file; nothing is written into the checkout unless asked.  What it needs
(pytest, pytest-benchmark, matplotlib: the ``bench`` extra) is checked first.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import tempfile

from .cli import command

# the packages the suite itself needs, and the extra that installs them
NEEDS = {"pytest": "pytest", "pytest_benchmark": "pytest-benchmark"}


def _is_checkout(root: str) -> bool:
    report = os.path.join(root, "benchmarks", "report.py")
    project = os.path.join(root, "pyproject.toml")
    if not (os.path.isfile(report) and os.path.isfile(project)):
        return False
    with open(project, encoding="utf-8") as f:
        return 'name = "paimon-fast"' in f.read()


def find_suite(cwd=None):
    """The source checkout holding ``benchmarks/``: the package's own (an editable install),
    else the current directory or one above it; None when there is none."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if _is_checkout(here):
        return here
    d = os.path.abspath(cwd or os.getcwd())
    while True:
        if _is_checkout(d):
            return d
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def default_output() -> str:
    """``<temp dir>/paimon-fast-bench-<UTC time>/benchmarks.md`` (a new directory each run)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    d = tempfile.mkdtemp(prefix=f"paimon-fast-bench-{stamp}-")
    return os.path.join(d, "benchmarks.md")


def _setup(sp):
    sp.add_argument("parts", nargs="*", help="parts to run (bloom, bitmap, globalindex, scaling, ...); default: all")
    sp.add_argument("--quick", action="store_true", help="the quick subset (about 2 minutes on 2 cores)")
    sp.add_argument(
        "--output",
        "--out",
        dest="output",
        metavar="FILE.md",
        help="where to write the report (its plots go in a directory named like it); default: a new "
        "directory in the temporary directory. --output docs/benchmarks.md refreshes the checkout's report",
    )
    sp.add_argument("--json", help="also write the raw results here")


@command("bench", "run the benchmark suite and write a report (medians, ratios to anchors, plots)")
def bench_main(args):
    from .errors import MissingDependencyError

    lacking = [pkg for mod, pkg in NEEDS.items() if importlib.util.find_spec(mod) is None]
    if lacking:
        raise MissingDependencyError(
            f'the benchmark suite needs {" and ".join(lacking)}, not installed: pip install "paimon-fast[bench]"',
            name=lacking[0],
        )
    root = find_suite()
    if root is None:
        raise FileNotFoundError(
            2,
            "No benchmark suite here (it comes with the source, not with the package: run paimon-fast bench "
            "in a checkout of paimon-fast)",
            os.path.join(os.getcwd(), "benchmarks", "report.py"),
        )
    spec = importlib.util.spec_from_file_location(
        "_paimon_fast_bench_report", os.path.join(root, "benchmarks", "report.py")
    )
    _report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_report)

    output = args.output or default_output()
    argv = (
        list(args.parts)
        + (["--quick"] if args.quick else [])
        + ["--output", output]
        + (["--json", args.json] if args.json else [])
    )
    return _report.main(argv)


bench_main.setup = _setup
bench_main.description = """\
Runs the benchmark suite (benchmarks/ of a source checkout: pytest-benchmark, each part in a
process of its own) and writes one report: per operation our median beside every anchor
measured in the same run (the pure-Python twin, pypaimon, pypaimon-rust, Java Paimon 0.9 where
it runs, numpy / pyarrow.compute), the ratio, what could not be measured and why, and PNG plots.
Needs the bench extra (pip install "paimon-fast[bench]").  Writes into the checkout only when
--output says so."""
bench_main.examples = """
paimon-fast bench --quick
paimon-fast bench bloom globalindex --output /tmp/report.md
paimon-fast bench --quick --output docs/benchmarks.md
"""
