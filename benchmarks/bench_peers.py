"""Indexed reads against what a Python user already has open: DuckDB, Polars and pyarrow.dataset
scanning the same directory, in the same run.

    python benchmarks/bench_peers.py                         # the 1e7 matrix (see DATASETS)
    python benchmarks/bench_peers.py --rows 1e6 --quick      # a few minutes
    python benchmarks/bench_peers.py --out /tmp/peers.md --json /tmp/peers.json
    pytest benchmarks/bench_peers.py --benchmark-only        # the pytest-benchmark part (1e6)

Datasets of our own design (:func:`generate`), written by pyarrow: ``FILES`` files of one row
group each, 6 columns: ``id`` BIGINT (unique), ``key`` STRING (unique), ``cat`` STRING (20 values
and a rare one, 0.05%), ``x`` DOUBLE uniform in [0, 1000), ``q`` INT in [0, 100), ``payload`` a
24-byte STRING.  Indexes: bloom on ``id`` and ``key``, bitmap on ``cat``, range bitmap on ``x``,
BSI on ``q``.  Layouts: ``scattered`` (rows in random order) and ``clustered`` (sorted by ``x``
across the files); Snappy or ZSTD; with or without a page index.

Each query is asked of every engine: ours (``ParquetDataset.read(where).to_arrow()`` and
``.count()``), DuckDB (``SELECT * FROM read_parquet(...) WHERE ...`` to an Arrow table, and
``count(*)``), Polars (``scan_parquet(...).filter(...).collect()`` and ``.select(pl.len())``) and
pyarrow (``dataset(...).to_table(filter=...)`` and ``count_rows``).  Every answer is checked
against an oracle of this benchmark's own: the rows' count and the sum of their ids, computed
with numpy from the generated columns (never an engine's filter).  Rounds alternate the engines'
order; each engine runs once untimed first (warm caches, as a service would have); the figure is
the median wall time, with CPU time / wall time (the cores it used).  Ours runs a second time
per round with no index reader held from the runs before and no file mapped (``HELD_READERS``
cleared, ``filemap`` off for the run: what a new process's first query of those files costs),
reported beside, never as a peer; its warm-up runs twice (a file read a second time is mapped),
and each of its cold runs is followed by an untimed warm one (the cold run drops what the warm runs
hold).
"Default threads" is every core for every engine; "1 thread" runs each engine on one (a separate
process: Polars reads ``POLARS_MAX_THREADS`` when imported).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import numpy as np

FILES = 50
# name -> (layout, codec, page index)
DATASETS = {
    "scattered-snappy": ("scattered", "snappy", False),
    "scattered-zstd-pi": ("scattered", "zstd", True),
    "clustered-snappy-pi": ("clustered", "snappy", True),
}
INDEXES = {
    "file-index.bloom-filter.columns": "id,key",
    "file-index.bitmap.columns": "cat",
    "file-index.range-bitmap.columns": "x",
    "file-index.bsi.columns": "q",
}


def queries(rows: int):
    """(name, SQL WHERE text): point lookups, several selectivities, an inexact plan."""
    return [
        ("id point", f"id = {rows // 2 + 7}"),
        ("key point", f"key = '{_key(rows // 3 + 11)}'"),
        ("cat rare 0.05%", "cat = 'rare'"),
        ("x < 1 (0.1%)", "x < 1"),
        ("x < 10 (1%)", "x < 10"),
        ("q 2 values (2%)", "q BETWEEN 20 AND 21"),
        ("x < 110 (11%)", "x < 110"),
        ("x < 500 (50%)", "x < 500"),
        ("inexact 1%", "x < 10 AND payload >= 'p5'"),
    ]


def _key(i) -> str:
    return f"k{(i * 2654435761) % (1 << 32):010d}"


# ---------------------------------------------------------------- the data and its oracle
def generate(root: str, rows: int, layout: str, codec: str, page_index: bool, files: int = FILES) -> dict:
    """Write the dataset (if not there) and return its oracle: per query the matching rows' count
    and id sum, from the generated columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paimon_fast.tables import ParquetDataset

    oracle_path = os.path.join(root, "_bench_oracle.json")
    if os.path.exists(oracle_path):
        # the data is there: its indexes are built if missing or stale (a no-op when current)
        ParquetDataset(root).build(INDEXES)
        with open(oracle_path) as f:
            return json.load(f)
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(20261129)
    ids = np.arange(rows, dtype=np.int64)
    cat_idx = rng.integers(0, 20, rows)
    cats = np.array([f"c{j:02d}" for j in range(20)] + ["rare"], dtype=object)
    rare = rng.random(rows) < 0.0005
    cat_idx[rare] = 20
    x = rng.random(rows) * 1000
    q = rng.integers(0, 100, rows).astype(np.int32)
    words = np.array([f"p{w:05x}" for w in rng.integers(0, 1 << 20, 4096)], dtype=object)
    pay_w = rng.integers(0, len(words), (rows, 3))
    order = rng.permutation(rows) if layout == "scattered" else np.argsort(x, kind="stable")
    per = rows // files
    for i in range(files):
        sel = order[i * per : (i + 1) * per if i < files - 1 else rows]
        payload = [
            f"{words[a]}{words[b]}{words[c]}"[:24]
            for a, b, c in pay_w[sel].tolist()  # 24 characters: compressible, not trivially so
        ]
        t = pa.table(
            {
                "id": ids[sel],
                "key": pa.array([_key(v) for v in ids[sel].tolist()]),
                "cat": pa.array(cats[cat_idx[sel]].tolist(), pa.string()),
                "x": x[sel],
                "q": q[sel],
                "payload": pa.array(payload, pa.string()),
            }
        )
        pq.write_table(t, os.path.join(root, f"part-{i:03d}.parquet"), compression=codec, write_page_index=page_index)
    # the oracle, from the columns themselves
    payload_all = None
    oracle = {}
    for name, where in queries(rows):
        if name == "id point":
            m = ids == rows // 2 + 7
        elif name == "key point":
            m = ids == rows // 3 + 11  # keys are unique per id
        elif name.startswith("cat rare"):
            m = cat_idx == 20
        elif name.startswith("q 2"):
            m = (q >= 20) & (q <= 21)
        elif name.startswith("inexact"):
            if payload_all is None:
                payload_all = np.array([f"{words[a]}{words[b]}{words[c]}"[:24] for a, b, c in pay_w.tolist()])
            m = (x < 10) & (payload_all >= "p5")
        else:
            lim = float(where.split("<")[1])
            m = x < lim
        oracle[name] = {"count": int(m.sum()), "id_sum": int(ids[m].sum())}
    ParquetDataset(root).build(INDEXES)
    with open(oracle_path, "w") as f:
        json.dump(oracle, f)
    return oracle


# ---------------------------------------------------------------- the engines
def engines(root: str, threads: int):
    """name -> (rows(where) -> pyarrow-like result, count(where) -> int)."""
    import duckdb
    import polars as pl
    import pyarrow as pa
    import pyarrow.dataset as pads

    from paimon_fast.core.sqlpredicate import parse_predicate
    from paimon_fast.tables import ParquetDataset
    from paimon_fast.read.arrow_filter import to_arrow_expression
    from paimon_fast.tables.parquet import HELD_READERS
    from paimon_fast.io.parquet import filemap

    if threads:
        pa.set_cpu_count(threads)
        pa.set_io_thread_count(threads)
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads={threads}")
    glob = os.path.join(root, "*.parquet")
    ds = ParquetDataset(root)
    schema = ds.schema()
    pads_ds = pads.dataset(root, format="parquet")

    def cold(action):
        # no index reader held, no file mapped (a new process reads a file with pread the first
        # time, maps it the second): the mappings of the warm runs are left for them
        HELD_READERS.clear()
        was, filemap.ENABLED = filemap.ENABLED, False
        try:
            return action()
        finally:
            filemap.ENABLED = was

    def pa_expr(where):
        return to_arrow_expression(parse_predicate(where), schema)

    def pl_expr(where):
        return pl.sql_expr(where)

    return {
        "ours": (lambda w: ds.read(w).to_arrow(), lambda w: ds.read(w).count()),
        # the same with no index reader held from the runs before (as a new process's first query)
        "ours_cold": (lambda w: cold(lambda: ds.read(w).to_arrow()), lambda w: cold(lambda: ds.read(w).count())),
        "duckdb": (
            lambda w: con.sql(f"SELECT * FROM read_parquet('{glob}') WHERE {w}").to_arrow_table(),
            lambda w: con.sql(f"SELECT count(*) FROM read_parquet('{glob}') WHERE {w}").fetchall()[0][0],
        ),
        "polars": (
            lambda w: pl.scan_parquet(glob).filter(pl_expr(w)).collect(),
            lambda w: pl.scan_parquet(glob).filter(pl_expr(w)).select(pl.len()).collect().item(),
        ),
        "pyarrow": (
            lambda w: pads_ds.to_table(filter=pa_expr(w)),
            lambda w: pads_ds.count_rows(filter=pa_expr(w)),
        ),
    }


def _check(engine, name, action, got, want):
    if action == "count":
        n, s = int(got), None
    else:
        if hasattr(got, "num_rows"):  # Arrow
            n, ids = got.num_rows, got.column("id").to_numpy()
        else:  # Polars
            n, ids = got.height, got.get_column("id").to_numpy()
        s = int(np.asarray(ids, dtype=np.int64).sum())
    if n != want["count"] or (s is not None and s != want["id_sum"]):
        raise AssertionError(f"{engine} {action} {name!r}: {n} rows (id sum {s}), the oracle says {want}")


def measure(root: str, oracle: dict, rows: int, threads: int, rounds: int, names=None) -> list:
    """Every (query, action): per engine the median wall seconds and CPU / wall, rounds
    the engines in a shuffled order each round, one untimed warm-up each."""
    eng = engines(root, threads)
    out = []
    for name, where in queries(rows):
        if names and name not in names:
            continue
        for action in ("rows", "count"):
            k = 0 if action == "rows" else 1
            times = {e: [] for e in eng}
            for e, fns in eng.items():  # warm-up, checked
                _check(e, name, action, fns[k](where), oracle[name])
                if e == "ours":  # twice: a file read the second time is mapped from then on
                    fns[k](where)
            shuffle = random.Random(f"{name}/{action}").shuffle  # (the same order each run)
            order = list(eng)
            for r in range(rounds):
                shuffle(order)  # (a fixed cyclic order always ran each engine after the same one)
                for e in order:
                    c0, t0 = time.process_time(), time.perf_counter()
                    got = eng[e][k](where)
                    wall = time.perf_counter() - t0
                    times[e].append((wall, (time.process_time() - c0) / wall if wall else 0.0))
                    del got
                    if e == "ours_cold":
                        # untimed: what the cold run dropped (the held index readers and what plans
                        # keep beside them) is read again, so the next warm run of ours finds what a
                        # warm process holds, not a cold one's state
                        eng["ours"][k](where)
            row = {"query": name, "where": where, "action": action, "threads": threads or "default"}
            for e, ts in times.items():
                row[e] = statistics.median(w for w, _ in ts)
                row[e + "_cpu"] = statistics.median(c for _, c in ts)
            peers = [row[e] for e in eng if not e.startswith("ours")]
            row["best_peer"] = min(peers)
            row["ratio"] = row["best_peer"] / row["ours"]
            row["ratio_cold"] = row["best_peer"] / row["ours_cold"]
            out.append(row)
            print(
                f"  {name:18s} {action:5s} ours {row['ours'] * 1e3:8.1f} ms (cpu/wall {row['ours_cpu']:.2f})  "
                + "  ".join(f"{e} {row[e] * 1e3:8.1f}" for e in eng if e != "ours")
                + f"   -> {row['ratio']:.2f}x",
                flush=True,
            )
    return out


def _child(args):
    """One thread setting in this process (the parent starts one per setting)."""
    oracle = json.load(open(os.path.join(args.root, "_bench_oracle.json")))
    res = measure(args.root, oracle, args.rows, args.threads, args.rounds, args.names)
    json.dump(res, sys.stdout if args.result == "-" else open(args.result, "w"))


def table(results: dict) -> str:
    """The markdown table of a run: per dataset, query, action and thread setting."""
    lines = [
        "| dataset | query | action | threads | ours (cpu/wall) | DuckDB | Polars | pyarrow | best peer / ours "
        "| ours, nothing held | best peer / it |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for ds_name, rows in results.items():
        for r in rows:
            lines.append(
                f"| {ds_name} | {r['query']} | {r['action']} | {r['threads']} | "
                f"{r['ours'] * 1e3:.1f} ms ({r['ours_cpu']:.2f}) | "
                f"{r['duckdb'] * 1e3:.1f} ({r['duckdb_cpu']:.2f}) | {r['polars'] * 1e3:.1f} ({r['polars_cpu']:.2f}) | "
                f"{r['pyarrow'] * 1e3:.1f} ({r['pyarrow_cpu']:.2f}) | **{r['ratio']:.2f}x** | "
                f"{r['ours_cold'] * 1e3:.1f} ms | {r['ratio_cold']:.2f}x |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=float, default=1e7)
    ap.add_argument("--files", type=int, default=FILES)
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated names of DATASETS")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="default,1", help="thread settings: 'default' and / or numbers")
    ap.add_argument("--quick", action="store_true", help="one dataset, 3 rounds, default threads only")
    ap.add_argument("--data", default=os.environ.get("PF_BENCH_DATA", "/tmp/paimon-fast-peers"))
    ap.add_argument("--out", help="write the markdown table here")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--queries", help="comma-separated query names (default: all)")
    # the child's arguments
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--names", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.rows = int(args.rows)
    if args.child:
        args.threads = int(args.threads)
        args.names = args.names.split("|") if args.names else None
        return _child(args)
    names = [d for d in args.datasets.split(",") if d]
    settings = [s.strip() for s in args.threads.split(",") if s.strip()]
    if args.quick:
        names, settings, args.rounds = names[:1], ["default"], 3
    results = {}
    for name in names:
        layout, codec, pi = DATASETS[name]
        root = os.path.join(args.data, f"{name}-{args.rows}")
        t0 = time.perf_counter()
        generate(root, args.rows, layout, codec, pi, args.files)
        print(f"{name}: {root} ready ({time.perf_counter() - t0:.0f} s)", flush=True)
        for s in settings:
            threads = 0 if s == "default" else int(s)
            env = dict(os.environ)
            if threads:
                env.update(POLARS_MAX_THREADS=str(threads), PAIMON_FAST_THREADS=str(threads), OMP_NUM_THREADS="1")
            res_path = os.path.join(args.data, f".result-{os.getpid()}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--root", root, "--rows", str(args.rows)]
            cmd += ["--threads", str(threads), "--rounds", str(args.rounds), "--result", res_path]
            if args.queries:
                cmd += ["--names", args.queries.replace(",", "|")]
            print(f" threads {s}:", flush=True)
            subprocess.run(cmd, env=env, check=True)
            results.setdefault(name, []).extend(json.load(open(res_path)))
            os.remove(res_path)
    md = table(results) + f"\n{machine_note()}\n"
    print(md)
    write_outputs(md, results, args.out, args.json)
    return 0


def first_touch_us(pause: float = 1.0, mib: int = 64) -> tuple:
    """``(warm, after pause)``: microseconds a 4 KiB page costs to read once more, while it is warm
    and after ``pause`` seconds.  On some virtual machines memory not touched for about a second
    costs microseconds a page on its next touch (on the project's VM: reads and writes alike, so
    presumably the host reclaiming or tracking the guest's memory), which every engine's query in
    shuffled rounds pays: milliseconds added to each, which decide the ratios of queries that take
    a few milliseconds."""
    a = np.ones(mib << 20, np.uint8)
    pages = len(a) // 4096

    def once():
        t0 = time.perf_counter()
        int(a[::4096].sum())
        return (time.perf_counter() - t0) * 1e6 / pages

    once()
    warm = once()
    time.sleep(pause)
    return round(warm, 3), round(once(), 3)


def machine_note() -> str:
    """One line on the machine for the tables: load average and :func:`first_touch_us`."""
    warm, cold = first_touch_us()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"load average {load}; a 4 KiB page read again costs {warm} us warm, {cold} us after 1 s untouched"


def write_outputs(md: str, results, out=None, json_path=None) -> None:
    """The markdown tables to ``out`` and the raw results to ``json_path`` (each when given)."""
    if out:
        with open(out, "w") as f:
            f.write(md)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1, default=str)


# ---------------------------------------------------------------- the pytest-benchmark part
try:
    import pytest
except ImportError:  # pragma: no cover - the script runs without pytest
    pytest = None

if pytest is not None:
    PYTEST_ROWS = int(float(os.environ.get("PF_PEERS_ROWS", "1e6")))
    PYTEST_QUERIES = ["cat rare 0.05%", "x < 10 (1%)", "x < 500 (50%)", "id point"]

    @pytest.fixture(scope="module")
    def peers_data():
        for mod in ("duckdb", "polars"):
            pytest.importorskip(mod, reason=f"{mod} is a peer of this benchmark (the frames extra)")
        root = os.path.join(os.environ.get("PF_BENCH_DATA", "/tmp/paimon-fast-peers"), f"pytest-{PYTEST_ROWS}")
        oracle = generate(root, PYTEST_ROWS, "scattered", "snappy", False, 20)
        return root, oracle, engines(root, 0)

    @pytest.mark.parametrize("query", PYTEST_QUERIES)
    @pytest.mark.parametrize("action", ["rows", "count"])
    @pytest.mark.parametrize("impl", ["ours", "duckdb", "polars", "pyarrow"])
    def test_peers(benchmark, peers_data, query, action, impl):
        root, oracle, eng = peers_data
        where = dict(queries(PYTEST_ROWS))[query]
        fn = eng[impl][0 if action == "rows" else 1]
        benchmark.group = f"peers[{action}: {query}]"
        benchmark.extra_info["impl"] = "kernel" if impl == "ours" else impl  # (the report's name for ours)
        got = benchmark.pedantic(lambda: fn(where), rounds=5, iterations=1, warmup_rounds=1)
        _check(impl, query, action, got, oracle[query])


if __name__ == "__main__":
    sys.exit(main())
