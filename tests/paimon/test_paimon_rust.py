"""Differential tests against pypaimon-rust: tables written by its native writer
(bloom, bitmap V2, BSI, range-bitmap indexes), read by it and by our pruned scans."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pypaimon")
pytest.importorskip("pypaimon_rust")

import paimon_fast as pf  # noqa: E402
from paimon_fast.fileindex import FileIndexFormat  # noqa: E402
from paimon_fast.paimon import plan_with_index, read_with_index, to_pypaimon  # noqa: E402

from tests.support.paimon_helpers import catalog, create_sample_table, needs_index_readers, pypaimon_read  # noqa: E402

NATIVE_OPTS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bloom-filter.name.items": "1000",
    "file-index.bloom-filter.name.fpp": "0.01",
    "file-index.bitmap.columns": "category",
    "file-index.bsi.columns": "price",
    "file-index.range-bitmap.columns": "id",
}


@pytest.fixture(scope="module")
def native_table(tmp_path_factory):
    wh = tmp_path_factory.mktemp("native")
    t = create_sample_table(wh, options=NATIVE_OPTS, native=True)
    return wh, t


def test_native_writer_wrote_our_formats(native_table):
    _, t = native_table
    files = [f for s in t.new_read_builder().new_scan().plan().splits() for f in s.files]
    assert len(files) == 4
    for f in files:
        data = (
            bytes(f.embedded_index)
            if f.embedded_index
            else open(f.aligned_file_path([x for x in f.extra_files if x.endswith(".index")][0]), "rb").read()
        )
        metas = FileIndexFormat.open(data).index_metas()
        assert set(metas) == {"name", "category", "price", "id"}
        assert set(metas["category"]) == {"bitmap"} and set(metas["price"]) == {"bsi"}


# (predicate, at most this many files kept, at most this many rows to read)
PREDICATES = [
    pytest.param(pf.field("name") == "name-1234", 1, 1000, id="bloom-eq"),
    pytest.param(pf.field("name").isin(["name-5", "name-3005", "nope"]), 2, 2000, id="bloom-in"),
    pytest.param(pf.field("name") == "nope", 0, 0, id="bloom-miss"),
    pytest.param(pf.field("category") == "red", 2, 1000, id="bitmap-eq", marks=needs_index_readers("bitmap")),
    pytest.param(pf.field("category") == "magenta", 0, 0, id="bitmap-miss", marks=needs_index_readers("bitmap")),
    pytest.param(
        pf.field("category").isin(["red", "blue"]), 4, 2000, id="bitmap-in", marks=needs_index_readers("bitmap")
    ),
    pytest.param(pf.field("price") == 7, 4, 4, id="bsi-eq", marks=needs_index_readers("bsi")),
    pytest.param(pf.field("price") > 990, 4, 4 * 9 * 5, id="bsi-gt", marks=needs_index_readers("bsi")),
    pytest.param(
        pf.field("id").between(1500, 1510), 1, 11, id="range-between", marks=needs_index_readers("range-bitmap")
    ),
    pytest.param(
        (pf.field("name") == "name-7") | (pf.field("id") == 2222),
        2,
        2000,
        id="or",
        marks=needs_index_readers("range-bitmap"),
    ),
]


@pytest.mark.parametrize("pred,max_files,max_rows", PREDICATES)
def test_same_rows_as_pypaimon_rust(native_table, pred, max_files, max_rows):
    _, t = native_table
    ours, rep = read_with_index(t, pred)
    theirs = pypaimon_read(t, pred, native=True)
    assert sorted(ours.column("id").to_pylist()) == sorted(theirs.column("id").to_pylist())
    assert rep.files_planned - rep.files_skipped <= max_files
    assert rep.rows_index_selected <= max_rows
    assert rep.files_with_index == rep.files_planned


def test_corrupted_file_skipped_by_index(tmp_path):
    """The file the bloom index rules out is replaced by garbage: our pruned read
    answers, pypaimon without the index fails on it."""
    t = create_sample_table(tmp_path, options={k: v for k, v in NATIVE_OPTS.items() if "bloom" in k}, native=True)
    pred = pf.field("name") == "name-1234"
    _, _, rep = plan_with_index(t, pred)
    assert rep.files_skipped >= 1
    for name in rep.skipped_files:
        with open(os.path.join(t.table_path, "bucket-0", name), "wb") as f:
            f.write(b"\0garbage" * 64)
    tb, _ = read_with_index(catalog(tmp_path).get_table("db.t"), pred)
    assert tb.column("id").to_pylist() == [1234]
    rb = t.new_read_builder().with_filter(to_pypaimon(pred, t))
    with pytest.raises(Exception):
        rb.new_read().to_arrow(rb.new_scan().plan().splits())
