"""Page reads against row-group reads and the anchors, all under the same load.

    python benchmarks/same_load_pages.py topn|gi|point|rare|micro-<pages1m|pages64k>-<rows> [ROUNDS]

On a shared machine the load moves between two benchmark runs more than the
difference being measured; here one process runs every engine once per round, in
a shuffled order, and prints medians of wall clock and process CPU time (JSON).
``pages`` is :func:`paimon_fast.parquet.rows.read_rows` with its cost rule and its
page decoder; ``pyarrow_pages`` the same with ``parquet_rows.PAGE_DECODER = None``
(pyarrow decodes the selected pages whole: what the readers did before the page
decoder); ``rowgroups`` with ``PAGE_FRACTION = DECODER_PAGE_FRACTION = 0`` (every
column chunk decoded whole, stopping at the batch of the last row: what the readers
did before the page reader).  The data are the benchmark files' own:

* ``topn``: ``bench_topn.py``'s dataset (``PF_BENCH_ROWS``, ``PF_BENCH_FILES``), the
  anchor its full read + ``select_k_unstable``;
* ``gi``: ``bench_paimon_globalindex.py``'s 100,000-distinct table (``PF_GI_ROWS``) with
  our bitmap global index, kept under ``$TMPDIR``; anchor pypaimon's global-index scan;
* ``point`` / ``rare``: ``bench_paimon.py``'s table (``PF_PAIMON_WAREHOUSE`` must hold
  it), warm and cold (plan cache cleared); anchor pypaimon-rust;
* ``micro-...``: ``bench_parquet_rows.py``'s files; anchor ``read_row_group`` + ``take``.
"""

import json
import os
import random
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import paimon_fast as pf  # noqa: E402
from paimon_fast.parquet import rows as pr  # noqa: E402


def _fraction(v, decoder="kernel"):
    def setup():
        pr.PAGE_FRACTION = v
        pr.DECODER_PAGE_FRACTION = 1.0 if v and decoder else v
        pr.PAGE_DECODER = decoder

    return setup


PAGES, PYARROW_PAGES, ROWGROUPS = _fraction(0.8), _fraction(0.8, None), _fraction(0.0)


def engines(what):
    if what == "topn":
        import bench_topn as B
        from paimon_fast.tables.parquet import ParquetDataset

        root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-topn-{B.ROWS}-{B.FILES}")
        if not os.path.exists(os.path.join(root, "_done")):
            raise SystemExit(f"run bench_topn.py once first (it writes {root})")
        files = ParquetDataset(root).files()

        def kernel():
            return ParquetDataset(root).top_n("score", B.K, columns=["id", "score", "tag"])

        def full_read():
            t = pa.concat_tables([pq.read_table(f.abs_path, columns=["id", "score", "tag"]) for f in files])
            return t.take(pc.select_k_unstable(t, k=B.K, sort_keys=[("score", "descending")]))

        return {
            "pages": (PAGES, kernel),
            "pyarrow_pages": (PYARROW_PAGES, kernel),
            "rowgroups": (ROWGROUPS, kernel),
            "full_read": (PAGES, full_read),
        }
    if what == "gi":
        import bench_paimon_globalindex as B
        from paimon_fast.paimon import read_with_index
        from paimon_fast.paimon.globalindex import create_global_index

        wh = os.path.join(tempfile.gettempdir(), f"paimon-fast-same-load-gi-{B.ROWS}")
        if not os.path.exists(os.path.join(wh, "_done")):
            B._write_table(wh, 100_000)
            create_global_index(B._catalog(wh).get_table("db.t"), "s")
            open(os.path.join(wh, "_done"), "w").close()
        t = B._catalog(wh).get_table("db.t")
        p = pf.field("s") == "value-4242"
        return {
            "pages": (PAGES, lambda: read_with_index(t, p)[0]),
            "pyarrow_pages": (PYARROW_PAGES, lambda: read_with_index(t, p)[0]),
            "rowgroups": (ROWGROUPS, lambda: read_with_index(t, p)[0]),
            "pypaimon_index": (PAGES, lambda: B._pypaimon_read(t, "value-4242")),
        }
    if what in ("point", "rare"):
        import bench_paimon as B
        from paimon_fast.paimon import read_with_index
        from paimon_fast.paimon.fastpath import clear_plan_cache
        from pypaimon import CatalogFactory

        wh = os.environ.get("PF_PAIMON_WAREHOUSE")
        if not wh or not os.path.isdir(os.path.join(wh, "db.db", "t")):
            raise SystemExit("set PF_PAIMON_WAREHOUSE to a warehouse bench_paimon.py wrote")
        t = CatalogFactory.create({"warehouse": wh}).get_table("db.t")
        p = B.PREDS["point_lookup" if what == "point" else "bitmap_rare"]

        def cold():
            clear_plan_cache()
            return read_with_index(t, p)[0]

        return {
            "pages_warm": (PAGES, lambda: read_with_index(t, p)[0]),
            "rowgroups_warm": (ROWGROUPS, lambda: read_with_index(t, p)[0]),
            "pages_cold": (PAGES, cold),
            "rowgroups_cold": (ROWGROUPS, cold),
            "pypaimon_rust": (PAGES, lambda: B._native(t, p)[0]),
        }
    if what.startswith("micro-"):
        import bench_parquet_rows as B

        _, layout, k = what.split("-")
        path = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-rows-{B.N}", f"{layout}.parquet")
        if not os.path.exists(path):
            raise SystemExit(f"run bench_parquet_rows.py once first (it writes {path})")
        pos = B._positions(int(k))
        return {
            "read_rows": (PAGES, lambda: pr.read_rows(path, pos)),
            "pyarrow_pages": (PYARROW_PAGES, lambda: pr.read_rows(path, pos)),
            "pages_forced": (_fraction(1.0), lambda: pr.read_rows(path, pos)),
            "rowgroup": (PAGES, lambda: pq.ParquetFile(path).read_row_group(0, use_threads=False).take(pa.array(pos))),
        }
    raise SystemExit(__doc__)


def main(argv):
    what = argv[1] if len(argv) > 1 else ""
    rounds = int(argv[2]) if len(argv) > 2 else 11
    eng = engines(what)
    rows = {}
    for k, (setup, fn) in eng.items():  # warm-up; every engine must return the same number of rows
        setup()
        rows[k] = fn().num_rows
    if len(set(rows.values())) != 1:
        raise SystemExit(f"engines disagree: {rows}")
    wall = {k: [] for k in eng}
    cpu = {k: [] for k in eng}
    loads = [os.getloadavg()[0]]
    rng = random.Random(5)
    for _ in range(rounds):
        order = list(eng)
        rng.shuffle(order)
        for k in order:
            setup, fn = eng[k]
            setup()
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
        loads.append(os.getloadavg()[0])
    PAGES()
    out = {"what": what, "rounds": rounds, "rows": rows[next(iter(rows))], "load": [min(loads), max(loads)]}
    for k in eng:
        out[k] = {
            "wall_median_ms": round(statistics.median(wall[k]) * 1e3, 1),
            "wall_min_ms": round(min(wall[k]) * 1e3, 1),
            "cpu_median_ms": round(statistics.median(cpu[k]) * 1e3, 1),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
