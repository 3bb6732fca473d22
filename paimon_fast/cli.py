"""The ``paimon-fast`` command line: the registry of its commands and :func:`main`.

    paimon-fast demo                 build indexes over a sample dataset and query them
    paimon-fast inspect FILE         show what an index file holds (--json: all of it as JSON)

Subcommands are registered with :func:`command` by the modules that own them
(listed in :data:`COMMAND_MODULES`, imported when present), so each feature's
command sits next to its code; a command function may carry ``setup`` (its
arguments), ``description`` and ``examples`` (plain text for its ``--help``).
``inspect`` asks every registered :func:`inspector` whether it recognises the file.
A user's mistake (a column or table that does not exist, a predicate that does not
parse, a missing path or package) ends the command with one line naming it and
exit code 2 (:func:`main`).
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
    "paimon_fast.spark.demo",
    "paimon_fast.spark.optimize_job",
    "paimon_fast.tables.gc",
    "paimon_fast.tables.summary",
    "paimon_fast.globalindex.cli",
    "paimon_fast.tableindex.cli",
    "paimon_fast.hudi.cli",
    "paimon_fast.paimon.cli",
    "paimon_fast.bench",
    "paimon_fast.samples",
]


DESCRIPTION = """\
Apache Paimon's indexes from the command line: build file indexes and global indexes for
Parquet datasets (on Spark), Paimon tables (through pypaimon) and Hudi tables, answer
predicates with them (which files and rows to read), and show what an index file holds."""

EXAMPLES = """\
examples:
  paimon-fast demo                                     # the whole pipeline on a sample dataset
  paimon-fast query events --where "country = 'DE'"    # a pruned query over a Parquet dataset
  paimon-fast inspect events                           # a dataset: files, indexes per column, staleness
  paimon-fast inspect events/_file_index/region=eu/part-00000.parquet.<hash>.index  # what an index file holds
  paimon-fast COMMAND --help                           # a command's options and examples"""


def command(name, help):
    """Register ``fn(args)`` as ``paimon-fast NAME``; ``help`` is its one-line summary.  The
    function may carry ``setup(parser)``, ``description`` (plain text) and ``examples``
    (lines of shell, shown under "examples:" in its ``--help``)."""

    def deco(fn):
        COMMANDS[name] = (fn, help)
        return fn

    return deco


def examples_epilog(examples) -> str:
    """The "examples:" block of a ``--help`` from example lines (a string or a list)."""
    lines = examples.strip("\n").splitlines() if isinstance(examples, str) else list(examples)
    return "examples:\n" + "\n".join("  " + ln.strip() for ln in lines if ln.strip())


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


def _split_top_level(text: str) -> list:
    """``text`` split at the commas outside parentheses and angle brackets."""
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
    return parts


def check_type(text: str) -> None:
    """Raise :class:`~paimon_fast.errors.UnsupportedTypeError` unless ``text`` is a Paimon type
    this package reads: a scalar type (:meth:`~paimon_fast.core.types.DataType.parse`), ``ARRAY<T>``
    or ``MAP<K, V>`` of such types."""
    import re

    from .errors import UnsupportedTypeError
    from .core.types import DataType

    m = re.match(r"^\s*(ARRAY|MAP)\s*<(.*)>\s*(NOT\s+NULL)?\s*$", text, re.IGNORECASE | re.S)
    if m is None:
        DataType.parse(text)
        return
    inner = _split_top_level(m.group(2))
    if len(inner) != (1 if m.group(1).upper() == "ARRAY" else 2):
        raise UnsupportedTypeError(f"cannot parse Paimon type {text!r}")
    for t in inner:
        check_type(t.strip())


def parse_row_type(text):
    """``"a=INT,b=STRING"`` -> dict (types may contain commas inside parentheses).  A mistake
    (an entry without ``=``, a type that is not Paimon's) ends the command naming it."""
    out = {}
    if not text:
        return out
    for p in _split_top_level(text):
        if "=" not in p:
            raise SystemExit(f"--row-type takes name=TYPE entries separated by commas, got {p.strip()!r}")
        k, v = (x.strip() for x in p.split("=", 1))
        if not k:
            raise SystemExit(f"--row-type: no column name before '=' in {p.strip()!r}")
        try:
            check_type(v)
        except Exception as e:  # noqa: BLE001 - whatever the parser says, as one line
            raise SystemExit(f"--row-type: {k}={v!r} is not a Paimon type ({e})") from None
        out[k] = v
    return out


def print_json(obj):
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


# ---------------------------------------------------------------- inspect


def inspect_setup(p):
    p.add_argument(
        "file",
        help="an index file: a file index container (<data file>.index), a global "
        "index file, a deletion file, a Puffin file, a hash index file or an index manifest; "
        "or a Parquet dataset's directory (its files, indexes per column, sizes, staleness)",
    )
    p.add_argument(
        "--row-type",
        default="",
        help='column types, e.g. "id=INT,name=STRING"; without it '
        "a container beside a Parquet file takes them from the file, otherwise only its "
        "layout is shown",
    )
    p.add_argument("--json", action="store_true", help="print everything as JSON instead of the summary")


@command("inspect", "show what an index file or a dataset holds: a summary table, or everything with --json")
def inspect_main(args):
    from .fileindex import FileIndexFormat

    path = args.file
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    parse_row_type(args.row_type)  # a mistake in it is named whichever format the file has
    for entry in INSPECTORS:
        if entry["detect"](path):
            _show(entry["name"], path, entry["describe"](path, args), args.json)
            return
    if os.path.isdir(path):
        if os.path.isdir(os.path.join(path, ".hoodie")):
            raise IsADirectoryError(21, "Is a Hudi table (paimon-fast hudi inspect shows its index)", path)
        raise IsADirectoryError(
            21, "Is a directory without a Parquet dataset (inspect takes one index file or a dataset)", path
        )
    row_type = parse_row_type(args.row_type)
    with FileIndexFormat.open(path, row_type) as f:
        if row_type:
            out = f.describe()
        else:
            out = {
                "size": f.source.size,
                "head_length": f.head_length,
                "columns": {
                    c: [{"index_type": t, "start": s, "length": n} for t, (s, n) in m.items()]
                    for c, m in f.index_metas().items()
                },
            }
    _show("file index container", path, out, args.json)


inspect_main.setup = inspect_setup
inspect_main.description = """\
Shows what an index file holds, recognising its format by its bytes: a Paimon file index
container (the indexes of one data file, by column), a bitmap, BTree or multivalue global
index file, a deletion file, an Iceberg Puffin file of deletion vectors, a dynamic-bucket hash
index file or a Paimon index manifest.  Given a Parquet dataset's directory, summarises the
dataset: data files and rows, its file indexes per column and index type (files, bytes, stale
files), its global indexes, deletion vectors.  Prints a summary; --json prints every detail."""
inspect_main.examples = """
paimon-fast inspect events
paimon-fast inspect events/_file_index/region=eu/part-00000.parquet.<hash>.index
paimon-fast inspect events/_file_index/region=eu/part-00000.parquet.<hash>.index --json
paimon-fast inspect data-0.orc.index --row-type "id=BIGINT,name=STRING"
"""


def _show(kind, path, out: dict, as_json: bool):
    if as_json:
        print_json(out)
    else:
        print(summary_text(kind, path, out))


# ---------------------------------------------------------------- the summary of ``inspect``


def _words(key) -> str:
    return str(key).replace("_", " ")


def _fmt(v, nested=False) -> str:
    """A value as text: integers with thousands separators, floats short, None empty, a dict as
    ``key value, ...`` (in parentheses inside another), a list as its first items."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        text = ", ".join(f"{_words(k)} {_fmt(x, True)}" for k, x in v.items() if x is not None)
        return f"({text})" if nested else text
    if isinstance(v, (list, tuple)):
        k = 2 if any(isinstance(x, dict) for x in v) else 4
        shown = ", ".join(_fmt(x, True) for x in v[:k])
        return (
            ("[" + shown + (f", ... {len(v)} in all" if len(v) > k else "") + "]")
            if nested
            else shown + (f", ... ({len(v)} in all)" if len(v) > k else "")
        )
    return str(v)


def cell_text(v) -> str:
    """A pyarrow scalar as text for a table cell, read by its value: a nanosecond timestamp
    or time keeps its digits and needs no pandas (``as_py()`` would); null is ``NULL``."""
    import pyarrow as pa

    if not v.is_valid:
        return "NULL"
    if pa.types.is_temporal(v.type):
        try:
            return v.cast(pa.string()).as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return f"{v.value} {v.type}"
    return str(v.as_py())


def display_rows(table) -> list:
    """A small Arrow table's rows as dicts for printing: nanosecond timestamps and times as their
    ISO text (``to_pylist()`` of those needs pandas, and gives another text with it)."""
    import pyarrow as pa

    cols = {}
    for name, col in zip(table.column_names, table.columns):
        t = col.type
        if (pa.types.is_timestamp(t) or pa.types.is_time(t)) and t.unit == "ns":
            col = col.cast(pa.string())
        cols[name] = col
    return pa.table(cols).to_pylist() if cols else []


def text_table(head, rows) -> str:
    """Rows as aligned text under a header and a rule (numbers right-aligned)."""
    cells = [[_fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(head)]
    right = [
        bool(rows) and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) or r[i] is None for r in rows)
        for i in range(len(head))
    ]

    def line(vals):
        return "  ".join(v.rjust(w) if rt else v.ljust(w) for v, w, rt in zip(vals, widths, right)).rstrip()

    rule = ["-" * w for w in widths]
    if head and not right[-1]:
        rule[-1] = "-" * len(str(head[-1]))  # a long last column (details): the rule as wide as its name
    return "\n".join([line([str(h) for h in head]), line(rule)] + [line(r) for r in cells])


def summary_text(kind: str, path: str, d: dict) -> str:
    """A readable summary of what an inspector described: one ``name: value`` line per field,
    then a table per list of entries (a container's indexes by column, a deletion file's vectors,
    a manifest's entries) whose columns are the fields every entry has, the others in ``details``."""
    out = [f"{kind}: {path}"]
    pairs, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict) and v and all(isinstance(x, list) for x in v.values()):
            # {"columns": {name: [entry, ...]}}: one row per entry, its name first
            key = str(k)[:-1] if str(k).endswith("s") else str(k)
            tables.append((_words(k), [dict({key: name}, **e) for name, es in v.items() for e in es]))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables.append((_words(k), v))
        elif isinstance(v, list) and not v:
            pairs.append((_words(k), "none"))
        else:
            pairs.append((_words(k), _fmt(v)))
    if pairs:
        w = max(len(k) for k, _ in pairs)
        out += [f"  {k + ':':<{w + 1}} {v}".rstrip() for k, v in pairs]
    for title, entries in tables:
        keys = []
        for e in entries:
            keys += [k for k in e if k not in keys]
        if all(e.get("size") == e.get("length") for e in entries):
            keys = [k for k in keys if k != "size"]  # the same number twice
        common = [k for k in keys if all(k in e and not isinstance(e[k], (dict, list)) for e in entries)]
        rest = [k for k in keys if k not in common]
        head = [_words(k) for k in common] + (["details"] if rest else [])
        rows = [[e.get(k) for k in common] + ([_details(e, rest)] if rest else []) for e in entries]
        out += ["", f"{title}:", text_table(head, rows)]
    return "\n".join(out)


def _details(e: dict, keys) -> str:
    return ", ".join(f"{_words(k)} {_fmt(e[k], True)}" for k in keys if e.get(k) not in (None, [], {}, ""))


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
    from .core.predicate import field

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
demo_main.examples = """
paimon-fast demo --rows 200000 --files 10
"""


COMMAND_ORDER = ("inspect", "demo", "sample", "build", "query", "delete", "gc", "hudi", "paimon", "bench")


def build_parser():
    _load_command_modules()
    from . import __version__

    ap = argparse.ArgumentParser(
        prog="paimon-fast",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"paimon-fast {__version__}")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", title="commands")
    # a fixed order, whatever order the modules registering the commands were imported in
    known = {n: i for i, n in enumerate(COMMAND_ORDER)}
    for name, (fn, help) in sorted(COMMANDS.items(), key=lambda kv: (known.get(kv[0], len(known)), kv[0])):
        desc = getattr(fn, "description", None) or (help[:1].upper() + help[1:] + ".")
        examples = getattr(fn, "examples", None)
        sp = sub.add_parser(
            name,
            help=help,
            description=desc,
            epilog=examples_epilog(examples) if examples else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if hasattr(fn, "setup"):
            fn.setup(sp)
        sp.set_defaults(func=fn)
    return ap


def user_errors() -> tuple:
    """The exception classes that are a user's mistake (a name, a path, a predicate, an option,
    a missing package) or that name a file the user must look at (a damaged catalog, listing or
    deletion file; a data file that is not Parquet): :func:`main` prints one line naming it and
    exits 2."""
    from .errors import (
        ColumnNotFoundError,
        DamagedFileError,
        DataFileError,
        InvalidArgumentError,
        MissingDependencyError,
        NotFoundError,
        OptionError,
        PredicateError,
        UnknownIndexTypeError,
        UnsupportedTypeError,
    )

    return (
        PredicateError,
        ColumnNotFoundError,
        NotFoundError,
        OptionError,
        UnknownIndexTypeError,
        UnsupportedTypeError,
        InvalidArgumentError,
        MissingDependencyError,
        FileNotFoundError,
        FileExistsError,
        NotADirectoryError,
        IsADirectoryError,
        DamagedFileError,
        DataFileError,
    )


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return f"{e.strerror}: {e.filename}"
    text = str(e) or type(e).__name__
    return " ".join(text.split())


def _command_name(args) -> str:
    parts = ["paimon-fast", args.cmd]
    for k, v in sorted(vars(args).items()):
        if k.endswith("_cmd") and isinstance(v, str):
            parts.append(v)
    return " ".join(parts)


def main(argv=None):
    """Run ``paimon-fast`` with ``argv`` (default: the process's).  Returns the exit code: 0, 1
    when a command reports a failure, 2 for a user's mistake, printed as one line on stderr
    (``paimon-fast query: no column 'nosuch' (columns: id, name)``) instead of a traceback;
    ``PAIMON_FAST_TRACEBACK=1`` shows the traceback too."""
    from .errors import PaimonFastError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.cmd is None:  # a bare ``paimon-fast``: what it can do
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except BrokenPipeError:
        return 0
    except SystemExit as e:  # a command's own message for a bad argument: one line, exit 2
        if isinstance(e.code, str):
            print(f"{_command_name(args)}: {' '.join(e.code.split())}", file=sys.stderr)
            return 2
        raise
    except (PaimonFastError, *user_errors()) as e:
        if os.environ.get("PAIMON_FAST_TRACEBACK"):
            raise
        print(f"{_command_name(args)}: {_one_line(e)}", file=sys.stderr)
        return 2 if isinstance(e, user_errors()) else 1


if __name__ == "__main__":
    # run through the importable module so feature modules register into the same registry
    from paimon_fast.cli import main as _main

    sys.exit(_main())
