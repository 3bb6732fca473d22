"""What ``paimon_fast.paimon.optimize`` buys and costs on a Paimon append table, answers checked
against an oracle of this benchmark's own.

    python benchmarks/bench_paimon_optimize.py                  # 2e6 rows in 20 commits
    python benchmarks/bench_paimon_optimize.py --rows 2e5       # a smoke run

The table (pypaimon, ``bucket = -1``): ``id`` BIGINT, ``key`` STRING, ``x`` DOUBLE uniform in
[0, 1000), ``payload`` STRING; a bloom filter on ``key``, ``target-file-size`` 8 mb; rows in
random order, one commit of ``rows / commits`` rows each.  Measured, each the median of ``--rounds`` after a warm-up:

* **cost**: our optimize by ``x`` against what pypaimon alone offers for it, reading every row,
  sorting with pyarrow and writing it back with ``INSERT OVERWRITE`` (each on its own copy);
* **reads** of ``x`` ranges selecting 0.1% and 1%: ours (``paimon_fast.paimon.read``) and
  pypaimon's (its read builder with the filter pushed down), before and after the optimize;
  and a point lookup of ``key`` (the bloom filters, rebuilt by the optimize).

The oracle: per query the matching rows' count and id sum, from the generated columns.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.support

from bench_optimize import _median  # noqa: E402
from tests.support.paimon_helpers import catalog, commit_arrow  # noqa: E402

QUERIES = [("x < 1 (0.1%)", 0.0, 1.0), ("x < 10 (1%)", 0.0, 10.0)]


def generate(wh: str, rows: int, commits: int):
    """The table db.t under ``wh`` and its columns (the oracle's)."""
    from pypaimon import Schema

    rng = np.random.default_rng(44)
    ids = rng.permutation(rows).astype(np.int64)
    x = rng.random(rows) * 1000
    cat = catalog(wh)
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("key", pa.string()), ("x", pa.float64()), ("payload", pa.string())])
    opts = {
        "bucket": "-1",
        "target-file-size": "8 mb",
        "file-index.bloom-filter.columns": "key",
        "file-index.bloom-filter.key.items": str(rows // commits),
    }
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, options=opts), False)
    t = cat.get_table("db.t")
    per = rows // commits
    for c in range(commits):
        sl = slice(c * per, rows if c == commits - 1 else (c + 1) * per)
        part = pa.table(
            {
                "id": ids[sl],
                "key": [f"k{v:09d}" for v in ids[sl].tolist()],
                "x": x[sl],
                "payload": [f"p{v * 2654435761 % 1000003:07d}{v % 97:02d}" for v in ids[sl].tolist()],
            }
        )
        commit_arrow(t, part)
    return ids, x


def _check(who, got: pa.Table, want):
    n, s = got.num_rows, int(np.asarray(got.column("id").to_numpy(), dtype=np.int64).sum()) if got.num_rows else 0
    if (n, s) != want:
        raise AssertionError(f"{who}: {n} rows (id sum {s}), the oracle says {want}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=float, default=2e6)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rows = int(args.rows)

    import paimon_fast as pf
    from paimon_fast.paimon import optimize, read

    root = tempfile.mkdtemp(prefix="pf-bench-paimon-opt-")
    try:
        base = os.path.join(root, "base")
        t0 = time.perf_counter()
        ids, x = generate(base, rows, args.commits)
        print(f"table: {rows:,} rows in {args.commits} commits ({time.perf_counter() - t0:.1f} s)", flush=True)
        oracle = {}
        for name, lo, hi in QUERIES:
            m = (x >= lo) & (x < hi)
            oracle[name] = (int(m.sum()), int(ids[m].sum()))
        probe = int(ids[rows // 3])
        oracle["key point"] = (1, probe)
        opt_wh, base_wh = os.path.join(root, "opt"), os.path.join(root, "pypaimon")
        shutil.copytree(base, opt_wh)
        shutil.copytree(base, base_wh)

        # cost: ours, and pypaimon alone (read everything, sort, INSERT OVERWRITE)
        t = catalog(opt_wh).get_table("db.t")
        t0 = time.perf_counter()
        rep = optimize(t, ["x"])
        ours_cost = time.perf_counter() - t0
        t = catalog(base_wh).get_table("db.t")
        t0 = time.perf_counter()
        data = t.new_read_builder().new_read().to_arrow(t.new_read_builder().new_scan().plan().splits())
        data = data.sort_by("x")
        wb = t.new_batch_write_builder().overwrite({})
        w, cm = wb.new_write(), wb.new_commit()
        w.write_arrow(data)
        cm.commit(w.prepare_commit())
        w.close()
        cm.close()
        py_cost = time.perf_counter() - t0
        print(f"cost: ours {ours_cost:.2f} s ({rep}); pypaimon read + sort + overwrite {py_cost:.2f} s", flush=True)

        before, after = catalog(base).get_table("db.t"), catalog(opt_wh).get_table("db.t")

        def ours(table, where):
            return read(table, where).to_arrow()

        def theirs(table, pred_fn):
            rb = table.new_read_builder()
            rb = rb.with_filter(pred_fn(rb.new_predicate_builder()))
            return rb.new_read().to_arrow(rb.new_scan().plan().splits())

        lines = []
        for name, lo, hi in QUERIES:
            where = f"x >= {lo} AND x < {hi}"

            def pyp(pb, lo=lo, hi=hi):
                return pb.and_predicates([pb.greater_or_equal("x", lo), pb.less_than("x", hi)])

            row = [name]
            for who, fn in (("ours", lambda tb: ours(tb, where)), ("pypaimon", lambda tb: theirs(tb, pyp))):
                for label, tb in (("before", before), ("after", after)):
                    _check(f"{who} {label} {name}", fn(tb), oracle[name])
                    row.append(_median(lambda: fn(tb), args.rounds))
            lines.append(row)
        kw = f"k{probe:09d}"
        row = ["key point"]
        for who, fn in (
            ("ours", lambda tb: ours(tb, pf.field("key") == kw)),
            ("pypaimon", lambda tb: theirs(tb, lambda pb: pb.equal("key", kw))),
        ):
            for label, tb in (("before", before), ("after", after)):
                _check(f"{who} {label} key point", fn(tb), oracle["key point"])
                row.append(_median(lambda: fn(tb), args.rounds))
        lines.append(row)
        print("| query | ours before | ours after | pypaimon before | pypaimon after | pypaimon after / ours after |")
        print("| --- | --- | --- | --- | --- | --- |")
        for q, ob, oa, pb_, pa_ in lines:
            ms = " | ".join(f"{v * 1e3:.1f} ms" for v in (ob, oa, pb_, pa_))
            print(f"| {q} | {ms} | {pa_ / oa:.1f}x |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
