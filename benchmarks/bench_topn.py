"""Table-level top-10 over a Parquet dataset: range-bitmap indexes against full reads.

    pytest benchmarks/bench_topn.py --benchmark-only -s

The dataset: ``PF_BENCH_ROWS`` rows (default 1e7) in ``PF_BENCH_FILES`` files
(default 20), an INT ``score`` drawn uniformly from 0..1e6 (so no file's
min/max alone decides the answer), a BIGINT ``id`` and a 12-character STRING
``tag``; a ``range-bitmap`` index on ``score`` per file.  Generated once under
``$TMPDIR/paimon-fast-bench-topn-*``.

Implementations in group ``top10`` (the ratios print at the end):

* ``kernel``: ``ParquetDataset.top_n("score", 10)`` (index top-k per file,
  files that cannot beat the k-th row unread, 10 rows projected);
* ``arrow``: the issue's baseline, a full read of the projected columns with
  pyarrow and ``pyarrow.compute.select_k_unstable``;
* ``arrow2phase``: a smarter answer without an index: every file's ``score``
  column, ``select_k_unstable`` per file, then only the winners' files read
  for the other columns;
* ``spark``: Spark's own ``orderBy(desc("score")).limit(10)`` on local[2] over
  the same files, collected to Arrow (only with ``PF_BENCH_SPARK=1``: it
  starts a JVM);
* ``sparkidx``: ``paimon_fast.spark.top_n`` (per-file work on executors).

Targets (issue #17): kernel >= 10x faster than ``arrow``, >= 3x than ``spark``.
"""

import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paimon_fast.tables.parquet import ParquetDataset

ROWS = int(float(os.environ.get("PF_BENCH_ROWS", "1e7")))
FILES = int(os.environ.get("PF_BENCH_FILES", "20"))
K = 10


@pytest.fixture(scope="module")
def data():
    root = os.path.join(tempfile.gettempdir(), f"paimon-fast-bench-topn-{ROWS}-{FILES}")
    if not os.path.exists(os.path.join(root, "_done")):
        os.makedirs(root, exist_ok=True)
        rng = np.random.default_rng(5)
        per = ROWS // FILES
        for i in range(FILES):
            n = per if i < FILES - 1 else ROWS - per * (FILES - 1)
            t = pa.table(
                {
                    "id": np.arange(i * per, i * per + n, dtype=np.int64),
                    "score": rng.integers(0, 1_000_000, n).astype(np.int32),
                    "tag": pa.array([f"t{v:011d}" for v in rng.integers(0, 10**9, n)]),
                }
            )
            pq.write_table(t, os.path.join(root, f"part-{i:05d}.parquet"))
        ParquetDataset(root).build({"file-index.range-bitmap.columns": "score"})
        open(os.path.join(root, "_done"), "w").close()
    return root


def _truth(root):
    ds = ParquetDataset(root)
    cols = [pq.read_table(f.abs_path, columns=["score"]).column("score") for f in ds.files()]
    return sorted(pa.chunked_array([c for col in cols for c in col.chunks]).to_numpy().tolist(), reverse=True)[:K]


@pytest.mark.benchmark(group="top10")
def test_top10_kernel(benchmark, data):
    def run():
        return ParquetDataset(data).top_n("score", K, columns=["id", "score", "tag"])

    got = benchmark(run)
    assert got.column("score").to_pylist() == _truth(data)


@pytest.mark.benchmark(group="top10")
def test_top10_arrow(benchmark, data):
    files = ParquetDataset(data).files()

    def run():
        t = pa.concat_tables([pq.read_table(f.abs_path, columns=["id", "score", "tag"]) for f in files])
        return t.take(pc.select_k_unstable(t, k=K, sort_keys=[("score", "descending")]))

    got = benchmark(run)
    assert got.column("score").to_pylist() == _truth(data)


@pytest.mark.benchmark(group="top10")
def test_top10_arrow2phase(benchmark, data):
    files = ParquetDataset(data).files()

    def run():
        parts = []
        for i, f in enumerate(files):
            s = pq.read_table(f.abs_path, columns=["score"]).column("score")
            idx = pc.select_k_unstable(s, k=K, sort_keys=[("score", "descending")])
            parts.append((i, s.take(idx).to_pylist(), idx.to_pylist()))
        best = sorted(((v, i, p) for i, vs, ps in parts for v, p in zip(vs, ps)), key=lambda x: (-x[0], x[1], x[2]))[:K]
        rows = [pq.read_table(files[i].abs_path).slice(p, 1) for _, i, p in best]
        return pa.concat_tables(rows)

    got = benchmark(run)
    assert got.column("score").to_pylist() == _truth(data)


@pytest.fixture(scope="module")
def spark():
    if os.environ.get("PF_BENCH_SPARK") != "1":
        pytest.skip("set PF_BENCH_SPARK=1 to compare with Spark (starts a JVM)")
    from paimon_fast import spark as pfs

    return pfs.session("local[2]")


@pytest.mark.benchmark(group="top10")
def test_top10_spark(benchmark, data, spark):
    from pyspark.sql import functions as F

    def run():
        df = spark.read.parquet(data)
        return df.orderBy(F.desc("score")).limit(K).toArrow()

    got = benchmark(run)
    assert got.column("score").to_pylist() == _truth(data)


@pytest.mark.benchmark(group="top10")
def test_top10_sparkidx(benchmark, data, spark):
    from paimon_fast import spark as pfs

    got = benchmark(lambda: pfs.top_n(spark, data, "score", K, columns=["id", "score", "tag"]))
    assert got.column("score").to_pylist() == _truth(data)
