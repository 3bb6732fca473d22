"""The one read object (paimon_fast.read.lazy.LazyRead) of every table kind, through every hand-off.

Every path (a Parquet dataset with file and global indexes, with and without deletion vectors,
local and on S3; a Paimon table on the fast path, on pypaimon's path, with a deletion vector, with a
primary key, with a global index, on S3; a Hudi table) gives, through ``to_arrow``, the batch reader,
pandas, Polars (eager and lazy) and DuckDB, the rows a plain pyarrow read filtered by
``tests/support/sql_oracle.py`` gives (no product filter involved); DuckDB SQL (filters, aggregates, joins)
and Polars queries over the registered streams equal the same computation over the oracle's rows.
Then: ``limit``, ``count()``, ``explain()`` (every index kind, an index present but unusable for
the predicate, stale ones, a type mismatch, the fallback budget), pypaimon's read-builder shape,
the deprecated tuple forms, the CLI flags, Ray.
"""

from __future__ import annotations

import math
import os
import re
import pickle
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
from paimon_fast.read.lazy import LazyRead
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.tables import ParquetDataset
from tests.support.sql_oracle import holds
from tests.support.paimon_helpers import pypaimon_read

try:
    import pandas  # noqa: F401

    HAVE_PANDAS = True
except ImportError:  # CI's oldest job: the core install and the test extra only
    HAVE_PANDAS = False

HANDOFFS = ["arrow", "batches", "pandas", "polars", "polars_lazy", "duckdb"]


# ---------------------------------------------------------------- helpers


def _canon(v):
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v


def multiset(rows, cols):
    return sorted(repr(tuple(_canon(r[c]) for c in cols)) for r in rows)


def via(read: LazyRead, how: str):
    """The rows of ``read`` through one hand-off, as dicts (typed as the read's schema)."""
    schema = read.schema
    if how == "arrow":
        t = read.to_arrow()
    elif how == "batches":
        reader = read.to_arrow_batch_reader()
        assert isinstance(reader, pa.RecordBatchReader) and reader.schema == schema
        t = pa.Table.from_batches(list(reader), schema=schema)
    elif how == "pandas":
        t = pa.Table.from_pandas(read.to_pandas(), schema=schema, preserve_index=False)
    elif how == "polars":
        import polars as pl

        df = read.to_polars()
        assert isinstance(df, pl.DataFrame)
        t = df.to_arrow()
    elif how == "polars_lazy":
        import polars as pl

        lf = read.to_polars(lazy=True)
        assert isinstance(lf, pl.LazyFrame)
        t = lf.collect().to_arrow()
    elif how == "duckdb":
        con = read.to_duckdb("t")
        r = con.sql("SELECT * FROM t")
        t = r.to_arrow_table() if hasattr(r, "to_arrow_table") else r.arrow()
        con.close()
    else:
        raise ValueError(how)
    if how != "pandas" and t.num_rows:
        t = pa.Table.from_arrays([c.cast(f.type) for c, f in zip(t.columns, schema)], schema=schema)
    assert t.column_names == schema.names, how
    return t.to_pylist()


def check_all_handoffs(read: LazyRead, want_rows, cols=None):
    cols = cols or read.columns
    want = multiset(want_rows, cols)
    for how in HANDOFFS:
        if how == "pandas" and not HAVE_PANDAS:
            # the core install has no pandas (CI's oldest job): the hand-off names its extra
            with pytest.raises(pf.MissingDependencyError, match="pandas"):
                read.to_pandas()
            continue
        got = via(read, how)
        assert multiset(got, cols) == want, (how, read)
    assert read.count() == len(want_rows), read


def oracle(rows, where, deleted=None):
    pred = None if where is None else parse_predicate(where) if isinstance(where, str) else where
    dpred = None if deleted is None else parse_predicate(deleted)
    return [r for r in rows if (pred is None or holds(pred, r)) and (dpred is None or not holds(dpred, r))]


# ---------------------------------------------------------------- a Parquet dataset

DS_OPTIONS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bitmap.columns": "status",
    "file-index.range-bitmap.columns": "score",
    "file-index.bsi.columns": "id",
    "file-index.in-manifest-threshold": "64",
}
DS_WHERE = [
    None,
    "status = 'paid' AND id < 900",
    "id IN (5, 1250, 99999)",
    "status IS NULL OR region = 'us'",
    "score > 90.5",
    "name = 'eu1-3'",
    "tag = 't3' AND status != 'new'",
]
DELETED = "id < 100 OR name = 'us4-2'"


def write_dataset(root, rows=400, seed=7):
    rng = np.random.default_rng(seed)
    i = 0
    for region in ("eu", "us"):
        d = os.path.join(root, f"region={region}")
        os.makedirs(d, exist_ok=True)
        for k in range(3):
            ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            pq.write_table(
                pa.table(
                    {
                        "id": ids,
                        "name": pa.array([f"{region}{i}-{j % 7}" for j in range(rows)]),
                        "status": pa.array([["new", "paid", "sent", None][int(x)] for x in rng.integers(0, 4, rows)]),
                        "score": np.round(rng.uniform(0, 100, rows), 1),
                        "tag": pa.array([f"t{int(x)}" for x in rng.integers(0, 8, rows)]),
                    }
                ),
                os.path.join(d, f"part-{k}.parquet"),
                row_group_size=150,
            )
            i += 1
    return root


def plain_rows(root):
    """Every row of the dataset by pyarrow alone (partition column from the paths)."""
    paths = sorted(
        os.path.join(d, f)
        for d, _, fs in os.walk(root)
        for f in fs
        if f.endswith(".parquet") and "/_" not in os.path.join(d, f)[len(root) :]
    )
    t = pads.dataset(paths, format="parquet", partitioning="hive", partition_base_dir=root).to_table()
    return [{k: (str(v) if k == "region" else v) for k, v in r.items()} for r in t.to_pylist()]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """``{"indexed": (root, deleted where), "deletes": ...}``: file indexes of every kind and a
    global index on ``tag``; the second also with deletion vectors."""
    from paimon_fast.tables.globalindex import build_global_index_local

    out = {}
    for name, deleted in (("indexed", None), ("deletes", DELETED)):
        root = write_dataset(str(tmp_path_factory.mktemp(name)))
        ds = ParquetDataset(root)
        ds.build(DS_OPTIONS)
        build_global_index_local(root, "tag")
        if deleted:
            ds.delete(deleted)
        out[name] = (root, deleted)
    return out


@pytest.mark.parametrize("kind", ["indexed", "deletes"])
def test_dataset_rows_through_every_handoff(datasets, kind):
    root, deleted = datasets[kind]
    rows = plain_rows(root)
    ds = ParquetDataset(root)
    pruned = 0
    for where in DS_WHERE:
        r = ds.read(where)
        want = oracle(rows, where, deleted)
        check_all_handoffs(r, want)
        pruned += r.report.files_skipped + r.report.rows_skipped_by_bitmap
        # a projection, in another order, through the same hand-offs
        p = ds.read(where, columns=["score", "id"])
        assert p.columns == ["score", "id"]
        check_all_handoffs(p, want, ["score", "id"])
    assert pruned > 0  # the indexes pruned (the rows are checked above)


def test_dataset_reads_global_index_and_reports_it(datasets):
    root, _ = datasets["indexed"]
    r = ParquetDataset(root).read("tag = 't3'")
    check_all_handoffs(r, oracle(plain_rows(root), "tag = 't3'"))
    assert r.report.global_index_used == ["tag"] and r.report.rows_skipped_by_bitmap > 0


def test_dataset_on_s3_equals_local(tmp_path, s3_server):
    local = write_dataset(str(tmp_path / "local"), rows=200)
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(local, bucket, "events")
    sds = ParquetDataset(s3_server.uri(bucket, "events"))
    sds.build(DS_OPTIONS)
    rows = plain_rows(local)
    where = "status = 'paid' AND id < 900"
    r = sds.read(where, columns=["id", "status", "region"])
    check_all_handoffs(r, oracle(rows, where), ["id", "status", "region"])
    assert r.report.bytes_read > 0  # ranged reads counted on the store
    r = sds.read("name = 'us4-2'")
    assert multiset(r.to_arrow().to_pylist(), ["id", "name"]) == multiset(
        oracle(rows, "name = 'us4-2'"), ["id", "name"]
    )
    assert r.report.files_skipped == 5


# ---------------------------------------------------------------- DuckDB and Polars queries over the streams


def test_duckdb_sql_over_registered_streams(datasets):
    import duckdb

    root, deleted = datasets["deletes"]
    rows = oracle(plain_rows(root), None, deleted)
    ds = ParquetDataset(root)
    con = ds.read().to_duckdb("events")
    assert isinstance(con, duckdb.DuckDBPyConnection)
    paid = ds.read("status = 'paid'", columns=["id", "score"])
    assert paid.to_duckdb("paid", con) is con
    # a filter and aggregates
    n, s = con.sql("SELECT count(*), sum(score) FROM events WHERE region = 'us' AND score < 50").fetchall()[0]
    want = [r for r in rows if r["region"] == "us" and r["score"] < 50]
    assert n == len(want) and s == pytest.approx(sum(r["score"] for r in want))
    got = dict(con.sql("SELECT status, count(*) FROM events GROUP BY status").fetchall())
    want_groups = {}
    for r in rows:
        want_groups[r["status"]] = want_groups.get(r["status"], 0) + 1
    assert got == want_groups
    # a join of two streams (each scan of a registered read reads again)
    joined = con.sql(
        "SELECT e.id, e.tag, p.score FROM events e JOIN paid p USING (id) WHERE e.tag = 't1' ORDER BY e.id"
    ).fetchall()
    want_join = sorted((r["id"], r["tag"], r["score"]) for r in rows if r["status"] == "paid" and r["tag"] == "t1")
    assert joined == want_join and joined
    # the same registered name answers again (the stream is not used up)
    assert con.sql("SELECT count(*) FROM paid").fetchall()[0][0] == sum(r["status"] == "paid" for r in rows)
    # a read is also an Arrow stream DuckDB scans by name
    stream = ds.read("score >= 99")  # noqa: F841 (DuckDB finds it by its name)
    assert duckdb.sql("SELECT count(*) FROM stream").fetchall()[0][0] == sum(r["score"] >= 99 for r in rows)


def test_polars_queries_over_the_stream(datasets):
    import polars as pl

    root, deleted = datasets["deletes"]
    rows = oracle(plain_rows(root), None, deleted)
    lf = ParquetDataset(root).read().to_polars(lazy=True)
    got = (
        lf.filter((pl.col("score") > 80) & (pl.col("region") == "eu"))
        .group_by("status")
        .agg(pl.len().alias("n"), pl.col("score").sum().alias("s"))
        .collect()
    )
    want = {}
    for r in rows:
        if r["score"] > 80 and r["region"] == "eu":
            n, s = want.get(r["status"], (0, 0.0))
            want[r["status"]] = (n + 1, s + r["score"])
    assert {d["status"]: (d["n"], pytest.approx(d["s"])) for d in got.to_dicts()} == {
        k: (n, pytest.approx(s)) for k, (n, s) in want.items()
    }
    # projection and head pushed into the read; filter applied to the batches
    top = lf.select(["id", "tag"]).filter(pl.col("tag") == "t5").head(7).collect()
    assert top.columns == ["id", "tag"] and top.height == 7
    want_ids = {r["id"] for r in rows if r["tag"] == "t5"}
    assert set(top["id"].to_list()) <= want_ids


def test_polars_head_then_filter_filters_the_first_rows(datasets):
    """``head(n).filter(p)`` reaches the source as ``n_rows`` with a predicate: the first ``n``
    rows of the read, then the filter (not the first ``n`` rows that pass it)."""
    import polars as pl

    root, deleted = datasets["deletes"]
    first = oracle(plain_rows(root), "score > 10", deleted)  # the read's order: files by path
    lf = ParquetDataset(root).read("score > 10").to_polars(lazy=True)
    for n in (1, 50, 333, 10_000):
        want = [r for r in first[:n] if r["status"] == "paid"]
        got = lf.head(n).filter(pl.col("status") == "paid").collect()
        assert multiset(got.to_dicts(), ["id", "status"]) == multiset(want, ["id", "status"]), n
        got = lf.select(["id", "status"]).head(n).filter(pl.col("status") == "paid").select("id").collect()
        assert got["id"].to_list() == [r["id"] for r in want], n
    # filter then head: the first n rows that pass the filter
    got = lf.filter(pl.col("status") == "paid").head(20).collect()
    assert got["id"].to_list() == [r["id"] for r in first if r["status"] == "paid"][:20]


# ---------------------------------------------------------------- limit, count, streaming


def test_limit_stops_early_and_rows_hold(datasets):
    root, deleted = datasets["deletes"]
    rows = plain_rows(root)
    ds = ParquetDataset(root)
    for where in ("status = 'paid'", "score > 99.5", None):
        want = multiset(oracle(rows, where, deleted), ["id"])
        for limit in (0, 1, 10, 10_000):
            r = ds.read(where, columns=["id"], limit=limit)
            t = r.to_arrow()
            assert t.num_rows == min(limit, len(want))
            got = multiset(t.to_pylist(), ["id"])
            assert set(got) <= set(want)
            assert r.count() == min(limit, len(want))
            assert len(via(r, "duckdb")) == t.num_rows and len(via(r, "polars_lazy")) == t.num_rows


def test_limit_reads_only_the_first_pages(tmp_path):
    """``limit=10`` on a predicate most rows hold reads a few pages of the first file only."""
    root = str(tmp_path / "big")
    os.makedirs(root)
    n = 60_000
    for i in range(3):
        pq.write_table(
            pa.table(
                {
                    "k": pa.array(np.arange(n) % 97, pa.int32()),
                    "v": pa.array(np.arange(i * n, (i + 1) * n), pa.int64()),
                    "s": pa.array([f"s{j % 1000:05d}" for j in range(n)]),
                }
            ),
            os.path.join(root, f"f{i}.parquet"),
            data_page_size=8 << 10,
            row_group_size=30_000,
            use_dictionary=["k", "s"],
        )
    size = os.path.getsize(os.path.join(root, "f0.parquet"))
    ds = ParquetDataset(root)
    r = ds.read("k > 3", limit=10)
    t = r.to_arrow()
    assert t.num_rows == 10 and t.column("v").to_pylist() == [j for j in range(n) if j % 97 > 3][:10]
    d = r.report.decoded
    # the predicate's column at the first range's rows, the others at its matches: a page or two each
    assert d.rows <= 512 and 0 < d.pages_read <= 6 and d.bytes_read < size / 10, (d, size)
    # the batch reader streams range by range: its first batch is out before the rest is read
    reader = ds.read("k > 3").to_arrow_batch_reader()
    first = reader.read_next_batch()
    assert 0 < first.num_rows < n


def test_report_fills_as_the_read_proceeds(datasets, monkeypatch):
    import paimon_fast.tables.stream as stream

    # batches of a few hundred selected rows: the 6 small files take several
    monkeypatch.setattr(stream, "FIRST_RANGE_ROWS", 300)
    monkeypatch.setattr(stream, "MAX_RANGE_ROWS", 300)
    root, _ = datasets["indexed"]
    r = ParquetDataset(root).read("score > 10")
    rep = r.report
    assert rep.files_total == 6 and rep.decoded.rows == 0
    reader = r.to_arrow_batch_reader()
    reader.read_next_batch()
    first = rep.decoded.rows_decoded
    for _ in reader:
        pass
    assert 0 < first < rep.decoded.rows_decoded


class _Counting:
    """A source of 100 one-row batches that counts what it produced (and can fail at batch 5)."""

    def __init__(self, fail=False):
        from paimon_fast.read.lazy import ReadSource

        outer = self

        class Src(ReadSource):
            def schema(self):
                return pa.schema([("i", pa.int64())])

            def batches(self, limit=None):
                for i in range(100):
                    if fail and i == 5:
                        raise pf.IndexFormatError("broken on purpose", i)
                    outer.made += 1
                    yield pa.table({"i": [i]})

        self.made = 0
        self.read = LazyRead(Src())


def test_the_read_runs_one_batch_ahead_and_stops_when_the_consumer_does():
    import gc
    import threading
    import time

    c = _Counting()
    reader = c.read.to_arrow_batch_reader()
    assert [reader.read_next_batch().column(0)[0].as_py() for _ in range(3)] == [0, 1, 2]
    time.sleep(0.2)
    assert c.made <= 5  # three handed out, one queued, at most one being made
    del reader
    gc.collect()
    time.sleep(0.3)
    assert c.made <= 5 and not [t for t in threading.enumerate() if t.name == "paimon-fast-read"]
    assert c.read.to_arrow().column(0).to_pylist() == list(range(100))
    c = _Counting(fail=True)
    with pytest.raises(pf.IndexFormatError, match="broken on purpose"):
        c.read.to_arrow()
    assert c.read.with_limit(3).to_arrow().num_rows == 3


@pytest.mark.parametrize(
    "tables",
    [
        [],  # no table: an empty one of the schema
        [pa.table({"i": pa.array([1, 2], pa.int64())}).replace_schema_metadata({"m": "1"})],  # as it is
        [pa.table({"i": pa.array([1, 2], pa.int64())})],  # without the schema's metadata
        [pa.table({"i": pa.array([1, 2], pa.int32())})],  # another type: cast
        [pa.table({"i": pa.array([1, 2], pa.int64())}).replace_schema_metadata({"k": "v"})],  # metadata
        [pa.table({"i": pa.array([1], pa.int64())}), pa.table({"i": pa.array([2], pa.int64())})],
        [pa.table({"i": pa.array([], pa.int64())}), pa.table({"i": pa.array([1, 2], pa.int64())})],
    ],
)
def test_to_arrow_gives_the_schema_whatever_tables_the_source_yields(tables):
    """``to_arrow`` hands a source's only table of the read's schema over as it is; any other
    yield (several tables, another type, other metadata, none) is conformed to the schema."""
    from paimon_fast.read.lazy import ReadSource

    schema = pa.schema([("i", pa.int64())], metadata={"m": "1"})

    class Src(ReadSource):
        def schema(self):
            return schema

        def batches(self, limit=None):
            yield from tables

    got = LazyRead(Src()).to_arrow()
    assert got.schema.equals(schema, check_metadata=True)
    assert got.column("i").to_pylist() == [v for t in tables for v in t.column("i").to_pylist()]
    if len(tables) == 1 and tables[0].schema.equals(schema, check_metadata=True):
        assert got is tables[0]


def test_legacy_scan_unpacks_with_a_warning(datasets):
    root, deleted = datasets["deletes"]
    ds = ParquetDataset(root)
    res = ds.scan("status = 'sent'", columns=["id", "status"])
    assert isinstance(res, LazyRead)
    with pytest.warns(DeprecationWarning, match=r"ParquetDataset\.scan returns a LazyRead"):
        t, rep = res
    assert (
        multiset(t.to_pylist(), ["id"])
        == multiset(res.to_arrow().to_pylist(), ["id"])
        == multiset(oracle(plain_rows(root), "status = 'sent'", deleted), ["id"])
    )
    assert rep is res.report and rep.files_total == 6


# ---------------------------------------------------------------- explain of a dataset


def test_explain_dataset_every_index_kind(tmp_path):
    from paimon_fast.tables.globalindex import build_global_index_local

    root = write_dataset(str(tmp_path / "ds"), rows=200)
    ds = ParquetDataset(root)
    ds.build(DS_OPTIONS)
    build_global_index_local(root, "tag", {"bitmap-index.fallback-scan-max-size": "0 b"})
    build_global_index_local(root, "status")
    where = "name = 'eu1-3' AND status = 'paid' AND score > 50 AND id >= 0 AND tag > 't2'"
    ex = ParquetDataset(root).read(where).explain()
    text = str(ex)
    assert text.splitlines()[0].startswith("Parquet dataset") and "index" in text.splitlines()[2]
    kinds = {(x.index, x.column, x.scope) for x in ex.indexes}
    assert kinds == {
        ("bloom-filter", "name", "file"),
        ("bitmap", "status", "file"),
        ("range-bitmap", "score", "file"),
        ("bsi", "id", "file"),
        ("bitmap", "tag", "global"),
        ("bitmap", "status", "global"),
        ("parquet statistics", "name", "file"),  # each file holds one name: its min / max settle it
        ("parquet statistics", "id", "file"),  # id >= 0 holds for every row of every file
    }
    st = ex.index("parquet statistics", "name")
    assert st.used and st.files_removed == 5 and st.rows_removed == 1000
    name = ex.index("bloom-filter", "name")
    assert name.used and name.files == 6 and name.files_removed == 5 and name.rows_removed == 1000
    assert ex.index("bitmap", "status", "global").used
    assert ex.index("range-bitmap", "score").used and ex.index("range-bitmap", "score").rows_removed > 0
    tag = ex.index("bitmap", "tag", "global")
    assert not tag.used and "fallback budget" in tag.why and "0: range and LIKE scans are off" in tag.why
    assert ex.files_read == 1 and ex.files_total == 6
    # an index present but unusable for the predicate
    ex = ds.read("name > 'eu3'").explain()
    u = ex.index("bloom-filter", "name")
    assert not u.used and u.why.startswith("unsupported predicate") and "greater_than" in u.why
    assert "no" in str(ex).splitlines()[3]


def test_explain_agrees_with_the_report_under_or(tmp_path):
    """Under an OR of two columns no index removes anything alone; the explain's last row, every
    index together, is the report's figures (files and rows skipped)."""
    root = write_dataset(str(tmp_path / "ds"), rows=200)
    ds = ParquetDataset(root)
    ds.build(DS_OPTIONS)
    for where in ("name = 'eu1-3' OR score > 95", "name = 'eu1-3' AND score > 50"):
        r = ParquetDataset(root).read(where)
        ex, rep = r.explain(), r.report
        skipped = rep.rows_skipped_by_file + rep.rows_skipped_by_bitmap + rep.rows_skipped_by_deletion
        assert (ex.files_removed, ex.rows_removed) == (rep.files_skipped, skipped) and skipped > 0, where
        last = [ln.split() for ln in str(ex).splitlines() if ln.startswith("together")][-1]  # (notes follow it)
        assert last[:3] == ["together", f"{rep.files_skipped:,}", f"{skipped:,}"]
        used = [x for x in ex.indexes if x.used]
        assert {x.column for x in used} == {"name", "score"}
        if "OR" in where:
            assert all(x.files_removed == x.rows_removed == 0 and "under OR" in x.why for x in used)
        else:
            assert all(x.rows_removed > 0 and not x.why for x in used)


def test_explain_dataset_stale_and_type_mismatch(tmp_path):
    from paimon_fast.tables.globalindex import build_global_index_local

    root = write_dataset(str(tmp_path / "ds"), rows=200)
    ParquetDataset(root).build(DS_OPTIONS)
    build_global_index_local(root, "tag")
    # one data file rewritten: its file index and the global index are stale
    f = os.path.join(root, "region=us", "part-2.parquet")
    t = pq.read_table(f)
    pq.write_table(t.slice(0, 150), f)
    ex = ParquetDataset(root).read("status = 'paid' AND tag = 't1'").explain()
    st = ex.index("bitmap", "status")
    assert st.used and st.files == 5 and "stale file: 1 data file changed" in st.why
    g = ex.index("bitmap", "tag", "global")
    assert not g.used and g.why.startswith("stale file")
    # the first file rewritten with id as a string: the other files' indexes were built for BIGINT
    f0 = os.path.join(root, "region=eu", "part-0.parquet")
    t0 = pq.read_table(f0)
    pq.write_table(t0.set_column(0, "id", t0.column("id").cast(pa.string())), f0)
    ex = ParquetDataset(root).read("id = '5'").explain()
    bsi = ex.index("bsi", "id")
    assert not bsi.used and "type mismatch (built for BIGINT, the column is STRING)" in bsi.why


# ---------------------------------------------------------------- Paimon tables

PAIMON_OPTS = {
    "file-index.bitmap.columns": "category",
    "file-index.range-bitmap.columns": "id",
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "2000",
}
PAIMON_WHERE = [
    "category = 'red' AND price > 500",
    "name = 'name-1234'",
    "id BETWEEN 1990 AND 2010",
    "category = 'magenta'",
    "price < 30 OR name = 'name-3999'",
]


@pytest.fixture(scope="module")
def native_table(tmp_path_factory):
    pytest.importorskip("pypaimon", reason="Paimon tables are read through pypaimon (the tables extra)")
    pytest.importorskip("pypaimon_rust", reason="pypaimon-rust (the tables extra) writes the file indexes")
    from tests.support.paimon_helpers import create_sample_table

    return create_sample_table(tmp_path_factory.mktemp("native"), options=PAIMON_OPTS, files=4, n=1000, native=True)


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "pypaimon-path"])
def test_paimon_rows_through_every_handoff(native_table, fast):
    from paimon_fast.paimon import read

    rows = pypaimon_read(native_table).to_pylist()
    skipped = 0
    for where in PAIMON_WHERE:
        r = read(native_table, where, fast=fast)
        check_all_handoffs(r, oracle(rows, where))
        assert r.report.fast_path is fast
        skipped += r.report.files_skipped + r.report.rows_skipped
        p = read(native_table, parse_predicate(where), columns=["price", "id"], fast=fast)
        check_all_handoffs(p, oracle(rows, where), ["price", "id"])
    assert skipped > 0


def test_paimon_java_tables_with_deletion_vectors_and_primary_keys(tmp_path):
    """Java Paimon 0.9 tables: an append table with a deletion vector (fast path) and a
    primary-key table with deletion vectors (pypaimon's path), embedded and sidecar indexes."""
    pytest.importorskip("pypaimon", reason="Paimon tables are read through pypaimon (the tables extra)")
    from paimon_fast.paimon import legacy_manifest_table, read
    from tests.support.paimon_helpers import catalog, unpack_java09

    cat = catalog(unpack_java09(tmp_path / "wh"))
    paths = set()
    for name in ("append_dv", "pk_dv", "append_sidecar"):
        t = legacy_manifest_table(cat.get_table(f"db.{name}"))
        rows = pypaimon_read(t).to_pylist()
        for where in ("name = 'name-1500'", "category = 'red' AND id < 1500", "id >= 3990"):
            r = read(t, where)
            check_all_handoffs(r, oracle(rows, where))
            paths.add((name, r.report.fast_path))
    assert paths == {("append_dv", True), ("pk_dv", False), ("append_sidecar", True)}


def test_paimon_table_on_s3(tmp_path, s3_server):
    """Java 0.9 tables copied to the S3 server, read through pypaimon's S3 FileIO: the same rows
    through every hand-off, on the fast path (embedded indexes) and pypaimon's (a primary key)."""
    pytest.importorskip("pypaimon", reason="Paimon tables are read through pypaimon (the tables extra)")
    from pypaimon import CatalogFactory

    from paimon_fast.paimon import legacy_manifest_table, read
    from tests.support.paimon_helpers import unpack_java09
    from tests.support.s3_support import KEY, REGION, SECRET

    wh = unpack_java09(tmp_path / "wh")
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(wh, bucket, "wh")
    cat = CatalogFactory.create(
        {
            "warehouse": f"s3://{bucket}/wh",
            "fs.s3.endpoint": s3_server.endpoint_url,
            "fs.s3.accessKeyId": KEY,
            "fs.s3.accessKeySecret": SECRET,
            "fs.s3.region": REGION,
            "fs.s3.path-style-access": "true",
        }
    )
    for name, fast in (("append_embedded", True), ("pk_dv", False)):
        t = legacy_manifest_table(cat.get_table(f"db.{name}"))
        where = "category = 'red' AND id < 1500"
        r = read(t, where)
        check_all_handoffs(r, oracle(pypaimon_read(t).to_pylist(), where))
        assert r.report.fast_path is fast


COLORS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black"]


def _global_table(wh, options, commits=3, n=150):
    import random

    from pypaimon import Schema
    from tests.support.paimon_helpers import catalog, commit_arrow

    cat = catalog(wh)
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int64()), ("color", pa.string()), ("n", pa.int32())])
    cat.create_table("db.g", Schema.from_pyarrow_schema(schema, options={"bucket": "-1", **options}), False)
    rnd = random.Random(3)
    for k in range(commits):
        ids = range(k * n, (k + 1) * n)
        commit_arrow(
            cat.get_table("db.g"),
            pa.table(
                {
                    "id": pa.array(list(ids), pa.int64()),
                    "color": [rnd.choice(COLORS + [None]) for _ in ids],
                    "n": pa.array([rnd.randrange(0, 9) for _ in ids], pa.int32()),
                },
                schema=schema,
            ),
        )
    return cat


@pytest.mark.parametrize(
    "options",
    [{"row-tracking.enabled": "true", "data-evolution.enabled": "true"}, {"row-tracking.enabled": "true"}],
    ids=["data-evolution", "row-tracking"],
)
def test_paimon_global_index_rows_and_explain(tmp_path, options):
    pytest.importorskip("pypaimon", reason="Paimon tables are read through pypaimon (the tables extra)")
    from paimon_fast.paimon import create_global_index, read

    from tests.support.paimon_helpers import commit_arrow

    cat = _global_table(str(tmp_path / "wh"), options)
    assert create_global_index(cat.get_table("db.g"), "color") > 0
    wheres = ("color = 'red'", "color IN ('blue', 'black') AND n > 4", "color IS NULL")
    t = cat.get_table("db.g")
    rows = pypaimon_read(t).to_pylist()
    for where in wheres:
        r = read(t, where)
        check_all_handoffs(r, oracle(rows, where))
        assert r.report.global_indexes, r.report
    # rows written after the build: the global index does not cover them (stale)
    commit_arrow(
        cat.get_table("db.g"),
        pa.table(
            {"id": pa.array([1000, 1001], pa.int64()), "color": ["red", "blue"], "n": pa.array([1, 2], pa.int32())}
        ),
    )
    t = cat.get_table("db.g")
    fast_mode = "data-evolution.enabled" in options
    for where in wheres:
        # search mode fast (data evolution): Java answers from the indexed row ranges only
        want = oracle([r for r in pypaimon_read(t).to_pylist() if not fast_mode or r["id"] < 1000], where)
        check_all_handoffs(read(t, where), want)
    ex = read(t, "color = 'red' AND n < 5").explain()
    g = ex.index("bitmap", "color", "global")
    assert g.used and g.files == 3 and g.rows_removed > 0 and "stale: 1 data file written after the build" in g.why
    mode = "search mode fast" if "data-evolution.enabled" in options else "search mode full"
    assert any(n.startswith(mode) for n in ex.notes), ex.notes
    ex = read(t, "color LIKE '%e%'").explain()  # a scan of the dictionary, within the default budget
    assert ex.index("bitmap", "color", "global").used


def test_paimon_explain_file_indexes(native_table, tmp_path):
    from paimon_fast.paimon import read

    ex = read(native_table, "category = 'red' AND name = 'name-2010' AND id >= 0").explain()
    assert {(x.index, x.column) for x in ex.indexes} == {
        ("bitmap", "category"),
        ("bloom-filter", "name"),
        ("range-bitmap", "id"),
    }
    # the statistics leave the two files holding red; each index counted alone over them
    assert all(x.used and x.files == 2 for x in ex.indexes)
    assert ex.index("bloom-filter", "name").files_removed == 1 and ex.index("range-bitmap", "id").rows_removed == 0
    assert ex.index("bitmap", "category").files_removed == 0 and ex.index("bitmap", "category").rows_removed == 1000
    assert (ex.files_total, ex.files_read, ex.rows_to_read) == (2, 1, 500)
    assert "fast path" in ex.notes[0]
    ex = read(native_table, "name LIKE 'name-1%'").explain()
    b = ex.index("bloom-filter", "name")
    assert not b.used and b.why == "unsupported predicate: bloom-filter cannot answer starts_with"
    # file indexes off: present, not read
    from tests.support.paimon_helpers import create_sample_table

    off = create_sample_table(
        tmp_path, name="off", options={**PAIMON_OPTS, "file-index.read.enabled": "false"}, files=2, n=500, native=True
    )
    ex = read(off, "category = 'red'").explain()
    u = ex.index("bitmap", "category")
    assert not u.used and u.files == 1 and "file-index.read.enabled is false" in u.why


def test_paimon_limit_reads_first_pages(native_table):
    from paimon_fast.paimon import read

    r = read(native_table, "price >= 10", limit=10)
    t = r.to_arrow()
    assert t.num_rows == 10 and all(p >= 10 for p in t.column("price").to_pylist())
    # the first 256 rows of the first file (its one page: 1,000 rows), nothing of the other 3,000
    assert r.report.decoded.rows <= 512 and r.report.rows_decoded <= 1000 and r.report.rows_returned == 10, r.report
    assert r.count() == 10 and read(native_table, "price >= 10").count() == sum(
        row["price"] >= 10 for row in pypaimon_read(native_table).to_pylist()
    )


def test_read_builder_is_pypaimons_shape(native_table):
    from paimon_fast.paimon import read_builder
    from paimon_fast.paimon.stream import FastSplit

    rows = pypaimon_read(native_table).to_pylist()
    rb = read_builder(native_table)
    pb = rb.new_predicate_builder()
    rb = rb.with_filter(pb.and_predicates([pb.equal("category", "green"), pb.less_than("price", 300)])).with_projection(
        ["id", "category"]
    )
    splits = rb.new_scan().plan().splits()
    assert splits and all(isinstance(s, FastSplit) for s in splits) and len(splits) == 2  # two files hold green
    want = oracle(rows, "category = 'green' AND price < 300")
    rd = rb.new_read()
    got = rd.to_arrow(splits)
    assert got.column_names == ["id", "category"]
    assert multiset(got.to_pylist(), ["id"]) == multiset(want, ["id"])
    # splits travel: pickled, read by another builder's reader
    again = pickle.loads(pickle.dumps(splits))
    assert [s.row_ranges() for s in again] == [s.row_ranges() for s in splits]
    other = (
        read_builder(native_table)
        .with_filter("category = 'green' AND price < 300")
        .with_projection(["id", "category"])
        .new_read()
    )
    assert multiset(other.to_arrow(again).to_pylist(), ["id"]) == multiset(want, ["id"])
    # the other hand-offs of pypaimon's TableRead
    assert multiset([{"id": r.get_field(0)} for r in rd.to_iterator(splits)], ["id"]) == multiset(want, ["id"])
    assert rd.to_pandas(splits).shape == (len(want), 2)
    assert sum(b.num_rows for b in rd.to_arrow_batch_reader(splits)) == len(want)
    con = rd.to_duckdb(splits, "g")
    assert con.sql("SELECT count(*), min(id) FROM g").fetchall()[0] == (len(want), min(r["id"] for r in want))
    # with_limit, and pypaimon's own splits refused by our reader
    red = read_builder(native_table).with_filter(pb.equal("category", "red")).with_limit(3)
    assert red.new_read().to_arrow(red.new_scan().plan().splits()).column("category").to_pylist() == ["red"] * 3
    plain = native_table.new_read_builder()
    with pytest.raises(TypeError, match="not a split of paimon_fast's plan"):
        rd.to_arrow(plain.new_scan().plan().splits())
    assert "bitmap" in str(rb.explain())


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "pypaimon-path"])
def test_pypaimon_builder_projection_without_the_predicate_columns(native_table, fast):
    """A pypaimon read builder whose projection leaves out the predicate's columns: they are
    read too, the rows filtered, then dropped (every hand-off, count, the legacy tuple)."""
    from paimon_fast.paimon import read, read_with_index

    rows = pypaimon_read(native_table).to_pylist()
    for where in ("price > 900", "category = 'red' AND price < 300", "name = 'name-12' OR price < 30"):
        rb = native_table.new_read_builder().with_projection(["id", "name"])
        want = oracle(rows, where)
        assert 0 < len(want) < len(rows)
        r = read(rb, where, fast=fast)
        assert r.columns == ["id", "name"]
        check_all_handoffs(r, want)
        assert read(rb, where, columns=["name"], fast=fast).count() == len(want)
        with pytest.warns(DeprecationWarning):
            t, _ = read_with_index(rb, where, fast=fast)
        assert t.column_names == ["id", "name"] and multiset(t.to_pylist(), ["id", "name"]) == multiset(
            want, ["id", "name"]
        )


def test_read_with_index_returns_the_read_object(native_table):
    from paimon_fast.paimon import read_with_index

    res = read_with_index(native_table, pf.field("category") == "cyan", projection=["id"])
    assert isinstance(res, LazyRead) and res.columns == ["id"]
    with pytest.warns(DeprecationWarning, match="read_with_index returns a LazyRead"):
        t, rep = res
    assert multiset(t.to_pylist(), ["id"]) == multiset(res.to_arrow().to_pylist(), ["id"])
    assert rep.rows_returned == t.num_rows > 0
    with pytest.raises(pf.ColumnNotFoundError):
        read_with_index(native_table, pf.field("nope") == 1)


# ---------------------------------------------------------------- Hudi tables

HUDI_SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("kind", pa.string()), ("n", pa.int32())])


def _hudi_rows(n=90):
    return pa.table(
        {
            "id": list(range(n)),
            "city": [["berlin", "paris", "rome"][i % 3] for i in range(n)],
            "kind": [["x", "y", "z"][i % 3] if i % 7 else None for i in range(n)],
            "n": [i % 5 for i in range(n)],
        },
        schema=HUDI_SCHEMA,
    )


@pytest.fixture(scope="module")
def hudi_table(tmp_path_factory):
    pytest.importorskip("hudi", reason="the hudi package (the tables extra) reads Hudi tables")
    import paimon_fast.hudi as ph
    from tests.support.hudi_writer import CowTable

    t = CowTable(str(tmp_path_factory.mktemp("hudi") / "t"), HUDI_SCHEMA, partition_field="city")
    t.insert(_hudi_rows(), groups=2)
    ph.build_index(None, t.path, ["city", "kind", "n"])
    return t


def test_hudi_rows_through_every_handoff(hudi_table):
    import paimon_fast.hudi as ph
    from tests.support.hudi_support import snapshot

    rows = snapshot(hudi_table.path).to_pylist()
    cols = ["id", "city", "kind", "n"]
    for where in (None, "kind = 'x' AND n > 1", "city = 'rome' OR n IN (0, 4)", "kind IS NULL", "n != 3"):
        r = ph.read(hudi_table.path, where)
        check_all_handoffs(r, oracle(rows, where))
        p = ph.read(hudi_table.path, where, columns=["n", "id"])
        check_all_handoffs(p, oracle(rows, where), ["n", "id"])
        assert ph.read(None, hudi_table.path, where, limit=2).to_arrow().num_rows == min(2, len(oracle(rows, where)))
    r = ph.read(hudi_table.path, "kind = 'y'", columns=cols)
    r.to_arrow()
    assert r.report["slices_pruned"] > 0 and r.report["rows_returned"] == len(oracle(rows, "kind = 'y'"))


def test_hudi_report_prints_as_text(hudi_table):
    import json

    import paimon_fast.hudi as ph

    r = ph.read(hudi_table.path, "kind = 'y'")
    r.to_arrow()
    rep = r.report
    text = str(rep)
    assert "{" not in text and "\n" not in text  # a line of text, as the other kinds' reports
    assert f"file slices {rep['slices_candidate']}/{rep['slices_total']} to read" in text
    assert f"({rep['slices_pruned']} pruned by the index" in text and f"{rep['rows_returned']:,} rows returned" in text
    assert f"index at {rep['index_instant']} (current)" in text
    assert json.loads(json.dumps(rep)) == dict(rep)  # still the dict it was
    assert str(ph.prune(hudi_table.path, "kind = 'y'").report).startswith("file slices ")


def test_hudi_explain_and_old_paths(hudi_table, tmp_path):
    import paimon_fast.hudi as ph
    from paimon_fast.hudi.read import read_arrow, read_slice  # the old module path  # noqa: F401

    ex = ph.read(hudi_table.path, "kind = 'x' AND n > 1").explain()
    k, n = ex.index("bitmap (RFC-92)", "kind"), ex.index("bitmap (RFC-92)", "n")
    assert k.used and k.files == 6 and k.files_removed == 4 and k.rows_removed > 0 and not k.why
    assert not n.used and "unsupported predicate" in n.why and "greater_than" in n.why
    assert read_arrow is ph.read_arrow and isinstance(ph.read_arrow(hudi_table.path, "n = 1"), LazyRead)
    # a commit the index has not seen: its slice is stale, read whole
    import shutil

    from tests.support.hudi_writer import CowTable

    t2 = CowTable(str(tmp_path / "t2"), HUDI_SCHEMA)
    t2.insert(pa.table({"id": [1, 2], "city": ["a", "b"], "kind": ["x", "y"], "n": [1, 2]}, schema=HUDI_SCHEMA))
    ph.build_index(None, t2.path, ["kind"])
    t2.insert(pa.table({"id": [3], "city": ["c"], "kind": ["x"], "n": [3]}, schema=HUDI_SCHEMA))
    ex = ph.read(t2.path, "kind = 'x'").explain()
    assert "stale file: 1 file slice written since the index run" in ex.index("bitmap (RFC-92)", "kind").why
    assert sorted(ph.read(t2.path, "kind = 'x'").to_arrow().column("id").to_pylist()) == [1, 3]
    shutil.rmtree(t2.path)


def test_hudi_count_without_predicate_counts_slices_the_index_does_not_know(tmp_path):
    """``count()`` without a predicate reads the slices whose row count the index does not give
    (no index, slices written after the index run, slices with log files): their rows count."""
    pytest.importorskip("hudi", reason="the hudi package (the tables extra) reads Hudi tables")
    import paimon_fast.hudi as ph
    from tests.support.hudi_support import snapshot, table_zips, unzip_table
    from tests.support.hudi_writer import CowTable

    t = CowTable(str(tmp_path / "noindex"), HUDI_SCHEMA, partition_field="city")
    t.insert(_hudi_rows(), groups=2)
    n = snapshot(t.path).num_rows
    assert ph.read(t.path).count() == n == 90
    assert ph.read(t.path, columns=["n"]).count() == n and ph.read(t.path, limit=7).count() == 7
    assert ph.read(t.path).select(["id"]).count() == n
    t2 = CowTable(str(tmp_path / "stale"), HUDI_SCHEMA, partition_field="city")
    t2.insert(_hudi_rows(), groups=2)
    ph.build_index(None, t2.path, ["city"])
    extra = pa.table({"id": [1000, 1001], "city": ["rome", "rome"], "kind": ["x", "y"], "n": [1, 2]})
    t2.insert(extra.cast(HUDI_SCHEMA), groups=1)
    assert ph.read(t2.path).count() == snapshot(t2.path).num_rows == 92
    # a merge-on-read table with log files (the real tables of the shared directory, where present)
    mor = [z for z in table_zips() if "/mor/" in z]
    if mor:
        path = unzip_table(mor[0], str(tmp_path / "mor"))
        assert ph.read(path).count() == snapshot(path).num_rows > 0


# ---------------------------------------------------------------- the CLI, missing packages, Ray


def test_cli_query_explain_and_limit(datasets, capsys):
    from paimon_fast import cli

    root, deleted = datasets["indexed"]
    assert cli.main(["query", root, "--where", "status = 'paid' AND score > 50", "--explain", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert "Parquet dataset" in out and re.search(r"range-bitmap +score", out) and "rows (limit 3)" in out
    want = {r["id"] for r in oracle(plain_rows(root), "status = 'paid' AND score > 50")}
    shown = [line.split()[0] for line in out.splitlines()[-3:]]
    assert all(int(i) in want for i in shown)


def test_missing_frames_packages_name_the_extra(datasets, monkeypatch):
    import sys

    root, _ = datasets["indexed"]
    r = ParquetDataset(root).read("id < 3")
    for mod, call in (("polars", r.to_polars), ("duckdb", lambda: r.to_duckdb("t"))):
        for m in [m for m in sys.modules if m == mod or m.startswith(mod + ".")]:
            monkeypatch.delitem(sys.modules, m)
        monkeypatch.setitem(sys.modules, mod, None)
        with pytest.raises(pf.MissingDependencyError, match=r'pip install "paimon-fast\[frames\]"'):
            call()


def test_to_ray_reads_on_ray_workers(datasets, native_table):
    ray = pytest.importorskip("ray", reason="ray (the ray extra) is not installed")
    from paimon_fast.paimon import read

    root, deleted = datasets["deletes"]
    rows = plain_rows(root)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = ParquetDataset(root).read("status = 'paid'", columns=["id", "score"]).to_ray().take_all()
            assert multiset(got, ["id", "score"]) == multiset(oracle(rows, "status = 'paid'", deleted), ["id", "score"])
            prow = pypaimon_read(native_table).to_pylist()
            got = read(native_table, "category = 'blue' AND price > 900", columns=["id"]).to_ray().take_all()
            assert multiset(got, ["id"]) == multiset(oracle(prow, "category = 'blue' AND price > 900"), ["id"])
            assert read(native_table, "price > 100", limit=5).to_ray().count() == 5
    finally:
        ray.shutdown()


@pytest.mark.parametrize("kind", ["indexed", "deletes"])
def test_count_of_exact_files_reads_no_data(datasets, kind, monkeypatch):
    """count(): a file whose plan is exact and has no deleted rows is counted from its bitmap,
    without a read; the others (inexact, or exact with deleted rows) through the reader; the
    total is the oracle's either way."""
    root, deleted = datasets[kind]
    rows = plain_rows(root)
    ds = ParquetDataset(root)
    real = ParquetDataset.read_kept_many
    read_files = []

    def spy(self, parts, *a, **k):
        read_files.extend(p.file.path for p, _ in parts)
        return real(self, parts, *a, **k)

    monkeypatch.setattr(ParquetDataset, "read_kept_many", spy)
    for where in ("status = 'paid'", "score > 90.5", "status = 'paid' AND tag = 't3'", "name = 'eu1-3'"):
        read_files.clear()
        r = ds.read(where)
        plan = r._source.plan()
        assert r.count() == len(oracle(rows, where, deleted)), where
        counted = {p.file.path for p in plan.kept if p.exact and p.deletion_vector is None}
        assert not counted & set(read_files), where  # nothing read of the files counted
        assert set(read_files) == {p.file.path for p in plan.kept} - counted, where
        if kind == "indexed" and where == "status = 'paid'":
            assert counted and not read_files  # a bitmap index answers it exactly everywhere
