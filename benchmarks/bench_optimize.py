"""What ``optimize`` buys and costs, in one run (issue 44's targets), answers checked against an
oracle of this benchmark's own.

    python benchmarks/bench_optimize.py                      # 1e7 rows in 50 files (bench_peers' data)
    python benchmarks/bench_optimize.py --rows 1e6 --quick   # a few minutes
    python benchmarks/bench_optimize.py --rows 1e5 --quick   # a smoke run (PF_OPTIMIZE_ROWS=1e5 too)
    python benchmarks/bench_optimize.py --pages              # the page-size measurement only
    python benchmarks/bench_optimize.py --out /tmp/opt.md --json /tmp/opt.json
    python benchmarks/bench_optimize.py --order back-to-back --warmup-ms 100   # engines warmed first
    python benchmarks/bench_optimize.py --order back-to-back --warmup-ms 100 --cycles 3   # and spread

The dataset is bench_peers.py's ``scattered-snappy`` (rows in random order, one row group a file,
pyarrow's 1 MB pages, no page index; bloom filters on ``id`` and ``key``, a bitmap on ``cat``, a
range bitmap on ``x``, a BSI on ``q``), copied, and the copy optimized by ``x``
(``ParquetDataset.optimize(["x"])``, defaults: files of the mean size of those rewritten, row
groups of 1,048,576 rows, pages of 4,096 rows, Snappy).  Measured, each the median of ``--rounds``
after an untimed warm-up, the engines in a shuffled order each round (``--order back-to-back``:
each engine's rounds in a row, which on a machine that makes memory left untouched for a second
slow to touch again measures the engines rather than the machine; the tables' last line says
what a page costs there):

* **cost**: our optimize in this process against DuckDB's ``COPY (SELECT * FROM read_parquet(...)
  ORDER BY x) TO ...`` of the same files in this process; on local Spark (``--spark``) our
  ``paimon_fast.spark.optimize`` against ``spark.read.parquet(...).sortWithinPartitions("x")
  .write.parquet(...)`` (each once: they rewrite the data);
* **cluster-column predicates** (``x`` ranges selecting 0.01%, 0.1% and 1%): our read
  (``to_arrow()`` and ``count()``) of the optimized copy against DuckDB's and Polars' scans of the
  original and of the optimized directory (targets, against DuckDB: 10x and 3x);
* **other predicates** on indexed columns (``id``, ``key``, ``cat``, ``q``): our read of the
  optimized copy against our read of the original, the two measured in turn (target: at least
  0.9x the speed before); and point lookups of ``--points`` values of ``id`` and of ``key``
  (ours only: the mean of one value's lookup), since one value's time is mostly how many files
  its bloom filters keep by chance on each copy;
* **plans**: the plan of a cluster-column predicate on the optimized copy (catalog statistics),
  and the files our plan keeps for each other predicate on each copy (a point lookup's bloom
  filters keep a file per false positive, so the two copies' lookups read different numbers of
  files by chance);
* **plain readers**: ``pq.read_table(dir)``, DuckDB and (``--spark``) ``spark.read.parquet(dir)``
  read the same rows before and after (count and id sum).

The oracle: per query the matching rows' count and id sum, from the generated columns (numpy,
the generator's own random streams), never from an engine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_peers  # noqa: E402

CLUSTER_QUERIES = [
    ("x < 0.1 (0.01%)", "x < 0.1"),
    ("x 500..501 (0.1%)", "x BETWEEN 500 AND 501"),
    ("x < 10 (1%)", "x < 10"),
]
OTHER_QUERIES = [
    ("id point", None),  # (bench_peers' text: rows-dependent)
    ("key point", None),
    ("cat rare 0.05%", None),
    ("q 2 values (2%)", None),
]
# Point lookups over many values, ours only (the peers would scan every file for each value).
# One value's time is mostly the number of files its bloom filters keep, a draw of each layout's
# own (fpp 0.1 a file); over many values the draws average out and the layout's cost shows.
POINT_COLUMNS = ("id", "key")
POINTS = 100


def point_values(rows: int, n: int) -> list:
    """The ids looked up by the many-value point queries (the same each run)."""
    return sorted(random.Random(44).sample(range(rows), min(n, rows)))


def point_name(col: str, n: int) -> str:
    return f"{col} points ({n} values)"


def point_where(col: str, v: int) -> str:
    return f"id = {v}" if col == "id" else f"key = '{bench_peers._key(v)}'"


def _columns(rows: int):
    """The generator's columns the oracle needs, drawn from its random streams in its order."""
    rng = np.random.default_rng(20261129)
    ids = np.arange(rows, dtype=np.int64)
    rng.integers(0, 20, rows)  # cat
    rng.random(rows)  # the rare category
    x = rng.random(rows) * 1000
    return ids, x


def oracle(rows: int, peers_oracle: dict) -> dict:
    ids, x = _columns(rows)
    out = {}
    for name, where in CLUSTER_QUERIES:
        if "BETWEEN" in where:
            lo, hi = (float(v) for v in where.split("BETWEEN")[1].split("AND"))
            m = (x >= lo) & (x <= hi)
        else:
            m = x < float(where.split("<")[1])
        out[name] = {"count": int(m.sum()), "id_sum": int(ids[m].sum())}
    for name, _ in OTHER_QUERIES:
        out[name] = peers_oracle[name]
    out["all"] = {"count": rows, "id_sum": int(ids.sum())}
    return out


def point_oracle(rows: int, n: int) -> dict:
    """Per value of the many-value point queries: one row, its id (ids and keys are unique)."""
    return {v: {"count": 1, "id_sum": v} for v in point_values(rows, n)}


def _where(name: str, rows: int) -> str:
    for n, w in CLUSTER_QUERIES:
        if n == name:
            return w
    return dict(bench_peers.queries(rows))[name]


def _check(who, name, got_n, got_sum, want):
    if got_n != want["count"] or (got_sum is not None and got_sum != want["id_sum"]):
        raise AssertionError(f"{who} {name!r}: {got_n} rows (id sum {got_sum}), the oracle says {want}")


def _median(fn, rounds: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


# ---------------------------------------------------------------- cost


def cost_in_process(orig: str, opt: str, work: str) -> dict:
    import duckdb

    from paimon_fast.tables import ParquetDataset

    out_file = os.path.join(work, "duckdb-sorted.parquet")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    t0 = time.perf_counter()
    con.execute(f"COPY (SELECT * FROM read_parquet('{orig}/*.parquet') ORDER BY x) TO '{out_file}' (FORMAT parquet)")
    duck = time.perf_counter() - t0
    os.remove(out_file)
    rep = ParquetDataset(opt).optimize(["x"])
    return {"ours": rep.seconds, "duckdb": duck, "report": str(rep), "phases": rep.phases}


def cost_on_spark(orig: str, work: str) -> dict:
    from paimon_fast import spark as pfs

    spark = pfs.session()
    copy = os.path.join(work, "spark-copy")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(orig, copy)
    out = os.path.join(work, "spark-sorted")
    shutil.rmtree(out, ignore_errors=True)
    spark.read.parquet(orig).limit(1).collect()  # the session and the file listing warm
    t0 = time.perf_counter()
    spark.read.parquet(orig).sortWithinPartitions("x").write.parquet(out)
    base = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    rep = pfs.optimize(spark, copy, ["x"])
    shutil.rmtree(copy, ignore_errors=True)
    return {"ours": rep.seconds, "spark": base, "report": str(rep), "phases": rep.phases}


# ---------------------------------------------------------------- reads


def schedule(names: list, rounds: int, order: str, shuffle, in_turn: tuple = (), cycles: int = 1) -> list:
    """The engines' runs, in order, ``cycles`` times over: first the engines of ``in_turn`` one
    round each in turn (who goes first alternating), then the others as ``order`` says (see
    ``measure_reads``).  More cycles spread each engine's rounds over the run, so a slow stretch
    of the machine, which lasts seconds, falls on every engine."""
    runs = []
    rest = [e for e in names if e not in in_turn]
    for _ in range(cycles):
        if in_turn:
            a, b = in_turn
            for i in range(rounds):
                runs += [a, b] if i % 2 == 0 else [b, a]
        if order == "back-to-back":
            shuffle(rest)
            runs += [e for e in rest for _ in range(rounds)]
        else:
            for _ in range(rounds):
                shuffle(rest)  # (a fixed cyclic order always ran each engine after the same one)
                runs += rest
    return runs


def measure_reads(
    orig: str,
    opt: str,
    rows: int,
    want: dict,
    rounds: int,
    order: str = "shuffled",
    warmup_ms: float = 0.0,
    points: int = POINTS,
    cycles: int = 1,
) -> list:
    """Every engine's median time of every query; ``order``: ``shuffled`` (each round runs the
    engines in a new order) or ``back-to-back`` (each engine's rounds in a row: an engine measured
    with its own memory warm, apart from what the machine does to memory left untouched).
    ``warmup_ms`` (back-to-back): before its rounds, each engine runs untimed for at least this
    long (once at least): on this machine a processor that was idle or busy with another engine
    runs the next ~10-20 ms slower, which costs a short query several of its rounds and a long
    one part of its first (benchmarks/README.md, "stop 64").

    For the other predicates (the target compares our read of the two copies), our two reads are
    measured in turn, a round of each in turn: this machine's slow stretches, which last seconds,
    then fall on both alike.  The many-value point queries (``points`` values each, ours only)
    time all the values' lookups in a round and report the mean of one lookup.  ``cycles``: the
    schedule that many times over (``schedule``), the median taken over all the rounds."""
    import duckdb

    from paimon_fast.tables import ParquetDataset

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    ds_orig, ds_opt = ParquetDataset(orig), ParquetDataset(opt)

    def ours(ds, w, action):
        if action == "count":
            return ds.read(w).count(), None
        t = ds.read(w).to_arrow()
        return t.num_rows, int(np.asarray(t.column("id"), np.int64).sum())

    import polars as pl

    def polars(d, w, action):
        lf = pl.scan_parquet(os.path.join(d, "*.parquet")).filter(pl.sql_expr(w))
        if action == "count":
            return lf.select(pl.len()).collect().item(), None
        t = lf.collect()
        return t.height, int(np.asarray(t.get_column("id").to_numpy(), np.int64).sum())

    def duck(d, w, action):
        if action == "count":
            return con.sql(f"SELECT count(*) FROM read_parquet('{d}/*.parquet') WHERE {w}").fetchall()[0][0], None
        t = con.sql(f"SELECT * FROM read_parquet('{d}/*.parquet') WHERE {w}").to_arrow_table()
        return t.num_rows, int(np.asarray(t.column("id"), np.int64).sum())

    values = point_values(rows, points)
    want_points = point_oracle(rows, points)

    def ours_points(ds, col, action):
        """Every value's lookup, each checked; returns nothing to check (the count and id sum
        of all the values would hide a wrong pair)."""
        for v in values:
            _check("ours", point_name(col, points), *ours(ds, point_where(col, v), action), want_points[v])
        return None

    queries = [("cluster", n) for n, _ in CLUSTER_QUERIES] + [("other", n) for n, _ in OTHER_QUERIES]
    queries += [("points", point_name(c, points)) for c in POINT_COLUMNS] if points else []
    results = []
    for group, name in queries:
        col = name.split()[0]
        w = _where(name, rows) if group != "points" else point_where(col, values[0]) + f" ... ({len(values)} values)"
        for action in ("rows", "count"):
            if group == "points":
                engines = {
                    "ours_opt": lambda: ours_points(ds_opt, col, action),
                    "ours_orig": lambda: ours_points(ds_orig, col, action),
                }
            else:
                engines = {
                    "ours_opt": lambda: ours(ds_opt, w, action),
                    "ours_orig": lambda: ours(ds_orig, w, action),
                    "duckdb_orig": lambda: duck(orig, w, action),
                    "duckdb_opt": lambda: duck(opt, w, action),
                    "polars_orig": lambda: polars(orig, w, action),
                    "polars_opt": lambda: polars(opt, w, action),
                }
            for e, fn in engines.items():
                got = fn()
                if got is not None:
                    _check(e, name, *got, want[name])
            row = {"group": group, "query": name, "where": w, "action": action}
            times = {e: [] for e in engines}
            shuffle = random.Random(f"{name}/{action}").shuffle  # (the same order each run)
            in_turn = ("ours_orig", "ours_opt") if group != "cluster" else ()
            runs = schedule(list(engines), rounds, order, shuffle, in_turn, cycles)
            for k, e in enumerate(runs):
                # (no warm-up between our two reads in turn: each warms the same code)
                if warmup_ms > 0 and (k == 0 or (runs[k - 1] != e and not {runs[k - 1], e} <= set(in_turn))):
                    w0 = time.perf_counter()
                    engines[e]()
                    while time.perf_counter() - w0 < warmup_ms / 1e3:
                        engines[e]()
                t0 = time.perf_counter()
                engines[e]()
                times[e].append(time.perf_counter() - t0)
            per = len(values) if group == "points" else 1  # (a many-value query: one lookup's mean)
            for e, ts in times.items():
                row[e] = statistics.median(ts) / per
            print(
                f"  {name:20s} {action:5s} ms: " + "  ".join(f"{e} {row[e] * 1e3:.2f}" for e in engines),
                flush=True,
            )
            results.append(row)
    return results


def plan_times(opt: str, rows: int, rounds: int) -> dict:
    from paimon_fast.tables import ParquetDataset

    ds = ParquetDataset(opt)
    out = {}
    for name, w in CLUSTER_QUERIES:
        out[name] = _median(lambda: ds.plan(w), rounds)
        p = ds.plan(w)
        out[name + " files"] = f"{len(p.kept)}/{p.report.files_total}"
    return out


def files_kept(orig: str, opt: str, rows: int, points: int = POINTS) -> dict:
    """Per other query, the files our plan keeps on each copy (``"kept/total"``; for a many-value
    point query the mean over its values): a bloom filter's false positives (fpp 0.1 a file by
    default) keep files of their own on each layout, and each costs a read of the column."""
    from paimon_fast.tables import ParquetDataset

    out = {}
    dss = [ParquetDataset(d) for d in (opt, orig)]
    for name, _ in OTHER_QUERIES:
        w = _where(name, rows)
        out[name] = [f"{len(p.kept)}/{p.report.files_total}" for p in (ds.plan(w) for ds in dss)]
    values = point_values(rows, points)
    for col in POINT_COLUMNS if points else ():
        cells = []
        for ds in dss:
            plans = [ds.plan(point_where(col, v)) for v in values]
            mean = sum(len(p.kept) for p in plans) / len(plans)
            cells.append(f"{mean:.2f}/{plans[0].report.files_total} (mean)")
        out[point_name(col, points)] = cells
    return out


def plain_readers(d: str, with_spark: bool) -> dict:
    import duckdb
    import pyarrow.parquet as pq

    t = pq.read_table(d, columns=["id"])
    out = {"pyarrow": (t.num_rows, int(np.asarray(t.column("id"), np.int64).sum()))}
    n, s = duckdb.connect().sql(f"SELECT count(*), sum(id) FROM read_parquet('{d}/**/*.parquet')").fetchall()[0]
    out["duckdb"] = (int(n), int(s))
    if with_spark:
        from paimon_fast import spark as pfs

        r = pfs.session().read.parquet(d).selectExpr("count(*)", "sum(id)").collect()[0]
        out["spark"] = (int(r[0]), int(r[1]))
    return out


# ---------------------------------------------------------------- the page size


def pages(orig: str, work: str, rows: int = 2_000_000) -> str:
    """Pages of 1,024 to 16,384 rows and pyarrow's 1 MB pages, on rows of the dataset sorted by x:
    file size, a full scan, 200 scattered rows, 1,000 contiguous rows (the native reader, best of 5)."""
    import pyarrow.parquet as pq

    from paimon_fast.io.parquet.native import read_files

    src = pq.read_table(orig).slice(0, rows)
    src = src.take(np.argsort(src.column("x").to_numpy(), kind="stable"))
    n = src.num_rows
    rng = np.random.default_rng(3)
    scattered = np.sort(rng.choice(n, 200, replace=False))
    contig = np.arange(n // 3, n // 3 + 1000)

    def best(f, k=5):
        ts = []
        for _ in range(k):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    lines = [
        f"| page rows ({n:,} rows sorted by x) | bytes | full scan | 200 scattered rows | 1,000 contiguous rows |",
        "| --- | --- | --- | --- | --- |",
    ]
    for page_rows in (1024, 2048, 4096, 8192, 16384, None):
        path = os.path.join(work, f"pages-{page_rows}.parquet")
        kw = dict(write_page_index=True, compression="snappy")
        if page_rows:
            kw.update(data_page_size=1, write_batch_size=page_rows)
        pq.write_table(src, path, row_group_size=1 << 20, **kw)
        full = best(lambda: read_files([(path, None)], src.schema.names), 3)
        sc = best(lambda: read_files([(path, scattered)], src.schema.names))
        co = best(lambda: read_files([(path, contig)], src.schema.names))
        lines.append(
            f"| {page_rows or 'pyarrow 1 MB pages'} | {os.path.getsize(path):,} | {full * 1e3:.0f} ms | "
            f"{sc * 1e3:.1f} ms | {co * 1e3:.2f} ms |"
        )
        os.remove(path)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the report


def table(res: dict) -> str:
    lines = []
    c = res["cost"]
    lines += [
        "| cost | ours | baseline | ours / baseline | target |",
        "| --- | --- | --- | --- | --- |",
        f"| in-process optimize vs DuckDB COPY ... ORDER BY x | {c['ours']:.1f} s | {c['duckdb']:.1f} s | "
        f"**{c['ours'] / c['duckdb']:.2f}x** | <= 2x |",
    ]
    if "spark" in res:
        s = res["spark"]
        lines.append(
            f"| Spark optimize vs sortWithinPartitions(x).write.parquet | {s['ours']:.1f} s | {s['spark']:.1f} s | "
            f"**{s['ours'] / s['spark']:.2f}x** | <= 1.5x |"
        )
    lines += [
        "",
        f"Times in ms (median; engines {res.get('order', 'shuffled')}"
        + (" each round" if res.get("order", "shuffled") == "shuffled" else ", each engine's rounds in a row")
        + (f", each engine run untimed for {res['warmup_ms']:g} ms before its rounds" if res.get("warmup_ms") else "")
        + (f"; {res['cycles']} cycles of it, the median over all rounds" if res.get("cycles", 1) > 1 else "")
        + "; our two reads of each other query in turn, a round of each"
        + "); ratios are the other's time / ours on the optimized copy (above 1: ours "
        "is faster). Targets: cluster-column queries >= 10x DuckDB on the original and >= 3x DuckDB on "
        "the optimized copy; other queries: ours after / ours before >= 0.9x. A many-value point query "
        "gives the mean time of one value's lookup (ours only).",
        "",
        "| query | action | ours, optimized | ours, original | DuckDB orig | DuckDB opt | Polars orig | "
        "Polars opt | DuckDB orig / ours | DuckDB opt / ours | Polars orig / ours | Polars opt / ours | "
        "ours before / after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in res["reads"]:
        a = r["ours_opt"]
        engines = ("ours_opt", "ours_orig", "duckdb_orig", "duckdb_opt", "polars_orig", "polars_opt")
        cells = [f"{r[k] * 1e3:.2f}" if k in r else "-" for k in engines]
        ratios = [
            ("-" if k not in r else f"**{r[k] / a:.1f}x**" if i < 4 and r[k] / a >= 10 else f"**{r[k] / a:.2f}x**")
            for i, k in enumerate(("duckdb_orig", "duckdb_opt", "polars_orig", "polars_opt", "ours_orig"))
        ]
        lines.append(f"| {r['query']} | {r['action']} | " + " | ".join(cells + ratios) + " |")
    lines += ["", "| plan of (optimized copy) | time | files kept |", "| --- | --- | --- |"]
    for name, _ in CLUSTER_QUERIES:
        lines.append(f"| {name} | {res['plans'][name] * 1e3:.2f} ms | {res['plans'][name + ' files']} |")
    if "kept" in res:
        lines += ["", "| other query | files kept, optimized | files kept, original |", "| --- | --- | --- |"]
        for name, (a, b) in res["kept"].items():
            lines.append(f"| {name} | {a} | {b} |")
    lines += ["", "| plain reader | before (rows, id sum) | after | same |", "| --- | --- | --- | --- |"]
    for k, v in res["plain_before"].items():
        w = res["plain_after"][k]
        lines.append(f"| {k} | {v[0]:,}, {v[1]:,} | {w[0]:,}, {w[1]:,} | {'yes' if tuple(v) == tuple(w) else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=float, default=float(os.environ.get("PF_OPTIMIZE_ROWS", "1e7")))
    ap.add_argument("--files", type=int, default=bench_peers.FILES)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 rounds, 10 point values, no Spark")
    ap.add_argument("--spark", action="store_true", help="also the Spark cost and Spark as a plain reader")
    ap.add_argument("--pages", action="store_true", help="only the page-size measurement")
    ap.add_argument("--data", default=os.environ.get("PF_BENCH_DATA", "/tmp/paimon-fast-optimize"))
    ap.add_argument(
        "--order",
        choices=("shuffled", "back-to-back"),
        default="shuffled",
        help="the engines in a new order each round (default), or each engine's rounds in a row",
    )
    ap.add_argument(
        "--warmup-ms",
        type=float,
        default=0.0,
        help="with --order back-to-back: run each engine untimed this long before its rounds",
    )
    ap.add_argument(
        "--points",
        type=int,
        default=POINTS,
        help=f"values of each many-value point query (default {POINTS}; 0: none)",
    )
    ap.add_argument(
        "--cycles",
        type=int,
        default=1,
        help="run the engines' rounds this many times over, in a new order each time (default 1)",
    )
    ap.add_argument("--out", help="write the markdown tables here")
    ap.add_argument("--json", help="write the raw results here")
    args = ap.parse_args(argv)
    if args.warmup_ms and args.order != "back-to-back":
        ap.error("--warmup-ms needs --order back-to-back")
    if args.cycles < 1 or args.rounds < 1 or args.points < 0:
        ap.error("--cycles and --rounds must be at least 1, --points at least 0")
    rows = int(args.rows)
    if args.quick:
        args.rounds, args.spark, args.points = 3, False, min(args.points, 10)
    orig = os.path.join(args.data, f"scattered-snappy-{rows}")
    t0 = time.perf_counter()
    peers_oracle = bench_peers.generate(orig, rows, "scattered", "snappy", False, args.files)
    print(f"{orig} ready ({time.perf_counter() - t0:.0f} s)", flush=True)
    work = os.path.join(args.data, "work")
    os.makedirs(work, exist_ok=True)
    if args.pages:
        md = pages(orig, work, min(rows, 2_000_000))
        print(md)
        return 0
    want = oracle(rows, peers_oracle)
    opt = os.path.join(args.data, f"optimized-{rows}")
    shutil.rmtree(opt, ignore_errors=True)
    shutil.copytree(orig, opt)
    res = {"rows": rows, "files": args.files, "load_before": os.getloadavg()}
    res["plain_before"] = plain_readers(orig, args.spark)
    print("cost, in this process:", flush=True)
    res["cost"] = cost_in_process(orig, opt, work)
    print(f"  {res['cost']['report']}\n  DuckDB COPY ... ORDER BY x: {res['cost']['duckdb']:.1f} s", flush=True)
    res["plain_after"] = plain_readers(opt, args.spark)
    for k, v in res["plain_after"].items():
        _check(f"{k} (optimized)", "all", *v, want["all"])
    for k, v in res["plain_before"].items():
        _check(f"{k} (original)", "all", *v, want["all"])
    if args.spark:
        print("cost, on Spark:", flush=True)
        res["spark"] = cost_on_spark(orig, work)
        print(f"  {res['spark']['report']}\n  Spark sortWithinPartitions: {res['spark']['spark']:.1f} s", flush=True)
    print("reads:", flush=True)
    res["order"] = args.order
    res["warmup_ms"] = args.warmup_ms
    res["cycles"] = args.cycles
    res["reads"] = measure_reads(
        orig, opt, rows, want, args.rounds, args.order, args.warmup_ms, args.points, args.cycles
    )
    res["plans"] = plan_times(opt, rows, args.rounds)
    res["kept"] = files_kept(orig, opt, rows, args.points)
    res["load_after"] = os.getloadavg()
    md = table(res)
    md += f"\nload average before / after: {res['load_before']} / {res['load_after']}\n"
    md += f"\n{bench_peers.machine_note()}\n"
    print(md)
    bench_peers.write_outputs(md, res, args.out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
