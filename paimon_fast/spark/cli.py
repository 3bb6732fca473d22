"""Command line of the Spark pipeline: ``build``, ``query``, ``delete`` (``demo``: :mod:`.demo`).

    paimon-fast demo [--rows N] [--files N] [--dir D] [--master URL]
    paimon-fast build PATH --options file-index.bloom-filter.columns=id [k=v ...] [--force]
    paimon-fast build PATH --global-index COLUMN [COLUMN ...] [--options bitmap-index.compression=zstd ...]
    paimon-fast query PATH --where "country = 'DE' AND id IN (1, 2)" [--show 10] [--compare]
    paimon-fast query PATH --where "country = 'DE'" [--explain] [--limit 20]   (in-process, no Spark)
    paimon-fast query PATH --top score:10 [--where ...]     (or --bottom; in-process, from range-bitmap indexes)
    paimon-fast delete PATH --where "status = 'returned'"   (deletion vectors; no Parquet rewrite)

``--master`` (or ``$SPARK_MASTER``) points the commands at a cluster; the
default is local Spark with every core of this machine.  Importing this
module registers the commands.
"""

from __future__ import annotations

import os
import sys
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
        from ..core.bind import bind
        from ..core.sqlpredicate import parse_predicate
        from ..tables.parquet import ParquetDataset

        pred = parse_predicate(where)
        if local:
            try:
                schema = ParquetDataset(path).schema()
            except Exception:  # noqa: BLE001 - no schema yet (no data files...): the command itself says
                return
            bind(pred, schema)  # a column the dataset lacks, a literal it cannot compare: said now


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


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"
