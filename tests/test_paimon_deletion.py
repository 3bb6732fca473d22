"""32- and 64-bit deletion vectors: Java's blobs, fuzzing, and a real table with a 64-bit DV."""

from __future__ import annotations

import io
import json
import os
import random
import struct
import zlib

import pytest
from paimon_fast.core import roaring
from paimon_fast.errors import IndexFormatError
from paimon_fast.paimon.deletion import MAGIC_64, parse_deletion_blob
from tests.support.paths import DATA

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


def make_blob64(positions) -> bytes:
    bin_ = struct.pack("<i", MAGIC_64) + roaring.serialize64(positions)
    return struct.pack(">i", len(bin_)) + bin_ + struct.pack(">I", zlib.crc32(bin_) & 0xFFFFFFFF)


def rewrite_dv_as_64bit(table_root) -> int:
    """Rewrite the one deletion vector of a (copied) Java 0.9 table as a 64-bit one:
    its index file and the index manifest entry's range and size.  Returns the
    vector's cardinality."""
    import fastavro

    mdir = os.path.join(table_root, "manifest")
    (im,) = [n for n in os.listdir(mdir) if n.startswith("index-manifest-")]
    with open(os.path.join(mdir, im), "rb") as fh:
        reader = fastavro.reader(fh)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)
    (rec,) = [r for r in records if r["_INDEX_TYPE"] == "DELETION_VECTORS"]
    idx_path = os.path.join(table_root, "index", rec["_FILE_NAME"])
    with open(idx_path, "rb") as fh:
        data = fh.read()
    (rng,) = rec["_DELETIONS_VECTORS_RANGES"]
    old = parse_deletion_blob(data[rng["f1"] : rng["f1"] + rng["f2"] + 8], rng["f2"])
    blob = make_blob64(old.positions().tolist())
    with open(idx_path, "wb") as f:
        f.write(data[:1] + blob)
    rng["f2"] = len(blob)
    rec["_FILE_SIZE"] = 1 + len(blob)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    with open(os.path.join(mdir, im), "wb") as f:
        f.write(buf.getvalue())
    return len(old)


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
