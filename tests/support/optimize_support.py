"""What the optimize tests share (test_optimize.py, test_optimize_spark.py): a small partitioned
dataset with file indexes, a global index and deleted rows, and an oracle of its own.

The oracle never asks the product: it reads the data files with pyarrow (listed through the
store's filesystem, hidden names skipped as Spark skips them), applies each query as a Python
function of the row and removes the ids the test deleted."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from tests.support.trust_support import Where

ROWS = 400  # a file
FILES = 3  # a partition
PARTS = ("a", "b")
OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bitmap.columns": "c",
    "file-index.range-bitmap.columns": "y",
    "file-index.in-manifest-threshold": "64",
}
# small files, row groups and pages, so that a few hundred rows make several of each
WRITE = dict(target_file_size=12_000, row_group_rows=256, page_rows=64)
QUERIES = {
    None: lambda r: True,
    "x < 40": lambda r: r["x"] is not None and r["x"] < 40,
    "x BETWEEN 500 AND 520": lambda r: r["x"] is not None and 500 <= r["x"] <= 520,
    "c = 'c3'": lambda r: r["c"] == "c3",
    "id = 217 OR id = 1600": lambda r: r["id"] in (217, 1600),
    "y > 0.9 AND x < 300": lambda r: r["y"] > 0.9 and r["x"] is not None and r["x"] < 300,
    "p = 'b' AND x >= 990": lambda r: r["p"] == "b" and r["x"] is not None and r["x"] >= 990,
}
DELETE = "c = 'c1' AND x < 100"


def delete_fn(r):
    return r["c"] == "c1" and r["x"] is not None and r["x"] < 100


def content(k: int, rows: int = ROWS, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(1000 * seed + k)
    ids = np.arange(k * rows, (k + 1) * rows, dtype=np.int64)
    x = rng.integers(0, 1000, rows)
    x_mask = rng.random(rows) < 0.02  # a few nulls in the cluster column
    return pa.table(
        {
            "id": ids,
            "x": pa.array(x, mask=x_mask),
            "y": rng.random(rows),
            "c": pa.array([f"c{v}" for v in rng.integers(0, 8, rows)]),
            "s": pa.array([f"s{v:04d}-{w}" for v, w in zip(rng.integers(0, 5000, rows), ids % 7)]),
        }
    )


class Place(Where):
    """A dataset's directory (:class:`trust_support.Where`), its files written as pyarrow writes
    them by default."""

    write_options: dict = {}


def make(place: Place, parts=PARTS, files: int = FILES) -> None:
    k = 0
    for p in parts:
        for i in range(files):
            place.write(f"p={p}/f{i}.parquet", content(k))
            k += 1


def rows_now(place: Place) -> list:
    """Every row of the files a plain reader lists, with its partition value."""
    out = []
    for rel in place.data_files():
        p = rel.split("/")[0].split("=", 1)[1]
        out += [dict(r, p=p) for r in place.read(rel).to_pylist()]
    return out


def plain_ids(place: Place) -> list:
    """The multiset of ids a plain reader reads, sorted."""
    return sorted(r["id"] for r in rows_now(place))


def oracle(place: Place, deleted: set, query=None, rows=None) -> list:
    fn = QUERIES[query]
    return sorted(r["id"] for r in (rows_now(place) if rows is None else rows) if r["id"] not in deleted and fn(r))


def queries_for(uri: str) -> list:
    """The queries asked: all of them locally, three on S3 (each read there costs requests of a
    test server in this process)."""
    return list(QUERIES) if "://" not in uri else [None, "x < 40", "c = 'c3'"]


def expected(place: Place, deleted: set, queries=None) -> dict:
    rows = rows_now(place)
    return {q: oracle(place, deleted, q, rows) for q in (queries or queries_for(place.uri))}


def answers(uri: str, queries=None, filesystem=None) -> dict:
    """The queries' ids as the product reads them (a new dataset object each time; the count too)."""
    from paimon_fast.tables import ParquetDataset

    out = {}
    for q in queries or queries_for(uri):
        r = ParquetDataset(uri, filesystem).read(q)
        out[q] = sorted(r.to_arrow().column("id").to_pylist())
        assert r.count() == len(out[q]), q
    return out


def ready(place: Place, global_index: bool = True) -> set:
    """The dataset written, indexed (file indexes, a global index on ``c``), rows deleted:
    the deleted ids."""
    from paimon_fast.tables import ParquetDataset
    from paimon_fast.tables.globalindex import build_global_index_local

    make(place)
    ds = ParquetDataset(place.uri)
    ds.build(OPTIONS)
    if global_index:
        build_global_index_local(place.uri, "c")
    deleted = {r["id"] for r in rows_now(place) if delete_fn(r)}
    assert ds.delete(DELETE).rows_deleted == len(deleted)
    return deleted
