"""``paimon-fast`` command line.

    paimon-fast demo                 build indexes over a sample dataset and query them
    paimon-fast inspect FILE         show a file index container and its indexes

Subcommands are registered with :func:`command` by the modules that own them
(listed in :data:`COMMAND_MODULES`, imported when present), so each feature's
command sits next to its code.  ``inspect`` asks every registered
:func:`inspector` whether it recognises the file.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

COMMANDS = {}
# (name, detect(path) -> bool, describe(path, args) -> dict), tried in order
INSPECTORS = []
# feature modules that register commands / inspectors when imported (missing ones are skipped)
COMMAND_MODULES = [
    "paimon_fast.fileindex.bitmap",
    "paimon_fast.spark.cli",
    "paimon_fast.tables.gc",
    "paimon_fast.globalindex.cli",
    "paimon_fast.tableindex.cli",
    "paimon_fast.hudi.cli",
    "paimon_fast.paimon.cli",
    "paimon_fast.bench",
]


def command(name, help):
    def deco(fn):
        COMMANDS[name] = (fn, help)
        return fn
    return deco


def inspector(name):
    """Decorator for ``describe(path, args)``; use as ``@inspector("deletion file").detect(fn)``."""
    def deco(describe):
        entry = {"name": name, "describe": describe, "detect": lambda path: False}
        INSPECTORS.append(entry)

        def detect(fn):
            entry["detect"] = fn
            return fn
        describe.detect = detect
        return describe
    return deco


def _load_command_modules():
    import importlib

    from .errors import MissingDependencyError

    for mod in COMMAND_MODULES:
        try:
            importlib.import_module(mod)
        except MissingDependencyError:
            continue  # a feature whose optional dependency is missing registers no commands
        except ModuleNotFoundError as e:
            if e.name is None or not mod.startswith(e.name):
                raise


def _parse_row_type(text):
    """``"a=INT,b=STRING"`` -> dict (types may contain commas inside parentheses)."""
    out = {}
    if not text:
        return out
    depth, cur, parts = 0, "", []
    for ch in text:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        if "=" not in p:
            raise SystemExit(f"--row-type entries are name=TYPE, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _print_json(obj):
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


# ---------------------------------------------------------------- inspect

def inspect_setup(p):
    p.add_argument("file", help="a .index file (file index container)")
    p.add_argument("--row-type", default="", help='column types, e.g. "id=INT,name=STRING"; '
                   "without it only the header is shown")


@command("inspect", "show an index file: container columns, index types, sizes, per-index details")
def inspect_main(args):
    from .fileindex import FileIndexFormat

    for entry in INSPECTORS:
        if entry["detect"](args.file):
            _print_json(entry["describe"](args.file, args))
            return
    row_type = _parse_row_type(args.row_type)
    with FileIndexFormat.open(args.file, row_type) as f:
        if row_type:
            _print_json(f.describe())
        else:
            _print_json({"size": f.source.size, "head_length": f.head_length,
                         "columns": {c: [{"index_type": t, "start": s, "length": n} for t, (s, n) in m.items()]
                                     for c, m in f.index_metas().items()}})


inspect_main.setup = inspect_setup


# ---------------------------------------------------------------- demo (in-process)

def demo_setup(p):
    p.add_argument("--rows", type=int, default=2_000_000, help="rows in the sample dataset")
    p.add_argument("--files", type=int, default=20, help="number of data files")
    p.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")


@command("demo", "generate a sample dataset, build file indexes, answer predicates, show what was skipped")
def demo_main(args):
    import numpy as np
    import pyarrow as pa

    from . import fileindex
    from .fileindex import FileIndexFormat
    from .predicate import field

    out = args.dir or tempfile.mkdtemp(prefix="paimon-fast-demo-")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(42)
    per_file = max(1, args.rows // args.files)
    row_type = {"id": "BIGINT", "country": "STRING"}
    countries = np.array(["DE", "FR", "US", "JP", "BR", "IN", "CN", "GB"])
    t0 = time.perf_counter()
    paths = []
    for i in range(args.files):
        ids = np.arange(i * per_file, (i + 1) * per_file, dtype=np.int64)
        # each file holds 3 of the 8 countries, so equality on country can skip files
        own = countries[rng.choice(len(countries), 3, replace=False)]
        country = pa.array(own[rng.integers(0, 3, per_file)])
        indexes = {}
        w = fileindex.writer("bloom-filter", "BIGINT", {"items": str(per_file), "fpp": "0.01"})
        w.write_batch(ids)
        indexes["id"] = {"bloom-filter": w.finish()}
        w = fileindex.writer("bloom-filter", "STRING", {"items": "16", "fpp": "0.01"})
        w.write_batch(country)
        indexes["country"] = {"bloom-filter": w.finish()}
        p = os.path.join(out, f"data-{i:03d}.parquet.index")
        with open(p, "wb") as fh:
            fh.write(FileIndexFormat.write(indexes))
        paths.append(p)
    build_s = time.perf_counter() - t0
    print(f"built {len(paths)} index files over {per_file * args.files:,} rows in {build_s:.2f}s -> {out}")
    queries = [
        ("id = 123456", field("id") == 123456),
        ("id IN (5, 1500000, -1)", field("id").isin([5, 1_500_000, -1])),
        ("country = 'DE'", field("country") == "DE"),
        ("country = 'XX'", field("country") == "XX"),
        ("country = 'DE' AND id = 7", (field("country") == "DE") & (field("id") == 7)),
    ]
    print(f"{'predicate':32} {'files kept':>10} {'skipped':>8} {'eval ms':>8}")
    for text, pred in queries:
        t0 = time.perf_counter()
        kept = sum(1 for p in paths if FileIndexFormat.open(p, row_type).evaluate(pred).remain)
        ms = (time.perf_counter() - t0) * 1000
        print(f"{text:32} {kept:>10} {len(paths) - kept:>8} {ms:>8.1f}")


demo_main.setup = demo_setup


def build_parser():
    _load_command_modules()
    ap = argparse.ArgumentParser(prog="paimon-fast", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, (fn, help) in COMMANDS.items():
        desc = getattr(fn, "description", None)
        sp = sub.add_parser(name, help=help, description=desc or help,
                            formatter_class=argparse.RawDescriptionHelpFormatter if desc else argparse.HelpFormatter)
        if hasattr(fn, "setup"):
            fn.setup(sp)
        sp.set_defaults(func=fn)
    return ap


def main(argv=None):
    from .errors import MissingDependencyError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except BrokenPipeError:
        return 0
    except MissingDependencyError as e:  # what to install, not a traceback from inside a dependency
        print(f"paimon-fast {args.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # run through the importable module so feature modules register into the same registry
    from paimon_fast.cli import main as _main

    sys.exit(_main())
