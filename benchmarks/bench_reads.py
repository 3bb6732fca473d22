"""The read object (``paimon_fast.read.lazy.LazyRead``): bounded memory, time to the first batch,
``limit``, against ``to_arrow()`` and pypaimon 2.1's ``to_duckdb``.

    pytest benchmarks/bench_reads.py --benchmark-only --benchmark-columns=median,rounds -s

Data (written once, kept in the temporary directory): a Parquet dataset and a Paimon table
(pypaimon-rust's writer), each ``PF_BENCH_LAZY_ROWS`` rows (default 1e7) in
``PF_BENCH_LAZY_FILES`` files (default 10): ``id`` BIGINT, ``k`` INT uniform in 0..99 with a
range-bitmap file index, ``v`` DOUBLE, ``s`` STRING (12 characters); the ``wide`` tables have 8
columns more (timestamp, date, int, double, three strings, boolean: about 120 bytes a row in
Arrow, the narrow ones about 30).  ``k < 10`` keeps 10% of the rows.

* ``memory``: peak RSS growth of one read in a fresh process (VmHWM reset after the imports and
  opening the table, minus VmRSS then): the stream registered in DuckDB and answering
  ``SELECT count(*), sum(v)``, ``to_arrow()`` of the same answer (then the same query over it),
  and for the Paimon table pypaimon 2.1's ``to_duckdb`` with the same filter (a materialised
  ``to_arrow``).  ``extra_info``: each growth, the rows, and the ratios.
* ``first-batch``: a 1e7-row read (the dataset without a predicate, the Paimon table with
  ``k >= 0`` on the fast path and without a predicate on pypaimon's path) drained through
  ``to_arrow_batch_reader()``: time to the first batch (planning included) and to the last, warm
  (one untimed read first: imports, the OS's page cache, parsed footers), medians of the rounds.
* ``limit``: ``limit=10`` with ``k >= 1`` (99% of the rows): what was decoded (rows, pages,
  bytes) against the first file.
* ``total``: the whole ``k < 10`` answer by the stream (``to_arrow()``) and by the former eager
  read (``scan`` / ``read_with_index``), to show what streaming costs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROWS = int(float(os.environ.get("PF_BENCH_LAZY_ROWS", "1e7")))
FILES = int(os.environ.get("PF_BENCH_LAZY_FILES", "10"))
WHERE = "k < 10"
ROUNDS = int(os.environ.get("PF_BENCH_ROUNDS", "3"))


def _batch(i: int, n: int, wide: bool = False) -> pa.Table:
    """Rows ``i * n`` to ``(i + 1) * n``: 4 columns (about 30 bytes a row in Arrow), or with
    ``wide`` 12 (about 120 bytes: a timestamp, a date, a boolean, more numbers and strings)."""
    rng = np.random.default_rng(i)
    ids = np.arange(i * n, (i + 1) * n, dtype=np.int64)
    cols = {
        "id": ids,
        "k": pa.array(rng.integers(0, 100, n), pa.int32()),
        "v": rng.random(n),
        "s": pa.array(np.char.add("s-", (ids % 10**9).astype("U10"))),
    }
    if wide:
        countries = np.array(["DE", "FR", "NO", "JP", "US", "BR", "IN", "SG"], dtype=object)
        cols.update(
            {
                "ts": pa.array(1_700_000_000_000_000 + ids * 1000, pa.timestamp("us")),
                "day": pa.array((19_000 + ids // 100_000).astype(np.int32), pa.date32()),
                "qty": pa.array(rng.integers(1, 100, n), pa.int32()),
                "price": np.round(rng.random(n) * 500, 2),
                "country": pa.array(countries[rng.integers(0, len(countries), n)]),
                "user_id": pa.array(np.char.add("u", (rng.integers(0, 10**8, n)).astype("U8"))),
                "note": pa.array(np.char.add("order note for row ", ids.astype("U10"))),
                "flag": pa.array(rng.random(n) < 0.5),
            }
        )
    return pa.table(cols)


def _dataset(wide: bool = False) -> str:
    root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-lazy-ds-{ROWS}-{FILES}{'-wide' if wide else ''}")
    if not os.path.exists(os.path.join(root, "_done")):
        from paimon_fast.tables import ParquetDataset

        os.makedirs(root, exist_ok=True)
        n = ROWS // FILES
        for i in range(FILES):
            pq.write_table(_batch(i, n, wide), os.path.join(root, f"part-{i:03d}.parquet"))
        ParquetDataset(root).build({"file-index.range-bitmap.columns": "k"})
        open(os.path.join(root, "_done"), "w").close()
    return root


def _warehouse(wide: bool = False) -> str:
    pytest.importorskip("pypaimon", reason="pypaimon (the tables extra) writes and reads the Paimon table")
    pytest.importorskip("pypaimon_rust", reason="pypaimon-rust (the tables extra) writes the file indexes")
    wh = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-lazy-wh-{ROWS}-{FILES}{'-wide' if wide else ''}")
    if not os.path.exists(os.path.join(wh, "_done")):
        from pypaimon import CatalogFactory, Schema

        cat = CatalogFactory.create({"warehouse": wh})
        cat.create_database("db", True)
        schema = _batch(0, 1, wide).schema
        cat.create_table(
            "db.t",
            Schema.from_pyarrow_schema(
                schema, options={"bucket": "-1", "write.native.enabled": "true", "file-index.range-bitmap.columns": "k"}
            ),
            True,
        )
        n = ROWS // FILES
        for i in range(FILES):
            t = cat.get_table("db.t")
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(_batch(i, n, wide))
            c.commit(w.prepare_commit())
            w.close()
            c.close()
        open(os.path.join(wh, "_done"), "w").close()
    return wh


# ---------------------------------------------------------------- peak RSS in a fresh process

_PEAK = r"""
import json, sys, time
kind, mode, where, path = sys.argv[1:5]

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024

import duckdb, pyarrow as pa, pyarrow.compute, pyarrow.dataset
import paimon_fast as pf
# the modules a read imports on first use, imported before the baseline (code, not the read's memory)
import paimon_fast.read.lazy, paimon_fast.io.parquet.rows, paimon_fast.read.arrow_filter
from paimon_fast.io.parquet.native import kernels
kernels(False)
if kind == "dataset":
    import paimon_fast.tables.stream, paimon_fast.tables.deletes, paimon_fast.fileindex.range_bitmap
else:
    import paimon_fast.paimon.stream, paimon_fast.paimon.fastpath, paimon_fast.paimon.scan
if kind == "dataset":
    from paimon_fast.tables import ParquetDataset
    ds = ParquetDataset(path)
    open_read = lambda: ds.read(where)
else:
    from pypaimon import CatalogFactory
    from paimon_fast.paimon import read
    table = CatalogFactory.create({"warehouse": path}).get_table("db.t")
    open_read = lambda: read(table, where)
con = duckdb.connect()   # DuckDB started before the baseline: the growth is the read's and the query's
con.sql("SELECT 1").fetchall()
base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")   # VmHWM from here
t0 = time.perf_counter()
if mode == "stream_duckdb":
    open_read().to_duckdb("t", con)
    n, s = con.sql("SELECT count(*), sum(v) FROM t").fetchall()[0]
elif mode == "to_arrow":
    t = open_read().to_arrow()
    con.register("t", t)
    n, s = con.sql("SELECT count(*), sum(v) FROM t").fetchall()[0]
elif mode == "pypaimon_to_duckdb":
    rb = table.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().less_than("k", 10))
    rb.new_read().to_duckdb(rb.new_scan().plan().splits(), "t", con)
    n, s = con.sql("SELECT count(*), sum(v) FROM t WHERE k < 10").fetchall()[0]
else:
    raise SystemExit(mode)
secs = time.perf_counter() - t0
print(json.dumps({"growth": status("VmHWM") - base, "base": base, "rows": n, "sum": s, "seconds": secs}))
"""


def _peak(kind, mode, path):
    r = subprocess.run([sys.executable, "-c", _PEAK, kind, mode, WHERE, path], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("width", ["narrow", "wide"])
@pytest.mark.parametrize("kind", ["dataset", "paimon"])
@pytest.mark.benchmark(group="lazyread-memory", min_rounds=1)
def test_memory_stream_vs_materialised(benchmark, kind, width):
    wide = width == "wide"
    path = _dataset(wide) if kind == "dataset" else _warehouse(wide)
    modes = ["stream_duckdb", "to_arrow"] + (["pypaimon_to_duckdb"] if kind == "paimon" else [])
    out = {}

    def run():
        for m in modes:
            out[m] = _peak(kind, m, path)

    benchmark.pedantic(run, rounds=1, iterations=1)
    rows = {m: out[m]["rows"] for m in modes}
    assert len(set(rows.values())) == 1, rows  # every way counts the same rows
    info = {f"{m}_growth": out[m]["growth"] for m in modes}
    info.update({f"{m}_seconds": round(out[m]["seconds"], 3) for m in modes})
    info["rows"] = rows["stream_duckdb"]
    info["stream_over_to_arrow"] = round(out["stream_duckdb"]["growth"] / out["to_arrow"]["growth"], 3)
    if "pypaimon_to_duckdb" in out:
        info["stream_over_pypaimon_to_duckdb"] = round(
            out["stream_duckdb"]["growth"] / out["pypaimon_to_duckdb"]["growth"], 3
        )
    info["width"] = width
    benchmark.extra_info.update(info)
    print(
        f"\n{kind} {width} {ROWS:,} rows, {WHERE!r} ({info['rows']:,} rows): peak RSS growth "
        + ", ".join(f"{m} {out[m]['growth'] / 2**20:.1f} MiB in {out[m]['seconds']:.2f}s" for m in modes)
        + f"; stream / to_arrow {info['stream_over_to_arrow']}"
        + (f", stream / pypaimon to_duckdb {info['stream_over_pypaimon_to_duckdb']}" if kind == "paimon" else "")
    )


# ---------------------------------------------------------------- time to the first batch


def _open(kind, where, fast=True):
    if kind == "dataset":
        from paimon_fast.tables import ParquetDataset

        return ParquetDataset(_dataset()).read(where)
    from pypaimon import CatalogFactory

    from paimon_fast.paimon import read

    return read(CatalogFactory.create({"warehouse": _warehouse()}).get_table("db.t"), where, fast=fast)


@pytest.mark.parametrize(
    "kind,where",
    [("dataset", None), ("paimon", "k >= 0"), ("paimon", None)],
    ids=["dataset", "paimon-fast-path", "paimon-pypaimon-path"],
)
@pytest.mark.benchmark(group="lazyread-first-batch", min_rounds=1)
def test_time_to_first_batch(benchmark, kind, where):
    times = []

    def run():
        t0 = time.perf_counter()
        reader = _open(kind, where).to_arrow_batch_reader()
        first = reader.read_next_batch()
        t1 = time.perf_counter()
        n = first.num_rows + sum(b.num_rows for b in reader)
        t2 = time.perf_counter()
        times.append((t1 - t0, t2 - t0, n))

    run()  # warm: imports (pyarrow.dataset pulls in pandas), the OS's page cache, parsed footers
    times.clear()
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1)
    firsts, totals = sorted(t[0] for t in times), sorted(t[1] for t in times)
    first, total = firsts[len(firsts) // 2], totals[len(totals) // 2]
    assert all(t[2] == ROWS for t in times)
    benchmark.extra_info.update(
        first_batch_s=round(first, 4), whole_read_s=round(total, 3), first_over_whole=round(first / total, 4), rows=ROWS
    )
    print(f"\n{kind} {where!r}: first batch {first:.3f}s, whole read {total:.2f}s ({first / total:.3f})")


# ---------------------------------------------------------------- limit


@pytest.mark.parametrize("kind", ["dataset", "paimon"])
@pytest.mark.benchmark(group="lazyread-limit", min_rounds=1)
def test_limit_reads_first_pages(benchmark, kind):
    got = {}

    def run():
        r = _open(kind, "k >= 1")
        r = r.with_limit(10)
        t = r.to_arrow()
        got["rows"] = t.num_rows
        got["report"] = r.report

    benchmark.pedantic(run, rounds=ROUNDS, iterations=1)
    d = got["report"].decoded
    first = (
        sorted(os.path.join(_dataset(), f) for f in os.listdir(_dataset()) if f.endswith(".parquet"))[0]
        if kind == "dataset"
        else None
    )
    benchmark.extra_info.update(
        rows=got["rows"],
        decoded_rows=d.rows,
        rows_decoded=d.rows_decoded,
        pages_read=d.pages_read,
        pages_total=d.pages_total,
        bytes_read=d.bytes_read,
        first_file_bytes=os.path.getsize(first) if first else None,
    )
    assert got["rows"] == 10
    print(f"\n{kind} limit 10 of 'k >= 1': {d}")


# ---------------------------------------------------------------- the whole answer: stream vs the former read


@pytest.mark.parametrize("kind", ["dataset", "paimon"])
@pytest.mark.parametrize("impl", ["stream", "former"])
@pytest.mark.benchmark(group="lazyread-total", min_rounds=1)
def test_whole_answer(benchmark, kind, impl):
    import warnings

    def run():
        if impl == "stream":
            return _open(kind, WHERE).to_arrow().num_rows
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if kind == "dataset":
                from paimon_fast.tables import ParquetDataset

                t, _ = ParquetDataset(_dataset()).scan(WHERE)
            else:
                from pypaimon import CatalogFactory

                from paimon_fast.paimon import read_with_index

                t, _ = read_with_index(CatalogFactory.create({"warehouse": _warehouse()}).get_table("db.t"), WHERE)
        return t.num_rows

    n = run()  # warm
    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1) == n
    benchmark.extra_info.update(rows=n, impl=impl)
