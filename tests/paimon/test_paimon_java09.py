"""Index-pruned reads of the tables Java Paimon 0.9 wrote, against Java's own answers."""

from __future__ import annotations

import glob
import io
import os

import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.paimon import (
    legacy_manifest_table,
    plan_with_index,
    read_with_index,  # noqa: E402
    upgrade_manifest_bytes,
)

from tests.support.paimon_helpers import (  # noqa: E402
    catalog,
    copy_table,
    java_answers,
    needs_index_readers,
    pypaimon_read,
    unpack_java09,
)

TABLES = ["append_embedded", "append_sidecar", "append_dv", "pk_dv"]
EXPECTED_ROWS = {"append_embedded": 4000, "append_sidecar": 4000, "append_dv": 1666, "pk_dv": 3000}


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    return unpack_java09(tmp_path_factory.mktemp("java09"))


def _table(wh, name):
    return legacy_manifest_table(catalog(wh).get_table("db." + name))


@pytest.mark.parametrize("name", TABLES)
def test_legacy_manifests_read_every_row(wh, name):
    tb = pypaimon_read(_table(wh, name))
    assert tb.num_rows == EXPECTED_ROWS[name]
    ids = tb.column("id").to_pylist()
    assert len(set(ids)) == len(ids)
    # names follow the README's rule, so the rows really are the table's rows
    assert all(n == f"name-{i}" for i, n in zip(ids, tb.column("name").to_pylist()))


def test_plain_pypaimon_fails_on_09_manifests(wh):
    """The reason for the adapter: pypaimon alone raises on these manifests."""
    t = catalog(wh).get_table("db.append_embedded")
    with pytest.raises(KeyError, match="_VALUE_STATS_COLS"):
        t.new_read_builder().new_scan().plan()


def test_upgrade_manifest_bytes(wh, tmp_path):
    import fastavro

    path = sorted(glob.glob(os.path.join(wh, "db.db", "append_embedded", "manifest", "manifest-[0-9a-f]*")))[0]
    old = open(path, "rb").read()
    new = upgrade_manifest_bytes(old)
    assert new != old
    old_recs = list(fastavro.reader(io.BytesIO(old)))
    new_recs = list(fastavro.reader(io.BytesIO(new)))
    assert len(old_recs) == len(new_recs) > 0
    for a, b in zip(old_recs, new_recs):
        assert b["_FILE"].pop("_VALUE_STATS_COLS") is None
        assert a == b
    # an upgraded manifest (or one that has the field) passes through byte for byte
    assert upgrade_manifest_bytes(new) == new
    # manifest lists and other bytes are untouched
    mlist = sorted(glob.glob(os.path.join(wh, "db.db", "append_embedded", "manifest", "manifest-list-*")))[0]
    data = open(mlist, "rb").read()
    assert upgrade_manifest_bytes(data) == data
    assert upgrade_manifest_bytes(b"not avro") == b"not avro"


_CASES = []
for _t, _c, _v, _n, _r in java_answers():
    marks = [needs_index_readers("bitmap")] if _c == "category" else []
    _CASES.append(pytest.param(_t, _c, _v, _n, _r, id=f"{_t}-{_c}={_v}", marks=marks))


@pytest.mark.parametrize("name,column,value,java_files,java_rows", _CASES)
def test_java09_answers(wh, name, column, value, java_files, java_rows):
    """We keep at most the files Java reads and at most the rows it returns,
    and the filtered result equals an unpruned read."""
    table = _table(wh, name)
    pred = pf.field(column) == value
    tb, rep = read_with_index(table, pred)
    kept = rep.files_planned - rep.files_skipped
    assert kept <= java_files
    assert rep.rows_selected <= java_rows
    expected = pypaimon_read(table, pred)
    assert sorted(tb.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())
    assert all(v == value for v in tb.column(column).to_pylist())


def test_answers_were_parsed():
    assert len(java_answers()) == 12


def test_sidecar_bloom_skips_at_plan_time(wh):
    """Java skips sidecar indexes only at read time (2 planned files); we skip at plan time."""
    _, splits, rep = plan_with_index(_table(wh, "append_sidecar"), pf.field("name") == "name-1500")
    assert rep.files_with_index == rep.files_planned == 2
    assert rep.files_skipped == 1
    assert sum(len(s.files) for s in splits) == 1
    assert rep.index_bytes_read > 0


def test_corrupted_skipped_file_is_not_read(wh, tmp_path):
    """Overwrite the file the index skips with garbage: the pruned read still
    answers, an unpruned read fails, so the file was skipped, not read and filtered."""
    copy_table(wh, str(tmp_path), "append_sidecar")
    table = _table(str(tmp_path), "append_sidecar")
    pred = pf.field("name") == "name-1500"
    _, _, rep = plan_with_index(table, pred)
    assert len(rep.skipped_files) == 1
    victim = os.path.join(str(tmp_path), "db.db", "append_sidecar", "bucket-0", rep.skipped_files[0])
    with open(victim, "wb") as f:
        f.write(b"garbage, not parquet" * 10)
    tb, rep2 = read_with_index(table, pred)
    assert tb.column("id").to_pylist() == [1500]
    assert rep2.skipped_files == rep.skipped_files
    with pytest.raises(Exception):
        pypaimon_read(table, pred)


def test_pk_dv_table_is_eligible_and_reads_right(wh):
    table = _table(wh, "pk_dv")
    pred = pf.field("id") < 50
    tb, rep = read_with_index(table, pred)
    assert rep.applied
    assert sorted(tb.column("id").to_pylist()) == sorted(pypaimon_read(table, pred).column("id").to_pylist())


def test_dv_folded_into_ranges(wh):
    """fold_deletion_vectors='always' turns the 32-bit DV into row ranges: same rows,
    pypaimon gets no deletion file, and the rows to read exclude the deleted ones."""
    table = _table(wh, "append_dv")
    pred = pf.field("id") >= 0
    tb, rep = read_with_index(table, pred, fold_deletion_vectors="always")
    assert rep.deletion_vectors_folded == 1
    assert rep.rows_selected == 1666
    assert tb.num_rows == 1666
    _, splits, _ = plan_with_index(table, pred, fold_deletion_vectors="always")
    assert all(not s.data_deletion_files for s in splits)
    assert sorted(tb.column("id").to_pylist()) == sorted(pypaimon_read(table).column("id").to_pylist())


def test_truncated_sidecar_keeps_the_file(wh, tmp_path):
    """An unreadable index never drops data: the file is kept and read."""
    copy_table(wh, str(tmp_path), "append_sidecar")
    table = _table(str(tmp_path), "append_sidecar")
    pred = pf.field("name") == "name-1500"
    _, _, rep = plan_with_index(table, pred)
    (victim,) = rep.skipped_files
    path = os.path.join(str(tmp_path), "db.db", "append_sidecar", "bucket-0", victim + ".index")
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 3])
    tb, rep2 = read_with_index(table, pred)
    assert rep2.files_skipped == 0
    assert tb.column("id").to_pylist() == [1500]


def test_fuzzed_embedded_indexes_never_raise(wh):
    """Mutated manifest-embedded index bytes: pruning answers (REMAIN on what it cannot read)."""
    import random

    from paimon_fast.paimon import IndexPruner

    table = _table(wh, "append_embedded")
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    originals = [bytes(f.embedded_index) for s in splits for f in s.files]
    rng = random.Random(3)
    preds = [
        pf.field("name") == "name-1500",
        pf.field("category") == "red",
        (pf.field("category") == "blue") | (pf.field("name") == "x"),
    ]
    for i in range(200):
        for f, orig in zip((f for s in splits for f in s.files), originals):
            b = bytearray(orig)
            if rng.random() < 0.3:
                b = b[: rng.randrange(len(b))]
            else:
                for _ in range(rng.randint(1, 4)):
                    b[rng.randrange(len(b))] = rng.randrange(256)
            f.embedded_index = bytes(b)
        new, rep = IndexPruner(table, preds[i % 3], max_workers=1).prune(splits)
        assert rep.files_planned == 4 and rep.files_skipped <= 4


def test_projection_without_predicate_columns(wh):
    table = _table(wh, "append_dv")
    from pypaimon.globalindex.indexed_split import IndexedSplit

    pred = (pf.field("category") == "red") & (pf.field("id") > 5)
    _, splits, _ = plan_with_index(table, pred, projection=["id"])
    assert any(isinstance(s, IndexedSplit) for s in splits)  # the bitmap gave row ranges
    tb, rep = read_with_index(table, pred, projection=["id"])
    assert tb.column_names == ["id"]
    assert sorted(tb.column("id").to_pylist()) == sorted(pypaimon_read(table, pred).column("id").to_pylist())
