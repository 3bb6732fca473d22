"""Row-level deletes of a ParquetDataset with Paimon deletion vectors (no Spark):
delete then read equals a full scan minus the deleted rows, repeated deletes
merge, rebuilt indexes keep deletions, exact index bitmaps never return deleted
rows, and a crash before the catalog rename leaves the previous state readable."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.compute as pc
import pytest

import tests.support.toy_index  # noqa: F401  (registers the test-only "test-positions" index type)
from paimon_fast import tableindex as ti
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.tables import ParquetDataset
from tests.support.sql_oracle import holds
from paimon_fast.tables.deletes import DV_DIR, DV_KEY
from tests.support.dataset_support import BLOOM, make_dataset

POSITIONS = dict(BLOOM, **{"file-index.test-positions.columns": "status"})


def ids(table):
    return sorted(table.column("id").to_pylist())


def deletion_files(root):
    d = os.path.join(root, DV_DIR)
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []


def catalog(root):
    return ParquetDataset(root).read_catalog()


def gc_now(root):
    """Remove what no catalog version names any more (no grace period: nothing else runs)."""
    from paimon_fast.tables.gc import collect

    return collect(root, delete=True, min_age=0)


def expected(full, deleted_ids, where=None):
    t = full.filter(pc.invert(pc.is_in(full.column("id"), pa.array(sorted(deleted_ids), pa.int64()))))
    if where is None:
        return ids(t)
    pred = parse_predicate(where)  # the independent oracle, not the product's filter
    return sorted(r["id"] for r in t.to_pylist() if holds(pred, r))


DELETES = [
    "id = 5",
    "name = 'n3' AND score > 50",
    "p = 'b' AND status = 'sent'",
    "name IS NULL",
    "id IN (401, 402, 2399, 99999) OR (score < 10 AND p = 'a')",
    "status LIKE 'pa%' AND id BETWEEN 800 AND 1000",
]
QUERIES = [None, "id < 450", "p = 'b'", "status = 'paid'", "name = 'n3' OR name IS NULL", "id IN (5, 6, 401, 2000)"]


def test_delete_then_read_equals_full_scan_minus_deleted(tmp_path):
    ds = make_dataset(tmp_path)
    ds.build(POSITIONS)
    full = pa.concat_tables(ds.read_file(f) for f in ds.files())
    deleted = set()
    for k, where in enumerate(DELETES):
        before = deletion_files(ds.root)
        want_now = set(expected(full, deleted, where))
        rep = ds.delete(where)
        assert rep.rows_deleted == len(want_now), where
        deleted |= want_now
        after = deletion_files(ds.root)
        if rep.rows_deleted:
            assert rep.deletion_file in after and rep.deletion_file not in before  # ONE new file per commit
            assert len(set(after) - set(before)) == 1
        for q in QUERIES:
            t, r = ParquetDataset(ds.root).scan(q)
            assert ids(t) == expected(full, deleted, q), (where, q)
    assert len(deleted) > 300
    # the catalog records Paimon index metadata: (file, offset, length, cardinality) that read back
    cat = catalog(ds.root)
    by_file = {}
    for path, e in cat["files"].items():
        if DV_KEY in e:
            d = e[DV_KEY]
            by_file.setdefault(d["file"], []).append((path, d["offset"], d["length"], d["cardinality"]))
    assert set(by_file) < set(deletion_files(ds.root))  # replaced deletion files stay for older versions' readers
    gc_now(ds.root)
    assert sorted(by_file) == deletion_files(ds.root)  # until gc removes them
    total = 0
    for name, metas in by_file.items():
        for entry in ti.read_deletion_file(os.path.join(ds.root, DV_DIR, name), metas):
            total += entry.cardinality
            assert isinstance(entry.vector, ti.BitmapDeletionVector)
    assert total == len(deleted)
    rep = ParquetDataset(ds.root).plan(None).report
    assert rep.rows_deleted_total == len(deleted) and rep.rows_read == full.num_rows - len(deleted)


def test_repeated_deletes_merge(tmp_path):
    ds = make_dataset(tmp_path)
    assert ds.delete("id < 10").rows_deleted == 10
    first = deletion_files(ds.root)
    rep = ds.delete("id < 25 OR id = 1000")
    assert rep.rows_deleted == 16 and rep.files_touched == 2
    dvs = ds.deletion_vectors()
    assert dvs["p=a/f0.parquet"].cardinality == 25
    assert list(dvs["p=a/f0.parquet"].positions()) == list(range(25))
    assert list(dvs["p=a/f2.parquet"].positions()) == [200]  # id 1000 is row 200 of the third file
    assert deletion_files(ds.root) == sorted(first + [rep.deletion_file]) and first != [rep.deletion_file]
    gc_now(ds.root)
    assert deletion_files(ds.root) == [rep.deletion_file]
    again = ds.delete("id < 25")  # nothing new: no commit, no new file
    assert again.rows_deleted == 0 and again.deletion_file is None
    assert deletion_files(ds.root) == [rep.deletion_file]
    assert ids(ds.scan("id < 30")[0]) == [25, 26, 27, 28, 29]


@pytest.mark.parametrize("index_type", ["test-positions", "bitmap"])
def test_rebuilding_indexes_keeps_deletions_and_bitmaps_skip_deleted_rows(tmp_path, index_type):
    opts = dict(BLOOM, **{f"file-index.{index_type}.columns": "status"})  # both answer = with exact rows
    ds = make_dataset(tmp_path)
    ds.build(opts)
    ds.delete("status = 'paid' AND id < 300")
    plan = ds.plan("status = 'paid'")
    b = plan.files[0].bitmap
    assert b is not None and len(b) > 0
    dv = plan.files[0].deletion_vector
    assert all(not dv.is_deleted(int(x)) for x in b)
    assert plan.report.rows_skipped_by_bitmap > 0
    want = ids(ds.scan("status = 'paid'")[0])
    full = pa.concat_tables(ds.read_file(f) for f in ds.files())
    paid = expected(full, set(), "status = 'paid'")
    assert want == [i for i in paid if i >= 300] and len(want) == len(paid) - 100
    for force in (True, False):
        rep = ds.build(opts, force=force)
        assert rep.files_built == (6 if force else 0)
        ds2 = ParquetDataset(ds.root)
        assert ids(ds2.scan("status = 'paid'")[0]) == want
        assert ds2.deletion_vectors()["p=a/f0.parquet"].cardinality == 100
    # a file whose rows are all deleted is skipped without being read
    ds.delete("p = 'a' AND id < 400")
    plan = ParquetDataset(ds.root).plan(None)
    assert plan.files[0].skipped and plan.report.files_all_deleted == 1
    assert ids(ParquetDataset(ds.root).scan("id < 410")[0]) == list(range(400, 410))


@pytest.mark.parametrize("fault", ["before_catalog", "catalog"])
def test_crash_before_catalog_rename_leaves_previous_state(tmp_path, fault):
    ds = make_dataset(tmp_path)
    ds.build(BLOOM)
    ds.delete("id < 50 OR id >= 2350")
    cat = catalog(ds.root)
    old_files = {n: open(os.path.join(ds.root, DV_DIR, n), "rb").read() for n in deletion_files(ds.root)}
    state = ids(ds.scan(None)[0])
    with pytest.raises(RuntimeError, match="injected"):
        ds.delete("id < 100 OR id = 1200", _fault=fault)
    now = catalog(ds.root)
    assert now.commit_version == cat.commit_version and now == cat
    for n, data in old_files.items():  # old deletion files intact
        assert open(os.path.join(ds.root, DV_DIR, n), "rb").read() == data
    fresh = ParquetDataset(ds.root)
    assert ids(fresh.scan(None)[0]) == state and len(state) == 2400 - 100
    # the retry commits and cleans up
    rep = fresh.delete("id < 100 OR id = 1200")
    assert rep.rows_deleted == 51
    assert ids(fresh.scan("id < 120")[0]) == list(range(100, 120))
    refs = {e[DV_KEY]["file"] for e in catalog(ds.root)["files"].values() if DV_KEY in e}
    (old,) = old_files
    assert refs == {old, rep.deletion_file}  # p=b/f2's vector still lives in the old file
    assert set(deletion_files(ds.root)) == refs  # the failed delete removed the file it wrote


def test_64bit_vectors_and_stale_vectors(tmp_path):
    ds = make_dataset(tmp_path, files_per_part=1)
    rep = ds.delete("id IN (0, 7, 14, 401)", bitmap64=True)
    assert rep.rows_deleted == 4
    e = catalog(ds.root)["files"]["p=a/f0.parquet"][DV_KEY]
    assert e["bitmap64"] is True
    dv = ti.read_deletion_vector(os.path.join(ds.root, DV_DIR, e["file"]), e["offset"], e["length"])
    assert isinstance(dv, ti.Bitmap64DeletionVector) and list(dv.positions()) == [0, 7, 14]
    # merging keeps the kind
    ds.delete("id = 21")
    assert isinstance(ds.deletion_vectors()["p=a/f0.parquet"], ti.Bitmap64DeletionVector)
    assert ids(ds.scan("id < 25")[0]) == [i for i in range(25) if i not in (0, 7, 14, 21)]
    # a data file only touched (or copied) keeps its bytes: its vector still applies (its witness says so)
    f = ds.files()[0]
    st = os.stat(f.abs_path)
    os.utime(f.abs_path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert "p=a/f0.parquet" in ParquetDataset(ds.root).deletion_vectors()
    assert ids(ParquetDataset(ds.root).scan("id < 3")[0]) == [1, 2]
    # a data file rewritten after the delete no longer matches its positions: the vector is ignored
    t = pq.read_table(f.abs_path)
    pq.write_table(t.set_column(2, "score", pa.array([1.5] * t.num_rows)), f.abs_path, row_group_size=100)
    fresh = ParquetDataset(ds.root)
    assert "p=a/f0.parquet" not in fresh.deletion_vectors()
    assert ids(fresh.scan("id < 3")[0]) == [0, 1, 2]
    with pytest.raises(ValueError):
        fresh.delete(None)


def test_concurrent_delete_is_merged(tmp_path, monkeypatch):
    """Another delete of the same file commits while this one writes its deletion file: this one's
    commit is rebased (both deletes' rows end up deleted), nothing is lost, and the file this one
    wrote before the rebase is removed by it."""
    from paimon_fast.tables import deletes

    ds = make_dataset(tmp_path, files_per_part=1)
    ds.delete("id = 3")
    real = deletes.serialize_deletion_files
    calls = []

    def racing(vectors, target_size=None):
        out = real(vectors, target_size)
        if not calls:  # another writer commits to the same file while this one writes
            calls.append(1)
            ParquetDataset(ds.root).delete("id = 4")
        return out

    monkeypatch.setattr(deletes, "serialize_deletion_files", racing)
    rep = ds.delete("id = 5")
    assert rep.rows_deleted == 1 and rep.rebased == 1
    assert list(ParquetDataset(ds.root).deletion_vectors()["p=a/f0.parquet"].positions()) == [3, 4, 5]
    refs = {e[DV_KEY]["file"] for e in catalog(ds.root)["files"].values() if DV_KEY in e}
    assert refs == {rep.deletion_file}
    gc_now(ds.root)
    assert set(deletion_files(ds.root)) == refs
