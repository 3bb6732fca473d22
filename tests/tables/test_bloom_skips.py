"""A point lookup's plan asks every file's bloom filters in one pass (dataset_plan._bloom_excluded),
over the readers earlier plans read, kept while the listing and the catalog stay the same: the
rows are the oracle's and the files skipped are those the file-by-file plan skips (or more: a bloom
filter's SKIP is sure); a file rewritten since its build, or an index whose bloom filter bits are
damaged, is never skipped by it; past BLOOM_KEEP_BYTES the plan goes file by file.  The oracle: pyarrow reads of the
files, filtered here."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.tables import ParquetDataset, dataset_plan
from paimon_fast.tables import parquet as parquet_module

FILES, ROWS = 6, 400


def _write(root, seed=3):
    rng = np.random.default_rng(seed)
    ids = rng.permutation(FILES * ROWS)  # every file's ids span the whole range: no min / max prunes them
    for k in range(FILES):
        part = ids[k * ROWS : (k + 1) * ROWS]
        pq.write_table(
            pa.table(
                {
                    "id": pa.array(part, pa.int64()),
                    "key": pa.array([f"k{int(v):05d}" for v in part]),
                    "cat": pa.array([f"c{int(v) % 7}" for v in part]),
                }
            ),
            os.path.join(root, f"f{k}.parquet"),
        )


@pytest.fixture
def dataset(tmp_path):
    root = str(tmp_path / "ds")
    os.makedirs(root)
    _write(root)
    ds = ParquetDataset(root)
    ds.build({"file-index.bloom-filter.columns": "id,key", "file-index.bitmap.columns": "cat"})
    ds.delete("id IN (17, 1234)")
    return root


QUERIES = [
    ("id = 123", lambda r: r["id"] == 123),
    ("id = 17", lambda r: False),  # deleted
    ("id IN (5, 777, 2000)", lambda r: r["id"] in (5, 777, 2000)),
    ("key = 'k00042'", lambda r: r["key"] == "k00042"),
    ("key = 'nope'", lambda r: False),  # past every file's largest key: the catalog's statistics skip it
    ("key = 'k00042x'", lambda r: False),  # inside every file's keys: only the bloom filters skip it
    ("key IN ('k00001', 'k02222', 'zz')", lambda r: r["key"] in ("k00001", "k02222")),
    ("id = 123 OR key = 'k00999'", lambda r: r["id"] == 123 or r["key"] == "k00999"),
    ("id = 123 OR cat = 'c3'", lambda r: r["id"] == 123 or r["cat"] == "c3"),
    ("id = 300 AND cat = 'c6'", lambda r: r["id"] == 300 and r["cat"] == "c6"),
    ("id = 5.5", lambda r: False),  # no BIGINT equals it
    ("id = NULL", lambda r: False),  # as SQL: no row
    ("key IN ('k00001', NULL)", lambda r: r["key"] == "k00001"),
    ("id NOT IN (1, 2)", lambda r: r["id"] not in (1, 2)),
    ("id != 3 AND key = 'k00003'", lambda r: False),
]


def _oracle(root, fn, deleted=(17, 1234)):
    rows = pq.read_table(root).to_pylist()
    return sorted(r["id"] for r in rows if fn(r) and r["id"] not in deleted)


def _plan(ds, query):
    p = ds.plan(query)
    return {k.file.path for k in p.kept}, p.report.files_skipped


@pytest.mark.parametrize("query,fn", QUERIES, ids=[q for q, _ in QUERIES])
def test_rows_and_skips_with_and_without_the_pass(dataset, monkeypatch, query, fn):
    want = _oracle(dataset, fn)
    got = {}
    for on in (False, True):
        monkeypatch.setattr(dataset_plan, "_BLOOM_VECTORS", on)
        ds = ParquetDataset(dataset)
        for _ in range(2):  # the second plan asks the kept readers
            got[on] = _plan(ds, query)
            assert sorted(ds.read(query).to_arrow().column("id").to_pylist()) == want, (on, query)
            assert ds.read(query).count() == len(want), (on, query)
    assert got[True][0] <= got[False][0]  # never a file the file-by-file plan skips
    if query.startswith(("id = 123", "key = 'k00042'", "key = 'nope'", "id IN", "key IN")):
        assert got[True] == got[False]  # bloom filters alone decide: the same files
    if query in ("id = 123", "key = 'nope'", "key = 'k00042x'"):
        assert got[True][1] >= FILES - 1


def _count_opens(monkeypatch) -> list:
    """The paths whose index container plans open from now on (ParquetDataset.open_index)."""
    opened = []
    real = ParquetDataset.open_index

    def counting(self, f, *a, **k):
        opened.append(f.path)
        return real(self, f, *a, **k)

    monkeypatch.setattr(ParquetDataset, "open_index", counting)
    return opened


def test_a_lookup_opens_only_the_kept_files_indexes(dataset, monkeypatch):
    ds = ParquetDataset(dataset)
    ds.plan("key = 'k00042'")  # the readers are kept from here on
    opened = _count_opens(monkeypatch)
    kept, skipped = _plan(ds, "key = 'k00042'")
    assert skipped == FILES - 1 and sorted(opened) == sorted(kept)
    monkeypatch.setattr(dataset_plan, "_BLOOM_VECTORS", False)
    opened.clear()
    _plan(ds, "key = 'k00042'")
    assert len(opened) == FILES  # file by file: every container


def test_a_file_rewritten_after_the_build_is_not_skipped_by_its_old_filter(dataset):
    ds = ParquetDataset(dataset)  # one long-lived object: its kept readers are of the old listing
    assert ds.read("key = 'k00042x'").count() == 0
    kept, _ = _plan(ds, "key = 'k00042x'")
    readers = ds.snapshot()._snap.stable["bloom-readers"].readers["key"]
    target = sorted(set(readers) - kept)[0]  # a file its kept bloom filter skips
    t = pq.read_table(os.path.join(dataset, target))
    t = pa.concat_tables([t, pa.table({"id": pa.array([99999], pa.int64()), "key": ["k00042x"], "cat": ["c0"]})])
    pq.write_table(t, os.path.join(dataset, target))
    r = ds.read("key = 'k00042x'")
    assert r.to_arrow().column("id").to_pylist() == [99999]
    assert r.report.unindexed[target] == "changed since the build"  # read, its index no longer describing it


def test_damaged_bloom_bits_are_not_asked(dataset, monkeypatch):
    ds = ParquetDataset(dataset)
    f = next(x for x in ds.files() if x.path == "f4.parquet")
    entry = ds.read_catalog()["files"][f.path]
    idx = ds.open_index(f, entry)
    rd = idx.reader("key", "bloom-filter")
    at = rd.source.base + 4 + len(rd.bits) // 2  # inside the filter's bits
    idx.close()
    path = os.path.join(dataset, *entry["file_index"]["path"].split("/"))
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0x10
    open(path, "wb").write(bytes(data))
    parquet_module.HELD_READERS.clear()  # as in a new process: no reader of the good bytes held
    ds = ParquetDataset(dataset)
    want = _oracle(dataset, lambda r: r["key"] == "k00042")
    for _ in range(2):
        r = ds.read("key = 'k00042'")
        assert sorted(r.to_arrow().column("id").to_pylist()) == want
        assert r.report.unindexed["f4.parquet"].startswith("index checksum mismatch")
    readers = ds.snapshot()._snap.stable["bloom-readers"].readers["key"]
    assert "f4.parquet" not in readers and len(readers) == FILES - 1


def test_past_the_budget_the_plan_goes_file_by_file(dataset, monkeypatch):
    monkeypatch.setattr(dataset_plan, "BLOOM_KEEP_BYTES", 1)
    ds = ParquetDataset(dataset)
    want = _oracle(dataset, lambda r: r["key"] == "k00042")
    assert sorted(ds.read("key = 'k00042'").to_arrow().column("id").to_pylist()) == want
    kept = ds.snapshot()._snap.stable["bloom-readers"]
    assert kept.readers == {"key": {}} and kept.bytes == 0
    assert _plan(ds, "key = 'k00042'")[1] == FILES - 1  # the bloom filters still skip, one file at a time


def test_nothing_is_kept_once_the_held_readers_are_cleared_or_none_are_held(dataset, monkeypatch):
    held = parquet_module.HELD_READERS
    ds = ParquetDataset(dataset)
    for _ in range(2):
        _plan(ds, "key = 'k00042'")
    assert len(ds.snapshot()._snap.stable["bloom-readers"].readers["key"]) == FILES
    opened = _count_opens(monkeypatch)
    held.clear()  # as a new process: every file's index is opened again
    _plan(ds, "key = 'k00042'")
    assert len(opened) == FILES
    monkeypatch.setattr(held, "max_bytes", 0)  # none held: none kept either
    opened.clear()
    for _ in range(2):
        _plan(ds, "key = 'k00042'")
    assert len(opened) == 2 * FILES


def test_the_budget_is_one_for_every_column(dataset, monkeypatch):
    ds = ParquetDataset(dataset)
    ds.plan("key = 'k00042'")
    kept = ds.snapshot()._snap.stable["bloom-readers"]
    one_column = kept.bytes
    assert len(kept.readers["key"]) == FILES and one_column > 0
    monkeypatch.setattr(dataset_plan, "BLOOM_KEEP_BYTES", one_column + one_column // 2)
    ds.plan("id = 123")  # half a column's filters more fit
    assert 0 < len(kept.readers["id"]) < FILES and kept.bytes <= one_column + one_column // 2
    assert sorted(ds.read("id = 123").to_arrow().column("id").to_pylist()) == [123]
