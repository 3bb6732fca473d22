"""Command line of the Spark pipeline: ``demo``, ``build``, ``query``, ``delete``.

    paimon-fast demo [--rows N] [--files N] [--dir D] [--master URL]
    paimon-fast build PATH --options file-index.bloom-filter.columns=id [k=v ...] [--force]
    paimon-fast build PATH --global-index COLUMN [COLUMN ...] [--options bitmap-index.compression=zstd ...]
    paimon-fast query PATH --where "country = 'DE' AND id IN (1, 2)" [--show 10] [--compare]
    paimon-fast query PATH --where "country = 'DE'" [--explain] [--limit 20]   (in-process, no Spark)
    paimon-fast query PATH --top score:10 [--where ...]     (or --bottom; in-process, from range-bitmap indexes)
    paimon-fast delete PATH --where "status = 'returned'"   (deletion vectors; no Parquet rewrite)

``--master`` (or ``$SPARK_MASTER``) points the commands at a cluster; the
default is local Spark with every core of this machine.  Importing this
module registers the commands (it replaces the core's in-process ``demo``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Optional, Tuple

from ..cli import cell_text, command, inspector


def _master_arg(p):
    p.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default: $SPARK_MASTER or local[*], every core of this machine)",
    )


def _parse_options(items):
    out = {}
    for it in items or []:
        if "=" not in it:
            raise SystemExit(f"options are key=value, got {it!r}")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _progress_printer(label):
    last = [None]
    if not sys.stderr.isatty():  # a log file: one line per quarter, not a redrawn bar

        def show_lines(done, total):
            q = 4 * done // total if total else 4
            if q != last[0] and (q > 0 or done == 0):
                last[0] = q
                sys.stderr.write(f"{label} {done}/{total} files\n")
                sys.stderr.flush()

        return show_lines

    def show(done, total):
        if (done, total) != last[0]:
            last[0] = (done, total)
            width = 30
            fill = int(width * done / total) if total else width
            sys.stderr.write(f"\r{label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} files")
            sys.stderr.flush()
            if done >= total:
                sys.stderr.write("\n")

    return show


def _jvm_path(path: str) -> str:
    """A path given on the command line, as Spark must see it: a relative local path made absolute
    against this process's working directory (a JVM started earlier in the same process, e.g. by a
    notebook or a test, resolves relative paths against its own start directory)."""
    from ..io.fs import is_uri

    return path if is_uri(path) else os.path.abspath(path)


def _session(args):
    from .session import cli_session

    _check_before_spark(getattr(args, "path", None), getattr(args, "where", None))
    return cli_session(args.master)


def _check_before_spark(path, where):
    """A user's mistake is named before Spark starts (and logs): a local dataset directory that is
    not there, a predicate that does not parse or names a column the dataset lacks."""
    from ..io.fs import is_uri

    local = path is not None and not is_uri(path)
    if local and not os.path.isdir(path):
        if os.path.exists(path):
            raise NotADirectoryError(20, "Not a dataset directory", path)
        raise FileNotFoundError(2, "No such dataset directory", path)
    if where:
        from ..core.literals import normalize
        from ..core.sqlpredicate import parse_predicate
        from ..tables.parquet import ParquetDataset

        pred = parse_predicate(where)
        if local:
            try:
                schema = ParquetDataset(path).schema()
            except Exception:  # noqa: BLE001 - no schema yet (no data files...): the command itself says
                return
            normalize(pred, schema, missing="error")


# ---------------------------------------------------------------- inspect


def _data_file_of_index(path: str):
    """The data file of a dataset's file index container: ``<root>/_file_index/<rel>[.<hash>].index``
    -> ``<root>/<rel>``; the old layout's ``<file>.parquet.index`` -> the file beside it; or None."""
    import re

    from ..tables.layout import FILE_INDEX_DIR, INDEX_SUFFIX

    m = re.fullmatch(r"(.*\.parquet)(\.[0-9a-f]{16})?" + re.escape(INDEX_SUFFIX), path, re.S)
    if m is None:
        return None
    data = m.group(1)
    parts = data.split(os.sep)
    if FILE_INDEX_DIR in parts:
        i = len(parts) - 1 - parts[::-1].index(FILE_INDEX_DIR)
        moved = os.sep.join(parts[:i] + parts[i + 1 :])
        if os.path.isfile(moved):
            return moved
    return data if os.path.isfile(data) else None


@inspector("Parquet file index")
def describe_parquet_index(path, args):
    """A dataset's file index container (``_file_index/<data file>.index``, or the old layout's
    ``<file>.parquet.index`` beside its data file): column types come from the Parquet footer."""
    import paimon_fast as pf

    from ..tables.parquet import ParquetDataset

    data = _data_file_of_index(path)
    with pf.FileIndexFormat.open(path, ParquetDataset.row_type_of(data)) as f:
        out = f.describe()
    out["data_file"] = data
    return out


@describe_parquet_index.detect
def _is_parquet_index(path):
    return _data_file_of_index(path) is not None


# ---------------------------------------------------------------- build


def build_setup(p):
    p.add_argument("path", help="dataset directory (Parquet files, partitioned or not)")
    p.add_argument(
        "--options",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="Paimon table options, e.g. file-index.bloom-filter.columns=id,name "
        "file-index.bloom-filter.id.items=100000 file-index.bloom-filter.id.fpp=0.01",
    )
    p.add_argument("--force", action="store_true", help="rebuild current indexes too")
    p.add_argument(
        "--global-index",
        nargs="+",
        default=[],
        metavar="COLUMN",
        help="also build a bitmap global index of these columns (options bitmap-index.*, "
        "sorted-index.records-per-range, sorted-index.build.max-parallelism)",
    )
    _master_arg(p)


@command("build", "build Paimon file indexes (and bitmap global indexes) for a Parquet dataset on Spark executors")
def build_main(args):
    from . import build, build_global_index

    opts = _parse_options(args.options)
    file_index = any(k.startswith("file-index.") and k.endswith(".columns") for k in opts)
    if not file_index and not args.global_index:
        raise SystemExit(
            "no index configured: pass e.g. --options file-index.bloom-filter.columns=COL or --global-index COL"
        )
    spark = _session(args)
    if file_index:
        rep = build(spark, args.path, opts, force=args.force, progress=_progress_printer("indexing"))
        print(rep)
    for col in args.global_index:
        t0 = time.perf_counter()
        gopts = {k: v for k, v in opts.items() if k.startswith(("bitmap-index.", "sorted-index.", "btree-index."))}
        listing = build_global_index(spark, args.path, col, gopts)
        size = sum(f["size"] for f in listing["files"])
        print(
            f"global index on {col}: {_plural(len(listing['files']), 'file')}, {listing['total_row_count']:,} rows, "
            f"{size:,} bytes, {time.perf_counter() - t0:.2f}s"
        )


build_main.setup = build_setup
build_main.examples = """
paimon-fast build events --options file-index.bloom-filter.columns=user_id file-index.range-bitmap.columns=amount
paimon-fast build events --global-index country --options bitmap-index.compression=zstd
"""


# ---------------------------------------------------------------- query


def query_setup(p):
    p.add_argument("path", help="dataset directory")
    p.add_argument("--where", default=None, help="predicate, e.g. \"country = 'DE' AND (score > 90 OR id IN (1, 2))\"")
    top = p.add_mutually_exclusive_group()
    top.add_argument(
        "--top",
        metavar="COLUMN:K",
        default=None,
        help="the K rows with the largest COLUMN (ORDER BY COLUMN DESC NULLS LAST LIMIT K) after --where, "
        "answered in-process from range-bitmap indexes",
    )
    top.add_argument("--bottom", metavar="COLUMN:K", default=None, help="the K rows with the smallest COLUMN")
    p.add_argument("--show", type=int, default=10, help="rows to print (0: none)")
    p.add_argument("--compare", action="store_true", help="also run a plain Spark scan and compare")
    p.add_argument("--no-index", action="store_true", help="read every file (baseline)")
    p.add_argument(
        "--explain",
        action="store_true",
        help="print which indexes the dataset holds for --where, which are used and why not (no Spark)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="read at most N matching rows in this process (no Spark) and print them",
    )
    _master_arg(p)


@command("query", "answer a predicate over a dataset, pruning files and rows with its indexes")
def query_main(args):
    if args.top or args.bottom:
        return _top_main(args)
    if args.explain or args.limit is not None:
        return _read_main(args)
    if args.where is None:
        raise SystemExit("query needs --where (or --top / --bottom COLUMN:K)")
    from . import read

    spark = _session(args)
    t0 = time.perf_counter()
    df = read(spark, args.path, args.where, use_index=not args.no_index)
    n = df.count()
    secs = time.perf_counter() - t0
    print(f"{n:,} matching rows in {secs:.2f}s")
    print(df.report)
    if args.show:
        df.show(args.show, truncate=False)
    if args.compare:
        glob = _old_layout(args.path)
        if glob:  # containers beside the data files: Spark's reader would take them for data
            print(
                "(the dataset keeps its indexes in the old layout, beside the data files: `paimon-fast build` "
                "moves them under _file_index/; the plain scan below skips them with pathGlobFilter)"
            )
        r = race(spark, _jvm_path(args.path), args.where, collect=n <= COMPARE_COLLECT_MAX, glob=glob)
        print(
            f"index vs plain Spark scan (warm, {RACE_ROUNDS} alternating rounds, medians): "
            f"count() {r.count[0]:.3f}s vs {r.count[1]:.3f}s ({_speedup(*r.count)})"
            + (
                f", collect() {r.collect[0]:.3f}s vs {r.collect[1]:.3f}s ({_speedup(*r.collect)})"
                if r.collect
                else f", collect() not timed (over {COMPARE_COLLECT_MAX:,} rows)"
            )
            + f"; {'same rows' if r.same else 'DIFFERENT ROWS'}"
        )
        if not r.same:
            return 1


RACE_ROUNDS = 3
COMPARE_COLLECT_MAX = 1_000_000


@dataclass
class Race:
    """Medians of :func:`race`: ``count`` and ``collect`` as ``(index seconds, plain seconds)``
    (``collect`` None when not timed), the rows, whether both sides gave the same rows, and the
    indexed read's report."""

    count: Tuple[float, float]
    collect: Optional[Tuple[float, float]]
    rows: int
    same: bool
    report: object


def race(spark, path: str, where: str, rounds: int = RACE_ROUNDS, collect: bool = True, glob: bool = False) -> Race:
    """Time what a user does, both ways: ``pfs.read(spark, path, where)`` (planning included)
    against ``spark.read.parquet(path).where(where)`` (the directory listed and its schema read
    once, untimed: the plain side's best case), each followed by ``count()`` and (``collect``)
    ``collect()``.  Both sides run once untimed first (JVM, Python workers and caches warm),
    then ``rounds`` rounds whose order alternates (index first, then plain first); the
    medians are returned.  ``glob``: the plain reader skips non-``*.parquet`` files (datasets
    in the old layout)."""
    import statistics

    from . import read

    base = (spark.read.option("pathGlobFilter", "*.parquet") if glob else spark.read).parquet(path)

    def plain():
        return base.where(where)

    def rows(df):
        return sorted((tuple(r) for r in df.collect()), key=repr)

    steps = {"index count": lambda: read(spark, path, where).count(), "plain count": lambda: plain().count()}
    if collect:
        steps.update({"index collect": lambda: rows(read(spark, path, where)), "plain collect": lambda: rows(plain())})
    got = {k: f() for k, f in steps.items()}  # warm-up, and the answers
    times = {k: [] for k in steps}
    order = list(steps)
    for r in range(rounds):
        for k in order if r % 2 == 0 else order[1::-1] + order[:1:-1]:
            t0 = time.perf_counter()
            steps[k]()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    same = got["index count"] == got["plain count"] and (not collect or got["index collect"] == got["plain collect"])
    return Race(
        (med["index count"], med["plain count"]),
        (med["index collect"], med["plain collect"]) if collect else None,
        got["index count"],
        same,
        read(spark, path, where).report,
    )


def _speedup(ours: float, theirs: float) -> str:
    return f"{theirs / ours:.1f}x" if ours > 0 else "-"


query_main.setup = query_setup
query_main.examples = """
paimon-fast query events --where "country = 'DE' AND amount > 100" --compare
paimon-fast query events --where "country = 'DE' AND amount > 100" --explain --limit 5
paimon-fast query events --top amount:5 --where "country = 'NO'"
"""


def _old_layout(path: str) -> bool:
    """Does the dataset still keep a file index container beside a data file (the old layout)?"""
    from ..tables.parquet import ParquetDataset

    try:
        files = ParquetDataset(path).read_catalog()["files"]
    except Exception:  # noqa: BLE001 - not readable as a dataset: the plain scan decides
        return False
    return any("file" in ((e or {}).get("file_index") or {}) for e in files.values() if isinstance(e, dict))


def _top_main(args):
    from ..tables.parquet import ParquetDataset
    from ..read.topn import TopNReport

    spec = args.top or args.bottom
    col, sep, k = spec.rpartition(":")
    if not sep or not col or not k.isdigit():
        raise SystemExit(f"--top / --bottom take COLUMN:K (e.g. score:10), got {spec!r}")
    rep = TopNReport()
    t0 = time.perf_counter()
    t = ParquetDataset(args.path).top_n(col, int(k), desc=bool(args.top), where=args.where, report=rep)
    print(f"{t.num_rows:,} rows in {time.perf_counter() - t0:.3f}s")
    print(rep)
    if args.show:
        print(format_rows(t.slice(0, args.show)))


def _read_main(args):
    """``--explain`` / ``--limit N``: answered in this process by ``ParquetDataset.read``."""
    from ..tables.parquet import ParquetDataset

    if args.limit is not None and args.limit < 0:
        raise SystemExit(f"--limit takes a number of rows >= 0, got {args.limit}")
    r = ParquetDataset(args.path).read(args.where, limit=args.limit)
    if args.explain:
        print(r.explain())
    if args.limit is not None:
        t0 = time.perf_counter()
        t = r.to_arrow()
        print(
            f"{t.num_rows:,} row{'' if t.num_rows == 1 else 's'} (limit {args.limit:,}) in "
            f"{time.perf_counter() - t0:.3f}s, read in-process"
        )
        print(r.report)
        if t.num_rows:
            print(format_rows(t))
    return 0


def format_rows(t) -> str:
    """A small Arrow table as aligned text, one row a line (no pandas needed)."""
    rows = [[cell_text(c[i]) for c in t.columns] for i in range(t.num_rows)]
    head = list(t.schema.names)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in [head, *rows])


# ---------------------------------------------------------------- delete


def delete_setup(p):
    p.add_argument("path", help="dataset directory")
    p.add_argument("--where", required=True, help="rows to delete, e.g. \"status = 'returned' AND id < 1000\"")
    p.add_argument("--bitmap64", action="store_true", help="write 64-bit deletion vectors for new vectors")
    _master_arg(p)


@command("delete", "mark the rows matching a predicate deleted (Paimon deletion vectors, no Parquet rewrite)")
def delete_main(args):
    from . import delete

    spark = _session(args)
    rep = delete(spark, args.path, args.where, bitmap64=True if args.bitmap64 else None)
    print(rep)


delete_main.setup = delete_setup
delete_main.examples = """
paimon-fast delete events --where "status = 'returned' AND id < 1000"
"""


# ---------------------------------------------------------------- demo

# the demo's sample dataset is written by paimon_fast.samples (also ``paimon-fast sample parquet``)
from ..samples import COUNTRIES, STATUSES, generate_sample  # noqa: E402,F401  (handed on)


def demo_options(rows: int, files: int) -> dict:
    """Paimon options of the demo: bloom filters on the high-cardinality columns and on
    ``country``, a bitmap on ``status``, a range bitmap on ``amount`` and a bit-slice index
    on ``qty`` (each when its index type is registered)."""
    from .. import fileindex

    per_file = max(1, rows // files)
    opts = {
        "file-index.bloom-filter.columns": "id,user_id,country",
        "file-index.bloom-filter.id.items": str(per_file),
        "file-index.bloom-filter.id.fpp": "0.01",
        "file-index.bloom-filter.user_id.items": str(per_file),
        "file-index.bloom-filter.user_id.fpp": "0.01",
        "file-index.bloom-filter.country.items": "16",
        "file-index.bloom-filter.country.fpp": "0.01",
    }
    have = fileindex.index_types()
    for kind, col in (("bitmap", "status"), ("range-bitmap", "amount"), ("bsi", "qty")):
        if kind in have:
            opts[f"file-index.{kind}.columns"] = col
    return opts


DEMO_DESCRIPTION = """\
The product in about a minute, on local Spark (every core of this machine):

  1. writes a sample dataset: ROWS rows (default 1,000,000) in FILES Parquet files
     (default 20) under region= partitions, in a temporary directory or --dir;
  2. builds every index kind on Spark executors, with a progress bar: bloom filters
     (id, user_id, country), a bitmap (status), a range bitmap (amount), a bit-slice
     index (qty), each a Paimon file index of its data file (under _file_index/), and a
     bitmap global index (country) over the whole dataset;
  3. answers a few predicates with the indexes and with a plain Spark scan
     (spark.read.parquet: the directory stays plain Parquet), count() and collect() each,
     warm, in alternating order, medians of 3, and prints a table: files and rows skipped,
     seconds with and without the index, the speed-up, where the rows were read (few on the
     driver, more on the executors) and whether both gave the same rows; then where every
     file went.

Takes about 1 minute on a 2-core machine (of which Spark's start is 10-30 s; --rows
200000 for a quicker look).  Needs Java 17+ for Spark; without pyspark it runs a smaller in-process
demo of the file indexes instead.  Exits 1 if an indexed answer differs from the plain
scan."""


def demo_setup(p):
    p.add_argument("--rows", type=int, default=1_000_000, help="rows in the sample dataset (default 1,000,000)")
    p.add_argument("--files", type=int, default=20, help="number of data files (default 20)")
    p.add_argument("--dir", default=None, help="where to write (default: a new temporary directory)")
    _master_arg(p)


def _dir_summary(out: str) -> list:
    """(what, where under ``out``, files, bytes) of everything the demo wrote under ``out``."""
    from ..tables.parquet import CATALOG_NAME, FILE_INDEX_DIR, INDEX_SUFFIX

    groups = {}
    for dp, _, fs in os.walk(out):
        for f in fs:
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, out)
            if rel.startswith("_global_index" + os.sep):
                key = ("bitmap global index", os.path.join("_global_index", rel.split(os.sep)[1], ""))
            elif rel.startswith(FILE_INDEX_DIR + os.sep) and f.endswith(INDEX_SUFFIX):
                key = ("file indexes", os.path.join(FILE_INDEX_DIR, f"<data file>.<hash>{INDEX_SUFFIX}"))
            elif f.endswith(".parquet"):
                key = ("data", os.path.join("region=*", "part-*.parquet"))
            elif f == CATALOG_NAME or f.startswith(CATALOG_NAME + "."):  # its versions, and the stub
                key = ("dataset catalog", os.path.join("_commits", f"{CATALOG_NAME}.<version>"))
            else:
                key = ("other", os.path.join(os.path.dirname(rel), ""))
            n, size = groups.get(key, (0, 0))
            groups[key] = (n + 1, size + os.path.getsize(p))
    return [(k[0], k[1], n, size) for k, (n, size) in groups.items()]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _table(head, rows, right=None):
    """Rows as aligned text under a header (a heading may hold a line break: two header lines)
    and a rule; the first column left-aligned, the others right-aligned unless ``right`` says."""
    heads = [str(h).split("\n") for h in head]
    depth = max(len(h) for h in heads)
    heads = [[""] * (depth - len(h)) + h for h in heads]
    widths = [max([len(x) for x in heads[i]] + [len(str(r[i])) for r in rows]) for i in range(len(head))]
    right = right if right is not None else [i > 0 for i in range(len(head))]

    def fmt(r):
        return "  ".join(str(v).rjust(w) if rt else str(v).ljust(w) for v, w, rt in zip(r, widths, right)).rstrip()

    lines = [fmt([h[d] for h in heads]) for d in range(depth)]
    return "\n".join(lines + ["  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])


def _table_width(head, rows) -> int:
    widths = [max([len(x) for x in str(h).split("\n")] + [len(str(r[i])) for r in rows]) for i, h in enumerate(head)]
    return sum(widths) + 2 * (len(widths) - 1)


def terminal_width() -> int:
    """Columns of the terminal the output goes to: ``$COLUMNS``, else the terminal of stdout,
    stderr or stdin (``paimon-fast demo | tee log`` still ends on one), else 120."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return max(60, int(cols))
    for stream in (sys.__stdout__, sys.__stderr__, sys.__stdin__):
        try:
            return max(60, os.get_terminal_size(stream.fileno()).columns)
        except (AttributeError, ValueError, OSError):
            continue
    return 120


def _say(text: str, indent: str = "      ", first: str = "") -> None:
    """Print ``text`` wrapped to the terminal's width (the first line after ``first``)."""
    import textwrap

    print(
        textwrap.fill(
            text,
            width=terminal_width() - 1,
            initial_indent=first or indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        ),
        flush=True,
    )


class _Ticker:
    """A step that may take a while: on a terminal, ``label`` and the seconds spent are redrawn on
    stderr every half second once the step has run 2 s, and erased when it ends; in a log,
    nothing (the step's own lines say when it started and ended)."""

    def __init__(self, label: str):
        self.label = label
        self.t0 = time.perf_counter()
        self._stop = None
        self._shown = False

    def __enter__(self):
        import threading

        if sys.stderr.isatty():
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.5):
            s = time.perf_counter() - self.t0
            if s >= 2:
                sys.stderr.write(f"\r{self.label} {s:.0f}s ")
                sys.stderr.flush()
                self._shown = True

    def set(self, label: str) -> None:
        self.label = label

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
            if self._shown:
                sys.stderr.write("\r" + " " * (len(self.label) + 8) + "\r")
                sys.stderr.flush()
        return False


# the demo's result columns: (heading, priority) - the lowest priorities are left out first when
# the terminal is narrow; the predicate and the index used go in the table only when all fit
_RESULT_COLUMNS = [
    ("files\nskipped", 9),
    ("rows\nskipped", 4),
    ("matches", 8),
    ("count s\nindex / plain", 1),
    ("count\nfaster", 7),
    ("collect s\nindex / plain", 1),
    ("collect\nfaster", 6),
    ("read on", 3),
    ("same\nrows", 5),
]


def results_text(results, width: int) -> str:
    """The demo's results as text at most ``width`` columns wide.  ``results``: one tuple per
    predicate, ``(predicate, index used, *cells of _RESULT_COLUMNS)``.  One table with the
    predicates when it fits; else the predicates numbered above a table keyed by their numbers,
    left without its least telling columns (the seconds first) until it fits."""
    head = ["predicate", "index used"] + [h for h, _ in _RESULT_COLUMNS]
    if _table_width(head, results) <= width:
        return _table(head, results, right=[False, False] + [True] * len(_RESULT_COLUMNS))
    numbered = [f"{i + 1:>2}  {r[0]}" for i, r in enumerate(results)]
    pw = max(len(x) for x in numbered)
    listing = "\n".join(
        f"{x:<{pw}}  ({r[1]})" if pw + len(r[1]) + 4 <= width else f"{x}\n      ({r[1]})"
        for x, r in zip(numbered, results)
    )
    keep = list(range(len(_RESULT_COLUMNS)))
    levels = sorted({p for _, p in _RESULT_COLUMNS})
    while True:
        head = ["#"] + [_RESULT_COLUMNS[i][0] for i in keep]
        rows = [[str(n + 1)] + [r[2 + i] for i in keep] for n, r in enumerate(results)]
        if _table_width(head, rows) <= width or len(levels) <= 4:
            break
        drop = levels.pop(0)  # the columns of the lowest priority left, together
        keep = [i for i in keep if _RESULT_COLUMNS[i][1] != drop]
    return listing + "\n\n" + _table(head, rows, right=[True] * len(head))


@command(
    "demo",
    "the product in about a minute: sample data, every index kind built on Spark, queries "
    "pruned with and without the indexes",
)
def demo_main(args):
    import pyarrow.parquet as pq

    try:
        import pyspark  # noqa: F401
    except ImportError:
        from .. import cli as core

        print('pyspark is not installed (pip install "paimon-fast[spark]"): running the in-process demo')
        return core.demo_main(args)

    from . import build, build_global_index
    from .env import check_spark_environment
    from .session import check_master, default_master, describe_master

    check_spark_environment()  # before writing anything: Java 17+, pandas, pyarrow
    master = check_master(args.master or default_master())
    t_start = time.perf_counter()
    out = _jvm_path(args.dir) if args.dir else tempfile.mkdtemp(prefix="paimon-fast-demo-")
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    existing = [os.path.join(dp, f) for dp, _, fs in os.walk(out) for f in fs if f.endswith(".parquet")]
    if existing:
        _say(f"using the {len(existing)} data files already in {out}", first="[1/4] ")
        paths = existing
    else:
        _say(f"writing {args.rows:,} rows in {_plural(args.files, 'Parquet file')} under {out} ...", first="[1/4] ")
        paths = generate_sample(out, args.rows, args.files, progress=_progress_printer("      writing"))
        print(f"      done in {time.perf_counter() - t0:.1f}s")
    _say(f"starting {describe_master(master)} ...", first="[2/4] ")
    t0 = time.perf_counter()
    with _Ticker("      starting Spark"):
        spark = _session(args)
    sc = spark.sparkContext
    took = time.perf_counter() - t0
    _say(f"Spark {spark.version} on {sc.master} ({sc.defaultParallelism} cores), started in {took:.1f}s")
    opts = demo_options(args.rows, len(paths))
    kinds = sorted({k.split(".")[1] for k in opts if k.endswith(".columns")})
    _say(f"building file indexes ({', '.join(kinds)}) on Spark executors", first="[3/4] ")
    rep = build(spark, out, opts, progress=_progress_printer("      indexing"))
    _say(str(rep))
    t0 = time.perf_counter()
    with _Ticker("      building the bitmap global index of country"):
        listing = build_global_index(spark, out, "country")
    _say(
        f"bitmap global index of country: {_plural(len(listing['files']), 'file')} over "
        f"{listing['total_row_count']:,} rows "
        f"in {time.perf_counter() - t0:.1f}s"
    )

    # pick values that exist: a user of the last file, an id in the middle
    last = pq.read_table(sorted(paths)[-1], columns=["user_id"]).column(0)
    user = last[len(last) // 2].as_py()
    total_rows = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    mid = total_rows // 2
    last_file = max(paths, key=os.path.basename)  # holds the largest ids
    last_region = os.path.basename(os.path.dirname(last_file)).split("=", 1)[1]
    queries = [
        (f"id = {mid}", "bloom-filter"),
        (f"user_id = '{user}'", "bloom-filter"),
        ("country = 'NO'", "global index + bloom-filter"),
        ("country = 'XX'", "global index + bloom-filter"),
        (f"region = '{last_region}' AND id IN (5, {mid}, {total_rows - 1})", "partition + bloom-filter"),
        ("status = 'returned' AND country = 'NO'", "bitmap + bloom-filter"),
        ("amount > 450", "range-bitmap"),
        ("qty = 7 AND country IN ('JP', 'KR')", "bsi + bloom-filter"),
    ]
    _say(
        f"answering {len(queries)} predicates with the indexes and with a plain Spark scan "
        f"(spark.read.parquet): count() and collect(), warm, {RACE_ROUNDS} alternating rounds, medians",
        first="[4/4] ",
    )
    rows = []
    for i, (q, used) in enumerate(queries):
        label = f"      {i + 1}/{len(queries)} {q}"
        if not sys.stderr.isatty():
            print(label, flush=True)
        with _Ticker(label):
            r = race(spark, out, q)
        rep = r.report
        rows.append(
            (
                q,
                used,
                f"{rep.files_skipped}/{rep.files_total}",
                f"{rep.rows_total - rep.rows_read:,}",
                f"{r.rows:,}",
                f"{r.count[0]:.2f} / {r.count[1]:.2f}",
                _speedup(*r.count),
                f"{r.collect[0]:.2f} / {r.collect[1]:.2f}",
                _speedup(*r.collect),
                "nothing" if rep.read_on.startswith("nothing") else rep.read_on,
                "yes" if r.same else "NO",
            )
        )
    width = terminal_width()
    print()
    print(results_text(rows, width))
    print(f"\nwhere the files went, under {out}:")
    print(
        _table(
            ("what", "where", "files", "bytes"),
            [(w, p, n, f"{b:,}") for w, p, n, b in _dir_summary(out)],
            right=[False, False, True, True],
        )
    )
    print(f"\ndone in {time.perf_counter() - t_start:.0f}s.  try:")
    query = f"  paimon-fast query {out}"
    where = f'--where "{queries[1][0]}" --compare'
    print(f"{query} {where}" if len(query) + len(where) < width else f"{query} \\\n      {where}")
    print(f"  paimon-fast inspect {out}")
    if any(x[-1] != "yes" for x in rows):
        return 1


demo_main.setup = demo_setup
demo_main.description = DEMO_DESCRIPTION
demo_main.examples = """
paimon-fast demo
paimon-fast demo --rows 200000 --dir /tmp/demo
"""
