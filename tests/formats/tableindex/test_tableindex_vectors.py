"""Deletion vectors (32/64-bit), RoaringNavigableMap64 and hash index files
against the Java golden vectors (bytes from our writers, answers from our readers)."""

import os

import numpy as np
import pyarrow as pa
import pytest

from paimon_fast.core import roaring
from paimon_fast import tableindex as ti
from paimon_fast.errors import IndexFormatError
from paimon_fast.reference import tableindex as ref
from tests.support.paths import DATA
from tests.support.vectorlib import arrow_values, decode_rows, load_bin, manifest

DV32 = manifest("deletion_vector_32")
DV64 = manifest("deletion_vector_64")
RNM = manifest("roaring_navigable_map64")
HASH = manifest("hash_index")


def _positions(deleted, bits64):
    rows = decode_rows(deleted, bits64=bits64)
    if not len(rows):
        return np.zeros(0, np.int64)
    return np.array(rows.to_array(), dtype=np.uint64 if bits64 else np.uint32).astype(np.int64)


def _check_answers(dv, case):
    assert dv.cardinality == case["cardinality"]
    probes = np.array([p for p, _ in case["probes"]], dtype=np.int64)
    expect = np.array([a for _, a in case["probes"]], dtype=bool)
    np.testing.assert_array_equal(dv.is_deleted_batch(probes), expect)
    bits64 = dv.bitmap64
    want = _positions(case["deleted"], bits64).astype(np.uint64)
    np.testing.assert_array_equal(dv.positions(), want)


@pytest.mark.parametrize("case", DV32["serialized_bins"], ids=lambda c: c["name"])
def test_dv32_bins(case):
    data = load_bin("deletion_vector_32", case["file"])
    pos = _positions(case["deleted"], False)
    rng = np.random.default_rng(len(pos))
    shuffled = np.concatenate([pos, pos[: len(pos) // 3]])  # any order, duplicates
    rng.shuffle(shuffled)
    dv = ti.DeletionVector.from_positions(shuffled)
    assert isinstance(dv, ti.BitmapDeletionVector)
    assert dv.serialize() == data
    assert ref.dv_serialize(ref.dv_build(pos), False) == data
    back = ti.DeletionVector.deserialize(data)
    assert isinstance(back, ti.BitmapDeletionVector)
    _check_answers(back, case)
    assert back.is_empty() == case["is_empty"]
    assert back == dv


def _dv32_file_cases():
    return [(c, f) for c in DV32["index_files"] for f in c["files"]]


@pytest.mark.parametrize("case", DV32["index_files"], ids=lambda c: c["name"])
def test_dv32_files_written_like_java(case, tmp_path):
    inputs = []
    for item in case["input_in_order"]:
        inputs.append(
            (item["data_file"], ti.DeletionVector.deserialize(load_bin("deletion_vector_32", item["bin_file"])))
        )
    files = ti.serialize_deletion_files(inputs, target_size=case["target_size_per_index_file"])
    assert len(files) == len(case["files"])
    for (data, metas), f in zip(files, case["files"]):
        assert data == load_bin("deletion_vector_32", f["file"])
        want = [(d["data_file"], d["offset"], d["length"], d["cardinality"]) for d in f["deletion_vectors_in_order"]]
        assert metas == want
    written = ti.write_deletion_files(tmp_path, inputs, target_size=case["target_size_per_index_file"])
    assert [m for _, m in written] == [m for _, m in files]
    for (name, _), (data, _) in zip(written, files):
        assert (tmp_path / name).read_bytes() == data
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("case", DV32["index_files"], ids=lambda c: c["name"])
def test_dv32_files_read(case):
    for f in case["files"]:
        data = load_bin("deletion_vector_32", f["file"])
        metas = [(d["data_file"], d["offset"], d["length"], d["cardinality"]) for d in f["deletion_vectors_in_order"]]
        got = ti.read_deletion_file(data, metas)
        walked = ti.read_deletion_file(data)
        assert [(e.offset, e.length, e.cardinality) for e in walked] == [m[1:] for m in metas]
        for e, m in zip(got, metas):
            assert (e.data_file, e.offset, e.length, e.cardinality) == m
            one = ti.read_deletion_vector(data, m[1], m[2], m[0])
            assert one == e.vector
        by_name = {c["data_file"]: c["bin_file"] for c in case["input_in_order"]}
        for e in got:
            assert e.vector.serialize() == load_bin("deletion_vector_32", by_name[e.data_file])


@pytest.mark.parametrize("case", DV64["blobs_64"] + DV64["blobs_32_by_head"], ids=lambda c: c["name"])
def test_dv64_blobs(case):
    data = load_bin("deletion_vector_64", case["file"])
    bits64 = case["class"].endswith(".Bitmap64DeletionVector")
    pos = _positions(case["deleted"], True)
    dv = ti.DeletionVector.from_positions(pos[::-1].copy(), bitmap64=bits64)
    assert dv.to_blob() == data
    assert ref.dv_serialize(ref.dv_build(pos), bits64) == data[4:-4]
    back = ti.DeletionVector.from_blob(data)
    assert back.bitmap64 == bits64
    _check_answers(back, case)
    assert back.to_blob() == data
    if bits64:
        assert ti.DeletionVector.deserialize(data[4:-4]).to_blob() == data


@pytest.mark.parametrize("case", DV64["files"], ids=lambda c: c["name"])
def test_dv64_and_mixed_files(case):
    data = load_bin("deletion_vector_64", case["file"])
    metas = [(d["data_file"], d["offset"], d["length"], d["cardinality"]) for d in case["deletion_vectors_in_order"]]
    got = ti.read_deletion_file(data, metas)
    kinds = [d["class"] for d in case["deletion_vectors_in_order"]]
    assert [type(e.vector).__name__ for e in got] == kinds
    # rebuilding the file from what we read gives Java's bytes and Java's metadata
    files = ti.serialize_deletion_files([(e.data_file, e.vector) for e in got])
    assert len(files) == 1
    assert files[0][0] == data
    assert files[0][1] == metas
    walked = ti.read_deletion_file(data)
    assert [(e.offset, e.length, e.cardinality) for e in walked] == [m[1:] for m in metas]


@pytest.mark.parametrize("case", RNM["cases"], ids=lambda c: c["name"])
def test_roaring_navigable_map64(case):
    data = load_bin("roaring_navigable_map64", case["file"])
    from pyroaring import BitMap64

    want = BitMap64()
    for a, b in case["values_ranges"].get("ranges", []):  # Java signed longs: map to unsigned
        a, b = a % (1 << 64), (b - 1) % (1 << 64) + 1
        if b == 1 << 64:  # the range ends at -1 (2^64 - 1)
            want.add(b - 1)
            b -= 1
        want.add_range(a, b)
    if "bitset_b64" in case["values_ranges"]:
        want = decode_rows(case["values_ranges"], bits64=True)
    assert len(want) == case["cardinality"]
    vals = np.array(want.to_array(), dtype=np.uint64) if len(want) else np.zeros(0, np.uint64)
    assert roaring.serialize64(vals) == data
    assert roaring.check64(data) == (len(data), case["cardinality"])
    back = roaring.deserialize64(data)
    assert back == want
    if case["values_in_iteration_order"] is not None:
        assert [v - (1 << 64) if v >= 1 << 63 else v for v in back] == case["values_in_iteration_order"]


def _key_columns(case):
    types = case["key_types"]
    keys = case["keys_in_insert_order"]
    return types, [arrow_values([k[i] for k in keys], t) for i, t in enumerate(types)]


@pytest.mark.parametrize("case", HASH["cases"], ids=lambda c: c["name"])
def test_hash_index(case):
    data = load_bin("hash_index", case["file"])
    ints = ti.read_hash_index(data)
    assert ints.dtype == np.int32
    assert ints.tolist() == case["ints_in_file_order"]
    if "key_types" not in case:
        assert ti.write_int_file(case["ints_in_file_order"]) == data
        return
    types, cols = _key_columns(case)
    h = ti.binary_row_hash(cols, types)
    assert h.tolist() == case["binary_row_hash_codes"]
    assert (
        ti.binary_row_hash(pa.table({f"k{i}": c for i, c in enumerate(cols)}), types).tolist()
        == case["binary_row_hash_codes"]
    )
    assert ti.write_hash_index(h) == data
    assert ref.int_set_order(h.tolist()) == case["ints_in_file_order"]
    if "binary_rows_hex" in case:
        for row, hexrow, code in zip(
            case["keys_in_insert_order"], case["binary_rows_hex"], case["binary_row_hash_codes"]
        ):
            b = ref.binary_row_bytes(row, types)
            assert b.hex() == hexrow
            assert ref.murmur_words(b) == code


APPEND_DV = os.path.join(DATA, "paimon_append_dv")
APPEND_DV_FILE = os.path.join(APPEND_DV, "index-d9a8c306-4466-4c01-b7f0-7aaefb2c1767-0")
APPEND_DV_DATA_FILE = "data-b648e695-0aa3-40fa-99cd-385d9eed838e-0.parquet"


def test_append_dv_table_vector():
    """The 32-bit vector Java Paimon 0.9 wrote for table append_dv: 334 rows deleted
    (offset 1, length 688 as its index manifest records, see the next test)."""
    dv = ti.read_deletion_vector(APPEND_DV_FILE, 1, 688, APPEND_DV_DATA_FILE)
    assert isinstance(dv, ti.BitmapDeletionVector)
    assert dv.cardinality == 334
    (e,) = ti.read_deletion_file(APPEND_DV_FILE)
    assert e.vector == dv and (e.offset, e.length) == (1, 688)
    # our writer reproduces Java's file byte for byte
    ((data, metas),) = ti.serialize_deletion_files([(APPEND_DV_DATA_FILE, dv)])
    with open(APPEND_DV_FILE, "rb") as f:
        assert data == f.read()
    assert metas == [(APPEND_DV_DATA_FILE, 1, 688, 334)]


def test_append_dv_index_manifest():
    pytest.importorskip("fastavro", reason="fastavro (a pypaimon dependency) decodes the Avro records")
    pytest.importorskip("zstandard", reason="zstandard decompresses the index manifest's ZSTD blocks")
    from paimon_fast.paimon.avro import read_avro

    # our manifest reader (it decompresses the blocks itself: fastavro 1.12+ wants backports.zstd
    # for ZSTD files on Python < 3.14)
    with open(os.path.join(APPEND_DV, "index-manifest-5d4d56d3-4357-4240-89da-d517a02d59fe-0"), "rb") as f:
        (entry,) = read_avro(f.read())
    assert entry["_INDEX_TYPE"] == "DELETION_VECTORS" and entry["_FILE_SIZE"] == os.path.getsize(APPEND_DV_FILE)
    assert entry["_ROW_COUNT"] == 1
    (rng,) = entry["_DELETIONS_VECTORS_RANGES"]
    assert (rng["f0"], rng["f1"], rng["f2"]) == (APPEND_DV_DATA_FILE, 1, 688)
    assert ti.read_deletion_file(APPEND_DV_FILE, [(rng["f0"], rng["f1"], rng["f2"])])[0].cardinality == 334


def test_bad_crc_and_size_name_the_data_file():
    case = DV32["index_files"][1]  # three files with a non-ASCII name
    f = case["files"][0]
    data = bytearray(load_bin("deletion_vector_32", f["file"]))
    d = f["deletion_vectors_in_order"][1]
    data[d["offset"] + 4 + d["length"] + 2] ^= 0x40  # inside the CRC
    with pytest.raises(IndexFormatError, match=d["data_file"]):
        ti.read_deletion_vector(bytes(data), d["offset"], d["length"], d["data_file"])
    with pytest.raises(IndexFormatError, match="size"):
        ti.read_deletion_vector(load_bin("deletion_vector_32", f["file"]), d["offset"], d["length"] + 1, d["data_file"])


def test_append_dv_data_file_read_like_java():
    """Java's reader returns 666 of the 1,000 rows of that data file (334 deleted)."""
    import pyarrow.parquet as pq

    dv = ti.read_deletion_vector(APPEND_DV_FILE, 1, 688, APPEND_DV_DATA_FILE)
    f = pq.ParquetFile(os.path.join(APPEND_DV, APPEND_DV_DATA_FILE))
    batches = list(ti.filter_batches(dv, f.iter_batches(batch_size=128)))
    kept = pa.Table.from_batches(batches)
    assert kept.num_rows == 666
    full = f.read()
    want = np.setdiff1d(np.arange(full.num_rows), dv.positions().astype(np.int64))
    assert kept.column("id").to_pylist() == full.column("id").take(pa.array(want)).to_pylist()
