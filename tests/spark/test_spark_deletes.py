"""paimon_fast.spark.delete on a real local SparkSession: deletion vectors found on
executors, then every read path (pfs.read, the Data Source, ParquetDataset)
equals a plain Spark scan minus the deleted rows."""

import io
import shutil
from contextlib import redirect_stdout

import pytest

pyspark = pytest.importorskip("pyspark")

from paimon_fast.tables import ParquetDataset  # noqa: E402
from paimon_fast.tables.deletes import DV_KEY  # noqa: E402
from tests.support.spark_support import (  # noqa: E402
    COLS,
    OPTIONS,
    answers_in_one_job,
    full_scan_answers,
    write_dataset,
)

pytestmark = pytest.mark.spark

DELETES = [
    "id = 1234",
    "name LIKE 'us4%' AND score > 50",
    "status = 'paid' AND region = 'eu'",
    "name IS NULL OR id IN (5, 900, 1799) OR (id BETWEEN 100 AND 140 AND status = 'paid')",
]
QUERIES = [
    "id < 20",
    "status = 'paid'",
    "status IN ('new', 'sent') AND region = 'us'",
    "name = 'eu1-3'",
    "id IN (5, 6, 1234, 1235, 1500)",
    "status = 'new' AND region = 'eu'",
    "score > 90 OR name IS NULL",
]
SOURCE_QUERIES = ["status = 'new' AND region = 'eu'", "id IN (5, 6, 1234, 1235, 1500)"]


def test_delete_then_every_read_equals_full_scan_minus_deleted(spark, tmp_path):
    from paimon_fast import spark as pfs

    root = write_dataset(tmp_path / "d", rows=300)
    twin = str(tmp_path / "twin")
    shutil.copytree(root, twin)
    ParquetDataset(root).build(OPTIONS)  # byte-identical to pfs.build (test_spark_pipeline), and cheaper
    answers = full_scan_answers(spark, root, DELETES + QUERIES + ["id >= 0"])
    by_delete, by_query, everything = answers[: len(DELETES)], answers[len(DELETES) : -1], answers[-1]
    deleted = set()
    for i, (where, matching) in enumerate(zip(DELETES, by_delete)):
        # every other delete finds its rows on the executors (Spark's reader and Arrow tasks)
        rep = pfs.delete(spark, root, where, driver_max_bytes=0 if i % 2 else None)
        new = set(matching) - deleted
        assert rep.rows_deleted == len(new), where
        assert rep.files_touched == len({(r[0] // 300) for r in new}), where  # 300 rows per file, ids in order
        deleted |= new
        ParquetDataset(twin).delete(where)  # the in-process delete agrees position for position
    assert 200 < len(deleted) < len(everything)

    want = [sorted(set(w) - deleted) for w in by_query]
    dfs = [pfs.read(spark, root, q) for q in QUERIES] + [pfs.read(spark, root, QUERIES[0], use_index=False)]
    dfs += [spark.read.format("paimon-fast").load(root).where(q) for q in SOURCE_QUERIES]
    dfs += [spark.read.format("paimon-fast").option("where", QUERIES[-1]).load(root)]
    got = answers_in_one_job(dfs)
    n = len(QUERIES)
    for q, g, w in zip(QUERIES, got, want):
        assert g == w, q
    assert got[n] == want[0]
    for i, q in enumerate(SOURCE_QUERIES):
        assert got[n + 1 + i] == want[QUERIES.index(q)], q
    assert got[-1] == want[-1]
    assert sum(df.report.rows_skipped_by_bitmap for df in dfs[:n]) > 0  # exact bitmaps met deletions
    assert sum(len(w) for w in want) > 100

    ds, twin_ds = ParquetDataset(root), ParquetDataset(twin)
    dvs, twin_dvs = ds.deletion_vectors(), twin_ds.deletion_vectors()
    assert dvs.keys() == twin_dvs.keys() and all(dvs[k] == twin_dvs[k] for k in dvs)
    assert sum(dv.cardinality for dv in dvs.values()) == len(deleted)
    assert sorted(ds.scan(None)[0].select(COLS).to_pylist(), key=lambda r: r["id"]) == [
        dict(zip(COLS, r)) for r in sorted(set(everything) - deleted)
    ]

    # re-building the indexes keeps the deletions (a build rewrites the catalog)
    ParquetDataset(root).build(OPTIONS, force=True)
    assert ParquetDataset(root).deletion_vectors().keys() == dvs.keys()
    assert sorted(ParquetDataset(root).scan(QUERIES[1])[0].select(COLS).to_pylist(), key=lambda r: r["id"]) == [
        dict(zip(COLS, r)) for r in want[1]
    ]


def test_crash_before_catalog_rename_and_cli(spark, tmp_path):
    from paimon_fast import spark as pfs
    from paimon_fast.cli import main

    root = write_dataset(tmp_path / "c", rows=200)
    rep = pfs.delete(spark, root, "id < 10")
    assert rep.rows_deleted == 10 and rep.files_touched == 1
    cat = ParquetDataset(root).read_catalog()
    with pytest.raises(RuntimeError, match="injected"):
        pfs.delete(spark, root, "id < 20 OR id = 700", _fault="before_catalog")
    now = ParquetDataset(root).read_catalog()
    assert now.commit_version == cat.commit_version and now == cat
    assert pfs.read(spark, root, "id < 30").count() == 20  # the previous state
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["delete", root, "--where", "id < 20 OR id = 700"]) == 0
    assert "11 rows deleted in 2 files" in out.getvalue()
    entries = ParquetDataset(root).read_catalog()["files"]
    assert sorted(p for p, e in entries.items() if DV_KEY in e) == [
        "region=eu/part-0.parquet",
        "region=us/part-0.parquet",
    ]
    assert sorted(r["id"] for r in pfs.read(spark, root, "id < 30 OR id BETWEEN 699 AND 701").collect()) == list(
        range(20, 30)
    ) + [699, 701]


def test_spark_build_and_delete_while_files_change_under_them(spark, tmp_path):
    """pfs.build and pfs.delete with a data file rewritten (same size, same mtime) and another
    delete committed while they run: the executors read against the driver's snapshot (a file
    changed since is not indexed), the delete's commit merges, the answers are an oracle's."""
    from paimon_fast import spark as pfs
    from paimon_fast.tables import steps
    from tests.support.trust_support import DELETE, OPTIONS as TRUST_OPTIONS, Where, deleted_by, expected, make, rewrite

    where = Where(str(tmp_path / "t"))
    make(where)
    ParquetDataset(where.uri).build(TRUST_OPTIONS)
    deleted = set()

    def at(step, action):
        fired = []

        def hook(name, ctx):
            if name == step and not fired:
                fired.append(name)
                action()

        return steps.hook(hook), fired

    def spark_answers():
        out = {}
        for q in expected(where, set()):
            df = pfs.read(spark, where.uri, q, columns=["id"], driver_max_bytes=0)
            out[q] = sorted(r["id"] for r in df.collect())
        return out

    h, fired = at("build.snapshot", lambda: rewrite(where, "p=a/f1.parquet"))
    with h:
        rep = pfs.build(spark, where.uri, TRUST_OPTIONS, force=True)
    assert fired and rep.changed == ["p=a/f1.parquet"] and rep.files_built == 2
    assert ParquetDataset(where.uri).read("country = 'NO'").report.unindexed == {
        "p=a/f1.parquet": "changed since the build"
    }
    assert spark_answers() == expected(where, deleted)
    assert pfs.build(spark, where.uri, TRUST_OPTIONS).built == ["p=a/f1.parquet"]

    other = deleted_by(where, deleted, lambda r: r["id"] in (17, 418))
    mine = deleted_by(where, deleted | other)
    h, fired = at("delete.commit", lambda: ParquetDataset(where.uri).delete("id IN (17, 418)"))
    with h:
        rep = pfs.delete(spark, where.uri, DELETE, driver_max_bytes=0)
    assert fired and rep.rows_deleted == len(mine) and rep.rebased == 1
    deleted |= other | mine
    assert spark_answers() == expected(where, deleted)
