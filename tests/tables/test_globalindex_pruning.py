"""Pruned reads with a bitmap global index (without Spark): ``ParquetDataset.plan`` / ``scan``
evaluate leaves on a globally indexed column with the global index, map the row ids back
to (file, rows), combine them with the file indexes under AND / OR, and ignore a stale index."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.tables import globalindex as sb
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.tables import ParquetDataset
from tests.support.sql_oracle import holds
from tests.support.globalindex_support import FILE_OPTIONS, write_dataset

GI_OPTIONS = {"bitmap-index.dictionary-block-size": "128b"}

PREDICATES = [
    "tag = 't07'",
    "tag = 'nope'",
    "tag IN ('t01', 't33', 'zz')",
    "tag != 't07'",
    "tag NOT IN ('t01', 't02')",
    "tag > 't50'",
    "tag BETWEEN 't10' AND 't12'",
    "tag IS NULL",
    "tag IS NOT NULL",
    "tag LIKE 't1%'",
    "tag LIKE '%7'",
    "tag LIKE 't_5'",
    "num = 17",
    "num < -480 OR num > 490",
    "num IN (1, 2, 3) AND tag IS NOT NULL",
    "tag = 't07' AND id < 1000",
    "tag = 't07' OR id = 1500",
    "tag = 't07' OR status = 'paid'",
    "(tag = 't03' OR tag = 't04') AND status = 'new'",
    "tag IN ('t01', 't02') AND num IS NULL",
    "NOT (tag = 't07' OR num >= 0)",
]


def full_answer(root, text):
    ds = ParquetDataset(root)
    t = pa.concat_tables([ds.read_file(f) for f in ds.files()])
    pred = parse_predicate(text)  # expected rows from the independent oracle, not the product's filter
    return sorted(r["id"] for r in t.to_pylist() if holds(pred, r))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = write_dataset(tmp_path_factory.mktemp("gi"))
    ParquetDataset(root).build(FILE_OPTIONS)
    sb.build_global_index_local(root, "tag", GI_OPTIONS)
    sb.build_global_index_local(root, "num", {"bitmap-index.compression": "zstd"})
    return root


@pytest.mark.parametrize("text", PREDICATES)
def test_pruned_scan_equals_full_scan(indexed, text):
    want = full_answer(indexed, text)
    t, rep = ParquetDataset(indexed).scan(text)
    assert sorted(t.column("id").to_pylist()) == want
    assert rep.global_index_used, rep
    assert rep.index_errors == 0
    assert "global index on" in str(rep)


def test_global_index_reads_fewer_rows(indexed):
    ds = ParquetDataset(indexed)
    rep = ds.plan("tag = 't07'").report
    n = len(full_answer(indexed, "tag = 't07'"))
    assert rep.global_index_used == ["tag"] and rep.global_index_stale == []
    # exactly the matching rows are read: the global index is exact
    assert rep.rows_read == n < rep.rows_total // 20
    assert rep.files_with_bitmap + rep.files_skipped == rep.files_total
    # a value absent from the index skips every file
    rep = ds.plan("tag = 'nope'").report
    assert rep.files_skipped == rep.files_total and rep.rows_read == 0
    # OR with a leaf the global index cannot narrow (bloom on id): the file index answers it
    rep = ds.plan("tag = 't07' OR id = 1500").report
    assert rep.global_index_used == ["tag"] and rep.rows_read < rep.rows_total
    # without the global index the bloom-only leaf prunes nothing row-wise
    assert ds.plan("id < 1000").report.global_index_used == []


def test_plan_bitmaps_are_exact_rows(indexed):
    ds = ParquetDataset(indexed)
    plan = ds.plan("tag IN ('t01', 't33')")
    for p in plan.kept:
        col = pq.read_table(p.file.abs_path, columns=["tag"]).column("tag").to_pylist()
        assert p.bitmap is not None
        assert [col[i] for i in p.bitmap] and all(col[i] in ("t01", "t33") for i in p.bitmap)
        assert len(p.bitmap) == sum(v in ("t01", "t33") for v in col)


def test_unsupported_leaf_prunes_nothing(indexed, tmp_path):
    import shutil

    root = str(tmp_path / "copy")
    shutil.copytree(indexed, root)
    # the fallback scan disabled: ranges / suffix / LIKE are UNSUPPORTED, equality still answers
    sb.build_global_index_local(root, "tag", {"bitmap-index.fallback-scan-max-size": "0 b"})
    ds = ParquetDataset(root)
    rep = ds.plan("tag LIKE 't_5'").report
    assert rep.global_index_used == [] and rep.rows_read == rep.rows_total
    t, rep = ds.scan("tag LIKE '%5' AND status = 'new'")
    assert sorted(t.column("id").to_pylist()) == full_answer(root, "tag LIKE '%5' AND status = 'new'")
    assert rep.global_index_used == [] and rep.rows_read < rep.rows_total  # the status bitmap still prunes
    assert ds.plan("tag = 't07'").report.global_index_used == ["tag"]


@pytest.mark.parametrize("change", ["rewrite", "add", "remove"])
def test_stale_global_index_is_ignored(indexed, tmp_path, change):
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(indexed, root, copy_function=shutil.copy2)
    root = str(root)
    target = os.path.join(root, "b.parquet")
    if change == "rewrite":
        # same rows, other tags: a stale index would answer with the old rows
        t = pq.read_table(target)
        t = t.set_column(t.schema.get_field_index("tag"), "tag", pa.array(["t07"] * t.num_rows))
        pq.write_table(t, target)
        st = os.stat(target)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    elif change == "add":
        t = pq.read_table(target)
        pq.write_table(
            t.set_column(0, "id", pa.array(np.arange(10**6, 10**6 + t.num_rows))),
            os.path.join(root, "a/part-00.parquet"),
        )
    else:
        os.unlink(target)
    for text in ("tag = 't07'", "tag != 't07' OR num = 17", "tag IS NULL"):
        t, rep = ParquetDataset(root).scan(text)
        assert rep.global_index_used == []
        assert rep.global_index_stale == sorted({"tag"} | ({"num"} if "num" in text else set()))
        assert "stale global index ignored" in str(rep)
        assert sorted(t.column("id").to_pylist()) == full_answer(root, text)
    # a rebuild makes it current again
    sb.build_global_index_local(root, "tag", GI_OPTIONS)
    t, rep = ParquetDataset(root).scan("tag = 't07'")
    assert rep.global_index_used == ["tag"]
    assert sorted(t.column("id").to_pylist()) == full_answer(root, "tag = 't07'")


def test_listing_without_file_states_is_never_current(indexed):
    listing = sb.read_listing(indexed, "tag")
    files = ParquetDataset(indexed).files()
    assert sb.listing_is_current(listing, files)
    old = dict(
        listing,
        data_files=[{k: v for k, v in d.items() if k not in ("size", "mtime_ns")} for d in listing["data_files"]],
    )
    assert not sb.listing_is_current(old, files)
