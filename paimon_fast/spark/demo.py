"""``paimon-fast demo``: the product in about a minute on local Spark (a sample dataset, every
index kind built on executors, predicates answered with the indexes and by a plain Spark scan,
the table of both).  Importing this module registers the command; it replaces the core's
in-process ``demo`` (which runs where pyspark is missing)."""

from __future__ import annotations

import os
import sys
import tempfile
import time

from ..cli import command
from .cli import RACE_ROUNDS, _jvm_path, _master_arg, _plural, _progress_printer, _session, _speedup, race

# the demo's sample dataset (also ``paimon-fast sample parquet``'s)
from ..tables.sample import COUNTRIES, STATUSES, generate_sample  # noqa: E402,F401  (handed on)


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
