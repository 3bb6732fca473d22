"""What the checks of docs/datasets.md "What a dataset guarantees" cost a warm indexed read.

    python benchmarks/bench_trust.py            # the table below, A/B rounds interleaved
    pytest benchmarks/bench_trust.py --benchmark-only --benchmark-columns=median,rounds -s

Data (written once, kept in the temporary directory): a Parquet dataset of ``PF_BENCH_TRUST_ROWS``
rows (default 1e7) in 10 files, ``id`` BIGINT, ``country`` STRING (8 values, a bitmap file index),
``amount`` INT (0..9999, a range-bitmap file index), ``v`` DOUBLE; 0.01% of the rows deleted (a
vector for every file in one deletion file, read and checked by every read).  Two warm reads through one long-lived
``ParquetDataset`` (each read takes its own snapshot), ``to_arrow()`` of ``id, amount, v``:

* ``selective``: ``country = 'NO' AND amount > 9900`` (about 0.125% of the rows, read at their
  positions: the case where planning, and so the checks, weigh most);
* ``wide``: ``amount > 9000`` (10% of the rows).

``checked`` is the product as shipped.  ``unchecked`` is the same code with the checks taken out
by patching: no identity check after reading a data file, no checksum of index blocks, of the
deletion file or of the catalog (the listing's stat is the one every read made before, and it
gives the change time and inode with the size).  The overhead is ``checked / unchecked - 1`` of the
medians (and of the fastest rounds, steadier on a busy machine); the target is at most 5%.  The A
and B rounds alternate, so a shared machine's spells fall on both; the load average is printed
before and after (a figure taken while it is above 1 on this 2-core machine is not a quiet
measurement).

``accounted`` measures the same thing another way, robust to a busy machine: the time spent inside
the checks themselves (every CRC-32, the stat after each read, the identity verdicts), summed over
one checked read, as a share of that read's time (medians of the rounds).  It leaves out the bytes
a block-aligned checksummed read fetches beyond what the reader asked for (the A/B figure has them).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROWS = int(float(os.environ.get("PF_BENCH_TRUST_ROWS", "1e7")))
FILES = 10
ROUNDS = int(os.environ.get("PF_BENCH_ROUNDS", "15"))
COUNTRIES = np.array(["DE", "FR", "NO", "JP", "US", "BR", "IN", "SG"], dtype=object)
QUERIES = {"selective": "country = 'NO' AND amount > 9900", "wide": "amount > 9000"}
COLUMNS = ["id", "amount", "v"]


def dataset() -> str:
    root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-trust-{ROWS}")
    if os.path.exists(os.path.join(root, "_done")):
        return root
    from paimon_fast.tables import ParquetDataset

    os.makedirs(root, exist_ok=True)
    n = ROWS // FILES
    for i in range(FILES):
        rng = np.random.default_rng(i)
        ids = np.arange(i * n, (i + 1) * n, dtype=np.int64)
        t = pa.table(
            {
                "id": ids,
                "country": pa.array(COUNTRIES[rng.integers(0, len(COUNTRIES), n)]),
                "amount": pa.array(rng.integers(0, 10_000, n), pa.int32()),
                "v": rng.random(n),
            }
        )
        pq.write_table(t, os.path.join(root, f"part-{i:05d}.parquet"), row_group_size=1 << 17)
    ds = ParquetDataset(root)
    ds.build({"file-index.bitmap.columns": "country", "file-index.range-bitmap.columns": "amount"})
    ds.delete("amount = 4242")  # about 0.01% of the rows: a deletion vector for every file
    open(os.path.join(root, "_done"), "w").close()
    return root


@contextlib.contextmanager
def unchecked():
    """The checks taken out (see the module docstring)."""
    import paimon_fast.tables.catalog as catalog
    import paimon_fast.tables.deletes as deletes
    import paimon_fast.tables.parquet as parquet

    def plain_json(data, what, required=False):
        obj = json.loads(bytes(data).decode("utf-8"))
        obj.pop("checksum", None)
        return obj, True

    saved = (
        parquet.ParquetDataset._read_done,
        parquet.ChecksummedSource,
        deletes.verify_whole,
        catalog.open_json,
    )
    parquet.ParquetDataset._read_done = lambda self, f: None
    parquet.ChecksummedSource = lambda inner, spec, size, what="": inner
    deletes.verify_whole = lambda data, expected, what: None
    catalog.open_json = plain_json
    try:
        yield
    finally:
        (parquet.ParquetDataset._read_done, parquet.ChecksummedSource, deletes.verify_whole, catalog.open_json) = saved


def one_read(ds, where: str) -> int:
    return ds.read(where, columns=COLUMNS).to_arrow().num_rows


class _Clock:
    def __init__(self):
        import threading

        self.spent = 0.0
        self._lock = threading.Lock()

    def timed(self, fn):
        def run(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                with self._lock:
                    self.spent += time.perf_counter() - t0

        return run


@contextlib.contextmanager
def accounted():
    """Every check timed into one clock (see the module docstring)."""
    import types
    import zlib

    import paimon_fast.io.checksum as checksum
    import paimon_fast.tables.identity as identity
    import paimon_fast.tables.parquet as parquet

    clock = _Clock()
    saved = (checksum.zlib, identity.judge, parquet.ParquetDataset._read_done)
    checksum.zlib = types.SimpleNamespace(crc32=clock.timed(zlib.crc32))
    identity.judge = clock.timed(identity.judge)
    parquet.ParquetDataset._read_done = clock.timed(parquet.ParquetDataset._read_done)
    try:
        yield clock
    finally:
        checksum.zlib, identity.judge, parquet.ParquetDataset._read_done = saved


def measure_accounted(rounds: int = ROUNDS) -> dict:
    from paimon_fast.tables import ParquetDataset

    ds = ParquetDataset(dataset())
    out = {}
    for name, where in QUERIES.items():
        one_read(ds, where)
        shares, totals, checks = [], [], []
        for _ in range(rounds):
            with accounted() as clock:
                t0 = time.perf_counter()
                one_read(ds, where)
                total = time.perf_counter() - t0
            shares.append(clock.spent / total)
            totals.append(total)
            checks.append(clock.spent)
        out[name] = {
            "read_ms": round(statistics.median(totals) * 1000, 2),
            "checks_ms": round(statistics.median(checks) * 1000, 3),
            "share": round(statistics.median(shares), 4),
        }
    return out


def measure(rounds: int = ROUNDS) -> dict:
    from paimon_fast.tables import ParquetDataset

    root = dataset()
    ds = ParquetDataset(root)
    out = {}
    for name, where in QUERIES.items():
        n = one_read(ds, where)  # warm: imports, page cache, parsed footers
        with unchecked():
            assert one_read(ds, where) == n
        times = {"checked": [], "unchecked": []}
        for _ in range(rounds):
            for kind in ("checked", "unchecked"):
                ctx = unchecked() if kind == "unchecked" else contextlib.nullcontext()
                with ctx:
                    t0 = time.perf_counter()
                    one_read(ds, where)
                    times[kind].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        out[name] = dict(
            rows=n,
            median_ms={k: round(v * 1000, 2) for k, v in med.items()},
            min_ms={k: round(v * 1000, 2) for k, v in best.items()},
        )
        out[name]["overhead"] = round(med["checked"] / med["unchecked"] - 1, 4)
        out[name]["overhead_min"] = round(best["checked"] / best["unchecked"] - 1, 4)
    return out


def test_check_overhead(benchmark):
    """pytest-benchmark: the checked selective read timed, the A/B overhead and the accounted share
    in ``extra_info``."""
    from paimon_fast.tables import ParquetDataset

    ds = ParquetDataset(dataset())
    benchmark.extra_info.update(ab=measure(max(3, ROUNDS // 3)), accounted=measure_accounted(max(3, ROUNDS // 3)))
    benchmark.pedantic(one_read, args=(ds, QUERIES["selective"]), rounds=ROUNDS, warmup_rounds=1)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    dataset()
    res = measure()
    acc = measure_accounted()
    print(
        json.dumps(
            {
                "rows": ROWS,
                "rounds": ROUNDS,
                "load_before": load0,
                "load_after": os.getloadavg(),
                "ab": res,
                "accounted": acc,
            },
            indent=1,
        )
    )
    for name, r in res.items():
        a = acc[name]
        print(
            f"{name:10s} {r['rows']:>9,} rows  checked {r['median_ms']['checked']:8.2f} ms  "
            f"unchecked {r['median_ms']['unchecked']:8.2f} ms  A/B overhead {r['overhead'] * 100:+.1f}% "
            f"(fastest rounds {r['overhead_min'] * 100:+.1f}%)  "
            f"checks {a['checks_ms']:.3f} ms of {a['read_ms']:.2f} ms ({a['share'] * 100:.2f}%)"
        )
