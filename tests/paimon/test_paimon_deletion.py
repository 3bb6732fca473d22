"""32- and 64-bit deletion vectors: Java's blobs, fuzzing, and a real table with a 64-bit DV."""

from __future__ import annotations

import json
import os
import random

import pytest
from paimon_fast.errors import IndexFormatError
from paimon_fast.paimon.deletion import parse_deletion_blob
from tests.support.paths import DATA
from tests.support.paimon_helpers import make_blob64, rewrite_dv_as_64bit

DV_TABLES = os.path.join(DATA, "deletion_vectors_tables")
BLOBS = json.load(open(os.path.join(DV_TABLES, "blobs.json")))


def _blob(case):
    return open(os.path.join(DV_TABLES, case["file"]), "rb").read()


def _expected_length(case, blob):
    # 64-bit metadata length covers size field + bin + CRC; 32-bit only the bin
    return len(blob) if case["class"] == "Bitmap64DeletionVector" else len(blob) - 8


@pytest.mark.parametrize("case", BLOBS, ids=[c["name"] for c in BLOBS])
def test_java_blobs(case):
    blob = _blob(case)
    dv = parse_deletion_blob(blob, _expected_length(case, blob))
    assert dv.bitmap64 == (case["class"] == "Bitmap64DeletionVector")
    assert len(dv) == case["cardinality"]
    expected = set()
    for a, b in case["ranges"]:
        expected.update(range(a, b))
    assert set(dv.positions().tolist()) == expected


@pytest.mark.parametrize("case", BLOBS[:4], ids=[c["name"] for c in BLOBS[:4]])
def test_wrong_metadata_length_is_rejected(case):
    blob = _blob(case)
    with pytest.raises(IndexFormatError):
        parse_deletion_blob(blob, _expected_length(case, blob) + 1)


def test_fuzz_blobs():
    rng = random.Random(7)
    for _ in range(3000):
        case = rng.choice(BLOBS)
        blob = bytearray(_blob(case))
        if rng.random() < 0.5:
            blob = blob[: rng.randrange(len(blob))]
        else:
            for _ in range(rng.randint(1, 3)):
                blob[rng.randrange(len(blob))] = rng.randrange(256)
        try:
            res = parse_deletion_blob(bytes(blob))
        except IndexFormatError:
            continue
        assert len(res.positions()) == len(res)


def test_roundtrip_own_64bit_blob():
    pos = [0, 5, 6, 7, 999, 1 << 33]
    assert parse_deletion_blob(make_blob64(pos)).positions().tolist() == pos


# ---------------------------------------------------------------- a table with a 64-bit DV


def test_table_with_64bit_deletion_vector(tmp_path_factory, tmp_path):
    """Rewrite append_dv's 32-bit DV as a 64-bit one: pypaimon alone cannot read the
    table any more; read_with_index folds the DV into row ranges and returns the same rows."""
    pytest.importorskip("pypaimon")
    import paimon_fast as pf
    from paimon_fast.paimon import legacy_manifest_table, read_with_index

    from tests.support.paimon_helpers import catalog, copy_table, unpack_java09

    wh = unpack_java09(tmp_path_factory.mktemp("j09dv"))
    copy_table(wh, str(tmp_path), "append_dv")
    root = os.path.join(str(tmp_path), "db.db", "append_dv")
    table = legacy_manifest_table(catalog(tmp_path).get_table("db.append_dv"))
    before = table.new_read_builder()
    expected = sorted(before.new_read().to_arrow(before.new_scan().plan().splits()).column("id").to_pylist())
    assert len(expected) == 1666

    assert rewrite_dv_as_64bit(root) == 334

    table = legacy_manifest_table(catalog(tmp_path).get_table("db.append_dv"))
    rb = table.new_read_builder()
    with pytest.raises(Exception):
        rb.new_read().to_arrow(rb.new_scan().plan().splits())
    tb, rep = read_with_index(table, None)
    assert rep.deletion_vectors_folded == 1
    assert sorted(tb.column("id").to_pylist()) == expected
    tb, rep = read_with_index(table, pf.field("id") < 1500)
    assert sorted(tb.column("id").to_pylist()) == [i for i in expected if i < 1500]
