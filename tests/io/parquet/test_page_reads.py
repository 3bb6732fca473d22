"""The readers of known row positions decode only the pages holding them
(:mod:`paimon_fast.io.parquet.rows`): Paimon's fast path and top-N, ``ParquetDataset.scan``
and ``top_n``, Hudi base files.  Files with several pages per column chunk; each answer
is checked against an oracle that is not the product's filter (pyarrow over a full read)
and the reports say what was decoded."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
from paimon_fast.tables.parquet import ParquetDataset
from paimon_fast.read.topn import TopNReport
from tests.support.paimon_helpers import pypaimon_read


def _dataset(root, files=3, n=20_000):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(4)
    for i in range(files):
        t = pa.table(
            {
                "k": pa.array(np.arange(i * n, (i + 1) * n) // 500, pa.int32()),  # sorted: a value = one page
                "score": pa.array(rng.integers(0, 10**6, n), pa.int64()),
                "tag": pa.array([f"t{v:09d}" for v in rng.integers(0, 10**9, n)]),
            }
        )
        pq.write_table(
            t,
            os.path.join(root, f"part-{i}.parquet"),
            data_page_size=8 << 10,
            write_batch_size=512,
            use_dictionary=["k"],
            write_page_index=i != 1,
        )
    ds = ParquetDataset(root)
    ds.build({"file-index.bitmap.columns": "k", "file-index.range-bitmap.columns": "score"})
    return ds


def _full(ds):
    return pa.concat_tables(pq.read_table(f.abs_path) for f in ds.files())


def test_dataset_scan_reads_pages(tmp_path):
    ds = _dataset(str(tmp_path / "ds"))
    full = _full(ds)
    got, rep = ds.scan(pf.field("k").isin([3, 70, 71]))
    want = full.filter(pc.is_in(full.column("k"), pa.array([3, 70, 71], pa.int32())))
    assert sorted(got.column("score").to_pylist()) == sorted(want.column("score").to_pylist())
    d = rep.decoded
    assert d.rows == want.num_rows == 1500
    assert 0 < d.pages_read < d.pages_total / 4 and d.rows_decoded < 20_000, d
    assert "bitmap reads decoded" in str(rep)


def test_dataset_top_n_projects_pages(tmp_path):
    ds = _dataset(str(tmp_path / "ds"))
    full = _full(ds)
    rep = TopNReport()
    got = ds.top_n("score", 7, columns=["tag", "score", "k"], report=rep)
    idx = pc.sort_indices(full, [("score", "descending")])[:7]
    assert got.equals(full.take(idx).select(["tag", "score", "k"]))
    assert 0 < rep.decoded.pages_read < rep.decoded.pages_total, rep.decoded
    assert rep.decoded.bytes_read < rep.decoded.bytes_total / 4, rep.decoded
    assert "decoded" in str(rep)


@pytest.mark.spark
def test_spark_top_n_counts_pages(spark, tmp_path):
    from paimon_fast import spark as pfs

    ds = _dataset(str(tmp_path / "ds"))
    full = _full(ds)
    rep = TopNReport()
    got = pfs.top_n(spark, ds.root, "score", 5, columns=["tag", "score"], report=rep, driver_max_bytes=0)
    idx = pc.sort_indices(full, [("score", "descending")])[:5]
    assert got.equals(full.take(idx).select(["tag", "score"]))
    assert 0 < rep.decoded.pages_read < rep.decoded.pages_total, rep.decoded


# ---------------------------------------------------------------- Paimon (pypaimon-rust writes 20,480-row pages)
@pytest.fixture(scope="module")
def native_table(tmp_path_factory):
    pytest.importorskip("pypaimon")
    pytest.importorskip("pypaimon_rust")
    from tests.support.paimon_helpers import create_sample_table

    opts = {
        "file-index.bitmap.columns": "category",
        "file-index.range-bitmap.columns": "id",
        "file-index.bloom-filter.columns": "name",
        "file-index.bloom-filter.name.items": "50000",
    }
    return create_sample_table(tmp_path_factory.mktemp("native"), options=opts, files=3, n=50_000, native=True)


def test_paimon_fast_path_reads_pages(native_table):
    from paimon_fast.paimon import read_with_index

    full = pypaimon_read(native_table)
    got, rep = read_with_index(native_table, pf.field("id").between(60_100, 60_130))
    ids = full.column("id").to_numpy()
    want = full.filter(pa.array((ids >= 60_100) & (ids <= 60_130)))
    assert got.sort_by("id").equals(want.sort_by("id"))
    assert rep.fast_path and rep.rows_decoded == rep.decoded.rows_decoded < 50_000, rep
    assert 0 < rep.decoded.pages_read < rep.decoded.pages_total and rep.decoded.columns_whole == 0, rep.decoded


def test_paimon_late_columns_read_at_matching_rows(native_table):
    """A bloom filter says "maybe": the predicate's column is scanned, the others read at the match only."""
    from paimon_fast.paimon import read_with_index

    full = pypaimon_read(native_table)
    got, rep = read_with_index(native_table, pf.field("name") == "name-123456")
    assert got.equals(full.filter(pc.equal(full.column("name"), "name-123456")))
    assert rep.decoded.rows == 1 and 0 < rep.decoded.pages_read < rep.decoded.pages_total, rep.decoded


def test_paimon_top_n_reads_pages(native_table):
    from paimon_fast.paimon import top_n

    full = pypaimon_read(native_table)
    rep = TopNReport()
    got = top_n(native_table, "id", 4, desc=False, predicate=pf.field("category") == "blue", report=rep)
    want = full.filter(pc.equal(full.column("category"), "blue")).sort_by("id").slice(0, 4)
    assert got.equals(want)
    assert 0 < rep.decoded.pages_read < rep.decoded.pages_total, rep.decoded
