"""A dataset stays a plain Parquet directory after we index it, and the old layout (containers
beside the data files) is still read, moved on the next build and known to ``gc``.

The plain readers are pyarrow's (``pq.read_table(dir)``, ``pyarrow.dataset``) and DuckDB's
``read_parquet('dir/**/*.parquet', hive_partitioning=true)``; Spark's ``spark.read.parquet(dir)``
is checked in ``test_spark_reads.py``.  Each must return the same rows after every kind of
index build (file indexes, inline ones, a global index, deletion vectors) as before it."""

import os
import re
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from paimon_fast.tables import CATALOG_NAME, ParquetDataset
from paimon_fast.tables.gc import collect
from tests.support.rows import sorted_rows

OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "300",
    "file-index.bitmap.columns": "status",
    "file-index.bsi.columns": "qty",
}


def make_dataset(root, parts=("a", "b"), files=2, rows=300):
    i = 0
    for part in parts:
        os.makedirs(root / f"p={part}", exist_ok=True)
        for k in range(files):
            ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            pq.write_table(
                pa.table(
                    {
                        "id": ids,
                        "status": pa.array([["new", "paid", "sent"][j % 3] for j in range(rows)]),
                        "qty": pa.array((ids % 17).astype(np.int32)),
                    }
                ),
                root / f"p={part}" / f"f{k}.parquet",
                row_group_size=100,
            )
            i += 1
    return ParquetDataset(str(root))


def plain_readers(root):
    """The rows each plain reader gets from the directory (partition column as a string)."""
    out = {}
    t = pq.read_table(str(root))
    out["pq.read_table"] = t.set_column(t.schema.get_field_index("p"), "p", t.column("p").cast(pa.string()))
    t = pads.dataset(str(root), format="parquet", partitioning="hive").to_table()
    out["pyarrow.dataset"] = t.set_column(t.schema.get_field_index("p"), "p", t.column("p").cast(pa.string()))
    import duckdb  # the test extra installs it

    res = duckdb.connect().sql(
        f"SELECT id, status, qty, CAST(p AS VARCHAR) AS p FROM read_parquet('{root}/**/*.parquet', "
        "hive_partitioning=true)"
    )
    out["duckdb"] = res.to_arrow_table() if hasattr(res, "to_arrow_table") else res.arrow()
    return {k: sorted_rows(v, ["id", "status", "qty", "p"]) for k, v in out.items()}


def test_plain_readers_read_the_same_rows_after_every_build(tmp_path):
    ds = make_dataset(tmp_path)
    before = plain_readers(tmp_path)
    assert len(next(iter(before.values()))) == 1200 and all(v == before["pq.read_table"] for v in before.values())
    ds.build(OPTIONS)
    ds.build(dict(OPTIONS, **{"file-index.in-manifest-threshold": "1mb"}))  # inline now: files removed
    ds.build(OPTIONS)
    from paimon_fast.tables.globalindex import build_global_index_local

    build_global_index_local(str(tmp_path), "status")
    ds.delete("id = 5")
    names = sorted(os.listdir(tmp_path))
    assert names == ["_commits", "_deletion_vectors", "_file_index", "_global_index", CATALOG_NAME, "p=a", "p=b"], names
    for d in ("p=a", "p=b"):  # nothing of ours beside the data files
        assert sorted(os.listdir(tmp_path / d)) == ["f0.parquet", "f1.parquet"]
    assert plain_readers(tmp_path) == before
    # and ours reads its indexes from where they are now
    plan = ds.plan("id = 7")
    assert plan.report.files_without_index == 0 and len(plan.kept) == 1


def to_old_layout(root):
    """Rewrite a dataset the way versions before ``_file_index/`` left it: each container beside
    its data file as ``<name>.parquet.index``, named by ``file`` in the catalog entry (committed as
    a new catalog version: the entries keep their identities, so the containers stay usable)."""
    ds = ParquetDataset(str(root))
    cat = ds.read_catalog()
    new = dict(cat)
    new["files"] = {}
    for rel, e in cat["files"].items():
        fi = dict(e.get("file_index") or {})
        if "path" in fi:
            os.replace(root / fi.pop("path"), root / (rel + ".index"))
            fi.pop("checksum", None)
            fi["file"] = rel.rsplit("/", 1)[-1] + ".index"
        new["files"][rel] = dict(e, file_index=fi)
    ds.write_catalog(type(cat)(new, cat.commit_version))
    shutil.rmtree(root / "_file_index")


def test_old_layout_is_read_then_moved_by_the_next_build(tmp_path):
    ds = make_dataset(tmp_path)
    ds.build(OPTIONS)
    new_plan = ds.plan("status = 'paid' AND qty = 3")
    to_old_layout(tmp_path)
    ds = ParquetDataset(str(tmp_path))
    old_plan = ds.plan("status = 'paid' AND qty = 3")
    assert old_plan.report.files_without_index == 0 and old_plan.report.index_errors == 0
    assert [list(p.bitmap) for p in old_plan.kept] == [list(p.bitmap) for p in new_plan.kept]
    got, _ = ds.scan("status = 'paid' AND qty = 3")
    assert sorted(got.column("id").to_pylist()) == [i for i in range(1200) if i % 3 == 1 and i % 17 == 3]

    # gc knows the old names: nothing of the old layout is an orphan while the catalog names it
    def orphans():  # superseded catalog versions aside
        return [o.path for o in collect(str(tmp_path), min_age=0).orphans if "catalog version" not in o.reason]

    assert orphans() == []
    stray = tmp_path / "p=a" / "gone.parquet.index"
    stray.write_bytes(b"x")
    assert orphans() == [str(stray)]
    stray.unlink()
    # the next build moves the containers (same bytes, no rebuild) and removes the old files
    before = {rel: (tmp_path / (rel + ".index")).read_bytes() for rel in ds.read_catalog()["files"]}
    rep = ds.build(OPTIONS)
    assert rep.files_built == 0 and rep.files_current == 4
    for d in ("p=a", "p=b"):
        assert sorted(os.listdir(tmp_path / d)) == ["f0.parquet", "f1.parquet"]
    cat = ds.read_catalog()["files"]
    for rel, blob in before.items():
        assert re.fullmatch(rf"_file_index/{re.escape(rel)}\.[0-9a-f]{{16}}\.index", cat[rel]["file_index"]["path"])
        assert "file" not in cat[rel]["file_index"] and cat[rel]["file_index"]["checksum"]
        assert (tmp_path / cat[rel]["file_index"]["path"]).read_bytes() == blob
    again = ds.plan("status = 'paid' AND qty = 3")
    assert [list(p.bitmap) for p in again.kept] == [list(p.bitmap) for p in new_plan.kept]


def test_old_layout_stale_entry_is_rebuilt_in_the_new_layout(tmp_path):
    ds = make_dataset(tmp_path, parts=("a",), files=2)
    ds.build(OPTIONS)
    to_old_layout(tmp_path)
    # one data file changes: its old container is stale, the other one is current
    pq.write_table(
        pa.table(
            {
                "id": np.arange(300, dtype=np.int64) + 10_000,
                "status": ["new"] * 300,
                "qty": pa.array([1] * 300, pa.int32()),
            }
        ),
        tmp_path / "p=a" / "f1.parquet",
    )
    ds = ParquetDataset(str(tmp_path))
    rep = ds.build(OPTIONS)
    assert rep.built == ["p=a/f1.parquet"]
    assert sorted(os.listdir(tmp_path / "p=a")) == ["f0.parquet", "f1.parquet"]
    cat = ds.read_catalog()["files"]
    assert cat["p=a/f0.parquet"]["file_index"]["path"].startswith("_file_index/p=a/f0.parquet.")
    assert "inline" in cat["p=a/f1.parquet"]["file_index"]  # 300 equal rows: a small index
    assert sorted(os.listdir(tmp_path / "_file_index" / "p=a")) == [
        cat["p=a/f0.parquet"]["file_index"]["path"].rsplit("/", 1)[1]
    ]
    got, rep = ds.scan("id = 10003 OR qty = 16")
    assert rep.files_without_index == 0 and rep.index_errors == 0
    assert sorted(got.column("id").to_pylist()) == [i for i in range(300) if i % 17 == 16] + [10003]


def test_gc_finds_orphans_under_the_index_directory(tmp_path):
    ds = make_dataset(tmp_path, parts=("a",), files=2)
    ds.build(OPTIONS)
    assert collect(str(tmp_path), min_age=0).orphans == []
    orphan = tmp_path / "_file_index" / "p=a" / "f9.parquet.index"
    orphan.write_bytes(b"x")
    tmp = tmp_path / "_file_index" / "p=a" / ".f0.parquet.index.tmp-abc"
    tmp.write_bytes(b"y")
    rep = collect(str(tmp_path), min_age=0)
    assert {(o.path, o.reason) for o in rep.orphans} == {
        (str(orphan), "file index of a data file that no longer exists"),
        (str(tmp), "temporary file of an interrupted write"),
    }
    assert ds.temp_files() == [str(tmp)]
    collect(str(tmp_path), min_age=0, delete=True)
    cat = ds.read_catalog()["files"]
    assert sorted(os.listdir(tmp_path / "_file_index" / "p=a")) == sorted(
        cat[f"p=a/f{k}.parquet"]["file_index"]["path"].rsplit("/", 1)[1] for k in (0, 1)
    )


# ---------------------------------------------------------------- exact plans
EXACT_OPTIONS = {
    "file-index.bitmap.columns": "s,b",
    "file-index.bsi.columns": "i",
    "file-index.bloom-filter.columns": "i",
    "file-index.range-bitmap.columns": "d,f,ts,dec",
}


def _typed_dataset(root, files=3, rows=400, seed=5):
    import datetime as dt
    from decimal import Decimal

    rng = np.random.default_rng(seed)
    for k in range(files):
        part = ["x", "y"][k % 2]
        os.makedirs(root / f"p={part}", exist_ok=True)
        n = rows
        null = rng.random(n) < 0.1
        i = pa.array(rng.integers(-50, 50, n), pa.int64(), mask=null)
        s = pa.array([None if rng.random() < 0.1 else f"v{int(v)}" for v in rng.integers(0, 12, n)])
        d = pa.array(
            [
                None if rng.random() < 0.05 else dt.date(2020, 1, 1) + dt.timedelta(days=int(v))
                for v in rng.integers(0, 60, n)
            ]
        )
        dec = pa.array(
            [None if rng.random() < 0.05 else Decimal(int(v)) / 4 for v in rng.integers(-20, 20, n)],
            pa.decimal128(10, 2),
        )
        fv = rng.integers(-5, 5, n).astype(float)
        if k:  # the first file has no NaN: its range bitmap answers > and >= on DOUBLE exactly
            fv[rng.random(n) < 0.05] = np.nan
        fv[rng.random(n) < 0.05] = -0.0
        ts = pa.array(
            [
                None if rng.random() < 0.05 else dt.datetime(2024, 1, 1) + dt.timedelta(seconds=int(v))
                for v in rng.integers(0, 30, n)
            ],
            pa.timestamp("us"),
        )
        b = pa.array([None if rng.random() < 0.1 else bool(v) for v in rng.integers(0, 2, n)])
        pq.write_table(
            pa.table({"i": i, "s": s, "d": d, "dec": dec, "f": fv, "ts": ts, "b": b}),
            root / f"p={part}" / f"f{k}.parquet",
            row_group_size=150,
        )
    return ParquetDataset(str(root))


def _exact_predicates(rng, n):
    leaves = [
        lambda: f"i = {rng.integers(-50, 50)}",
        lambda: f"i IN ({rng.integers(-50, 50)}, {rng.integers(-50, 50)})",
        lambda: f"i < {rng.integers(-50, 50)}",
        lambda: f"i BETWEEN {rng.integers(-50, 0)} AND {rng.integers(0, 50)}",
        lambda: "i IS NULL",
        lambda: "i IS NOT NULL",
        lambda: f"i != {rng.integers(-50, 50)}",
        lambda: f"s = 'v{rng.integers(0, 12)}'",
        lambda: f"s IN ('v{rng.integers(0, 12)}', 'v{rng.integers(0, 12)}')",
        lambda: "s IS NULL",
        lambda: f"s > 'v{rng.integers(0, 12)}'",
        lambda: "s NOT IN ('v1', 'v2')",
        lambda: f"d >= DATE '2020-01-{rng.integers(1, 29):02d}'",
        lambda: f"d = DATE '2020-02-{rng.integers(1, 29):02d}'",
        lambda: f"dec = {rng.integers(-20, 20) / 4}",
        lambda: f"dec > {rng.integers(-20, 20) / 4}",
        lambda: f"f > {rng.integers(-5, 5)}",
        lambda: "f = 0",
        lambda: "f IS NULL",
        lambda: f"f <= {rng.integers(-5, 5)}",
        lambda: f"f BETWEEN {rng.integers(-5, 0)} AND {rng.integers(0, 5)}",
        lambda: f"f >= {rng.integers(-5, 5) + 0.5}",
        lambda: f"ts < TIMESTAMP '2024-01-01 00:00:{rng.integers(0, 30):02d}'",
        lambda: "b = true",
        lambda: "b IS NULL",
        lambda: "p = 'x'",
        lambda: "p != 'y'",
    ]
    out = []
    for _ in range(n):
        a, b, c = (leaves[rng.integers(0, len(leaves))]() for _ in range(3))
        out.append(
            [a, f"{a} AND {b}", f"{a} OR {b}", f"({a} OR {b}) AND {c}", f"{a} AND NOT ({b})"][rng.integers(0, 5)]
        )
    return out


def test_exact_plans_select_exactly_the_matching_rows(tmp_path):
    """A plan that says it is exact (every leaf answered by a partition value or an index that
    keeps a bitmap per value: bitmap, BSI, range bitmap, the bitmap global index; never on
    FLOAT / DOUBLE) selects exactly the rows where the predicate holds, deleted rows left out:
    readers take those rows without evaluating the predicate.  Checked against sql_oracle over
    pyarrow's rows of each file, on 150 random predicates over seven types with nulls, NaN and
    -0.0."""
    from tests.support import sql_oracle

    from paimon_fast.core.sqlpredicate import parse_predicate
    from paimon_fast.tables.globalindex import build_global_index_local

    ds = _typed_dataset(tmp_path)
    ds.build(EXACT_OPTIONS)
    build_global_index_local(str(tmp_path), "s")
    ds.delete("i = 7 OR s = 'v3'")
    ds = ParquetDataset(str(tmp_path))
    deleted = {f.path: v for f, v in ((f, ds.deletion_vectors().get(f.path)) for f in ds.files())}
    rows = {}
    for f in ds.files():
        t = pq.read_table(f.abs_path).append_column("p", pa.array([dict(f.partition)["p"]] * 400))
        rows[f.path] = t.to_pylist()
    rng = np.random.default_rng(17)
    exact = inexact = 0
    for text in _exact_predicates(rng, 150):
        pred = parse_predicate(text)
        plan = ds.plan(text)
        for p in plan.files:
            dv = deleted[p.file.path]
            want = [
                j
                for j, r in enumerate(rows[p.file.path])
                if sql_oracle.holds(pred, r) and not (dv is not None and dv.is_deleted(j))
            ]
            if p.skipped:
                assert want == [], (text, p.file.path)
                continue
            if not p.exact:
                inexact += 1
                continue
            exact += 1
            got = (
                list(p.bitmap)
                if p.bitmap is not None
                else [j for j in range(p.rows) if not (dv is not None and dv.is_deleted(j))]
            )
            assert got == want, (text, p.file.path)
            assert ds.read_kept(p, ["i"], plan.predicate).num_rows == len(want)
            # what deletes and counts ask for: the positions alone, no column read
            t = ds.read_kept(p, [], plan.predicate, positions=True)
            assert t.column_names == ["__pf_pos"] and t.column(0).to_pylist() == want, (text, p.file.path)
    assert exact > 100 and inexact > 50
